"""Page checksums of every InnoDB flavour and the server's accept-any verdict (FORMATS.md §6).

Algorithms: crc32 (CRC-32C over two ranges, §6.1), its legacy big-endian variant, innodb (the
ut_fold formula, §6.2), none (0xDEADBEEF, §6.3), ROW_FORMAT=COMPRESSED zip checksums (§6.5) and
MariaDB full_crc32 (§6.6). CRC-32C comes from the ``crc32c`` package (hardware instruction).
"""

from __future__ import annotations

import zlib
from array import array
from enum import StrEnum

from ibdtool.parsers.constants import BUF_NO_CHECKSUM_MAGIC
from ibdtool.parsers.crc32c_fast import crc32c

_MASK32 = 0xFFFFFFFF
UT_HASH_RANDOM_MASK = 1463735687
UT_HASH_RANDOM_MASK2 = 1653893711


class ChecksumAlgo(StrEnum):
    """Which checksum a page matched (or why none could)."""

    CRC32 = "crc32"
    CRC32_LEGACY_BE = "crc32_legacy_be"
    INNODB = "innodb"
    NONE = "none"
    FULL_CRC32 = "full_crc32"
    ZIP_CRC32 = "zip_crc32"
    ZIP_CRC32_LEGACY_BE = "zip_crc32_legacy_be"
    ZIP_ADLER = "zip_adler"
    ZIP_NONE = "zip_none"
    EMPTY = "empty"  # an all-zero (never written) page
    ENCRYPTED = "encrypted"  # cannot be verified without the key
    INVALID = "invalid"


# --- primitives ------------------------------------------------------------------------------


def crc32_page(page: bytes | memoryview, size: int) -> int:
    """crc32 page checksum: CRC-32C(4..26) XOR CRC-32C(38..size-8) (§6.1)."""
    mv = memoryview(page)
    return crc32c(mv[4:26]) ^ crc32c(mv[38 : size - 8])


