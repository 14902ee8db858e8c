"""The ``.cfg`` file ``FLUSH TABLES … FOR EXPORT`` writes beside a ``.ibd`` → a :class:`TableDef`.

Format (``row_quiesce_write_*`` / ``row_import_read_*`` in ``row0quiesce.cc``/``row0import.cc``
of MySQL 5.6+ and MariaDB), all integers big-endian: version; exporting host and table name
(4-byte length including the NUL, then the bytes); autoinc (8); page size, table flags, column
count (V7: dropped columns included); from V5 the nullable columns before the first instant
one; from V7 the initial, current and total column counts, the dropped-column count and the
current row version (4 each); from V2 the tablespace flags; from V6 the compression type (1
byte). Per column: ``prtype``, ``mtype``, ``len``, ``mbminmaxlen``, ``ind``, ``ord_part``,
``max_prefix`` (4 bytes each), the name; from V7 the version it was added and dropped in (1
byte each, 0xFF: none), its physical position (4) and, for a dropped column, what the data
dictionary said of it (NULL-able, unsigned, char length, type, scale, collation, ENUM/SET
members); from V3 an instant flag byte, then a NULL byte or a 4-byte length and the default's
bytes. Then the index count (MySQL 8 counts its SDI index, written first) and per index: id
(8), space, root page, type, trx_id_offset, n_user_defined_cols, n_uniq, n_nullable, n_fields
(4 each), the name, and per field its prefix length and fixed length (from V4 also
``is_ascending``; 4 each) and the column name.

Versions 1–8 are read: MariaDB and MySQL 5.6/5.7 write 1, MySQL 8.0.13–8.0.18 write 3, later
8.0 releases 4 to 6, 8.0.29+ 7 (8.0.33 does), later ones 8 (same layout, a wider row-version
range); any other version is refused in one line. MariaDB 10.4+ writes an instantly dropped
column's clustered field with an empty name (:func:`_dropped_field`). The column's type comes
from ``mtype`` and the MySQL type in ``prtype``; DECIMAL precision/scale and ENUM/SET member
names are not in the file, so those values are shown raw (hex) and as numbers.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from construct import (
    Array,
    Byte,
    ConstructError,
    If,
    Int32ub,
    Int64ub,
    PascalString,
    PrefixedArray,
    Struct,
    this,
)

from ibdtool.parsers.charsets import charset_of
from ibdtool.parsers.errors import ParseError
from ibdtool.parsers.tabledef import Column, IndexDef, IndexField, Kind, TableDef, sys_column

# --- the file, declared once ----------------------------------------------------------------
CFG_VERSIONS = range(1, 9)  # IB_EXPORT_CFG_VERSION_V1..V8
UINT8_UNDEFINED = 0xFF
UINT32_UNDEFINED = 0xFFFFFFFF
DD_ENUM, DD_SET = 22, 23  # dd::enum_column_types
DICT_CLUSTERED, DICT_SDI = 1, 256  # dict_index_t::type
CfgString = PascalString(Int32ub, "latin-1")  # includes its NUL

CfgDefault = Struct(
    "instant" / Byte,
    "is_null" / If(this.instant != 0, Byte),
    "value" / If(lambda c: c.instant != 0 and c.is_null == 0, PascalString(Int32ub, "latin-1")),
)

# V7: what the data dictionary knew of an instantly dropped column
# (row_quiesce_write_dropped_col_metadata)
CfgDroppedColumn = Struct(
    "nullable" / Byte,
    "unsigned" / Byte,
    "char_length" / Int32ub,
    "dd_type" / Int32ub,  # dd::enum_column_types
    "scale" / Int32ub,
    "collation_id" / Int64ub,
    "elements" / If(lambda c: c.dd_type in (DD_ENUM, DD_SET), PrefixedArray(Int32ub, CfgString)),
)

CfgColumnInstant = Struct(
    "version_added" / Byte,  # 0xFF: not added instantly
    "version_dropped" / Byte,  # 0xFF: not dropped
    "phy_pos" / Int32ub,  # 0xFFFFFFFF: none
    "dropped" / If(this.version_dropped != UINT8_UNDEFINED, CfgDroppedColumn),
)

CfgColumn = Struct(
    "prtype" / Int32ub,
    "mtype" / Int32ub,
    "len" / Int32ub,
    "mbminmaxlen" / Int32ub,
    "ind" / Int32ub,
    "ord_part" / Int32ub,
    "max_prefix" / Int32ub,
    "name" / CfgString,
    "instant" / If(this._.version >= 7, CfgColumnInstant),
    "default" / If(this._.version >= 3, CfgDefault),
)

CfgField = Struct(
    "prefix_len" / Int32ub,
    "fixed_len" / Int32ub,
    "is_ascending" / If(this._._.version >= 4, Int32ub),
    "name" / CfgString,
)

CfgIndex = Struct(
    "id" / Int64ub,
    "space" / Int32ub,
    "page_no" / Int32ub,
    "type" / Int32ub,
    "trx_id_offset" / Int32ub,
    "n_user_defined_cols" / Int32ub,
    "n_uniq" / Int32ub,
    "n_nullable" / Int32ub,
    "n_fields" / Int32ub,
    "name" / CfgString,
    "fields" / Array(this.n_fields, CfgField),
)

CfgFile = Struct(
    "version" / Int32ub,
    "hostname" / CfgString,
    "table_name" / CfgString,
    "autoinc" / Int64ub,
    "page_size" / Int32ub,
    "flags" / Int32ub,
    "n_cols" / Int32ub,  # V7: dropped columns included
    "n_instant_nullable" / If(this.version >= 5, Int32ub),
    "instant"
    / If(
        this.version >= 7,
        Struct(
            "initial_cols" / Int32ub,
            "current_cols" / Int32ub,
            "total_cols" / Int32ub,
            "n_dropped" / Int32ub,
            "row_version" / Int32ub,
        ),
    ),
    "space_flags" / If(this.version >= 2, Int32ub),
    "compression" / If(this.version >= 6, Byte),  # Compression::Type: 0 none, 1 zlib, 2 lz4
    "columns" / Array(this.n_cols, CfgColumn),
    "n_indexes" / Int32ub,
    "indexes" / Array(this.n_indexes, CfgIndex),
)

# data0type.h
DATA_VARCHAR, DATA_CHAR, DATA_FIXBINARY, DATA_BINARY, DATA_BLOB, DATA_INT = 1, 2, 3, 4, 5, 6
DATA_SYS, DATA_FLOAT, DATA_DOUBLE, DATA_DECIMAL, DATA_VARMYSQL, DATA_MYSQL = 8, 9, 10, 11, 12, 13
DATA_GEOMETRY, DATA_POINT, DATA_VAR_POINT = 14, 15, 16
DATA_NOT_NULL, DATA_UNSIGNED = 256, 512
# MySQL field types (the low byte of prtype)
MYSQL_TYPE_TIMESTAMP, MYSQL_TYPE_DATE, MYSQL_TYPE_TIME, MYSQL_TYPE_DATETIME = 7, 10, 11, 12
MYSQL_TYPE_YEAR, MYSQL_TYPE_NEWDATE, MYSQL_TYPE_BIT = 13, 14, 16
MYSQL_TYPE_TIMESTAMP2, MYSQL_TYPE_DATETIME2, MYSQL_TYPE_TIME2 = 17, 18, 19
MYSQL_TYPE_JSON, MYSQL_TYPE_NEWDECIMAL, MYSQL_TYPE_ENUM, MYSQL_TYPE_SET = 245, 246, 247, 248
MYSQL_TYPE_STRING, MYSQL_TYPE_GEOMETRY = 254, 255
_SYS_NAMES = ("DB_ROW_ID", "DB_TRX_ID", "DB_ROLL_PTR")


class CfgError(ParseError):
    """A .cfg file that cannot be read."""


def _kind(mtype: int, mysql_type: int, length: int) -> tuple[Kind, int]:
    """(kind, fractional digits) of a column from its InnoDB and MySQL types."""
    if mtype == DATA_INT:
        if mysql_type in (MYSQL_TYPE_DATE, MYSQL_TYPE_NEWDATE):
            return Kind.DATE, 0
        if mysql_type == MYSQL_TYPE_YEAR:
            return Kind.YEAR, 0
        if mysql_type == MYSQL_TYPE_DATETIME:
            return Kind.OLD_DATETIME, 0
        if mysql_type == MYSQL_TYPE_TIME:
            return Kind.OLD_TIME, 0
        if mysql_type == MYSQL_TYPE_TIMESTAMP:
            return Kind.OLD_TIMESTAMP, 0
        if mysql_type == MYSQL_TYPE_STRING:  # ENUM/SET report their type as STRING
            return Kind.ENUM, 0
        return Kind.INT, 0
    if mtype == DATA_FLOAT:
        return Kind.FLOAT, 0
    if mtype == DATA_DOUBLE:
        return Kind.DOUBLE, 0
    if mtype == DATA_FIXBINARY:
        if mysql_type in (MYSQL_TYPE_DATETIME, MYSQL_TYPE_DATETIME2):
            return Kind.DATETIME, (length - 5) * 2
        if mysql_type in (MYSQL_TYPE_TIMESTAMP, MYSQL_TYPE_TIMESTAMP2):
            return Kind.TIMESTAMP, (length - 4) * 2
        if mysql_type in (MYSQL_TYPE_TIME, MYSQL_TYPE_TIME2):
            return Kind.TIME, (length - 3) * 2
        if mysql_type == MYSQL_TYPE_BIT:
            return Kind.BIT, 0
        if mysql_type == MYSQL_TYPE_NEWDECIMAL:
            return Kind.RAW, 0  # precision and scale are not in the file
        return Kind.CHAR, 0
    if mtype in (DATA_CHAR, DATA_MYSQL):
        return Kind.CHAR, 0
    if mtype in (DATA_VARCHAR, DATA_VARMYSQL, DATA_BINARY):
        return Kind.VARCHAR, 0
    if mtype == DATA_BLOB:
        return (Kind.JSON if mysql_type == MYSQL_TYPE_JSON else Kind.BLOB), 0
    if mtype in (DATA_GEOMETRY, DATA_POINT, DATA_VAR_POINT):
        return Kind.GEOMETRY, 0
    return Kind.RAW, 0


def _column(c: Any) -> Column:
    name = c.name.rstrip("\x00")
    if name in _SYS_NAMES and c.mtype == DATA_SYS:
        pos = None if c.instant is None else c.instant.phy_pos
        return replace(sys_column(name), physical_pos=None if pos == UINT32_UNDEFINED else pos)
    mysql_type = c.prtype & 0xFF
    kind, fsp = _kind(c.mtype, mysql_type, c.len)
    coll = (c.prtype >> 16) & 0x7FFF
    charset = None
    if c.mtype in (DATA_CHAR, DATA_MYSQL, DATA_VARCHAR, DATA_VARMYSQL, DATA_BLOB) and coll:
        cs = charset_of(coll)
        charset = cs if cs is not None and cs.codec is not None else None
    if kind is Kind.RAW and c.mtype != DATA_FIXBINARY:
        kind = Kind.VARCHAR if c.len else Kind.RAW
    default = None
    instant = False
    if c.default is not None and c.default.instant:
        instant = True
        if not c.default.is_null:
            default = c.default.value.encode("latin-1")
    added = dropped = 0
    phy_pos = None
    if c.instant is not None:  # V7+: MySQL 8.0.29+ row versions
        added = 0 if c.instant.version_added == UINT8_UNDEFINED else c.instant.version_added
        dropped = 0 if c.instant.version_dropped == UINT8_UNDEFINED else c.instant.version_dropped
        phy_pos = None if c.instant.phy_pos == UINT32_UNDEFINED else c.instant.phy_pos
    return Column(
        name,
        kind,
        c.len,
        nullable=not c.prtype & DATA_NOT_NULL,
        unsigned=bool(c.prtype & DATA_UNSIGNED),
        charset=charset,
        fsp=max(0, fsp),
        hidden=bool(dropped),
        instant=instant,
        default=default,
        version_added=added,
        version_dropped=dropped,
        physical_pos=phy_pos,
    )


def _physical_order(f: IndexField) -> int:
    return -1 if f.column.physical_pos is None else f.column.physical_pos


def _dropped_field(n: int, fixed_len: int) -> Column:
    """MariaDB 10.4+ names an instantly dropped column's clustered field with an empty string:
    only its fixed length is in the file (its NULL-ability and maximum length are in the
    metadata BLOB of the tablespace, which the reader of the records consults)."""
    return Column(f"(dropped {n})", Kind.RAW, fixed_len, hidden=True)


def parse_cfg(data: bytes) -> TableDef:
    """Decode a .cfg file; :class:`CfgError` when it is not one ibdtool can read."""
    return table_from_cfg(read_cfg(data))


def read_cfg(data: bytes) -> Any:
    """The parsed :data:`CfgFile` (every version MySQL and MariaDB write: 1–8)."""
    if len(data) < 4:
        raise CfgError("too short for a .cfg file")
    version = int.from_bytes(data[:4], "big")
    if version not in CFG_VERSIONS:
        raise CfgError(
            f".cfg version {version} is not supported ({CFG_VERSIONS[0]}–{CFG_VERSIONS[-1]} are)"
        )
    try:
        return CfgFile.parse(data)
    except ConstructError as exc:
        raise CfgError(f"damaged .cfg file ({str(exc).splitlines()[0]})") from None
    except (ValueError, OverflowError, MemoryError):
        raise CfgError("damaged .cfg file") from None


def table_indexes(cfg: Any) -> list[Any]:
    """The table's own indexes: MySQL 8 writes its SDI index first (``DICT_SDI``)."""
    return [ix for ix in cfg.indexes if not ix.type & DICT_SDI]


