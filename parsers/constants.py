"""InnoDB constants shared by every decoder: page types, algorithm names, special values.

Names follow the MySQL/MariaDB sources (without the ``FIL_PAGE_`` prefix for page-type names, as
``inspect --json`` reports them) so that a grep of the server code finds them.
Source: FORMATS.md §1.3 (page types), §2.1 and §3 (compression algorithms; their ids on disk
are declared with the codecs in :mod:`ibdtool.parsers.codecs`).
"""

from __future__ import annotations

from enum import StrEnum

from ibdtool.parsers.vendor import Vendor

FIL_NULL = 0xFFFFFFFF
FIL_PAGE_DATA = 38  # end of the FIL header, start of the page body (§1.1)
FIL_PAGE_DATA_END = 8  # FIL trailer length (§1.2)
BUF_NO_CHECKSUM_MAGIC = 0xDEADBEEF  # innodb_checksum_algorithm=none (§6.3)
UNIV_ZIP_SIZE_MIN = 1024
UNIV_ZIP_SIZE_MAX = 16384  # ROW_FORMAT=COMPRESSED exists for logical pages up to 16K (§7)
UNIV_PAGE_SIZE_MAX = 65536  # innodb_page_size=64k

# Offsets inside the FIL header (§1.1)
FIL_PAGE_SPACE_OR_CHKSUM = 0
FIL_PAGE_OFFSET = 4
FIL_PAGE_PREV = 8
FIL_PAGE_NEXT = 12
FIL_PAGE_LSN = 16
FIL_PAGE_TYPE = 24
FIL_PAGE_FILE_FLUSH_LSN = 26
FIL_PAGE_SPACE_ID = 34

# Page-type codes (§1.3)
FIL_PAGE_TYPE_ALLOCATED = 0
FIL_PAGE_TYPE_UNUSED = 1
FIL_PAGE_UNDO_LOG = 2
FIL_PAGE_INODE = 3
FIL_PAGE_IBUF_FREE_LIST = 4
FIL_PAGE_IBUF_BITMAP = 5
FIL_PAGE_TYPE_SYS = 6
FIL_PAGE_TYPE_TRX_SYS = 7
FIL_PAGE_TYPE_FSP_HDR = 8
FIL_PAGE_TYPE_XDES = 9
FIL_PAGE_TYPE_BLOB = 10
FIL_PAGE_TYPE_ZBLOB = 11
FIL_PAGE_TYPE_ZBLOB2 = 12
FIL_PAGE_TYPE_UNKNOWN = 13
FIL_PAGE_COMPRESSED = 14
FIL_PAGE_ENCRYPTED = 15
FIL_PAGE_COMPRESSED_AND_ENCRYPTED = 16
FIL_PAGE_ENCRYPTED_RTREE = 17
FIL_PAGE_SDI_BLOB = 18  # MySQL 8; MariaDB uses 18 for FIL_PAGE_TYPE_INSTANT
FIL_PAGE_TYPE_INSTANT = 18
FIL_PAGE_SDI_ZBLOB = 19
FIL_PAGE_TYPE_LEGACY_DBLWR = 20
FIL_PAGE_TYPE_RSEG_ARRAY = 21
FIL_PAGE_TYPE_LOB_INDEX = 22
FIL_PAGE_TYPE_LOB_DATA = 23
FIL_PAGE_TYPE_LOB_FIRST = 24
FIL_PAGE_TYPE_ZLOB_FIRST = 25
FIL_PAGE_TYPE_ZLOB_DATA = 26
FIL_PAGE_TYPE_ZLOB_INDEX = 27
FIL_PAGE_TYPE_ZLOB_FRAG = 28
FIL_PAGE_TYPE_ZLOB_FRAG_ENTRY = 29
FIL_PAGE_SDI = 17853
#: PAGE_INDEX_ID of the SDI B-tree's pages (§5.1)
SDI_INDEX_ID = 0xFFFFFFFFFFFFFFFF
FIL_PAGE_RTREE = 17854
FIL_PAGE_INDEX = 17855
FIL_PAGE_PAGE_COMPRESSED = 34354
FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED = 37401
FIL_PAGE_COMPRESS_FCRC32_MARKER = 0x8000

