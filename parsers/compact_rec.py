"""Compact-format records (FORMATS.md §5.2) laid out by a schema-free index description.

A ROW_FORMAT=COMPRESSED page starts its zlib stream with the index's column groups
(``page_zip_fields_encode``, §7.1): for each group its fixed length or "variable, max ≤ 255" /
"variable, may be long", and whether it can be NULL; then the position of the DB_TRX_ID group
(leaf pages; 0 for a secondary index) or the number of nullable fields (non-leaf pages). That is
all ``rec_get_offsets`` needs to find the fields of a COMPACT/DYNAMIC/COMPRESSED record, so the
same description also reads the records of the same index in a ROW_FORMAT=DYNAMIC table.

Consecutive fixed-length NOT NULL columns form one group, and DB_TRX_ID (6 bytes) starts a group
that also holds DB_ROLL_PTR (7 bytes): the groups' boundaries are not the table's columns, but
the record bytes are the same.

This module decodes that description (:func:`decode_zip_index`), finds the fields of a record on
a page (:func:`record_fields`) or of a record whose header bytes are given in forward order, as
the modification log stores them (:func:`record_fields_reverse`), and walks a page's records in
key order (:func:`iter_records`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ibdtool.parsers.errors import ParseError

REC_N_NEW_EXTRA_BYTES = 5  # info bits + n_owned, heap_no + status, next pointer (§5.2)
REC_NODE_PTR_SIZE = 4  # child page number at the end of a node-pointer record
REC_MAX_N_FIELDS = 1023
REC_STATUS_ORDINARY = 0
REC_STATUS_NODE_PTR = 1
REC_STATUS_INFIMUM = 2
REC_STATUS_SUPREMUM = 3
REC_INFO_MIN_REC_FLAG = 0x10
REC_INFO_DELETED_FLAG = 0x20
REC_HEAP_NO_SHIFT = 3
PAGE_NEW_INFIMUM = 99
PAGE_NEW_SUPREMUM = 112
BTR_EXTERN_FIELD_REF_SIZE = 20
DATA_TRX_ID_LEN = 6
DATA_ROLL_PTR_LEN = 7
DATA_TRX_ROLL_LEN = DATA_TRX_ID_LEN + DATA_ROLL_PTR_LEN


class RecordError(ParseError):
    """A record or an index description that cannot be what InnoDB wrote."""


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One column group of the index description (§7.1)."""

    fixed_len: int  # 0: variable length
    nullable: bool
    big: bool  # variable length that may exceed 255 bytes: 1- or 2-byte length, may be external


@dataclass(frozen=True, slots=True)
class ZipIndex:
    """The self-describing index of a zip page (``page_zip_fields_decode``)."""

    fields: tuple[FieldSpec, ...]
    leaf: bool
    #: leaf pages of a clustered index: the group that starts with DB_TRX_ID; else None
    trx_id_col: int | None
    #: null-bitmap width in fields: counted on leaf pages, stored on non-leaf pages
    n_nullable: int

    @property
    def clustered(self) -> bool:
        return self.trx_id_col is not None


@dataclass(frozen=True, slots=True)
class Field:
    """Where one field of a record is: ``start``/``end`` are page (or buffer) offsets."""

    start: int
    end: int
    null: bool = False
    extern: bool = False  # the last 20 bytes are a BLOB pointer (BTR_EXTERN_FIELD_REF)


@dataclass(frozen=True, slots=True)
class RecordLayout:
    """Fields of one record and the length of its header below the 5 fixed bytes."""

    fields: tuple[Field, ...]
    extra_len: int  # null bitmap + length bytes (below origin − 5)

    @property
    def data_size(self) -> int:
        return self.fields[-1].end - self.fields[0].start if self.fields else 0

    @property
    def any_extern(self) -> bool:
        return any(f.extern for f in self.fields)


def _values(info: bytes) -> list[tuple[int, bool]]:
    """The description's values: 1 byte 0xxxxxxx, or 2 bytes 1xxxxxxx xxxxxxxx (then True)."""
    out: list[tuple[int, bool]] = []
    pos = 0
    while pos < len(info):
        val = info[pos]
        if val & 0x80:
            if pos + 1 >= len(info):
                raise RecordError("index description ends inside a 2-byte value")
            out.append(((val & 0x7F) << 8 | info[pos + 1], True))
            pos += 2
        else:
            out.append((val, False))
            pos += 1
    return out


