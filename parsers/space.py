"""Tablespace-wide facts sniffed once from page 0: page sizes, layout variant, vendor.

Bootstrap as innochecksum and ibd2sdi do (FORMATS.md §0, §10 step 1): flags at byte 54 of page
0. When page 0 is damaged or its flags are invalid, fall back to ibd2sdi's checksum vote over up
to 60 pages for every (logical, physical) size pair. Geometry helpers are §4.1 and §9.1.
"""

# No ``from __future__ import annotations`` here: a NamedTuple's string annotations are each
# compiled by typing when the class is made, ~0.9 ms of every start over the records of
# inspect's path (issue 24, item 4; tests/test_startup.py checks them)

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from ibdtool.parsers import checksum
from ibdtool.parsers._structs_gen import (
    FSP_HEADER_FAST,
    FSP_HEADER_OFFSET,
    MARIADB_CRYPT_MAGIC,
    MYSQL_ENCRYPTION_MAGIC_V1,
    MYSQL_ENCRYPTION_MAGIC_V2,
    MYSQL_ENCRYPTION_MAGIC_V3,
    FspHeaderTuple,
)
from ibdtool.parsers.codecs import CodecError
from ibdtool.parsers.constants import FIL_PAGE_COMPRESSED, FIL_PAGE_DATA, Algorithm
from ibdtool.parsers.envelope import Checksum, Geometry, Kind, read_envelope
from ibdtool.parsers.errors import ParseError
from ibdtool.parsers.flags import (
    FSP_FLAGS_FCRC32_MARKER,
    FSP_FLAGS_PAGE_SSIZE_SHIFT,
    FSP_FLAGS_SDI,
    FSP_FLAGS_ZIP_SSIZE_SHIFT,
    FSP_SPACE_FLAGS_OFFSET,
    PAGE_SIZES,
    ZIP_SIZES,
    FspFlags,
    decode_flags,
    vendor_from_flags,
)
from ibdtool.parsers.inflate import inflate
from ibdtool.parsers.vendor import Vendor

if TYPE_CHECKING:  # ibdtool.parsers.cryptinfo loads only for a page 0 with a magic (start-up time)
    from ibdtool.parsers.cryptinfo import MariadbCrypt, MysqlEncryptionInfo

_MYSQL_MAGICS = (MYSQL_ENCRYPTION_MAGIC_V1, MYSQL_ENCRYPTION_MAGIC_V2, MYSQL_ENCRYPTION_MAGIC_V3)

MYSQL_ENCRYPTION_INFO_MAX_SIZE = 115
VOTE_PAGES = 60
MIN_SRV_VERSION, MAX_SRV_VERSION = 80000, 1_000_000  # 8.0.0 … 99.99.99


def extent_pages(logical_size: int) -> int:
    """FSP_EXTENT_SIZE in pages (§9.1)."""
    return (1 << 20) // logical_size if logical_size <= 16384 else 64


def xdes_size(logical_size: int) -> int:
    """Bytes of one XDES entry (§9.1)."""
    return 24 + (2 * extent_pages(logical_size) + 7) // 8


