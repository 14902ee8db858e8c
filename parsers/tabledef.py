"""A table as InnoDB lays its records out: columns, and each index's fields in record order.

Whatever the source of the definition (the MySQL 8 SDI, a ``.cfg`` export file, a ``CREATE
TABLE`` statement, a live server), it becomes a :class:`TableDef`. A record's bytes depend only
on each field's fixed length (0: variable), whether it can be NULL and whether its length may
take two bytes ("big": more than 255 bytes, or a BLOB type) — the same three facts
:mod:`ibdtool.parsers.compact_rec` reads from a zip page's own description — and on the column's
type for the value itself (:mod:`ibdtool.parsers.columns`).

The clustered index holds its key columns, DB_TRX_ID (6 bytes), DB_ROLL_PTR (7), then every
other stored column in table order (DB_ROW_ID, 6 bytes, is the key when the table has no
primary key and no UNIQUE index on NOT NULL columns); a secondary index holds its key columns
then the clustered key columns it does not already hold (:func:`clustered_layout`,
:func:`secondary_layout`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

from ibdtool.parsers.charsets import Charset

DATA_ROW_ID_LEN = 6
DATA_TRX_ID_LEN = 6
DATA_ROLL_PTR_LEN = 7


class Kind(Enum):
    """What a column's bytes mean (the decoders of :mod:`ibdtool.parsers.columns`)."""

    INT = "int"  # TINYINT..BIGINT: big-endian, sign bit flipped when signed
    FLOAT = "float"
    DOUBLE = "double"
    DECIMAL = "decimal"  # binary DECIMAL (5.0+)
    DATE = "date"
    DATETIME = "datetime"  # DATETIME2 (5.6.4+)
    TIMESTAMP = "timestamp"  # TIMESTAMP2
    TIME = "time"  # TIME2
    OLD_DATETIME = "old_datetime"  # 8-byte integer YYYYMMDDhhmmss (before 5.6.4)
    OLD_TIMESTAMP = "old_timestamp"  # 4-byte seconds
    OLD_TIME = "old_time"  # 3-byte integer hhmmss
    YEAR = "year"
    CHAR = "char"  # CHAR / BINARY: padded
    VARCHAR = "varchar"  # VARCHAR / VARBINARY
    BLOB = "blob"  # TEXT / BLOB, may be stored off-page
    ENUM = "enum"
    SET = "set"
    BIT = "bit"
    JSON = "json"  # MySQL binary JSON (MariaDB's JSON is LONGTEXT)
    GEOMETRY = "geometry"
    UUID = "uuid"  # MariaDB 10.7+: 16 bytes, time fields swapped for v1–v5 (columns.py)
    INET4 = "inet4"  # MariaDB 10.10+: 4 bytes, network order
    INET6 = "inet6"  # MariaDB 10.5+: 16 bytes, network order
    SYS = "sys"  # DB_ROW_ID, DB_TRX_ID, DB_ROLL_PTR
    RAW = "raw"  # bytes whose meaning the source does not tell


_BIG_KINDS = frozenset({Kind.BLOB, Kind.JSON, Kind.GEOMETRY})