def _spec(val: int, two_bytes: bool) -> FieldSpec:
    nullable = not val & 1
    if two_bytes:  # fixed length of 63 bytes or more
        return FieldSpec(fixed_len=val >> 1, nullable=nullable, big=False)
    if val >= 126:  # variable, maximum above 255 bytes (or a BLOB)
        return FieldSpec(fixed_len=0, nullable=nullable, big=True)
    if val <= 1:  # variable, maximum up to 255 bytes
        return FieldSpec(fixed_len=0, nullable=nullable, big=False)
    return FieldSpec(fixed_len=val >> 1, nullable=nullable, big=False)


def decode_zip_index(info: bytes, leaf: bool) -> ZipIndex:
    """Decode the index description at the start of a zip page's zlib stream (§7.1).

    ``info`` must be exactly the bytes of the description (the stream's first flush block).
    """
    values = _values(info)
    if not values:
        raise RecordError("empty index description")
    *groups, (tail, _) = values
    if len(groups) > REC_MAX_N_FIELDS:
        raise RecordError(f"index description has {len(groups)} fields")
    fields = tuple(_spec(val, two) for val, two in groups)
    counted = sum(f.nullable for f in fields)
    if leaf:
        if tail and tail >= len(fields):
            raise RecordError(f"DB_TRX_ID position {tail} beyond {len(fields)} fields")
        trx = tail or None
        if trx is not None and fields[trx].fixed_len < DATA_TRX_ROLL_LEN:
            raise RecordError(f"DB_TRX_ID group {trx} is shorter than 13 bytes")
        return ZipIndex(fields, True, trx, counted)
    if counted > tail:
        raise RecordError(f"{counted} nullable fields but the page says {tail}")
    return ZipIndex(fields, False, None, tail)


def _layout(
    get: Callable[[int], int], index: ZipIndex, node_ptr: bool, origin: int
) -> RecordLayout:
    """``rec_init_offsets``: ``get(k)`` is the k-th header byte going away from the fixed bytes."""
    n_null_bytes = (index.n_nullable + 7) // 8
    null_pos = 0
    null_mask = 1
    lens = n_null_bytes
    offs = origin
    out: list[Field] = []
    n = len(index.fields)
    for i in range(n + 1 if node_ptr else n):
        if i == n:  # the child page number of a node pointer
            out.append(Field(offs, offs + REC_NODE_PTR_SIZE))
            offs += REC_NODE_PTR_SIZE
            break
        spec = index.fields[i]
        if spec.nullable:
            if null_pos >= n_null_bytes:
                raise RecordError("more nullable fields than the null bitmap holds")
            is_null = bool(get(null_pos) & null_mask)
            null_mask <<= 1
            if null_mask == 0x100:
                null_pos += 1
                null_mask = 1
            if is_null:
                out.append(Field(offs, offs, null=True))
                continue
        if spec.fixed_len:
            out.append(Field(offs, offs + spec.fixed_len))
            offs += spec.fixed_len
            continue
        first = get(lens)
        lens += 1
        length = first
        extern = False
        if spec.big and first & 0x80:  # 1exxxxxx xxxxxxxx: 14-bit length, e = external
            length = (first & 0x3F) << 8 | get(lens)
            lens += 1
            extern = bool(first & 0x40)
        out.append(Field(offs, offs + length, extern=extern))
        offs += length
    return RecordLayout(tuple(out), lens)


def record_fields(
    page: bytes | bytearray, rec: int, index: ZipIndex, node_ptr: bool, skip: int = 0
) -> RecordLayout:
    """Fields of the record whose origin is ``rec`` on ``page`` (header read downwards).

    ``skip`` header bytes below the 5 fixed ones come before the null bitmap: the field count
    of an instant record or the row version (MySQL 8.0.12+/8.0.29+, MariaDB 10.3+).
    """
    base = rec - REC_N_NEW_EXTRA_BYTES - 1 - skip

    def get(k: int) -> int:
        if base - k < 0:
            raise RecordError(f"record header at {rec} runs below the page start")
        return page[base - k]

    lay = _layout(get, index, node_ptr, rec)
    if lay.fields and lay.fields[-1].end > len(page):
        raise RecordError(f"record at {rec} runs past the page end")
    return lay