def encryption_info_offset(logical_size: int, physical_size: int) -> int:
    """E of §4.1: where the encryption info follows the XDES array on page 0."""
    return 150 + xdes_size(logical_size) * (physical_size // extent_pages(logical_size))


def sdi_offset(logical_size: int, physical_size: int) -> int:
    """S of §4.1: SDI version and root page number on MySQL 8 page 0."""
    return encryption_info_offset(logical_size, physical_size) + MYSQL_ENCRYPTION_INFO_MAX_SIZE


class SpaceFormat(NamedTuple):
    """How to read every page of one tablespace."""

    flags: FspFlags
    vendor: Vendor
    logical_size: int
    physical_size: int
    full_crc32: bool
    space_id: int
    fsp_size: int
    free_limit: int
    #: MySQL 8 FIL_PAGE_SRV_VERSION on page 0 (e.g. 80040), else None
    server_version: int | None = None
    sdi_root: int | None = None
    #: MySQL "lC?" magic or MariaDB crypt data found on page 0
    encryption_info: str | None = None
    #: page 0's MariaDB crypt data / MySQL encryption info, decoded (ibdtool.parsers.crypt)
    mariadb_crypt: "MariadbCrypt | None" = None  # a string: imported for type checkers only
    mysql_encryption: "MysqlEncryptionInfo | None" = None
    detected_by: str = "flags"
    warnings: tuple[str, ...] = ()
    #: FIL_PAGE_TYPE of page 0 as stored: FSP_HDR (8) since MySQL 5.1.7, 0 before
    page0_type: int = 8

    @property
    def zip(self) -> bool:
        return self.physical_size < self.logical_size or self.flags.key_block_size is not None

    @property
    def key_block_size(self) -> int | None:
        return self.physical_size if self.zip else None

    @property
    def fcrc32_algorithm(self) -> Algorithm | None:
        return self.flags.fcrc32_algorithm if self.full_crc32 else None

    @property
    def crypt_encrypted(self) -> bool:
        """Page 0's MariaDB crypt data says the pages may be encrypted (§3.2, CRYPT_SCHEME_1)."""
        return self.mariadb_crypt is not None and self.mariadb_crypt.encrypted

    @property
    def extent_pages(self) -> int:
        return extent_pages(self.logical_size)


def _be32(buf: bytes | memoryview, off: int) -> int:
    return int.from_bytes(buf[off : off + 4], "big")


def _page0_checks(page0: bytes, flags: FspFlags) -> bool:
    """Does page 0 verify under the sizes its own flags give?"""
    size = flags.physical_size
    if len(page0) < size:
        return False
    if checksum.is_all_zero(page0[:size]):
        return False
    if flags.full_crc32:
        return checksum.verify_full_crc32(page0, size, check_lsn=True)[0]
    if flags.zip:
        return checksum.verify_zip_page(page0, size)[0]
    return checksum.verify_page(page0, size)[0]


def _verifiable(page: bytes, physical: int, logical: int, fcrc32: bool) -> bool | None:
    """Checksum verdict used by the vote; None when the page cannot tell (zero, compressed)."""
    if checksum.is_all_zero(page):
        return None
    env = read_envelope(page, Geometry(physical, logical, fcrc32))
    if env.kind is Kind.FCRC32_COMPRESSED:
        if env.stored_size is None:
            return False
        return checksum.verify_full_crc32(page, env.stored_size, check_lsn=False)[0]
    if fcrc32:
        return checksum.verify_full_crc32(page, physical, check_lsn=True)[0]
    if env.checksum is Checksum.INNER and physical == logical:
        # most pages of a page-compressed tablespace: verify the page inside, as decode_page does
        try:
            inner, _ = inflate(page, env, logical)
        except CodecError:
            return False
        return checksum.verify_page(inner, logical)[0]
    if env.compressed or env.encrypted:
        return None
    if physical < logical and env.stored_type == FIL_PAGE_COMPRESSED:
        return None  # a type-14 page abstains from the zip candidates too
    if physical < logical:
        return checksum.verify_zip_page(page, physical)[0]
    return checksum.verify_page(page, physical)[0]


def vote_page_size(
    read: Callable[[int, int], bytes], file_size: int
) -> tuple[int, int, bool] | None:
    """ibd2sdi's fallback (§0): the (logical, physical, full_crc32) with fewest checksum failures.

    ``read(offset, length)`` returns file bytes. Returns None when no candidate verifies a page.
    """
    candidates: list[tuple[int, int, bool]] = []
    for logical in PAGE_SIZES:
        candidates.append((logical, logical, False))
        candidates.append((logical, logical, True))
        if logical <= 16384:
            candidates.extend((logical, z, False) for z in ZIP_SIZES if z < logical)
    best: tuple[float, int, tuple[int, int, bool]] | None = None
    for cand in candidates:
        logical, physical, fcrc32 = cand
        n_pages = min(VOTE_PAGES, file_size // physical)
        checked = failed = 0
        for n in range(n_pages):
            page = read(n * physical, physical)
            if len(page) < physical:
                break
            verdict = _verifiable(page, physical, logical, fcrc32)
            if verdict is None:
                continue
            checked += 1
            failed += not verdict
        if not checked or failed * 2 >= checked:
            continue
        score = (failed / checked, -checked, cand)
        if best is None or score[:2] < best[:2]:
            best = score
    return best[2] if best else None


def _flags_for(logical: int, physical: int, fcrc32: bool) -> FspFlags:
    """Flags saying only the page sizes found by the vote (no row format, no compression)."""
    ssize = PAGE_SIZES.index(logical) + 3
    if fcrc32:
        return decode_flags(FSP_FLAGS_FCRC32_MARKER | ssize)
    zss = (physical // 512).bit_length() - 1 if physical < logical else 0
    return decode_flags(
        (0 if logical == 16384 else ssize) << FSP_FLAGS_PAGE_SSIZE_SHIFT
        | zss << FSP_FLAGS_ZIP_SSIZE_SHIFT
    )


def detect_format(read: Callable[[int, int], bytes], file_size: int) -> SpaceFormat:
    """Sniff page 0 (and, if needed, vote) to learn how to read the tablespace.

    Raises ParseError with a one-line reason when neither the flags nor the vote give an answer.
    """
    head = read(0, 65536 if file_size >= 65536 else file_size)
    if len(head) < FSP_HEADER_OFFSET + FSP_HEADER_FAST.size:
        raise ParseError(f"file too small for an InnoDB page 0 ({file_size} bytes)")
    raw_flags = _be32(head, FSP_SPACE_FLAGS_OFFSET)
    flags = decode_flags(raw_flags)
    warnings: list[str] = []
    detected_by = "flags"
    logical, physical, fcrc32 = flags.logical_size, flags.physical_size, flags.full_crc32
    if not flags.valid or not _page0_checks(head, flags):
        voted = vote_page_size(read, file_size)
        if voted is None:
            page0_zero = checksum.is_all_zero(head[: min(len(head), 16384)])
            looks_like_page0 = _be32(head, 4) == 0 and head[24:26] == b"\0\x08"  # FSP_HDR
            if looks_like_page0 and flags.valid and file_size < physical:
                raise ParseError(
                    f"truncated: file is {file_size} bytes, smaller than the {physical}-byte "
                    f"page its flags 0x{raw_flags:x} give"
                )
            if not page0_zero:
                why = flags.problem or "page 0 does not verify"
                raise ParseError(
                    f"not an InnoDB tablespace: {why} (flags 0x{raw_flags:x}) and no page size "
                    "makes any page checksum verify"
                )
            warnings.append("page 0 is all zeros: the tablespace was never flushed")
        elif (logical, physical, fcrc32) != voted or not flags.valid:
            detected_by = "checksum vote"
            why = flags.problem or "page 0 does not verify"
            warnings.append(
                f"page 0 flags 0x{raw_flags:x} unusable ({why}); "
                f"page size {voted[0]}/{voted[1]} found by checksum vote"
            )
            logical, physical, fcrc32 = voted
            # page 0's flags are garbage: keep nothing from them but what the vote found
            flags = _flags_for(logical, physical, fcrc32)
        else:
            warnings.append("page 0 checksum does not verify; its flags agree with the vote")
    if file_size < physical:
        raise ParseError(f"file is {file_size} bytes, smaller than one {physical}-byte page")
    hdr = FspHeaderTuple._make(FSP_HEADER_FAST.unpack_from(head, FSP_HEADER_OFFSET))
    trusted = flags.valid and detected_by == "flags"
    vendor = vendor_from_flags(flags, head) if trusted else Vendor.UNKNOWN
    if fcrc32:
        vendor = Vendor.MARIADB
    server_version: int | None = None
    sdi_root: int | None = None
    enc_off = encryption_info_offset(logical, physical)
    encryption_info: str | None = None
    mysql_encryption: MysqlEncryptionInfo | None = None
    mariadb_crypt: MariadbCrypt | None = None
    at = FIL_PAGE_DATA + enc_off  # MariaDB's crypt data is at 38 + E, MySQL's info at E
    if head[enc_off : enc_off + 3] in _MYSQL_MAGICS or head[at : at + 6] == MARIADB_CRYPT_MAGIC:
        from ibdtool.parsers.cryptinfo import read_mariadb_crypt, read_mysql_info

        mysql_encryption = read_mysql_info(head, enc_off)
        mariadb_crypt = None if mysql_encryption else read_mariadb_crypt(head, enc_off)
    if mysql_encryption is not None:
        encryption_info = "mysql:" + mysql_encryption.magic
        if vendor is Vendor.UNKNOWN:
            vendor = Vendor.MYSQL
    elif mariadb_crypt is not None:
        encryption_info = "mariadb:" + ("encrypted" if mariadb_crypt.scheme else "unencrypted")
        vendor = Vendor.MARIADB
    if vendor is Vendor.MYSQL:
        # FIL_PAGE_SRV_VERSION: MySQL 8.0+ writes it on page 0 of every tablespace, undo and
        # temporary ones too (which have no SDI flag)
        version = _be32(head, 8)
        server_version = version if MIN_SRV_VERSION <= version < MAX_SRV_VERSION else None
    if vendor is Vendor.MYSQL and flags.sdi:
        s_off = sdi_offset(logical, physical)
        if _be32(head, s_off) == 1:
            sdi_root = _be32(head, s_off + 4) or None
    elif detected_by == "checksum vote" and not fcrc32:
        # as ibd2sdi: the SDI version and root follow the XDES array, past damage to the header
        s_off = sdi_offset(logical, physical)
        root = _be32(head, s_off + 4)
        if _be32(head, s_off) == 1 and 0 < root < file_size // physical:
            sdi_root = root
            vendor = Vendor.MYSQL
            flags = decode_flags(flags.raw | FSP_FLAGS_SDI)
            warnings.append(f"SDI root page {root} found on page 0 despite its damaged flags")
    return SpaceFormat(
        flags=flags,
        vendor=vendor,
        logical_size=logical,
        physical_size=physical,
        full_crc32=fcrc32,
        space_id=hdr.space_id,
        fsp_size=hdr.size,
        free_limit=hdr.free_limit,
        server_version=server_version,
        sdi_root=sdi_root,
        encryption_info=encryption_info,
        mariadb_crypt=mariadb_crypt,
        mysql_encryption=mysql_encryption,
        detected_by=detected_by,
        warnings=tuple(warnings),
        page0_type=int.from_bytes(head[24:26], "big"),
    )
