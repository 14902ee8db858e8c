"""A field's stored bytes → the value as the server would print it (a JSON-able value).

InnoDB stores integers big-endian with the sign bit flipped (so that bytes sort as numbers),
FLOAT/DOUBLE as little-endian IEEE, DECIMAL in MySQL's binary format
(:mod:`ibdtool.parsers.decimals`), DATETIME2/TIMESTAMP2/TIME2 in the packed formats of MySQL 5.6.4+
with 0–3 bytes of fractional seconds, and the older DATETIME/TIME/TIMESTAMP as integers. Strings are
decoded with the column's character set (CHAR trimmed of its padding, as SELECT shows it); binary
strings, BLOBs and geometries are rendered ``0x…`` in hex. ENUM and SET give their members' names
when the source knows them, else their numbers. JSON goes through :mod:`ibdtool.parsers.jsonb`.
MariaDB's UUID, INET4 and INET6 are shown as the server prints them (:func:`uuid_text`,
:func:`inet6_text`).

Numbers stay numbers; DECIMAL, dates and times are strings in the server's text form.
"""

from __future__ import annotations

import struct
from datetime import UTC, datetime, timedelta
from typing import Any

from ibdtool.parsers.decimals import decode_decimal
from ibdtool.parsers.errors import ParseError
from ibdtool.parsers.jsonb import json_text
from ibdtool.parsers.tabledef import Column, Kind


class ColumnError(ParseError):
    """Bytes that cannot be a value of the column's type."""


def hex_bytes(raw: bytes) -> str:
    return "0x" + raw.hex()


def _int(raw: bytes, signed: bool) -> int:
    v = int.from_bytes(raw, "big")
    if signed:
        v -= 1 << (8 * len(raw) - 1)
    return v


def _frac_digits(micro: int, fsp: int) -> str:
    return "." + f"{micro:06d}"[:fsp] if fsp else ""


def _frac(raw: bytes, fsp: int, signed: bool = False) -> int:
    """Microseconds from the 0–3 fractional bytes of a packed temporal value."""
    if not raw:
        return 0
    v = int.from_bytes(raw, "big", signed=signed)
    return v * (10000 if len(raw) == 1 else 100 if len(raw) == 2 else 1)


def frac_bytes(fsp: int) -> int:
    return (fsp + 1) // 2


def decode_datetime2(raw: bytes, fsp: int) -> str:
    v = int.from_bytes(raw[:5], "big") - 0x8000000000
    neg = v < 0
    v = abs(v)
    ymd, hms = v >> 17, v & 0x1FFFF
    ym = ymd >> 5
    day, month, year = ymd & 31, ym % 13, ym // 13
    sec, minute, hour = hms & 63, (hms >> 6) & 63, hms >> 12
    micro = _frac(raw[5:], fsp)
    sign = "-" if neg else ""
    return (
        f"{sign}{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{sec:02d}"
        + _frac_digits(micro, fsp)
    )


def decode_timestamp2(raw: bytes, fsp: int) -> str:
    """TIMESTAMP2 in UTC (the server shows it in the session's time zone)."""
    secs = int.from_bytes(raw[:4], "big")
    micro = _frac(raw[4:], fsp)
    if secs == 0 and micro == 0:
        return "0000-00-00 00:00:00" + _frac_digits(0, fsp)
    when = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=secs)
    return when.strftime("%Y-%m-%d %H:%M:%S") + _frac_digits(micro, fsp)


def decode_time2(raw: bytes, fsp: int) -> str:
    nfrac = len(raw) - 3
    if nfrac in (0, 1, 2):
        intpart = int.from_bytes(raw[:3], "big") - 0x800000
        frac = int.from_bytes(raw[3:], "big") if nfrac else 0
        if intpart < 0 and frac:
            intpart += 1
            frac -= 1 << (8 * nfrac)
        packed = (intpart << 24) + frac * (10000 if nfrac == 1 else 100 if nfrac == 2 else 0)
    else:
        packed = int.from_bytes(raw[:6], "big") - 0x800000000000
    neg = packed < 0
    packed = abs(packed)
    hms, micro = packed >> 24, packed % (1 << 24)
    hour, minute, sec = (hms >> 12) % (1 << 10), (hms >> 6) % 64, hms % 64
    return f"{'-' if neg else ''}{hour:02d}:{minute:02d}:{sec:02d}" + _frac_digits(micro, fsp)


def decode_date(raw: bytes) -> str:
    v = int.from_bytes(raw, "big") ^ 0x800000
    return f"{v >> 9:04d}-{(v >> 5) & 15:02d}-{v & 31:02d}"


def _text(col: Column, raw: bytes) -> str:
    assert col.charset is not None and col.charset.codec is not None
    return raw.decode(col.charset.codec, errors="replace")


def _char(col: Column, raw: bytes) -> str:
    if col.charset is None or col.charset.codec is None:
        return hex_bytes(raw)  # BINARY(n) keeps its 0x00 padding, as SELECT does
    text = _text(col, raw)
    return text.rstrip(" ")


def _enum(col: Column, raw: bytes) -> Any:
    v = int.from_bytes(raw, "big")
    if not col.elements:
        return v
    if v == 0:
        return ""
    if v > len(col.elements):
        raise ColumnError(f"ENUM value {v} beyond its {len(col.elements)} members")
    return col.elements[v - 1]