def _legacy_be_crc(buf: memoryview, start: int, end: int) -> int:
    """CRC-32C as old big-endian builds computed it: aligned 8-byte words reversed (§6.1)."""
    first = min(end, (start + 7) // 8 * 8)
    last = max(first, end // 8 * 8)
    crc = crc32c(buf[start:first])
    if last > first:
        words = array("Q", buf[first:last].tobytes())
        words.byteswap()
        crc = crc32c(words.tobytes(), crc)
    return crc32c(buf[last:end], crc)


def crc32_legacy_be_page(page: bytes | memoryview, size: int) -> int:
    mv = memoryview(page)
    return _legacy_be_crc(mv, 4, 26) ^ _legacy_be_crc(mv, 38, size - 8)


def ut_fold_binary(data: bytes | memoryview) -> int:
    """``ut_fold_binary``: byte-by-byte ut_fold_ulint_pair, mod 2**32 (§6.2)."""
    fold = 0
    for b in bytes(data):
        fold = (((((fold ^ b ^ UT_HASH_RANDOM_MASK2) << 8) + fold) ^ UT_HASH_RANDOM_MASK) + b) & (
            _MASK32
        )
    return fold


def innodb_new_checksum(page: bytes | memoryview, size: int) -> int:
    """Field 1 of the innodb algorithm (``buf_calc_page_new_checksum``)."""
    mv = memoryview(page)
    return (ut_fold_binary(mv[4:26]) + ut_fold_binary(mv[38 : size - 8])) & _MASK32


def innodb_old_checksum(page: bytes | memoryview) -> int:
    """Field 2 of the innodb algorithm (``buf_calc_page_old_checksum``)."""
    return ut_fold_binary(memoryview(page)[0:26])


def full_crc32(page: bytes | memoryview, size: int) -> int:
    """MariaDB full_crc32: CRC-32C over [0, size-4) (§6.6)."""
    return crc32c(memoryview(page)[: size - 4])


def zip_crc32(page: bytes | memoryview, size: int) -> int:
    """ROW_FORMAT=COMPRESSED crc32: three ranges skipping checksum, LSN and flush LSN (§6.5)."""
    mv = memoryview(page)
    return crc32c(mv[4:16]) ^ crc32c(mv[24:26]) ^ crc32c(mv[34:size])


def zip_crc32_legacy_be(page: bytes | memoryview, size: int) -> int:
    mv = memoryview(page)
    return _legacy_be_crc(mv, 4, 16) ^ _legacy_be_crc(mv, 24, 26) ^ _legacy_be_crc(mv, 34, size)


def zip_adler(page: bytes | memoryview, size: int) -> int:
    """ROW_FORMAT=COMPRESSED innodb checksum: Adler-32 chained over the same ranges (§6.5)."""
    mv = memoryview(page)
    adler = zlib.adler32(mv[4:16], 0)
    adler = zlib.adler32(mv[24:26], adler)
    return zlib.adler32(mv[34:size], adler)


# --- verdicts --------------------------------------------------------------------------------


def _be32(mv: memoryview, off: int) -> int:
    return int.from_bytes(mv[off : off + 4], "big")


_ZEROS: dict[int, bytes] = {}


def is_all_zero(page: bytes | memoryview) -> bool:
    data = bytes(page)
    zeros = _ZEROS.get(len(data))
    if zeros is None:
        zeros = _ZEROS[len(data)] = bytes(len(data))
    return data == zeros


def _empty_except_flush_lsn(mv: memoryview) -> bool:
    """§6.4 rule 4: every byte zero except 26..33."""
    head = mv[:26].tobytes()
    rest = mv[34:].tobytes()
    return head.count(0) == 26 and rest.count(0) == len(rest)


def verify_page(page: bytes | memoryview, size: int) -> tuple[bool, ChecksumAlgo, bool]:
    """Verify an uncompressed page of ``size`` bytes (MySQL / MariaDB non-full_crc32).

    Returns ``(valid, algorithm that matched, torn)``: ``torn`` means the LSN copy in the trailer
    differs from the header (a torn write), which makes the page corrupt whatever its checksum.
    """
    mv = memoryview(page)[:size]
    field1 = _be32(mv, 0)
    field2 = _be32(mv, size - 8)
    lsn_hi = _be32(mv, 16)
    torn = mv[20:24] != mv[size - 4 : size]
    empty_fields = field1 == 0 and field2 == 0 and lsn_hi == 0 and mv[20:24] == b"\0\0\0\0"
    if empty_fields and _empty_except_flush_lsn(mv):
        return True, ChecksumAlgo.EMPTY, False
    if torn:
        return False, ChecksumAlgo.INVALID, True
    crc = crc32_page(mv, size)
    if field1 == crc and field2 == crc:
        return True, ChecksumAlgo.CRC32, False
    if field1 == BUF_NO_CHECKSUM_MAGIC and field2 == BUF_NO_CHECKSUM_MAGIC:
        return True, ChecksumAlgo.NONE, False
    # innodb: field2 = old fold (or LSN high word, pre-4.0.14); field1 = 0 or new fold (§6.2)
    if (field2 == lsn_hi or field2 == innodb_old_checksum(mv)) and (
        field1 == 0 or field1 == innodb_new_checksum(mv, size)
    ):
        return True, ChecksumAlgo.INNODB, False
    legacy = crc32_legacy_be_page(mv, size)
    if field1 == legacy and field2 == legacy:
        return True, ChecksumAlgo.CRC32_LEGACY_BE, False
    return False, ChecksumAlgo.INVALID, False


def verify_zip_page(page: bytes | memoryview, size: int) -> tuple[bool, ChecksumAlgo]:
    """Verify a ROW_FORMAT=COMPRESSED physical page (§6.5): one stored checksum at 0."""
    mv = memoryview(page)[:size]
    stored = _be32(mv, 0)
    if stored == 0 and mv[16:24] == bytes(8) and is_all_zero(mv):
        return True, ChecksumAlgo.EMPTY
    if stored == zip_crc32(mv, size):
        return True, ChecksumAlgo.ZIP_CRC32
    if stored == BUF_NO_CHECKSUM_MAGIC:
        return True, ChecksumAlgo.ZIP_NONE
    if stored == zip_adler(mv, size):
        return True, ChecksumAlgo.ZIP_ADLER
    if stored == zip_crc32_legacy_be(mv, size):
        return True, ChecksumAlgo.ZIP_CRC32_LEGACY_BE
    return False, ChecksumAlgo.INVALID


def verify_full_crc32(
    page: bytes | memoryview, size: int, check_lsn: bool
) -> tuple[bool, ChecksumAlgo, bool]:
    """MariaDB full_crc32 (§6.6) over an image of ``size`` bytes (page or compressed image).

    ``check_lsn``: uncompressed, unencrypted pages also carry the LSN tail at size-8.
    """
    mv = memoryview(page)[:size]
    stored = _be32(mv, size - 4)
    if stored == 0 and is_all_zero(mv):
        return True, ChecksumAlgo.EMPTY, False
    if stored != crc32c(mv[: size - 4]):
        return False, ChecksumAlgo.INVALID, False
    if check_lsn and mv[20:24] != mv[size - 8 : size - 4]:
        return False, ChecksumAlgo.INVALID, True
    return True, ChecksumAlgo.FULL_CRC32, False


def verify_crypt_checksum(
    page: bytes | memoryview, size: int, zip: bool, at: int
) -> tuple[bool, ChecksumAlgo]:
    """The checksum at ``at`` of a MariaDB classic encrypted page (§3.2), over its stored bytes.

    fil_space_verify_crypt_checksum: the crc32 formula (zip: the zip crc32 or adler formula),
    the innodb formula, or BUF_NO_CHECKSUM_MAGIC; no key is needed. The checksum at 0 is the
    plaintext's and says nothing about the stored bytes.
    """
    mv = memoryview(page)[:size]
    stored = _be32(mv, at)
    if zip:
        if stored == zip_crc32(mv, size):
            return True, ChecksumAlgo.ZIP_CRC32
        if stored == zip_adler(mv, size):
            return True, ChecksumAlgo.ZIP_ADLER
        if stored == BUF_NO_CHECKSUM_MAGIC:
            return True, ChecksumAlgo.ZIP_NONE
        return False, ChecksumAlgo.INVALID
    if stored == crc32_page(mv, size):
        return True, ChecksumAlgo.CRC32
    if stored == innodb_new_checksum(mv, size):
        return True, ChecksumAlgo.INNODB
    if stored == BUF_NO_CHECKSUM_MAGIC:
        return True, ChecksumAlgo.NONE
    return False, ChecksumAlgo.INVALID
