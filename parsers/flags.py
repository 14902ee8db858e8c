"""FSP flags (page 0, offset 54) for every layout, page sizes, and vendor detection.

MySQL 5.6/5.7/8.x and MariaDB classic share bits 0..9 (§4.2); MariaDB adds PAGE_COMPRESSION at
bit 16; MariaDB full_crc32 is a different layout marked by bit 4 (§4.2, §4.3). Vendor rules are
FORMATS.md §4.4.
"""

# No ``from __future__ import annotations`` here: a NamedTuple's string annotations are each
# compiled by typing when the class is made, ~0.9 ms of every start over the records of
# inspect's path (issue 24, item 4; tests/test_startup.py checks them)

from typing import NamedTuple

from ibdtool.parsers.codecs import MARIADB_ALGORITHMS
from ibdtool.parsers.constants import Algorithm
from ibdtool.parsers.vendor import Vendor

FSP_SPACE_FLAGS_OFFSET = 54  # 38 + 16

# MySQL / MariaDB classic (§4.2)
FSP_FLAGS_POST_ANTELOPE = 1 << 0
FSP_FLAGS_ZIP_SSIZE_SHIFT = 1
FSP_FLAGS_ATOMIC_BLOBS = 1 << 5
FSP_FLAGS_PAGE_SSIZE_SHIFT = 6
FSP_FLAGS_DATA_DIR = 1 << 10
FSP_FLAGS_SHARED = 1 << 11
FSP_FLAGS_TEMPORARY = 1 << 12
FSP_FLAGS_ENCRYPTION = 1 << 13
FSP_FLAGS_SDI = 1 << 14
MARIADB_FSP_FLAGS_PAGE_COMPRESSION = 1 << 16
# MariaDB full_crc32 (§4.2)
FSP_FLAGS_FCRC32_MARKER = 1 << 4
FSP_FLAGS_FCRC32_ALGO_SHIFT = 5

_SSIZE_TO_LOGICAL = {3: 4096, 4: 8192, 5: 16384, 6: 32768, 7: 65536}
PAGE_SIZES = tuple(sorted(_SSIZE_TO_LOGICAL.values()))
ZIP_SIZES = (1024, 2048, 4096, 8192, 16384)


class FspFlags(NamedTuple):
    """Decoded FSP_SPACE_FLAGS."""

    raw: int
    full_crc32: bool
    logical_size: int
    physical_size: int
    post_antelope: bool
    atomic_blobs: bool
    data_dir: bool
    shared: bool
    temporary: bool
    encryption: bool
    sdi: bool
    #: MariaDB classic PAGE_COMPRESSION bit, or a full_crc32 algorithm != none
    page_compressed: bool
    #: full_crc32 only: the algorithm every compressed page uses
    fcrc32_algorithm: Algorithm | None
    valid: bool
    problem: str | None

    @property
    def zip(self) -> bool:
        """ROW_FORMAT=COMPRESSED: physical pages smaller than logical ones, or zip_ssize set."""
        return self.key_block_size is not None

    @property
    def key_block_size(self) -> int | None:
        if self.full_crc32:
            return None
        zss = (self.raw >> FSP_FLAGS_ZIP_SSIZE_SHIFT) & 0xF
        return 512 << zss if zss else None

    @property
    def row_format(self) -> str | None:
        """Row format as far as the flags tell (full_crc32 flags do not carry it)."""
        if self.full_crc32:
            return None
        if self.zip:
            return "COMPRESSED"
        if self.atomic_blobs:
            return "DYNAMIC"
        if self.post_antelope:
            return "COMPACT"
        return "REDUNDANT or COMPACT"

    def names(self) -> list[str]:
        """The set flags, by their server names, for display."""
        out: list[str] = []
        if self.full_crc32:
            out.append("FCRC32_MARKER")
            if self.fcrc32_algorithm and self.fcrc32_algorithm is not Algorithm.NONE:
                out.append(f"FCRC32_ALGO={self.fcrc32_algorithm.value}")
            return out
        for bit, name in (
            (FSP_FLAGS_POST_ANTELOPE, "POST_ANTELOPE"),
            (FSP_FLAGS_ATOMIC_BLOBS, "ATOMIC_BLOBS"),
            (FSP_FLAGS_DATA_DIR, "DATA_DIR"),
            (FSP_FLAGS_SHARED, "SHARED"),
            (FSP_FLAGS_TEMPORARY, "TEMPORARY"),
            (FSP_FLAGS_ENCRYPTION, "ENCRYPTION"),
            (FSP_FLAGS_SDI, "SDI"),
            (MARIADB_FSP_FLAGS_PAGE_COMPRESSION, "PAGE_COMPRESSION"),
        ):
            if self.raw & bit:
                out.append(name)
        if self.key_block_size:
            out.append(f"ZIP_SSIZE={self.key_block_size // 1024}K")
        pss = (self.raw >> FSP_FLAGS_PAGE_SSIZE_SHIFT) & 0xF
        if pss:
            out.append(f"PAGE_SSIZE={self.logical_size // 1024}K")
        return out


