"""MySQL's binary JSON (a JSON column's stored bytes) → the text ``SELECT`` prints.

Layout (``json_binary.h``): a type byte, then the value. Objects and arrays come small (2-byte
counts, sizes and offsets) or large (4-byte): element count, byte size, for objects one key
entry (offset, 2-byte length) per member, then one value entry per element: a type byte and
either an offset (from the start of the object or array) or, for literals and small integers,
the value itself. Scalars: int16/uint16/int32/uint32/int64/uint64 and double little-endian,
strings as a variable-length length (7 bits a byte, low first) and UTF-8 bytes, "opaque" values
(dates, times, decimals) as a MySQL type byte, a length and the bytes.

The text follows MySQL: ``{"a": 1, "b": [true, null]}`` (members in stored order, which is
MySQL's key order), strings escaped as JSON requires.
"""

from __future__ import annotations

import base64
import json
import struct

from ibdtool.parsers.decimals import decode_decimal
from ibdtool.parsers.errors import ParseError

SMALL_OBJECT, LARGE_OBJECT, SMALL_ARRAY, LARGE_ARRAY = 0x00, 0x01, 0x02, 0x03
LITERAL, INT16, UINT16, INT32, UINT32, INT64, UINT64, DOUBLE, STRING = range(0x04, 0x0D)
OPAQUE = 0x0F
LITERAL_NULL, LITERAL_TRUE, LITERAL_FALSE = 0, 1, 2
MAX_DEPTH = 100

# MySQL field types an opaque value may carry (enum_field_types)
_MYSQL_TYPE_DATE, _MYSQL_TYPE_TIME, _MYSQL_TYPE_DATETIME = 10, 11, 12
_MYSQL_TYPE_TIMESTAMP, _MYSQL_TYPE_NEWDECIMAL = 7, 246


class JsonError(ParseError):
    """Bytes that are not MySQL binary JSON."""


def _varlen(buf: bytes, pos: int) -> tuple[int, int]:
    n = 0
    for i in range(5):
        if pos + i >= len(buf):
            raise JsonError("JSON length runs past the value")
        b = buf[pos + i]
        n |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            return n, pos + i + 1
    raise JsonError("JSON length longer than 5 bytes")


def _double_text(v: float) -> str:
    text = repr(v)
    if "e" in text:
        mant, exp = text.split("e")
        text = f"{mant.removesuffix('.0')}e{int(exp)}"
    return text


def _opaque_text(mysql_type: int, data: bytes) -> str:
    if mysql_type == _MYSQL_TYPE_NEWDECIMAL and len(data) >= 2:
        return decode_decimal(data[2:], data[0], data[1])
    if (
        mysql_type
        in (_MYSQL_TYPE_DATE, _MYSQL_TYPE_DATETIME, _MYSQL_TYPE_TIMESTAMP, _MYSQL_TYPE_TIME)
        and len(data) == 8
    ):
        packed = int.from_bytes(data, "little", signed=True)
        neg = packed < 0
        packed = abs(packed)
        micro = packed % (1 << 24)
        ymdhms = packed >> 24
        frac = f".{micro:06d}" if micro else ""
        if mysql_type == _MYSQL_TYPE_TIME:
            hms = ymdhms
            h, m, s = (hms >> 12) % (1 << 10), (hms >> 6) % 64, hms % 64
            return f"{'-' if neg else ''}{h:02d}:{m:02d}:{s:02d}{frac}"
        ymd, hms = ymdhms >> 17, ymdhms % (1 << 17)
        ym = ymd >> 5
        date = f"{ym // 13:04d}-{ym % 13:02d}-{ymd % 32:02d}"
        if mysql_type == _MYSQL_TYPE_DATE:
            return date
        return f"{date} {hms >> 12:02d}:{(hms >> 6) % 64:02d}:{hms % 64:02d}{frac}"
    return f"base64:type{mysql_type}:{base64.b64encode(data).decode()}"


