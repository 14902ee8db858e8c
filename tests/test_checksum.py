"""Checksum primitives against FORMATS.md §6.7 vectors and second, slower computations."""

from __future__ import annotations

import zlib

from ibdtool.parsers import checksum as c


def _pattern(n: int) -> bytes:
    return bytes(i & 0xFF for i in range(n))


def test_crc32c_check_value() -> None:
    assert c.crc32c(b"123456789") == 0xE3069283


def test_zero_page_vectors() -> None:
    z = bytes(16384)
    assert c.crc32_page(z, 16384) == 0x1FFDD4D2
    assert c.crc32_legacy_be_page(z, 16384) == 0x1FFDD4D2
    assert c.innodb_new_checksum(z, 16384) == 0x5DEFCC00
    assert c.innodb_old_checksum(z) == 0x51B9AB00
    assert c.full_crc32(z, 16384) == 0xDD9E4F5A


def test_pattern_page_vectors() -> None:
    p = _pattern(16384)
    assert c.crc32_page(p, 16384) == 0xEAD85383
    assert c.crc32_legacy_be_page(p, 16384) == 0x4F3B375D
    assert c.innodb_new_checksum(p, 16384) == 0x24382AB4
    assert c.innodb_old_checksum(p) == 0x0AC0E55D
    assert c.full_crc32(p, 16384) == 0xB064C5A5


def test_zip_crc32_vector() -> None:
    assert c.zip_crc32(_pattern(8192), 8192) == 0x77F8798B


def _adler_by_hand(data: bytes, a: int, b: int) -> tuple[int, int]:
    for byte in data:
        a = (a + byte) % 65521
        b = (b + a) % 65521
    return a, b


def test_zip_adler_is_adler32_seeded_with_zero() -> None:
    """page_zip_calc_checksum starts with adler32(0L, ...) (§6.5): a = b = 0, not zlib's 1.

    FORMATS.md's vector 0x9620EF54 is what a start of 1 gives; the server source says 0.
    """
    p = _pattern(8192)
    a, b = 0, 0
    for lo, hi in ((4, 16), (24, 26), (34, 8192)):
        a, b = _adler_by_hand(p[lo:hi], a, b)
    assert c.zip_adler(p, 8192) == (b << 16) | a
    a1, b1 = 1, 0
    for lo, hi in ((4, 16), (24, 26), (34, 8192)):
        a1, b1 = _adler_by_hand(p[lo:hi], a1, b1)
    assert (b1 << 16) | a1 == 0x9620EF54 == zlib.adler32(p[4:16] + p[24:26] + p[34:8192])


def test_legacy_be_equals_reversed_word_crc_by_hand() -> None:
    """Second computation: feed the bytes in the order an old big-endian build did."""
    p = bytearray(_pattern(16384))
    p[100:108] = b"\x01\x02\x03\x04\x05\x06\x07\x08"

    def legacy(lo: int, hi: int) -> int:
        order = bytearray()
        i = lo
        while i < hi and i % 8:
            order.append(p[i])
            i += 1
        while i + 8 <= hi:
            order += bytes(reversed(p[i : i + 8]))
            i += 8
        order += p[i:hi]
        return c.crc32c(bytes(order))

    assert c.crc32_legacy_be_page(p, 16384) == legacy(4, 26) ^ legacy(38, 16384 - 8)


def test_verify_page_detects_torn_and_accepts_none() -> None:
    p = bytearray(_pattern(16384))
    crc = c.crc32_page(p, 16384)
    p[0:4] = crc.to_bytes(4, "big")
    p[16384 - 8 : 16384 - 4] = crc.to_bytes(4, "big")
    p[16384 - 4 :] = p[20:24]
    assert c.verify_page(p, 16384) == (True, c.ChecksumAlgo.CRC32, False)
    torn = bytearray(p)
    torn[-1] ^= 1
    assert c.verify_page(torn, 16384) == (False, c.ChecksumAlgo.INVALID, True)
    none = bytearray(p)
    none[0:4] = none[16384 - 8 : 16384 - 4] = (0xDEADBEEF).to_bytes(4, "big")
    assert c.verify_page(none, 16384)[:2] == (True, c.ChecksumAlgo.NONE)
    empty = bytearray(16384)
    empty[26:34] = b"\x00\x00\x00\x01\x02\x03\x04\x05"  # flush LSN bytes are ignored
    assert c.verify_page(empty, 16384)[:2] == (True, c.ChecksumAlgo.EMPTY)
