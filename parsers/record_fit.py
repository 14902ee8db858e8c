"""Does a record fit the table definition it is read with? The checks that tell a wrong
definition (a ``--schema`` or ``.cfg`` of another table, a wrong index) from the right one.

A definition that does not describe the file still "reads": the bytes are cut where the
definition says and decoded as its types say, so numbers come out of nowhere and strings hold
NULs. Each check here is a property InnoDB always keeps, so a record that breaks one was not
written with this definition (or is damaged):

* **the heap** (COMPACT pages): laid out by the definition, every record's header and data lie
  between the supremum and PAGE_HEAP_TOP, no two overlap, and their sizes plus PAGE_GARBAGE are
  the heap's size (``page_mem_alloc_free`` keeps that sum; FORMATS.md §5.1, §5.2);
* **the null bitmap**: the bits past the last nullable field are 0 (``rec_convert_dtuple_to_rec
  _comp`` zeroes the header before setting them);
* **REDUNDANT field counts and lengths**: the record stores the index's field count (fewer after
  an instant ADD COLUMN), a fixed-size field has its size, a NOT NULL field is not NULL;
* **lengths**: a variable field is no longer than its column (or its prefix), a multibyte CHAR
  at least its characters × the charset's minimum;
* **values**: text decodes in the column's character set, dates and times are in range, a
  DECIMAL's digit groups are digits, an ENUM value names a member;
* **key order**: the index's first key field, where its bytes compare as the server compares
  them (integers, dates and times, DECIMAL, binary), never changes direction along the index.

Every function returns ``None`` when the record fits, else one line saying what did not fit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ibdtool.parsers.columns import decode_value
from ibdtool.parsers.errors import ParseError
from ibdtool.parsers.tabledef import Column, IndexField, Kind

PAGE_NEW_SUPREMUM_END = 120  # FORMATS.md §5.1: the heap of a COMPACT page starts here
PAGE_HEAP_TOP = 38 + 2
PAGE_GARBAGE = 38 + 8

#: kinds whose stored bytes compare (memcmp) in the server's order: sign-flipped big-endian
#: integers, the packed temporal formats, binary DECIMAL, the row id
_BYTE_ORDERED = frozenset(
    {Kind.INT, Kind.DATE, Kind.DATETIME, Kind.TIMESTAMP, Kind.TIME, Kind.YEAR, Kind.DECIMAL,
     Kind.SYS}
)  # fmt: skip

_DATE = re.compile(r"-?(\d{4})-(\d{2})-(\d{2})(?: (\d{2}):(\d{2}):(\d{2}))?")
_TIME = re.compile(r"-?(\d+):(\d{2}):(\d{2})")


def _name(name: str) -> str:
    """A column name for a message: as it is when printable, else escaped (it comes from a
    definition a user gave, and may hold control characters)."""
    return name if name.isprintable() else ascii(name)


@dataclass(frozen=True, slots=True)
class Span:
    """Where one COMPACT record lies on its page: header start, origin, data end."""

    start: int
    origin: int
    end: int


def heap_misfit(page: bytes, spans: list[Span], free: list[int]) -> tuple[int, str] | None:
    """(origin, why) of the first record the heap cannot hold as laid out, or None.

    ``spans``: every user record of the page (the definition's layout); ``free``: the origins
    of the records on the free list (their sizes are not known, their 5 fixed bytes are)."""
    heap_top = int.from_bytes(page[PAGE_HEAP_TOP : PAGE_HEAP_TOP + 2], "big")
    garbage = int.from_bytes(page[PAGE_GARBAGE : PAGE_GARBAGE + 2], "big")
    ordered = sorted(spans, key=lambda s: s.start)
    fixed = sorted(o - 5 for o in free)
    for i, s in enumerate(ordered):
        if s.start < PAGE_NEW_SUPREMUM_END:
            return s.origin, f"its header would start at byte {s.start}, inside the page header"
        if s.end > heap_top:
            return s.origin, f"it would end at byte {s.end}, past the heap top {heap_top}"
        if i + 1 < len(ordered) and s.end > ordered[i + 1].start:
            nxt = ordered[i + 1]
            return s.origin, (
                f"it would end at byte {s.end}, inside the record at {nxt.origin} "
                f"(whose header starts at {nxt.start})"
            )
        for f in fixed:
            if s.start < f + 5 and f < s.end:
                return s.origin, f"it would cover the header of the free record at {f + 5}"
    used = sum(s.end - s.start for s in ordered)
    if ordered and used + garbage != heap_top - PAGE_NEW_SUPREMUM_END:
        # the records do not tile the heap: name the first gap when nothing was freed
        if garbage == 0:
            for i, s in enumerate(ordered):
                nxt_start = ordered[i + 1].start if i + 1 < len(ordered) else heap_top
                if s.end != nxt_start:
                    return s.origin, (
                        f"it would end at byte {s.end}, but the next record's header starts at "
                        f"{nxt_start}"
                    )
        return ordered[0].origin, (
            f"the page's records would take {used} bytes, the heap holds "
            f"{heap_top - PAGE_NEW_SUPREMUM_END - garbage} (heap top {heap_top}, garbage "
            f"{garbage})"
        )
    return None


def null_padding_misfit(page: bytes, base: int, n_nullable: int) -> str | None:
    """The unused bits of the null bitmap's last byte (read downwards from ``base``) are 0."""
    if n_nullable % 8 == 0:
        return None
    last = page[base - n_nullable // 8]
    if last >> (n_nullable % 8):
        return (
            f"the null bitmap has bits set past its {n_nullable} nullable fields "
            f"(byte 0x{last:02x})"
        )
    return None


def field_misfit(f: IndexField, raw: bytes | None, ext: bool, compact: bool) -> str | None:
    """A stored field against its column: NULL-ability and length."""
    col = f.column
    if raw is None:
        if not col.nullable:
            return f"{_name(col.name)} is NULL but the column is NOT NULL"
        return None
    if col.kind is Kind.SYS or ext:
        if col.kind is Kind.SYS and len(raw) != col.length:
            return f"{_name(col.name)} takes {len(raw)} bytes, not {col.length}"
        return None
    fixed = f.fixed_len(compact)
    if fixed and len(raw) != fixed:
        return f"{_name(col.name)} takes {len(raw)} bytes, its {col.kind.value} column {fixed}"
    limit = f.prefix or col.length
    if not fixed and limit > 0 and len(raw) > limit and not col.big:
        return f"{_name(col.name)} holds {len(raw)} bytes, its column at most {limit}"
    if col.kind is Kind.CHAR and not fixed and not f.prefix and col.charset is not None:
        least = col.length // col.mbmaxlen * col.mbminlen
        if len(raw) < least:
            name = _name(col.name)
            return f"{name} holds {len(raw)} bytes, a CHAR of its length at least {least}"
    return None


def value_misfit(col: Column, raw: bytes) -> str | None:
    """The bytes as a value of the column's type: decodable and in range."""
    try:
        value = decode_value(col, raw)
    except (ParseError, ValueError) as exc:
        return f"{_name(col.name)}: {exc}"
    kind = col.kind
    if kind in (Kind.CHAR, Kind.VARCHAR, Kind.BLOB) and col.charset and col.charset.codec:
        try:
            raw.decode(col.charset.codec)
        except UnicodeDecodeError:
            return f"{_name(col.name)} is not {col.charset.name} text"
        except LookupError:
            return None
    if kind in (Kind.DATE, Kind.DATETIME, Kind.OLD_DATETIME):
        m = _DATE.match(str(value))
        if not m:
            return f"{_name(col.name)} is not a date ({value})"
        parts = [int(p) for p in m.groups() if p is not None]
        limits = [9999, 12, 31, 23, 59, 59]
        if any(p > lim for p, lim in zip(parts, limits, strict=False)):
            return f"{_name(col.name)} is not a date ({value})"
    if kind in (Kind.TIME, Kind.OLD_TIME):
        m = _TIME.match(str(value))
        if not m or int(m.group(1)) > 838 or int(m.group(2)) > 59 or int(m.group(3)) > 59:
            return f"{_name(col.name)} is not a time ({value})"
    if kind is Kind.DECIMAL:
        text = str(value).lstrip("-")
        whole, _, frac = text.partition(".")
        if len(whole.lstrip("0")) > col.precision - col.scale or len(frac) != col.scale:
            return f"{_name(col.name)} is not a DECIMAL({col.precision},{col.scale}) ({value})"
    return None


class KeyOrder:
    """The first key field of an index, along its records: it never changes direction."""

    def __init__(self, first: IndexField | None) -> None:
        usable = (
            first is not None
            and not first.prefix
            and (
                first.column.kind in _BYTE_ORDERED
                or (first.column.kind is Kind.CHAR and first.column.charset is None)
            )
        )
        self.field = first if usable else None
        self.last: bytes | None = None
        self.direction = 0  # 1 ascending, -1 descending, 0 not known yet
        #: the first key seen (None: none yet): where a run split over processes joins
        self.first: bytes | None = None

    def misfit(self, raw: bytes | None) -> str | None:
        if self.field is None or raw is None:
            return None
        last, self.last = self.last, raw
        if self.first is None:
            self.first = raw
        if last is None or last == raw:
            return None
        step = 1 if raw > last else -1
        if self.direction == 0:
            self.direction = step
            return None
        if step != self.direction:
            name = _name(self.field.column.name)
            way = "ascending" if self.direction > 0 else "descending"
            return f"the key {name} is out of order (the index is {way} before this record)"
        return None