class _Reader:
    def __init__(self, buf: bytes) -> None:
        self.buf = buf

    def need(self, end: int) -> None:
        if end > len(self.buf):
            raise JsonError("JSON value runs past its bytes")

    def u(self, pos: int, n: int) -> int:
        self.need(pos + n)
        return int.from_bytes(self.buf[pos : pos + n], "little")

    def scalar(self, typ: int, pos: int, depth: int) -> str:
        buf = self.buf
        if typ in (SMALL_OBJECT, LARGE_OBJECT, SMALL_ARRAY, LARGE_ARRAY):
            return self.container(typ, pos, depth + 1)
        if typ == LITERAL:
            return self.literal(self.u(pos, 1))
        if typ in (INT16, UINT16, INT32, UINT32, INT64, UINT64):
            n = {INT16: 2, UINT16: 2, INT32: 4, UINT32: 4, INT64: 8, UINT64: 8}[typ]
            self.need(pos + n)
            signed = typ in (INT16, INT32, INT64)
            return str(int.from_bytes(buf[pos : pos + n], "little", signed=signed))
        if typ == DOUBLE:
            self.need(pos + 8)
            return _double_text(struct.unpack_from("<d", buf, pos)[0])
        if typ == STRING:
            n, start = _varlen(buf, pos)
            self.need(start + n)
            return json.dumps(buf[start : start + n].decode("utf-8", "replace"), ensure_ascii=False)
        if typ == OPAQUE:
            self.need(pos + 1)
            n, start = _varlen(buf, pos + 1)
            self.need(start + n)
            return json.dumps(_opaque_text(buf[pos], buf[start : start + n]))
        raise JsonError(f"unknown JSON type {typ:#x}")

    @staticmethod
    def literal(v: int) -> str:
        if v == LITERAL_NULL:
            return "null"
        if v == LITERAL_TRUE:
            return "true"
        if v == LITERAL_FALSE:
            return "false"
        raise JsonError(f"unknown JSON literal {v}")

    def container(self, typ: int, base: int, depth: int) -> str:
        if depth > MAX_DEPTH:
            raise JsonError("JSON nested too deeply")
        large = typ in (LARGE_OBJECT, LARGE_ARRAY)
        obj = typ in (SMALL_OBJECT, LARGE_OBJECT)
        w = 4 if large else 2
        count, size = self.u(base, w), self.u(base + w, w)
        self.need(base + size)
        if count > size:
            raise JsonError("JSON element count exceeds its size")
        pos = base + 2 * w
        keys: list[str] = []
        if obj:
            for _ in range(count):
                off, n = self.u(pos, w), self.u(pos + w, 2)
                self.need(base + off + n)
                keys.append(self.buf[base + off : base + off + n].decode("utf-8", "replace"))
                pos += w + 2
        values: list[str] = []
        for _ in range(count):
            vtype = self.u(pos, 1)
            inlined = vtype in (LITERAL, INT16, UINT16) or (large and vtype in (INT32, UINT32))
            if inlined:
                if vtype == LITERAL:
                    values.append(self.literal(self.u(pos + 1, w) & 0xFF))
                else:
                    n = 2 if vtype in (INT16, UINT16) else 4
                    self.need(pos + 1 + n)
                    signed = vtype in (INT16, INT32)
                    raw = self.buf[pos + 1 : pos + 1 + n]
                    values.append(str(int.from_bytes(raw, "little", signed=signed)))
            else:
                values.append(self.scalar(vtype, base + self.u(pos + 1, w), depth))
            pos += 1 + w
        if obj:
            inner = ", ".join(
                f"{json.dumps(k, ensure_ascii=False)}: {v}"
                for k, v in zip(keys, values, strict=True)
            )
            return "{" + inner + "}"
        return "[" + ", ".join(values) + "]"


def json_text(raw: bytes) -> str:
    """The text of a binary JSON value (an empty value is JSON null, as MySQL reads it)."""
    if not raw:
        return "null"
    return _Reader(raw).scalar(raw[0], 1, 0)