@dataclass(frozen=True, slots=True)
class Column:
    """One stored column.

    ``length`` is InnoDB's ``col->len``: the fixed size of a fixed-size type, the maximum in
    bytes of a variable one (CHAR: characters × mbmaxlen).
    """

    name: str
    kind: Kind
    length: int
    nullable: bool = True
    unsigned: bool = False
    charset: Charset | None = None  # None: binary
    precision: int = 0
    scale: int = 0
    fsp: int = 0  # fractional seconds digits
    elements: tuple[str, ...] = ()  # ENUM / SET members
    hidden: bool = False  # system column or an instantly dropped one
    #: instantly added (MySQL 8.0.12+, MariaDB 10.3+): value of records written before it was
    instant: bool = False
    default: bytes | None = None  # stored bytes of that value; None: NULL
    version_added: int = 0  # MySQL 8.0.29+ row versions
    version_dropped: int = 0
    physical_pos: int | None = None  # MySQL 8.0.29+: place in the clustered record

    @property
    def mbminlen(self) -> int:
        return self.charset.mbminlen if self.charset else 1

    @property
    def mbmaxlen(self) -> int:
        return self.charset.mbmaxlen if self.charset else 1

    def fixed_size(self, compact: bool) -> int:
        """``dict_col_get_fixed_size``: bytes of a fixed-size field, 0 when variable."""
        if self.kind in (Kind.VARCHAR, Kind.BLOB, Kind.JSON, Kind.GEOMETRY):
            return 0
        if self.kind is Kind.RAW:
            return 0 if self.length <= 0 else self.length
        if self.kind is Kind.CHAR and compact and self.mbminlen != self.mbmaxlen:
            return 0  # multibyte CHAR is variable-length in COMPACT/DYNAMIC
        return self.length

    @property
    def big(self) -> bool:
        """``DATA_BIG_COL``: the length may take two bytes, the field may be external."""
        return self.length > 255 or self.kind in _BIG_KINDS

    def in_version(self, version: int) -> bool:
        """Present in records of MySQL row version ``version``."""
        if self.version_added > version:
            return False
        return not (self.version_dropped and self.version_dropped <= version)


def sys_column(name: str) -> Column:
    size = {"DB_ROW_ID": DATA_ROW_ID_LEN, "DB_TRX_ID": DATA_TRX_ID_LEN}.get(name, DATA_ROLL_PTR_LEN)
    return Column(name, Kind.SYS, size, nullable=False, hidden=True)


@dataclass(frozen=True, slots=True)
class IndexField:
    column: Column
    prefix: int = 0  # bytes of a column prefix; 0: the whole column

    def fixed_len(self, compact: bool) -> int:
        fixed = self.column.fixed_size(compact)
        if self.prefix and fixed > self.prefix:
            return self.prefix
        return fixed


@dataclass(frozen=True, slots=True)
class IndexDef:
    name: str
    fields: tuple[IndexField, ...]  # in record order
    clustered: bool
    n_key: int  # leading fields that make the key (n_uniq)
    index_id: int | None = None
    root: int | None = None
    #: why the fields of this B-tree are not known (a key on an expression or a virtual
    #: column, MariaDB's UNIQUE … USING HASH): it keeps its place among the indexes
    unread: str = ""

    def named(self) -> list[str]:
        return [f.column.name for f in self.fields]


@dataclass(frozen=True, slots=True)
class TableDef:
    name: str
    columns: tuple[Column, ...]  # table order, visible columns (what SELECT * returns)
    indexes: tuple[IndexDef, ...]  # the clustered index first
    source: str  # "sdi", "cfg", "schema", "server"
    #: MySQL 8.0.29+: records carry a row version; records without one are version 0
    versioned: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: a FULLTEXT key: InnoDB adds FTS_DOC_ID_INDEX (the clustered index's next B-tree)
    fulltext: bool = False

    @property
    def clustered(self) -> IndexDef:
        return self.indexes[0]

    def index(self, name: str) -> IndexDef | None:
        for idx in self.indexes:
            if idx.name.lower() == name.lower():
                return idx
        return None


def clustered_layout(
    columns: tuple[Column, ...], key: list[IndexField], name: str = "PRIMARY"
) -> IndexDef:
    """The clustered index of a table whose key is ``key`` (empty: DB_ROW_ID)."""
    fields = list(key) if key else [IndexField(sys_column("DB_ROW_ID"))]
    fields += [IndexField(sys_column("DB_TRX_ID")), IndexField(sys_column("DB_ROLL_PTR"))]
    whole = {f.column.name for f in key if not f.prefix}
    fields += [IndexField(c) for c in columns if c.name not in whole]
    return IndexDef(name, tuple(fields), True, max(1, len(key)))


def secondary_layout(name: str, key: list[IndexField], clustered: IndexDef) -> IndexDef:
    """A secondary index: its key fields, then the clustered key fields it lacks."""
    fields = list(key)
    have = {f.column.name for f in key if not f.prefix}
    for f in clustered.fields[: clustered.n_key]:
        if f.column.name not in have:
            fields.append(replace(f, prefix=f.prefix))
    return IndexDef(name, tuple(fields), False, len(fields))