def decode_flags(raw: int) -> FspFlags:
    """Decode FSP flags in whichever layout they are (§4.3). Never raises: see ``valid``."""
    problem: str | None = None
    if raw & FSP_FLAGS_FCRC32_MARKER:
        ssize = raw & 0xF
        algo_id = (raw >> FSP_FLAGS_FCRC32_ALGO_SHIFT) & 0x7
        logical = _SSIZE_TO_LOGICAL.get(ssize, 0)
        algo = MARIADB_ALGORITHMS.get(algo_id)
        if not logical:
            problem = f"full_crc32 page_ssize {ssize} is not 3..7"
        elif algo is None:
            problem = f"full_crc32 compression algorithm {algo_id} is unknown"
        elif raw >> 8:
            problem = f"full_crc32 flags have unknown bits set (0x{raw:x})"
        return FspFlags(
            raw=raw,
            full_crc32=True,
            logical_size=logical,
            physical_size=logical,
            post_antelope=True,
            atomic_blobs=True,
            data_dir=False,
            shared=False,
            temporary=False,
            encryption=False,
            sdi=False,
            page_compressed=algo not in (None, Algorithm.NONE),
            fcrc32_algorithm=algo,
            valid=problem is None,
            problem=problem,
        )
    pss = (raw >> FSP_FLAGS_PAGE_SSIZE_SHIFT) & 0xF
    zss = (raw >> FSP_FLAGS_ZIP_SSIZE_SHIFT) & 0xF
    logical = 16384 if pss == 0 else _SSIZE_TO_LOGICAL.get(pss, 0)
    physical = logical if zss == 0 else (512 << zss if zss <= 5 else 0)
    if not logical:
        problem = f"page_ssize {pss} is not 0 or 3..7"
    elif not physical:
        problem = f"zip_ssize {zss} is larger than 5"
    elif physical > logical:
        problem = f"KEY_BLOCK_SIZE {physical} larger than the page size {logical}"
    elif raw & ~0x1FFFF:
        problem = f"unknown flag bits set (0x{raw:x})"
    elif (raw & FSP_FLAGS_ATOMIC_BLOBS) and not (raw & FSP_FLAGS_POST_ANTELOPE):
        problem = "ATOMIC_BLOBS without POST_ANTELOPE"
    return FspFlags(
        raw=raw,
        full_crc32=False,
        logical_size=logical,
        physical_size=physical,
        post_antelope=bool(raw & FSP_FLAGS_POST_ANTELOPE),
        atomic_blobs=bool(raw & FSP_FLAGS_ATOMIC_BLOBS),
        data_dir=bool(raw & FSP_FLAGS_DATA_DIR),
        shared=bool(raw & FSP_FLAGS_SHARED),
        temporary=bool(raw & FSP_FLAGS_TEMPORARY),
        encryption=bool(raw & FSP_FLAGS_ENCRYPTION),
        sdi=bool(raw & FSP_FLAGS_SDI),
        page_compressed=bool(raw & MARIADB_FSP_FLAGS_PAGE_COMPRESSION),
        fcrc32_algorithm=None,
        valid=problem is None,
        problem=problem,
    )


#: MySQL's reserved space ids (dict0dict.h ``dict_sys_t``): the data dictionary (mysql.ibd), the
#: global temporary tablespace (ibtmp1), then undo tablespaces and session temporary tablespaces
#: counting down from the redo log's id. The lowest bound covers every 8.0/8.4/9.x layout
#: (undo ranges of 512 and 400,000 ids, 400,000 temporary ids, 1,000 spare).
MYSQL_DICT_SPACE_ID = 0xFFFFFFFE  # MariaDB: its temporary tablespace (SRV_TMP_SPACE_ID)
MYSQL_TEMP_SPACE_ID = 0xFFFFFFFD
MYSQL_LOG_SPACE_FIRST_ID = 0xFFFFFFF0
MYSQL_MIN_UNDO_SPACE_ID = MYSQL_LOG_SPACE_FIRST_ID - 127 * 400_000
MYSQL_MIN_RESERVED_SPACE_ID = MYSQL_MIN_UNDO_SPACE_ID - 1000 - 400_000
FIL_NULL_PAIR = b"\xff" * 8


def mysql8_reserved(space_id: int) -> bool:
    """A space id only MySQL 8+ gives (undo, session temporary, ibtmp1), never to a table."""
    return MYSQL_MIN_RESERVED_SPACE_ID <= space_id < MYSQL_LOG_SPACE_FIRST_ID or (
        space_id == MYSQL_TEMP_SPACE_ID
    )


def vendor_from_flags(flags: FspFlags, page0: bytes | memoryview) -> Vendor:
    """§4.4 on page 0 alone; UNKNOWN when only the other pages can tell.

    Beyond the flags: MySQL-only flag bits (SHARED, TEMPORARY, ENCRYPTION: MariaDB refuses a
    file with them), FIL_PAGE_SRV_VERSION on MySQL 8 page 0, MySQL 8's reserved space ids,
    FIL_PAGE_PREV/NEXT both FIL_NULL on page 0 (MariaDB initialises every page it creates so;
    MySQL leaves zeros or writes its version there), and an untyped page 0 (FIL_PAGE_TYPE 0:
    page types came with MySQL 5.1.7, before MariaDB existed).
    """
    if flags.full_crc32 or flags.page_compressed:
        return Vendor.MARIADB
    if flags.sdi or flags.shared or flags.temporary or flags.encryption:
        return Vendor.MYSQL
    if len(page0) < 58:
        return Vendor.UNKNOWN
    prev_next = bytes(page0[8:16])
    if prev_next == FIL_NULL_PAIR:
        return Vendor.MARIADB
    if int.from_bytes(prev_next[:4], "big") not in (0, 0xFFFFFFFF):
        # FIL_PAGE_SRV_VERSION on MySQL 8 page 0 (e.g. 80040)
        return Vendor.MYSQL
    if mysql8_reserved(int.from_bytes(page0[38:42], "big")):
        return Vendor.MYSQL
    fsp_size, free_limit = (int.from_bytes(page0[o : o + 4], "big") for o in (46, 50))
    if int.from_bytes(page0[24:26], "big") == 0 and fsp_size and free_limit:
        return Vendor.MYSQL
    return Vendor.UNKNOWN
