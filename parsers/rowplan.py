"""A compiled reader of the common leaf page: one index's COMPACT/DYNAMIC records, decoded by
code made once per index instead of a dispatch per field.

:class:`ibdtool.parsers.records.IndexReader` reads any record of any row format, field by field
through the general layout (:mod:`ibdtool.parsers.compact_rec`), checking each against the
definition (:mod:`ibdtool.parsers.record_fit`). Most pages of a plain table hold nothing it needs
that generality for: ordinary COMPACT records of the index's full field list, no instant ADD/DROP,
nothing stored off-page. For those, :func:`compile_plan` writes one Python function that finds
a record's fields at offsets fixed where the fields before them are fixed-size and NOT NULL,
reads the null bitmap and length bytes once, and turns the bytes into values inline
(integers, text in the column's character set, hex), through the decoders of
:mod:`ibdtool.parsers.columns` for the rest.

It makes every check the general reader makes (the heap, the null bitmap's padding, lengths,
values, key order), and its answer to any doubt is "not mine": :meth:`PagePlan.rows` returns
``None`` and the caller reads the page with :class:`IndexReader`, which then gives the answer
(a misfit, an error, a value read off-page, a metadata record) exactly as before. So on every
page the plan reads, its rows are the reader's rows; ``tests/test_records_fast.py`` checks that
on samples and corpus files of every row format.
"""

from __future__ import annotations

import codecs
import struct
from typing import Any

from ibdtool.parsers.columns import decode_date, decode_datetime2, decode_value
from ibdtool.parsers.compact_rec import REC_N_NEW_EXTRA_BYTES
from ibdtool.parsers.decimals import DIG2BYTES
from ibdtool.parsers.record_fit import PAGE_NEW_SUPREMUM_END, value_misfit
from ibdtool.parsers.tabledef import Column, IndexField, Kind

PAGE_NEW_INFIMUM = 99
PAGE_NEW_SUPREMUM = 112
PAGE_HEAP_TOP = 38 + 2
PAGE_FREE = 38 + 6
PAGE_GARBAGE = 38 + 8
PAGE_N_HEAP = 38 + 4
#: a record whose header could reach below the page start is left to the general reader
MAX_EXTRA = 100

#: kinds whose value, once it decodes, fits (value_misfit checks nothing more)
_DECODE_ONLY = frozenset(
    {Kind.FLOAT, Kind.DOUBLE, Kind.TIMESTAMP, Kind.OLD_TIMESTAMP, Kind.YEAR, Kind.ENUM, Kind.SET,
     Kind.BIT, Kind.JSON, Kind.SYS, Kind.UUID, Kind.INET4, Kind.INET6, Kind.GEOMETRY}
)  # fmt: skip
_TEXT = (Kind.CHAR, Kind.VARCHAR, Kind.BLOB)
#: codecs that decode every ASCII byte as itself (the single-byte and UTF-8 character sets)
_ASCII_SUPERSETS = frozenset(
    {"ascii", "big5", "cp1250", "cp1251", "cp1252", "cp1256", "cp1257", "cp850", "cp852",
     "cp866", "cp932", "euc_jp", "euc_kr", "gb18030", "gb2312", "gbk", "iso8859-1", "iso8859-13",
     "iso8859-2", "iso8859-7", "iso8859-8", "iso8859-9", "koi8-r", "koi8-u", "mac-latin2",
     "mac-roman", "shift_jis", "tis-620", "utf-8"}
)  # fmt: skip

Rows = list[tuple[bool, tuple[Any, ...]]]


class _Slow(Exception):
    """The page needs the general reader."""


_DATES: dict[int, str] = {}  # DATETIME2's packed year-month-day → "YYYY-MM-DD "
_TIMES: dict[int, str] = {}  # its packed hour-minute-second → "hh:mm:ss"
CACHE_MAX = 1 << 16


def _datetime(raw: bytes, fsp: int) -> str:
    """:func:`ibdtool.parsers.columns.decode_datetime2` of a date and time in range, else _Slow
    (the texts of dates and times met are kept: a table holds few distinct ones)."""
    v = int.from_bytes(raw[:5], "big") - 0x8000000000
    if v < 0:
        raise _Slow
    ymd, hms = v >> 17, v & 0x1FFFF
    date = _DATES.get(ymd)
    if date is None:
        ym = ymd >> 5
        year, month = ym // 13, ym % 13
        if year > 9999 or month > 12:
            raise _Slow
        date = f"{year:04d}-{month:02d}-{ymd & 31:02d} "
        if len(_DATES) < CACHE_MAX:
            _DATES[ymd] = date
    time = _TIMES.get(hms)
    if time is None:
        hour, minute, sec = hms >> 12, (hms >> 6) & 63, hms & 63
        if hour > 23 or minute > 59 or sec > 59:
            raise _Slow
        time = f"{hour:02d}:{minute:02d}:{sec:02d}"
        if len(_TIMES) < CACHE_MAX:
            _TIMES[hms] = time
    if fsp:
        return decode_datetime2(raw, fsp)
    return date + time