def record_fields_reverse(
    log: bytes, pos: int, index: ZipIndex, node_ptr: bool, rec: int
) -> RecordLayout:
    """``rec_get_offsets_reverse``: the header bytes are ``log[pos:]`` in forward order."""

    def get(k: int) -> int:
        if pos + k >= len(log):
            raise RecordError("modification log ends inside a record header")
        return log[pos + k]

    return _layout(get, index, node_ptr, rec)


# --- walking a page ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecordHeader:
    """The 5 fixed header bytes of a compact record."""

    origin: int
    info_bits: int  # REC_INFO_* (0x20 deleted, 0x10 min-rec)
    n_owned: int
    heap_no: int
    status: int  # REC_STATUS_*
    next: int  # absolute offset of the next record, 0 at the end of a list

    @property
    def deleted(self) -> bool:
        return bool(self.info_bits & REC_INFO_DELETED_FLAG)


def read_header(page: bytes | bytearray, rec: int) -> RecordHeader:
    """Decode the 5 bytes before the origin ``rec`` (§5.2)."""
    if not REC_N_NEW_EXTRA_BYTES <= rec <= len(page) - 1:
        raise RecordError(f"record origin {rec} outside the page")
    b = page[rec - 5]
    hs = page[rec - 4] << 8 | page[rec - 3]
    rel = page[rec - 2] << 8 | page[rec - 1]
    nxt = 0 if rel == 0 else (rec + rel) & 0xFFFF
    return RecordHeader(rec, b & 0xF0, b & 0x0F, hs >> REC_HEAP_NO_SHIFT, hs & 7, nxt)


def iter_records(page: bytes | bytearray) -> Iterator[RecordHeader]:
    """User records of a compact page in key order: infimum's next pointers up to supremum.

    A loop or a pointer out of the page raises :class:`RecordError`.
    """
    seen: set[int] = set()
    rec = read_header(page, PAGE_NEW_INFIMUM).next
    while rec != PAGE_NEW_SUPREMUM:
        if rec in seen:
            raise RecordError(f"record list loops at {rec}")
        if rec < PAGE_NEW_SUPREMUM + 8 + REC_N_NEW_EXTRA_BYTES:
            raise RecordError(f"record list points to {rec}")
        seen.add(rec)
        head = read_header(page, rec)
        yield head
        rec = head.next


def iter_free(page: bytes | bytearray, first: int) -> Iterator[RecordHeader]:
    """The free (garbage) list from PAGE_FREE, with the same loop guard."""
    seen: set[int] = set()
    rec = first
    while rec:
        if rec in seen:
            raise RecordError(f"free list loops at {rec}")
        seen.add(rec)
        head = read_header(page, rec)
        yield head
        rec = head.next


@dataclass(frozen=True, slots=True)
class RecordSpan:
    """One record's bytes on a page: ``[start, end)``, its origin inside them, its header."""

    start: int
    origin: int
    end: int
    head: RecordHeader


def record_spans(page: bytes | bytearray) -> list[RecordSpan]:
    """The records of a compact page in key order with their bytes, without the index's
    definition: the heap holds records back to back (§5.2), so a record ends where the next
    one in address order (live or on the free list) begins, the last at PAGE_HEAP_TOP. Where
    a record's header begins below its 5 fixed bytes (null bitmap and lengths) is not known
    without the definition: the page's first record in the heap (at PAGE_NEW_SUPREMUM_END)
    gives that length, taken for every record of the page. The byte total of the live
    records is exact (the heap's size less PAGE_GARBAGE's records); a record whose header is
    longer or shorter than the first lends or borrows those bytes from its neighbour."""
    heads = list(iter_records(page))
    free_head = page[38 + 6] << 8 | page[38 + 7]
    free = [h.origin for h in iter_free(page, free_head)] if free_head else []
    heap_top = page[38 + 2] << 8 | page[38 + 3]
    origins = sorted({h.origin for h in heads} | set(free))
    if not origins:
        return []
    extra = max(0, origins[0] - REC_N_NEW_EXTRA_BYTES - PAGE_NEW_SUPREMUM_END)
    ends: dict[int, int] = {}
    for here, there in zip(origins, [*origins[1:], 0], strict=True):
        end = there - REC_N_NEW_EXTRA_BYTES - extra if there else heap_top
        ends[here] = max(here, min(end, heap_top))
    return [
        RecordSpan(h.origin - REC_N_NEW_EXTRA_BYTES - extra, h.origin, ends[h.origin], h)
        for h in heads
    ]


PAGE_NEW_SUPREMUM_END = PAGE_NEW_SUPREMUM + 8