_COMMON_TYPE_NAMES: dict[int, str] = {
    FIL_PAGE_TYPE_ALLOCATED: "ALLOCATED",
    FIL_PAGE_TYPE_UNUSED: "UNUSED",
    FIL_PAGE_UNDO_LOG: "UNDO_LOG",
    FIL_PAGE_INODE: "INODE",
    FIL_PAGE_IBUF_FREE_LIST: "IBUF_FREE_LIST",
    FIL_PAGE_IBUF_BITMAP: "IBUF_BITMAP",
    FIL_PAGE_TYPE_SYS: "SYS",
    FIL_PAGE_TYPE_TRX_SYS: "TRX_SYS",
    FIL_PAGE_TYPE_FSP_HDR: "FSP_HDR",
    FIL_PAGE_TYPE_XDES: "XDES",
    FIL_PAGE_TYPE_BLOB: "BLOB",
    FIL_PAGE_TYPE_ZBLOB: "ZBLOB",
    FIL_PAGE_TYPE_ZBLOB2: "ZBLOB2",
    FIL_PAGE_TYPE_UNKNOWN: "UNKNOWN",
    FIL_PAGE_COMPRESSED: "COMPRESSED",
    FIL_PAGE_ENCRYPTED: "ENCRYPTED",
    FIL_PAGE_COMPRESSED_AND_ENCRYPTED: "COMPRESSED_AND_ENCRYPTED",
    FIL_PAGE_ENCRYPTED_RTREE: "ENCRYPTED_RTREE",
    FIL_PAGE_SDI: "SDI",
    FIL_PAGE_RTREE: "RTREE",
    FIL_PAGE_INDEX: "INDEX",
}

MYSQL_TYPE_NAMES: dict[int, str] = {
    **_COMMON_TYPE_NAMES,
    FIL_PAGE_SDI_BLOB: "SDI_BLOB",
    FIL_PAGE_SDI_ZBLOB: "SDI_ZBLOB",
    FIL_PAGE_TYPE_LEGACY_DBLWR: "LEGACY_DBLWR",
    FIL_PAGE_TYPE_RSEG_ARRAY: "RSEG_ARRAY",
    FIL_PAGE_TYPE_LOB_INDEX: "LOB_INDEX",
    FIL_PAGE_TYPE_LOB_DATA: "LOB_DATA",
    FIL_PAGE_TYPE_LOB_FIRST: "LOB_FIRST",
    FIL_PAGE_TYPE_ZLOB_FIRST: "ZLOB_FIRST",
    FIL_PAGE_TYPE_ZLOB_DATA: "ZLOB_DATA",
    FIL_PAGE_TYPE_ZLOB_INDEX: "ZLOB_INDEX",
    FIL_PAGE_TYPE_ZLOB_FRAG: "ZLOB_FRAG",
    FIL_PAGE_TYPE_ZLOB_FRAG_ENTRY: "ZLOB_FRAG_ENTRY",
}

MARIADB_TYPE_NAMES: dict[int, str] = {
    **_COMMON_TYPE_NAMES,
    FIL_PAGE_TYPE_INSTANT: "INSTANT",
    FIL_PAGE_PAGE_COMPRESSED: "PAGE_COMPRESSED",
    FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED: "PAGE_COMPRESSED_ENCRYPTED",
}

#: Page types that carry an index page header (§5). MariaDB's INSTANT root is an INDEX page.
MYSQL_INDEX_TYPES = frozenset({FIL_PAGE_INDEX, FIL_PAGE_RTREE, FIL_PAGE_SDI})
MARIADB_INDEX_TYPES = frozenset({FIL_PAGE_INDEX, FIL_PAGE_RTREE, FIL_PAGE_TYPE_INSTANT})

#: MySQL encrypted page types (§2.2): recognised, never decrypted.
MYSQL_ENCRYPTED_TYPES = frozenset(
    {FIL_PAGE_ENCRYPTED, FIL_PAGE_COMPRESSED_AND_ENCRYPTED, FIL_PAGE_ENCRYPTED_RTREE}
)


class Algorithm(StrEnum):
    """Page-compression algorithms, with MariaDB's ``innodb_compression_algorithm`` ids (§3)."""

    NONE = "none"
    ZLIB = "zlib"
    LZ4 = "lz4"
    LZO = "lzo"
    LZMA = "lzma"
    BZIP2 = "bzip2"
    SNAPPY = "snappy"


def page_type_name(page_type: int, vendor: Vendor) -> str:
    """InnoDB's name for a page-type code, without the FIL_PAGE_ prefix."""
    fcrc32_marker = page_type & FIL_PAGE_COMPRESS_FCRC32_MARKER and vendor is Vendor.MARIADB
    if fcrc32_marker and page_type not in MARIADB_TYPE_NAMES:
        return "PAGE_COMPRESSED_FCRC32"
    # Type 18 is SDI_BLOB only on MySQL 8 (§4.4); otherwise MariaDB's INSTANT root.
    table = MYSQL_TYPE_NAMES if vendor is Vendor.MYSQL else MARIADB_TYPE_NAMES
    name = table.get(page_type)
    if name is None:
        name = MYSQL_TYPE_NAMES.get(page_type) or MARIADB_TYPE_NAMES.get(page_type)
    return name or f"TYPE_{page_type}"


def index_types(vendor: Vendor) -> frozenset[int]:
    """Page types that carry an index page header, for this vendor (§1.3 notes)."""
    if vendor is Vendor.MYSQL:
        return MYSQL_INDEX_TYPES
    return MARIADB_INDEX_TYPES | {FIL_PAGE_SDI}