def _decimal_fn(precision: int, scale: int) -> Any:
    """:func:`ibdtool.parsers.decimals.decode_decimal` of DECIMAL(precision, scale) whose digit
    groups are all in range (so it fits: value_misfit would find nothing), else _Slow."""
    intg = precision - scale
    groups: list[tuple[int, int]] = []  # (bytes, digits) in stored order
    if intg % 9:
        groups.append((DIG2BYTES[intg % 9], intg % 9))
    groups += [(4, 9)] * (intg // 9)
    n_int = len(groups)
    groups += [(4, 9)] * (scale // 9)
    if scale % 9:
        groups.append((DIG2BYTES[scale % 9], scale % 9))
    size = sum(b for b, _ in groups)
    if not size:
        return None
    plan = []
    after = size
    for i, (nbytes, digits) in enumerate(groups):
        after -= nbytes
        plan.append((8 * after, (1 << 8 * nbytes) - 1, 10**digits, i < n_int))
    full, sign = (1 << 8 * size) - 1, 1 << (8 * size - 1)

    def dec(raw: bytes) -> str:
        if len(raw) != size:
            raise _Slow
        v = int.from_bytes(raw, "big") ^ sign
        negative = not raw[0] & 0x80
        if negative:
            v ^= full
        whole = frac = 0
        for shift, mask, limit, is_int in plan:
            g = v >> shift & mask
            if g >= limit:
                raise _Slow
            if is_int:
                whole = whole * limit + g
            else:
                frac = frac * limit + g
        text = f"{whole}.{frac:0{scale}d}" if scale else str(whole)
        return "-" + text if negative and (whole or frac) else text

    return dec


def _date(raw: bytes) -> str:
    v = int.from_bytes(raw, "big") ^ 0x800000
    if v >> 9 > 9999 or (v >> 5) & 15 > 12:
        raise _Slow
    return decode_date(raw)


def _checked(col: Column) -> Any:
    def conv(raw: bytes) -> Any:
        value = decode_value(col, raw)
        if value_misfit(col, raw) is not None:
            raise _Slow
        return value

    return conv


def _decoded(col: Column) -> Any:
    return lambda raw: decode_value(col, raw)


def _value_expr(col: Column, r: str, ns: dict[str, Any], j: int) -> str:
    """Python source of the value of the non-NULL field held in variable ``r``."""
    kind = col.kind
    if kind is Kind.INT:
        bias = 0 if col.unsigned else 1 << (8 * col.length - 1)
        return f"int.from_bytes({r}, 'big') - {bias}" if bias else f"int.from_bytes({r}, 'big')"
    if kind in _TEXT:
        codec = col.charset.codec if col.charset is not None else None
        if codec is None:
            return f"'0x' + {r}.hex()"
        text = f"{r}.decode({codec!r})"
        if codecs.lookup(codec).name in _ASCII_SUPERSETS:  # ASCII bytes: the C decoder
            text = f"({r}.decode('ascii') if {r}.isascii() else {text})"
        return f"{text}.rstrip(' ')" if col.kind is Kind.CHAR else text
    if kind is Kind.DATETIME:
        return f"_datetime({r}, {col.fsp})"
    if kind is Kind.DATE:
        return f"_date({r})"
    if kind is Kind.DECIMAL and _decimal_fn(col.precision, col.scale) is not None:
        ns[f"_dec{j}"] = _decimal_fn(col.precision, col.scale)
        return f"_dec{j}({r})"
    name = f"_conv{j}"
    ns[name] = _decoded(col) if kind in _DECODE_ONLY else _checked(col)
    return f"{name}({r})"


class PagePlan:
    """The compiled reader of one index's ordinary COMPACT leaf pages."""

    def __init__(
        self, source: str, ns: dict[str, Any], n_nullable: int, key: Any, names: tuple[str, ...]
    ) -> None:
        self.source = source
        self.names = names  # the columns of the values, in order
        self.styles = ""  # per column, what its values are (:func:`_style`)
        exec(compile(source, "<rowplan>", "exec"), ns)
        self._rec = ns["rec"]
        self.n_nullable = n_nullable
        self.key = key  # the reader's KeyOrder (its state moves with the pages read)

    def rows(self, page: bytes) -> Rows | None:
        """(deleted, values in output order) of every user record of ``page`` in key order,
        or None when the page needs the general reader (nothing has changed then)."""
        try:
            return self._rows(page if isinstance(page, bytes) else bytes(page))
        except Exception:  # _Slow, or bytes the general reader will name
            return None

    def _rows(self, page: bytes) -> Rows:
        if not page[PAGE_N_HEAP] & 0x80:
            raise _Slow  # REDUNDANT
        rec_fn = self._rec
        key = self.key
        use_key = key.field is not None
        last, direction, first = key.last, key.direction, key.first
        size = len(page)
        nn = self.n_nullable
        pad_byte, pad_shift = nn // 8, nn % 8
        out: Rows = []
        spans: list[tuple[int, int, int]] = []
        seen: set[int] = set()
        rel = page[PAGE_NEW_INFIMUM - 2] << 8 | page[PAGE_NEW_INFIMUM - 1]
        o = 0 if rel == 0 else (PAGE_NEW_INFIMUM + rel) & 0xFFFF
        while o != PAGE_NEW_SUPREMUM:
            if o in seen or o < PAGE_NEW_SUPREMUM + 8 + REC_N_NEW_EXTRA_BYTES or o >= size:
                raise _Slow
            seen.add(o)
            info = page[o - 5]
            if info & 0xD0 or page[o - 3] & 7:  # instant/version/min-rec bits; not ordinary
                raise _Slow
            if pad_shift and page[o - 6 - pad_byte] >> pad_shift:
                raise _Slow
            end, extra, k, vals = rec_fn(page, o)
            if end > size:
                raise _Slow
            spans.append((o - REC_N_NEW_EXTRA_BYTES - extra, o, end))
            if use_key and k is not None:
                if first is None:
                    first = k
                if last is not None and last != k:
                    step = 1 if k > last else -1
                    if direction == 0:
                        direction = step
                    elif step != direction:
                        raise _Slow
                last = k
            out.append((bool(info & 0x20), vals))
            rel = page[o - 2] << 8 | page[o - 1]
            o = 0 if rel == 0 else (o + rel) & 0xFFFF
        _heap_fits(page, spans)
        key.last, key.direction, key.first = last, direction, first
        return out


def _heap_fits(page: bytes, spans: list[tuple[int, int, int]]) -> None:
    """:func:`ibdtool.parsers.record_fit.heap_misfit` is None, or raise _Slow."""
    heap_top = page[PAGE_HEAP_TOP] << 8 | page[PAGE_HEAP_TOP + 1]
    garbage = page[PAGE_GARBAGE] << 8 | page[PAGE_GARBAGE + 1]
    ordered = sorted(spans)
    used = 0
    prev_end = PAGE_NEW_SUPREMUM_END
    for start, _, end in ordered:
        if start < prev_end or end > heap_top:  # in the page header, overlapping, past the top
            raise _Slow
        used += end - start
        prev_end = end
    if ordered and used + garbage != heap_top - PAGE_NEW_SUPREMUM_END:
        raise _Slow
    free = page[PAGE_FREE] << 8 | page[PAGE_FREE + 1]
    seen: set[int] = set()
    while free:
        if free in seen or not REC_N_NEW_EXTRA_BYTES <= free <= len(page) - 1:
            raise _Slow
        seen.add(free)
        f = free - 5
        for start, _, end in ordered:
            if start < f + 5 and f < end:
                raise _Slow
        rel = page[free - 2] << 8 | page[free - 1]
        free = 0 if rel == 0 else (free + rel) & 0xFFFF


_UINT = {1: "B", 2: "H", 4: "I", 8: "Q"}


def _unpack(prefix: list[tuple[str, str]], ns: dict[str, Any]) -> list[str]:
    """The line reading the fixed NOT NULL fields at the start of the record in one call."""
    names = [v for v, _ in prefix if v]
    if not names:
        return []
    ns["_prefix"] = struct.Struct(">" + "".join(code for _, code in prefix))
    return [f"    {', '.join(names)}, = _prefix.unpack_from(page, o)"]


def compile_plan(reader: Any) -> PagePlan | None:
    """The plan of ``reader``'s index (an :class:`ibdtool.parsers.records.IndexReader` that has read
    the index's first page), or None when its records need the general reader: fields added
    or dropped instantly, column prefixes shown, a layout past :data:`MAX_EXTRA`."""
    if reader.may_be_short or reader.altered or reader.core_null_bytes is not None:
        return None
    fields: tuple[IndexField, ...] = reader.index.fields
    if reader.core_fields != fields or reader.defaults or not fields:
        return None
    out_fields = reader.output_fields()
    pos = {f.column.name: i for i, f in enumerate(fields)}
    out_pos = [pos[f.column.name] for f in out_fields]
    if any(fields[i].prefix for i in out_pos):
        return None
    nullable = [f.column.nullable for f in fields]
    n_nullable = sum(nullable)
    nnb = (n_nullable + 7) // 8
    n_var = sum(1 for f in fields if not f.fixed_len(True))
    if nnb + 2 * n_var > MAX_EXTRA:
        return None
    ns: dict[str, Any] = {"_datetime": _datetime, "_date": _date}
    lines = ["def rec(page, o):"]
    for b in range(nnb):
        lines.append(f"    nb{b} = page[o - {6 + b}]")
    lines.append(f"    L = o - {6 + nnb}")
    need = set(out_pos) | {0}
    const: int | None = 0  # the offset from o while every field so far is fixed NOT NULL
    prefix: list[tuple[str, str]] = []  # those fields: (variable, struct code)
    ints: set[int] = set()  # fields read as unsigned ints by the prefix's struct
    null_i = 0
    for j, f in enumerate(fields):
        col = f.column
        fixed = f.fixed_len(True)
        r = f"r{j}"
        body: list[str] = []
        if fixed:
            if const is not None and not col.nullable:
                if j not in need:
                    prefix.append(("", f"{fixed}x"))
                elif j and col.kind is Kind.INT and fixed in _UINT:  # read as an int
                    prefix.append((f"u{j}", _UINT[fixed]))
                    ints.add(j)
                else:
                    prefix.append((r, f"{fixed}s"))
                const += fixed
                continue
            body.append(f"{r} = page[p:p + {fixed}]" if j in need else "pass")
            body.append(f"p += {fixed}")
        else:
            body.append("n = page[L]")
            body.append("L -= 1")
            if col.big:
                body.append("if n & 0x80:")
                body.append("    if n & 0x40: raise _Slow")
                body.append("    n = (n & 0x3F) << 8 | page[L]")
                body.append("    L -= 1")
            limit = f.prefix or col.length
            if limit > 0 and not col.big:
                body.append(f"if n > {limit}: raise _Slow")
            if col.kind is Kind.CHAR and not f.prefix and col.charset is not None:
                least = col.length // col.mbmaxlen * col.mbminlen
                if least:
                    body.append(f"if n < {least}: raise _Slow")
            if j in need:
                body.append(f"{r} = page[p:p + n]")
            body.append("p += n")
        if const is not None:
            lines.extend(_unpack(prefix, ns))
            lines.append(f"    p = o + {const}")
            const = None
        if col.nullable:
            byte, mask = divmod(null_i, 8)
            null_i += 1
            lines.append(f"    if nb{byte} & {1 << mask}:")
            lines.append(f"        {r} = None" if j in need else "        pass")
            lines.append("    else:")
            lines.extend("        " + b for b in body)
        else:
            lines.extend("    " + b for b in body)
    if const is not None:
        lines.extend(_unpack(prefix, ns))
        lines.append(f"    p = o + {const}")
    values = []
    for j in out_pos:
        col = fields[j].column
        if j in ints:
            bias = 0 if col.unsigned else 1 << (8 * col.length - 1)
            expr = f"u{j} - {bias}" if bias else f"u{j}"
        else:
            expr = _value_expr(col, f"r{j}", ns, j)
        values.append(f"None if r{j} is None else {expr}" if col.nullable else expr)
    tup = "(" + "".join(f"{v}, " for v in values) + ")"
    lines.append(f"    return p, o - 6 - L, r0, {tup}")
    ns["_Slow"] = _Slow
    names = tuple(f.column.name for f in out_fields)
    plan = PagePlan("\n".join(lines) + "\n", ns, n_nullable, reader.key_order, names)
    plan.styles = "".join(_style(fields[j].column, ns, j) for j in out_pos)
    return plan


def _style(col: Column, ns: dict[str, Any], j: int) -> str:
    """What a non-NULL value of the column is: ``i`` an int, ``s`` a str, ``o`` either."""
    if col.kind is Kind.INT:
        return "i"
    if f"_conv{j}" in ns:
        return "o"
    return "s"