def table_from_cfg(cfg: Any) -> TableDef:
    """A parsed .cfg file → its table definition."""
    cols = {c.name.rstrip("\x00"): _column(c) for c in cfg.columns}
    indexes: list[IndexDef] = []
    n_dropped = 0
    for i, ix in enumerate(table_indexes(cfg)):
        fields = []
        for f in ix.fields:
            fname = f.name.rstrip("\x00")
            if not fname and i == 0:
                n_dropped += 1
                fields.append(IndexField(_dropped_field(n_dropped, f.fixed_len)))
                continue
            if fname not in cols:
                raise CfgError(f"index {ix.name.rstrip(chr(0))} names unknown column {fname}")
            fields.append(IndexField(cols[fname], f.prefix_len))
        clustered = i == 0 and bool(ix.type & DICT_CLUSTERED)
        if clustered and any(f.column.physical_pos is not None for f in fields):
            # MySQL 8.0.29+: the clustered record holds its fields in physical order
            named = {f.column.name for f in fields}
            fields += [IndexField(c) for c in cols.values() if c.version_dropped and
                       c.name not in named]  # fmt: skip
            fields.sort(
                key=lambda f: -1 if f.column.physical_pos is None else f.column.physical_pos
            )
        indexes.append(
            IndexDef(
                ix.name.rstrip("\x00"),
                tuple(fields),
                clustered,
                ix.n_uniq,
                index_id=ix.id,
                root=ix.page_no,
            )
        )
    if not indexes or not indexes[0].clustered:
        raise CfgError("the .cfg file has no clustered index")
    visible = tuple(c for c in cols.values() if not c.hidden)
    versioned = any(c.version_added or c.version_dropped for c in cols.values())
    notes = []
    if any(c.kind is Kind.RAW for c in visible):
        notes.append("DECIMAL precision and scale are not in the .cfg file: shown as hex")
    if any(c.kind is Kind.ENUM for c in visible):
        notes.append("ENUM/SET member names are not in the .cfg file: shown as numbers")
    return TableDef(
        cfg.table_name.rstrip("\x00"),
        visible,
        tuple(indexes),
        "cfg",
        versioned=versioned,
        notes=tuple(notes),
    )
