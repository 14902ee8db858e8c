"""MySQL's binary DECIMAL: how many bytes a DECIMAL(precision, scale) takes, and its text.

The format (``decimal2bin`` in MySQL's ``strings/decimal.cc``): the integer and the fraction
digits each in groups of 9 per 4 bytes, a shorter leading (integer) or trailing (fraction)
group in 1-4 bytes, big-endian, the sign bit of the first byte flipped and every byte inverted
when the value is negative. Used by the column decoders (:mod:`ibdtool.parsers.columns`), the table
definitions that size a DECIMAL column, and the opaque DECIMAL values of binary JSON
(:mod:`ibdtool.parsers.jsonb`).
"""

from __future__ import annotations

from ibdtool.parsers.errors import ParseError

DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
_DIG_PER_INT = 9


class DecimalError(ParseError):
    """Bytes that cannot be the DECIMAL they are said to be."""


def decimal_size(precision: int, scale: int) -> int:
    intg = precision - scale
    return (
        intg // _DIG_PER_INT * 4
        + DIG2BYTES[intg % _DIG_PER_INT]
        + scale // _DIG_PER_INT * 4
        + DIG2BYTES[scale % _DIG_PER_INT]
    )


def decode_decimal(raw: bytes, precision: int, scale: int) -> str:
    """MySQL's binary DECIMAL(precision, scale) → its text, e.g. ``-12.50``."""
    if len(raw) != decimal_size(precision, scale) or not raw:
        size = decimal_size(precision, scale)
        raise DecimalError(f"DECIMAL({precision},{scale}) takes {size} bytes, not {len(raw)}")
    negative = not raw[0] & 0x80
    buf = bytearray(raw)
    buf[0] ^= 0x80
    if negative:
        buf = bytearray(b ^ 0xFF for b in buf)
    intg = precision - scale
    pos = 0

    def take(n: int) -> int:
        nonlocal pos
        v = int.from_bytes(buf[pos : pos + n], "big")
        pos += n
        return v

    int_digits = ""
    lead = intg % _DIG_PER_INT
    if lead:
        int_digits += str(take(DIG2BYTES[lead])).zfill(lead)
    for _ in range(intg // _DIG_PER_INT):
        int_digits += str(take(4)).zfill(9)
    frac = ""
    for _ in range(scale // _DIG_PER_INT):
        frac += str(take(4)).zfill(9)
    tail = scale % _DIG_PER_INT
    if tail:
        frac += str(take(DIG2BYTES[tail])).zfill(tail)
    int_digits = int_digits.lstrip("0") or "0"
    text = int_digits + ("." + frac if scale else "")
    if negative and any(ch not in "0." for ch in text):
        text = "-" + text
    return text
