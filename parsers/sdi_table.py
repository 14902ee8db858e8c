"""A MySQL 8 SDI table object (``dd_object`` of a type-1 SDI record) → a :class:`TableDef`.

Columns carry the data dictionary's type (``dd::enum_column_types``), ``char_length`` (bytes),
precision/scale, ``datetime_precision``, ``collation_id``, ``is_nullable``/``is_unsigned``,
``elements`` (ENUM/SET members, base64) and ``se_private_data``: ``default=<hex>`` or
``default_null=1`` for an instantly added column, and from 8.0.29 ``physical_pos``,
``version_added``, ``version_dropped``. Indexes list their ``elements`` in record order
(``column_opx``, ``length`` in bytes for a prefix) and ``se_private_data`` ``id=…;root=…``.
Virtual generated columns are not stored and are left out.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import replace
from typing import Any

from ibdtool.parsers.charsets import charset_of
from ibdtool.parsers.columns import frac_bytes
from ibdtool.parsers.decimals import decimal_size
from ibdtool.parsers.errors import ParseError
from ibdtool.parsers.tabledef import (
    Column,
    IndexDef,
    IndexField,
    Kind,
    TableDef,
    clustered_layout,
    sys_column,
)

# dd::enum_column_types
_INTS = {2: 1, 3: 2, 10: 3, 4: 4, 9: 8}  # TINY, SHORT, INT24, LONG, LONGLONG
DD_DECIMAL, DD_FLOAT, DD_DOUBLE, DD_TIMESTAMP, DD_DATE, DD_TIME, DD_DATETIME = (
    1,
    5,
    6,
    8,
    11,
    12,
    13,
)
DD_YEAR, DD_NEWDATE, DD_VARCHAR, DD_BIT, DD_TIMESTAMP2, DD_DATETIME2 = 14, 15, 16, 17, 18, 19
DD_TIME2, DD_NEWDECIMAL, DD_ENUM, DD_SET = 20, 21, 22, 23
DD_BLOBS = (24, 25, 26, 27)
DD_VAR_STRING, DD_STRING, DD_GEOMETRY, DD_JSON, DD_VECTOR = 28, 29, 30, 31, 32
DD_HIDDEN_VISIBLE, DD_HIDDEN_SE, DD_HIDDEN_SQL, DD_HIDDEN_USER = 1, 2, 3, 4
DD_INDEX_FULLTEXT, DD_INDEX_SPATIAL = 4, 5
FULL_LENGTH = 4294967295
#: the FULLTEXT common auxiliary tables (fts_<table id>_config, _deleted, …): InnoDB creates
#: their columns NULL-able but for ``value`` (``fts_create_one_common_table``), whatever the
#: SDI says, and their records carry the null bitmap that follows
FTS_COMMON = re.compile(
    r"fts_[0-9a-f]{16}_(config|deleted|deleted_cache|being_deleted|being_deleted_cache)"
)
BINARY_COLLATION = 63


class SdiTableError(ParseError):
    """An SDI table object ibdtool cannot turn into a record layout."""


def private(text: str) -> dict[str, str]:
    """``a=1;b=2;`` → {"a": "1", "b": "2"}."""
    out: dict[str, str] = {}
    for part in (text or "").split(";"):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k] = v
    return out


def _members(col: dict[str, Any]) -> tuple[str, ...]:
    names = []
    for e in sorted(col.get("elements") or [], key=lambda e: e.get("index", 0)):
        try:
            names.append(base64.b64decode(e["name"]).decode("utf-8", "replace"))
        except (binascii.Error, KeyError, TypeError):
            names.append(str(e.get("name")))
    return tuple(names)


def _set_bytes(n: int) -> int:
    size = (n + 7) // 8
    return 8 if size > 4 else size


def _kind_len(col: dict[str, Any]) -> tuple[Kind, int]:
    t = col["type"]
    fsp = int(col.get("datetime_precision") or 0)
    clen = int(col.get("char_length") or 0)
    if t in _INTS:
        return Kind.INT, _INTS[t]
    table: dict[int, tuple[Kind, int]] = {
        DD_FLOAT: (Kind.FLOAT, 4),
        DD_DOUBLE: (Kind.DOUBLE, 8),
        DD_DATE: (Kind.DATE, 3),
        DD_NEWDATE: (Kind.DATE, 3),
        DD_YEAR: (Kind.YEAR, 1),
        DD_DATETIME2: (Kind.DATETIME, 5 + frac_bytes(fsp)),
        DD_TIMESTAMP2: (Kind.TIMESTAMP, 4 + frac_bytes(fsp)),
        DD_TIME2: (Kind.TIME, 3 + frac_bytes(fsp)),
        DD_DATETIME: (Kind.OLD_DATETIME, 8),
        DD_TIMESTAMP: (Kind.OLD_TIMESTAMP, 4),
        DD_TIME: (Kind.OLD_TIME, 3),
        DD_VARCHAR: (Kind.VARCHAR, clen),
        DD_VAR_STRING: (Kind.VARCHAR, clen),
        DD_STRING: (Kind.CHAR, clen),
        DD_GEOMETRY: (Kind.GEOMETRY, clen),
        DD_JSON: (Kind.JSON, clen),
        DD_VECTOR: (Kind.VARCHAR, clen),
    }
    if t in table:
        return table[t]
    if t in DD_BLOBS:
        return Kind.BLOB, clen
    if t == DD_NEWDECIMAL:
        prec, scale = int(col.get("numeric_precision") or 0), int(col.get("numeric_scale") or 0)
        return Kind.DECIMAL, decimal_size(prec, scale)
    if t == DD_BIT:
        return Kind.BIT, (int(col.get("numeric_precision") or 0) + 7) // 8
    if t == DD_ENUM:
        return Kind.ENUM, 1 if len(col.get("elements") or []) < 256 else 2
    if t == DD_SET:
        return Kind.SET, _set_bytes(len(col.get("elements") or []))
    raise SdiTableError(f"column {col.get('name')}: data dictionary type {t} is not supported")


def _column(col: dict[str, Any]) -> Column:
    name = str(col["name"])
    hidden = int(col.get("hidden") or DD_HIDDEN_VISIBLE)
    priv = private(str(col.get("se_private_data") or ""))
    if hidden == DD_HIDDEN_SE and name in ("DB_ROW_ID", "DB_TRX_ID", "DB_ROLL_PTR"):
        base = sys_column(name)
        pos = priv.get("physical_pos")
        return Column(base.name, base.kind, base.length, False, hidden=True,
                      physical_pos=int(pos) if pos else None)  # fmt: skip
    kind, length = _kind_len(col)
    coll = int(col.get("collation_id") or BINARY_COLLATION)
    charset = None
    if kind in (Kind.CHAR, Kind.VARCHAR, Kind.BLOB) and coll != BINARY_COLLATION:
        charset = charset_of(coll)
    instant = "default" in priv or "default_null" in priv
    default = None
    if "default" in priv:
        try:
            default = bytes.fromhex(priv["default"])
        except ValueError:
            raise SdiTableError(f"column {name}: instant default is not hex") from None
    return Column(
        name,
        kind,
        length,
        nullable=bool(col.get("is_nullable")),
        unsigned=bool(col.get("is_unsigned")),
        charset=charset,
        precision=int(col.get("numeric_precision") or 0),
        scale=int(col.get("numeric_scale") or 0),
        fsp=int(col.get("datetime_precision") or 0),
        elements=_members(col) if kind in (Kind.ENUM, Kind.SET) else (),
        hidden=hidden == DD_HIDDEN_SE,
        instant=instant,
        default=default,
        version_added=int(priv.get("version_added", 0)),
        version_dropped=int(priv.get("version_dropped", 0)),
        physical_pos=int(priv["physical_pos"]) if "physical_pos" in priv else None,
    )


def table_from_sdi(obj: dict[str, Any]) -> TableDef:
    """The ``dd_object`` of an SDI table record → its record layout."""
    try:
        raw_cols = list(obj["columns"])
        raw_idx = list(obj["indexes"])
    except (KeyError, TypeError):
        raise SdiTableError("SDI object is not a table") from None
    cols: list[Column | None] = []
    for c in raw_cols:
        cols.append(None if c.get("is_virtual") else _column(c))
    if FTS_COMMON.fullmatch(str(obj.get("name") or "")):
        cols = [
            replace(c, nullable=True) if c is not None and c.name != "value" else c for c in cols
        ]
    indexes: list[IndexDef] = []
    for ix in raw_idx:
        if ix.get("type") in (DD_INDEX_FULLTEXT, DD_INDEX_SPATIAL) and not indexes:
            continue
        if ix.get("type") == DD_INDEX_FULLTEXT:
            continue
        fields: list[IndexField] = []
        for el in ix.get("elements") or []:
            opx = int(el.get("column_opx", -1))
            if not 0 <= opx < len(cols):
                raise SdiTableError(f"index {ix.get('name')}: column {opx} out of range")
            col = cols[opx]
            if col is None:
                continue  # a virtual column: not stored
            length = int(el.get("length", FULL_LENGTH))
            prefix = length if length < col.length and col.kind not in (Kind.SYS,) else 0
            if col.kind in (Kind.INT, Kind.DATE, Kind.DATETIME, Kind.TIMESTAMP, Kind.TIME):
                prefix = 0
            fields.append(IndexField(col, prefix))
        clustered = not indexes
        if clustered and not any(f.column.kind is Kind.SYS for f in fields):
            # the SDI of an FTS auxiliary table lists only the key: lay the record out as
            # InnoDB does (key, DB_TRX_ID, DB_ROLL_PTR, the other columns)
            stored_cols = tuple(c for c in cols if c is not None)
            fields = list(clustered_layout(stored_cols, fields).fields)
        if clustered:
            # FTS_DOC_ID, a column InnoDB adds for a FULLTEXT key, ends the clustered records
            # though the SDI's PRIMARY elements leave it out
            named = {f.column.name for f in fields}
            fields += [
                IndexField(c)
                for c in cols
                if c is not None
                and c.hidden
                and c.kind is not Kind.SYS
                and not c.version_dropped
                and c.name not in named
            ]
        if clustered and any(f.column.physical_pos is not None for f in fields):
            # instantly dropped columns stay in older records but not in the index elements
            named = {f.column.name for f in fields}
            fields += [
                IndexField(c)
                for c in cols
                if c is not None and c.version_dropped and c.name not in named
            ]
            fields.sort(
                key=lambda f: -1 if f.column.physical_pos is None else f.column.physical_pos
            )
        priv = private(str(ix.get("se_private_data") or ""))
        n_key = sum(1 for el in ix.get("elements") or [] if not el.get("hidden"))
        indexes.append(
            IndexDef(
                str(ix.get("name")),
                tuple(fields),
                clustered,
                max(1, n_key),
                index_id=int(priv["id"]) if "id" in priv else None,
                root=int(priv["root"]) if "root" in priv else None,
            )
        )
    if not indexes:
        raise SdiTableError("SDI table has no index")
    stored = [c for c in cols if c is not None]
    visible = tuple(c for c in stored if not c.hidden)
    versioned = any(c.version_added or c.version_dropped for c in stored)
    return TableDef(str(obj.get("name")), visible, tuple(indexes), "sdi", versioned=versioned)
