"""Every on-disk InnoDB structure, declared once with construct.

Each declaration cites its section of FORMATS.md. Hot loops use the ``struct.Struct`` fast path
that :func:`fast` derives from the same declaration (construct's own parser costs ~25 µs for a
38-byte header); tests compare the two on every page of the corpus. Field names follow the
server sources (lower-cased, without the ``FIL_PAGE_`` / ``FSP_`` / ``PAGE_`` prefixes).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, NamedTuple

from construct import (
    Array,
    BitsInteger,
    BitStruct,
    Bytes,
    Construct,
    Flag,
    Int8ub,
    Int16ub,
    Int32ub,
    Int64ub,
    Struct,
)

# --- §1.1 FIL header (38 bytes) and §1.2 trailer (8 bytes) -----------------------------------
FilHeader = Struct(
    "checksum" / Int32ub,  # FIL_PAGE_SPACE_OR_CHKSUM (full_crc32: key version)
    "page_no" / Int32ub,  # FIL_PAGE_OFFSET
    "prev" / Int32ub,  # FIL_PAGE_PREV (MySQL 8 page 0: FIL_PAGE_SRV_VERSION)
    "next" / Int32ub,  # FIL_PAGE_NEXT (MySQL 8 page 0: FIL_PAGE_SPACE_VERSION)
    "lsn" / Int64ub,  # FIL_PAGE_LSN
    "page_type" / Int16ub,  # FIL_PAGE_TYPE
    "flush_lsn" / Int64ub,  # FIL_PAGE_FILE_FLUSH_LSN (reused: compression metadata, §2/§3)
    "space_id" / Int32ub,  # FIL_PAGE_SPACE_ID
)

FilTrailer = Struct(
    "old_checksum" / Int32ub,  # field2
    "lsn_low" / Int32ub,  # low 32 bits of FIL_PAGE_LSN
)

# --- §3.2 MariaDB full_crc32: the last 8 bytes of an uncompressed page -------------------------
FullCrc32Trailer = Struct(
    "lsn_low" / Int32ub,  # low 32 bits of FIL_PAGE_LSN
    "crc32c" / Int32ub,  # CRC-32C of everything before it
)

# --- §4.1 list bases and nodes, file addresses ----------------------------------------------
FilAddr = Struct("page" / Int32ub, "offset" / Int16ub)
FlstBase = Struct("length" / Int32ub, "first" / FilAddr, "last" / FilAddr)
FlstNode = Struct("prev" / FilAddr, "next" / FilAddr)

# --- §4.1 FSP header at offset 38 of page 0 (112 bytes) --------------------------------------
FSP_HEADER_OFFSET = 38
FspHeader = Struct(
    "space_id" / Int32ub,
    "not_used" / Int32ub,
    "size" / Int32ub,
    "free_limit" / Int32ub,
    "space_flags" / Int32ub,
    "frag_n_used" / Int32ub,
    "free" / FlstBase,
    "free_frag" / FlstBase,
    "full_frag" / FlstBase,
    "seg_id" / Int64ub,
    "seg_inodes_full" / FlstBase,
    "seg_inodes_free" / FlstBase,
)
XDES_ARR_OFFSET = FSP_HEADER_OFFSET + FspHeader.sizeof()  # 150

# --- §2.1 MySQL transparent compression metadata on type-14 pages (bytes 26..33) -------------
MySQLCompressionMeta = Struct(
    "version" / Int8ub,  # FIL_PAGE_VERSION: 1 (5.7, 8.0.15 seen) or 2
    "algorithm" / Int8ub,  # FIL_PAGE_ALGORITHM_V1: 0 none, 1 zlib, 2 lz4
    "original_type" / Int16ub,  # FIL_PAGE_ORIGINAL_TYPE_V1
    "original_size" / Int16ub,  # FIL_PAGE_ORIGINAL_SIZE_V1 (= page size - 38)
    "compressed_size" / Int16ub,  # FIL_PAGE_COMPRESS_SIZE_V1
)
MYSQL_COMPRESSION_META_OFFSET = 26

# --- §3.1 MariaDB classic page_compressed header (type 34354 / 37401) ------------------------
MariaDBClassicCompHeader = Struct(
    "algorithm" / Int64ub,  # bytes 26..33 (readers require 26..31 = 0)
    "space_id" / Int32ub,  # 34..37
    "comp_size" / Int16ub,  # 38..39: FIL_PAGE_COMP_SIZE
)
MariaDBClassicEncCompHeader = Struct(
    "key_version" / Int32ub,  # 26..29
    "post_enc_checksum" / Int32ub,  # 30..33
    "space_id" / Int32ub,
    "comp_size" / Int16ub,  # 38..39
    "algorithm" / Int16ub,  # 40..41
)
MARIADB_CLASSIC_COMP_OFFSET = 26

# --- §3.2 MariaDB classic (not full_crc32) encryption: bytes 26..33 of an encrypted page -----
MariaDBClassicCryptHeader = Struct(
    "key_version" / Int32ub,  # FIL_PAGE_FILE_FLUSH_LSN_OR_KEY_VERSION; 0: not encrypted
    "post_enc_checksum" / Int32ub,  # checksum of the stored (encrypted) bytes, fil0crypt.cc
)
MARIADB_CRYPT_KEY_VERSION_OFFSET = 26
MARIADB_CRYPT_CHECKSUM_OFFSET = MARIADB_CRYPT_KEY_VERSION_OFFSET + 4  # 30
MARIADB_CRYPT_HEADER_END = MARIADB_CRYPT_KEY_VERSION_OFFSET + MariaDBClassicCryptHeader.sizeof()
FCRC32_KEY_VERSION_OFFSET = 0  # full_crc32: the key version replaces the checksum at 0
MARIADB_CLASSIC_PAYLOAD = MARIADB_CLASSIC_COMP_OFFSET + MariaDBClassicCompHeader.sizeof()  # 40
MARIADB_CLASSIC_ENC_PAYLOAD = MARIADB_CLASSIC_COMP_OFFSET + MariaDBClassicEncCompHeader.sizeof()
MARIADB_FCRC32_PAYLOAD = 26  # FIL_PAGE_COMP_ALGO, §3.2

# --- §3.2 MariaDB full_crc32 page_compressed: the FIL_PAGE_TYPE word at 24 -------------------
FCRC32_SIZE_BITS = 15
Fcrc32CompressedType = BitStruct(
    "marker" / Flag,  # bit 15: FIL_PAGE_COMPRESS_FCRC32_MARKER
    "size_units" / BitsInteger(FCRC32_SIZE_BITS),  # stored size / FCRC32_SIZE_UNIT
)
FCRC32_SIZE_UNIT = 256  # the stored image is rounded up to this and its size kept in units
FCRC32_CHECKSUM_SIZE = 4  # CRC-32C at stored_size - 4

# --- §5.1 INDEX page header at 38 (56 bytes) -------------------------------------------------
FsegHeader = Struct("space" / Int32ub, "page_no" / Int32ub, "offset" / Int16ub)
IndexHeader = Struct(
    "n_dir_slots" / Int16ub,
    "heap_top" / Int16ub,
    "n_heap" / Int16ub,  # bit 15: compact format
    "free" / Int16ub,
    "garbage" / Int16ub,
    "last_insert" / Int16ub,
    "direction" / Int16ub,
    "n_direction" / Int16ub,
    "n_recs" / Int16ub,
    "max_trx_id" / Int64ub,
    "level" / Int16ub,
    "index_id" / Int64ub,
    "btr_seg_leaf" / FsegHeader,
    "btr_seg_top" / FsegHeader,
)
PAGE_HEADER = 38
PAGE_DATA = PAGE_HEADER + IndexHeader.sizeof()  # 94

# --- §9.2 XDES entry and §9.3 FSEG inode (sizes depend on the extent size) -------------------


def xdes_entry(extent_pages: int) -> Struct:
    """XDES entry for extents of ``extent_pages`` pages: 24 bytes + 2 bits per page."""
    return Struct(
        "seg_id" / Int64ub,  # XDES_ID
        "flst_node" / FlstNode,  # XDES_FLST_NODE
        "state" / Int32ub,  # XDES_STATE
        "bitmap" / Bytes((2 * extent_pages + 7) // 8),  # XDES_BITMAP
    )


def inode_entry(extent_pages: int) -> Struct:
    """FSEG inode (§9.3): 64 bytes + one fragment slot per half extent."""
    return Struct(
        "fseg_id" / Int64ub,
        "not_full_n_used" / Int32ub,
        "free" / FlstBase,
        "not_full" / FlstBase,
        "full" / FlstBase,
        "magic_n" / Int32ub,  # FSEG_MAGIC_N_VALUE = 97937874
        "frag_arr" / Array(extent_pages // 2, Int32ub),
    )


FSEG_MAGIC_N_VALUE = 97937874
FSEG_ARR_OFFSET = 38 + FlstNode.sizeof()  # 50: after the list node of the inode page

# --- §8.3 SDI record (offsets from the record origin) ----------------------------------------
SdiRecord = Struct(
    "sdi_type" / Int32ub,  # 1 Table, 2 Tablespace
    "sdi_id" / Int64ub,
    "trx_id" / Bytes(6),
    "roll_ptr" / Bytes(7),
    "uncompressed_len" / Int32ub,
    "compressed_len" / Int32ub,
)
SDI_RECORD_DATA = 33
BlobRef = Struct(  # 20-byte external field reference
    "space_id" / Int32ub, "page_no" / Int32ub, "offset" / Int32ub, "length" / Int64ub
)
LobHeader = Struct("part_len" / Int32ub, "next_page_no" / Int32ub)  # at FIL_PAGE_DATA

# --- §4.1 MySQL 8 SDI header on page 0, at S (after the encryption info) -----------------------
SdiHeader = Struct("version" / Int32ub, "root_page" / Int32ub)  # SDI_VERSION = 1

# --- Fast path derived from the declarations -------------------------------------------------

_FORMAT_CODES: dict[int, str] = {1: "B", 2: "H", 4: "I", 8: "Q"}


def flat_fields(con: Construct, prefix: str = "") -> list[tuple[str, str]]:
    """(field name, struct format code) for each leaf of a construct Struct, nested flattened."""
    out: list[tuple[str, str]] = []
    for sub in con.subcons:
        inner = sub.subcon if hasattr(sub, "subcon") else sub
        name = prefix + sub.name
        if isinstance(inner, Struct):
            out.extend(flat_fields(inner, name + "_"))
        elif inner in (Int8ub, Int16ub, Int32ub, Int64ub):
            out.append((name, _FORMAT_CODES[inner.sizeof()]))
        else:
            out.append((name, f"{inner.sizeof()}s"))
    return out


def fast(con: Construct, typename: str) -> tuple[struct.Struct, type[NamedTuple]]:
    """A ``struct.Struct`` and a NamedTuple type equivalent to a fixed-size construct Struct.

    Nested structs are flattened with ``outer_inner`` field names.
    """
    fields = flat_fields(con)
    packer = struct.Struct(">" + "".join(code for _, code in fields))
    assert packer.size == con.sizeof(), typename
    tuple_type = NamedTuple(typename, [(name, Any) for name, _ in fields])  # type: ignore[misc]
    return packer, tuple_type


def fast_parser(con: Construct, typename: str) -> Callable[[Any, int], Any]:
    """``parse(buffer, offset) -> NamedTuple`` using the derived ``struct.Struct``."""
    packer, tuple_type = fast(con, typename)
    unpack_from = packer.unpack_from
    make = tuple_type._make

    def parse(buf: Any, offset: int = 0) -> Any:
        return make(unpack_from(buf, offset))

    return parse


FIL_HEADER_FAST, FilHeaderTuple = fast(FilHeader, "FilHeaderTuple")
INDEX_HEADER_FAST, IndexHeaderTuple = fast(IndexHeader, "IndexHeaderTuple")
MYSQL_META_FAST, MySQLCompressionMetaTuple = fast(MySQLCompressionMeta, "MySQLCompressionMeta")
MARIADB_CLASSIC_FAST, _ = fast(MariaDBClassicCompHeader, "MariaDBClassicCompHeader")
MARIADB_CLASSIC_ENC_FAST, _ = fast(MariaDBClassicEncCompHeader, "MariaDBClassicEncCompHeader")