def _set(col: Column, raw: bytes) -> Any:
    v = int.from_bytes(raw, "big")
    if not col.elements:
        return v
    return ",".join(name for i, name in enumerate(col.elements) if v >> i & 1)


#: MariaDB's UUID record order (``sql_type_uuid.h``): (memory offset, record offset, length)
_UUID_SEGMENTS = ((0, 12, 4), (4, 10, 2), (6, 8, 2), (8, 6, 2), (10, 0, 6))


def uuid_text(raw: bytes) -> str:
    """A MariaDB UUID's 16 stored bytes → ``xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx``.

    A UUID of version 1–5 with the RFC 4122 variant is stored with its segments in reverse
    order (time-ordered keys for version 1); ``rec_need_swap`` tells such a record by its
    variant byte (record byte 6) and version byte (record byte 8)."""
    v8 = raw[8] - 256 if raw[8] > 127 else raw[8]
    mem = bytearray(raw)
    if raw[6] & (-v8 & 0xFF) & 0x80:
        for m, r, n in _UUID_SEGMENTS:
            mem[m : m + n] = raw[r : r + n]
    h = mem.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def inet4_text(raw: bytes) -> str:
    return ".".join(str(b) for b in raw)


def inet6_text(raw: bytes) -> str:
    """``Inet6::to_string``: the longest (first) run of zero words as ``::``, IPv4-compatible
    and IPv4-mapped addresses with a dotted IPv4 tail."""
    words = [int.from_bytes(raw[i : i + 2], "big") for i in range(0, 16, 2)]
    gap_pos, gap_len = -1, -1
    run_pos, run_len = -1, -1
    for i, w in enumerate([*words, 1]):  # a non-zero sentinel closes the last run
        if w == 0:
            run_pos, run_len = (run_pos, run_len + 1) if run_pos >= 0 else (i, 1)
        elif run_pos >= 0:
            if run_len > gap_len:
                gap_pos, gap_len = run_pos, run_len
            run_pos, run_len = -1, -1
    out = ""
    i = 0
    while i < 8:
        if i == gap_pos:
            out += "::" if i == 0 else ":"
            i += gap_len
            continue
        if i == 6 and gap_pos == 0 and (gap_len == 6 or (gap_len == 5 and words[5] == 0xFFFF)):
            return out + inet4_text(raw[12:16])
        out += f"{words[i]:x}" + (":" if i + 1 != 8 else "")
        i += 1
    return out


def _float(fmt: str, raw: bytes) -> float:
    value: float = struct.unpack(fmt, raw)[0]
    return value


def float32(raw: bytes) -> float:
    """A FLOAT as the shortest decimal that reads back as the same 4 bytes."""
    v = _float("<f", raw)
    for digits in range(6, 10):
        short = float(f"{v:.{digits}g}")
        if struct.pack("<f", short) == raw:
            return short
    return v


def decode_value(col: Column, raw: bytes) -> Any:
    """The stored bytes of a non-NULL field → its value (see the module docstring)."""
    kind = col.kind
    fixed = col.fixed_size(True)
    if fixed and kind not in (Kind.CHAR, Kind.RAW) and len(raw) != fixed:
        raise ColumnError(f"column {col.name}: {len(raw)} bytes for a {fixed}-byte {kind.value}")
    if kind is Kind.INT:
        return _int(raw, not col.unsigned)
    if kind is Kind.FLOAT:
        return float32(raw)
    if kind is Kind.DOUBLE:
        return _float("<d", raw)
    if kind is Kind.DECIMAL:
        return decode_decimal(raw, col.precision, col.scale)
    if kind is Kind.DATE:
        return decode_date(raw)
    if kind is Kind.DATETIME:
        return decode_datetime2(raw, col.fsp)
    if kind is Kind.TIMESTAMP:
        return decode_timestamp2(raw, col.fsp)
    if kind is Kind.TIME:
        return decode_time2(raw, col.fsp)
    if kind is Kind.OLD_DATETIME:
        v = _int(raw, True)
        d, t = divmod(v, 1000000)
        date = f"{d // 10000:04d}-{d // 100 % 100:02d}-{d % 100:02d}"
        return f"{date} {t // 10000:02d}:{t // 100 % 100:02d}:{t % 100:02d}"
    if kind is Kind.OLD_TIME:
        v = _int(raw, True)
        a = abs(v)
        return f"{'-' if v < 0 else ''}{a // 10000:02d}:{a // 100 % 100:02d}:{a % 100:02d}"
    if kind is Kind.OLD_TIMESTAMP:
        return decode_timestamp2(raw, 0)
    if kind is Kind.YEAR:
        v = int.from_bytes(raw, "big")
        return 0 if v == 0 else 1900 + v
    if kind is Kind.CHAR:
        return _char(col, raw)
    if kind in (Kind.VARCHAR, Kind.BLOB):
        if col.charset is None or col.charset.codec is None:
            return hex_bytes(raw)
        return _text(col, raw)
    if kind is Kind.ENUM:
        return _enum(col, raw)
    if kind is Kind.SET:
        return _set(col, raw)
    if kind is Kind.BIT:
        return int.from_bytes(raw, "big")
    if kind is Kind.JSON:
        return json_text(raw)
    if kind is Kind.SYS:
        return int.from_bytes(raw, "big")
    if kind is Kind.UUID:
        return uuid_text(raw)
    if kind is Kind.INET4:
        return inet4_text(raw)
    if kind is Kind.INET6:
        return inet6_text(raw)
    return hex_bytes(raw)  # GEOMETRY, RAW
