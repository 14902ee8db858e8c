"""Every on-disk InnoDB structure, declared once with construct.

Each declaration cites its section of FORMATS.md. Hot loops use the ``struct.Struct`` fast path
that :func:`fast` derives from the same declaration (construct's own parser costs ~25 µs for a
38-byte header); tests compare the two on every page of the corpus. Field names follow the
server sources (lower-cased, without the ``FIL_PAGE_`` / ``FSP_`` / ``PAGE_`` prefixes).

The read path does not import this module (construct costs ~10 ms of start-up, issue 14): it
imports :mod:`ibdtool.parsers._structs_gen`, which :func:`generated_module` writes from the
declarations of :data:`GENERATED` and every constant here (``scripts/gen_structs.py``; never
edited by hand; tests/test_structs.py checks that regenerating it gives the committed file and
that it decodes like construct). Construct loads only where a declaration itself is used (the
page view, ``.cfg`` and keyring readers, the generator and the tests).
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
    Const,
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

# --- §3.2 / §4.1 encryption information on page 0, at 38 + E (MariaDB) or E (MySQL) ----------
MARIADB_CRYPT_MAGIC = bytes.fromhex("730E0C524574")
MYSQL_ENCRYPTION_MAGIC_V1 = b"lCA"  # 5.7.11
MYSQL_ENCRYPTION_MAGIC_V2 = b"lCB"
MYSQL_ENCRYPTION_MAGIC_V3 = b"lCC"
AES_BLOCK = 16
MYSQL_KEY_LEN = 32
MYSQL_SERVER_UUID_LEN = 36

#: MariaDB crypt data (fil_space_read_crypt_data), at 38 + E on page 0.
MARIADB_CRYPT_DATA = Struct(
    "magic" / Const(MARIADB_CRYPT_MAGIC),
    "scheme" / Int8ub,  # 0 CRYPT_SCHEME_UNENCRYPTED, 1 CRYPT_SCHEME_1
    "iv_len" / Const(AES_BLOCK, Int8ub),  # CRYPT_SCHEME_1_IV_LEN; the server rejects others
    "iv" / Bytes(AES_BLOCK),
    "min_key_version" / Int32ub,
    "key_id" / Int32ub,
    "encryption" / Int8ub,  # fil_encryption_t
)

#: MySQL encryption info, version 3 (``lCC``) and 2 (``lCB``), at E on page 0.
MYSQL_ENCRYPTION_INFO = Struct(
    "magic" / Bytes(3),
    "master_key_id" / Int32ub,
    "server_uuid" / Bytes(MYSQL_SERVER_UUID_LEN),
    "encrypted_key_iv" / Bytes(2 * MYSQL_KEY_LEN),
    "checksum" / Int32ub,  # CRC-32C of the plaintext key and IV
)
#: Version 1 (``lCA``, 5.7.11) has no server UUID.
MYSQL_ENCRYPTION_INFO_V1 = Struct(
    "magic" / Bytes(3),
    "master_key_id" / Int32ub,
    "encrypted_key_iv" / Bytes(2 * MYSQL_KEY_LEN),
    "checksum" / Int32ub,
)

# --- Fast path derived from the declarations -------------------------------------------------

_FORMAT_CODES: dict[int, str] = {1: "B", 2: "H", 4: "I", 8: "Q"}


def flat_fields(con: Construct, prefix: str = "") -> list[tuple[str, str]]:
    """(field name, struct format code) for each leaf of a construct Struct, nested flattened."""
    out: list[tuple[str, str]] = []
    for sub in con.subcons:
        inner = sub.subcon if hasattr(sub, "subcon") else sub
        if isinstance(inner, Const):
            inner = inner.subcon
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


def const_fields(con: Construct) -> dict[str, Any]:
    """The value each ``Const`` field of a (flat) construct Struct must have."""
    return {
        sub.name: sub.subcon.value
        for sub in con.subcons
        if hasattr(sub, "subcon") and isinstance(sub.subcon, Const)
    }


# --- The generated module: what the read path uses without construct -------------------------

#: (name prefix, NamedTuple type, declaration) of each fixed-size Struct written to
#: parsers/_structs_gen.py as ``PREFIX_FIELDS`` (name, struct code), ``PREFIX_FAST`` (the
#: ``struct.Struct``), the NamedTuple type and, when it has Const fields, ``PREFIX_CONST``
GENERATED: tuple[tuple[str, str, Construct], ...] = (
    ("FIL_HEADER", "FilHeaderTuple", FilHeader),
    ("FIL_TRAILER", "FilTrailerTuple", FilTrailer),
    ("FULL_CRC32_TRAILER", "FullCrc32TrailerTuple", FullCrc32Trailer),
    ("FSP_HEADER", "FspHeaderTuple", FspHeader),
    ("INDEX_HEADER", "IndexHeaderTuple", IndexHeader),
    ("MYSQL_META", "MySQLCompressionMetaTuple", MySQLCompressionMeta),
    ("MARIADB_CLASSIC", "MariaDBClassicCompTuple", MariaDBClassicCompHeader),
    ("MARIADB_CLASSIC_ENC", "MariaDBClassicEncCompTuple", MariaDBClassicEncCompHeader),
    ("SDI_RECORD", "SdiRecordTuple", SdiRecord),
    ("BLOB_REF", "BlobRefTuple", BlobRef),
    ("LOB_HEADER", "LobHeaderTuple", LobHeader),
    ("MARIADB_CRYPT_DATA", "MariadbCryptDataTuple", MARIADB_CRYPT_DATA),
    ("MYSQL_ENCRYPTION_INFO", "MysqlEncryptionInfoTuple", MYSQL_ENCRYPTION_INFO),
    ("MYSQL_ENCRYPTION_INFO_V1", "MysqlEncryptionInfoV1Tuple", MYSQL_ENCRYPTION_INFO_V1),
    # §9.2 for the extent sizes of the five logical page sizes (4K: 256 … 16K-64K: 64)
    *((f"XDES_ENTRY_{n}", f"XdesEntry{n}Tuple", xdes_entry(n)) for n in (64, 128, 256)),
)


def _literal(value: object) -> str:
    """``value`` as the formatter would write it (bytes as hex: no quoting questions)."""
    if isinstance(value, bytes):
        return f'bytes.fromhex("{value.hex().upper()}")'
    return repr(value)


def generated_module() -> str:
    """The text of parsers/_structs_gen.py (see the module doc): regenerate it with
    ``python scripts/gen_structs.py`` after changing a declaration or a constant here."""
    out = [
        '"""Generated by scripts/gen_structs.py from parsers/structs.py: DO NOT EDIT.',
        "",
        "The struct formats, NamedTuple types and constants of the declarations the read path",
        "needs, so that it does not import construct (see parsers/structs.py).",
        '"""',
        "",
        "import struct",
        "from collections import namedtuple",
        "from typing import TYPE_CHECKING, NamedTuple",
        "",
    ]
    for name, value in globals().items():
        if name.isupper() and isinstance(value, int | bytes) and not isinstance(value, bool):
            out.append(f"{name} = {_literal(value)}")
    for prefix, typename, con in GENERATED:
        fields = flat_fields(con)
        packer, _ = fast(con, typename)
        out += ["", "", f"{prefix}_FIELDS = ("]
        out += [f'    ("{field}", "{code}"),' for field, code in fields]
        out += [")", f'{prefix}_FAST = struct.Struct("{packer.format}")']
        consts = const_fields(con)
        if consts:
            out.append(f"{prefix}_CONST = {{")
            out += [f'    "{field}": {_literal(value)},' for field, value in consts.items()]
            out.append("}")
        # typing.NamedTuple's class is ~3x slower to create than collections.namedtuple's: the
        # typed class is for mypy, the plain one (made by __getattr__ below) for the
        # interpreter (same type, same fields)
        out += ["", "", "if TYPE_CHECKING:", "", f"    class {typename}(NamedTuple):"]
        out += [
            f"        {field}: {'bytes' if code.endswith('s') else 'int'}" for field, code in fields
        ]
    out += [
        "",
        "",
        "#: each tuple type's fields; the type itself is made at its first use (a namedtuple",
        "#: takes ~70 µs to make, and a start uses few of these: issue 24, start-up)",
        "_TUPLES = {",
        *(f'    "{typename}": {prefix}_FIELDS,' for prefix, typename, _con in GENERATED),
        "}",
        "",
        "if not TYPE_CHECKING:",
        "",
        "    def __getattr__(name):",
        "        fields = _TUPLES.get(name)",
        "        if fields is None:",
        '            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")',
        "        made = namedtuple(name, [field for field, _ in fields], module=__name__)",
        "        return globals().setdefault(name, made)  # one type, even if two threads race",
    ]
    return "\n".join(out) + "\n"
