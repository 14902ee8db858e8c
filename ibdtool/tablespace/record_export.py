"""Rows of a tablespace as a file a server loads back: CSV, TSV (for ``LOAD DATA``) or SQL.

``records --format csv|tsv|sql`` moves the rows out of a tablespace the server cannot open.
Each format is declared once here, with the statement that reads it back:

* **sql**: ``SET NAMES utf8mb4; SET time_zone = '+00:00';`` then ``INSERT INTO `t` (cols)
  VALUES (…), (…);`` of at most :data:`SQL_BATCH_BYTES` each. Strings are quoted with the
  server's escapes, binary strings and geometries are ``0x…`` literals, numbers and BIT values
  bare.
* **tsv**: a header line of column names, then one line per row, fields separated by a tab;
  ``\\N`` is NULL and ``\\\\``, ``\\t``, ``\\n``, ``\\r``, ``\\0`` escape their bytes — the
  defaults of ``LOAD DATA INFILE 'f' INTO TABLE t CHARACTER SET binary IGNORE 1 LINES``.
* **csv**: a header line, then every value in double quotes (``""`` for a quote) and NULL as
  the bare word ``NULL``: ``LOAD DATA INFILE 'f' INTO TABLE t CHARACTER SET binary FIELDS
  TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"' ESCAPED BY '' IGNORE 1 LINES``.

Values are written in each column's own bytes (text in its character set, binary strings and
BIT values as stored), so ``CHARACTER SET binary`` loads them without conversion; TIMESTAMP
values are in UTC (``SET time_zone = '+00:00'`` before loading). Delete-marked records are not
rows of the table and are left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ibdtool.parsers.tabledef import Column, Kind

EXPORT_FORMATS = ("csv", "tsv", "sql")
SQL_BATCH_BYTES = 1 << 20

_NUMERIC = frozenset({Kind.INT, Kind.FLOAT, Kind.DOUBLE, Kind.DECIMAL, Kind.YEAR, Kind.SYS})


def _is_binary(col: Column) -> bool:
    """Columns whose values the reader renders ``0x…`` (bytes with no character set)."""
    if col.kind in (Kind.GEOMETRY, Kind.RAW):
        return True
    return col.kind in (Kind.CHAR, Kind.VARCHAR, Kind.BLOB) and (
        col.charset is None or col.charset.codec is None
    )


def column_bytes(col: Column, value: Any) -> bytes | None:
    """A decoded value back in the column's own bytes (None: NULL)."""
    if value is None:
        return None
    if _is_binary(col) and isinstance(value, str) and value.startswith("0x"):
        return bytes.fromhex(value[2:])
    if col.kind is Kind.BIT and isinstance(value, int):
        return value.to_bytes(max(1, col.length), "big")
    if isinstance(value, float):
        return repr(value).encode()
    text = str(value)
    if col.charset is not None and col.charset.codec is not None:
        return text.encode(col.charset.codec, errors="replace")
    return text.encode("utf-8")


def _quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


_SQL_ESCAPES = {0: b"\\0", 10: b"\\n", 13: b"\\r", 26: b"\\Z", 39: b"\\'", 92: b"\\\\"}
_TSV_ESCAPES = {0: b"\\0", 9: b"\\t", 10: b"\\n", 13: b"\\r", 92: b"\\\\"}


_SQL_SPECIAL = re.compile(rb"[\x00\n\r\x1a'\\]")
_TSV_SPECIAL = re.compile(rb"[\x00\t\n\r\\]")


def _escape(raw: bytes, table: dict[int, bytes]) -> bytes:
    special = _SQL_SPECIAL if table is _SQL_ESCAPES else _TSV_SPECIAL
    if special.search(raw) is None:
        return raw
    return b"".join(table.get(b, bytes((b,))) for b in raw)


def _encoder(col: Column) -> Callable[[Any], bytes]:
    """:func:`column_bytes` of one column, with the dispatch done once."""
    if _is_binary(col) or col.kind is Kind.BIT:
        return lambda value: column_bytes(col, value)  # type: ignore[return-value]
    codec = col.charset.codec if col.charset is not None and col.charset.codec else "utf-8"

    def enc(value: Any) -> bytes:
        if isinstance(value, float):
            return repr(value).encode()
        return str(value).encode(codec, errors="replace")

    return enc


def row_writer(fmt: str, columns: list[Column]) -> Callable[[list[Any]], bytes]:
    """``values`` (in ``columns`` order) → the row in CSV or TSV, as :func:`export_row`."""
    encs = [_encoder(c) for c in columns]
    sep = b"\t" if fmt == "tsv" else b","

    def tsv(values: list[Any]) -> bytes:
        out = []
        for enc, v in zip(encs, values, strict=True):
            if v is None:
                out.append(b"\\N")
                continue
            raw = enc(v)
            out.append(raw if _TSV_SPECIAL.search(raw) is None else _escape(raw, _TSV_ESCAPES))
        return sep.join(out) + b"\n"

    def csv(values: list[Any]) -> bytes:
        out = []
        for enc, v in zip(encs, values, strict=True):
            out.append(b"NULL" if v is None else b'"' + enc(v).replace(b'"', b'""') + b'"')
        return sep.join(out) + b"\n"

    return tsv if fmt == "tsv" else csv


def tuple_writer(columns: list[Column]) -> Callable[[list[Any]], bytes]:
    """``values`` (in ``columns`` order) → ``(…, …)`` of an INSERT, as :func:`sql_literal`."""
    lits = [literal_writer(c) for c in columns]
    return lambda values: (
        b"(" + b", ".join([lit(v) for lit, v in zip(lits, values, strict=True)]) + b")"
    )


def sql_literal(col: Column, value: Any) -> bytes:
    return literal_writer(col)(value)


def literal_writer(col: Column) -> Callable[[Any], bytes]:
    """A value of ``col`` → its SQL literal: numbers and BIT values bare, binary strings and
    geometries ``0x…``, the rest quoted with the server's escapes (text in UTF-8: ``SET NAMES
    utf8mb4``, the server converts)."""
    if col.kind in _NUMERIC:

        def number(value: Any) -> bytes:
            if value is None:
                return b"NULL"
            return repr(value).encode() if isinstance(value, float) else str(value).encode()

        return number
    binary = _is_binary(col)
    text = not binary and col.charset is not None and col.charset.codec is not None

    def literal(value: Any) -> bytes:
        if value is None:
            return b"NULL"
        if col.kind is Kind.BIT and isinstance(value, int):
            return str(value).encode()
        if text and type(value) is str:
            raw = value.encode("utf-8")
        else:
            raw = column_bytes(col, value)  # type: ignore[assignment]
            if binary:
                return b"0x" + raw.hex().encode() if raw else b"''"
            if text:
                raw = str(value).encode("utf-8")
        if _SQL_SPECIAL.search(raw) is None:
            return b"'" + raw + b"'"
        return b"'" + _escape(raw, _SQL_ESCAPES) + b"'"

    return literal


def export_header(fmt: str, columns: list[Column]) -> bytes:
    if fmt == "sql":
        return b"SET NAMES utf8mb4;\nSET time_zone = '+00:00';\n"
    names = [c.name.encode("utf-8") for c in columns]
    if fmt == "tsv":
        return b"\t".join(_escape(n, _TSV_ESCAPES) for n in names) + b"\n"
    return b",".join(b'"' + n.replace(b'"', b'""') + b'"' for n in names) + b"\n"


def export_row(fmt: str, columns: list[Column], fields: dict[str, Any]) -> bytes:
    """One row in CSV or TSV (with its newline)."""
    return row_writer(fmt, columns)([fields.get(c.name) for c in columns])


def sql_inserts(
    table: str, columns: list[Column], rows: Iterator[dict[str, Any]]
) -> Iterator[bytes]:
    """``INSERT`` statements of at most :data:`SQL_BATCH_BYTES` each."""
    tup = tuple_writer(columns)
    return sql_statements(table, columns, ([tup([f.get(c.name) for c in columns])] for f in rows))


def sql_statements(
    table: str, columns: list[Column], tuples: Iterable[list[bytes]]
) -> Iterator[bytes]:
    """The ``INSERT`` statements of ``tuples`` (lists of :func:`tuple_writer`'s rows, in
    order), cut where :func:`sql_inserts` cuts them: at :data:`SQL_BATCH_BYTES`."""
    head = (
        f"INSERT INTO {_quote_ident(table)} ("
        + ", ".join(_quote_ident(c.name) for c in columns)
        + ") VALUES\n"
    ).encode("utf-8")
    batch: list[bytes] = []
    size = 0
    for block in tuples:
        for tup in block:
            batch.append(tup)
            size += len(tup) + 2
            if size >= SQL_BATCH_BYTES:
                yield head + b",\n".join(batch) + b";\n"
                batch, size = [], 0
    if batch:
        yield head + b",\n".join(batch) + b";\n"


def load_data_sql(fmt: str, table: str, columns: list[Column], path: str = "FILE") -> str:
    """The ``LOAD DATA`` statement that reads a CSV or TSV export of ``table`` back."""
    targets, sets = [], []
    for c in columns:
        if c.kind is Kind.JSON:  # JSON refuses binary strings: read it as utf8mb4 text
            var = "@" + _quote_ident(c.name)
            targets.append(var)
            sets.append(f"{_quote_ident(c.name)} = CONVERT({var} USING utf8mb4)")
        else:
            targets.append(_quote_ident(c.name))
    fields = (
        "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '' "
        if fmt == "csv"
        else ""
    )
    text = (
        f"LOAD DATA INFILE '{path}' INTO TABLE {_quote_ident(table)} CHARACTER SET binary "
        f"{fields}IGNORE 1 LINES ({', '.join(targets)})"
    )
    return text + (" SET " + ", ".join(sets) if sets else "")


#: codecs in which the bytes of ``"``, ``'``, ``\``, tab, CR, LF and NUL come only from those
#: characters, so a line can be escaped as text and encoded whole
_LINE_CODECS = frozenset(
    {"utf-8", "utf8", "ascii", "cp1252", "latin-1", "latin1", "iso8859_1", "iso8859_2",
     "iso8859_9", "iso8859_13", "cp1250", "cp1251", "cp1256", "cp1257", "koi8_r", "koi8_u"}
)  # fmt: skip
_BARE = frozenset({Kind.INT, Kind.DECIMAL, Kind.YEAR, Kind.SYS})
_QUOTED_PLAIN = frozenset({Kind.DATE, Kind.DATETIME, Kind.TIMESTAMP, Kind.TIME})
_TEXT_KINDS = (Kind.CHAR, Kind.VARCHAR, Kind.BLOB)
_PAGE_WRITERS: dict[tuple[str, tuple[Column, ...]], Any] = {}


def page_writer(fmt: str, columns: list[Column]) -> Callable[[list[tuple[Any, ...]]], Any] | None:
    """Rows of values (``columns`` order) → the block :func:`row_writer` (CSV, TSV: bytes) or
    :func:`tuple_writer` (SQL: a list of tuples) would make of them, written by code made once
    for these columns; the function answers None for rows with a value that needs escaping
    (the caller writes those rows one by one). None when a column's values are not all plain
    numbers and text in one character set."""
    key = (fmt, tuple(columns))
    if key in _PAGE_WRITERS:
        return _PAGE_WRITERS[key]
    made = _make_page_writer(fmt, columns)
    _PAGE_WRITERS[key] = made
    return made


def _make_page_writer(fmt: str, columns: list[Column]) -> Any:
    codecs = set()
    bare: list[bool] = []
    for col in columns:
        if col.kind in _BARE:
            bare.append(True)
        elif col.kind in _QUOTED_PLAIN and col.charset is None:
            bare.append(False)
        elif col.kind in _TEXT_KINDS and not _is_binary(col):
            assert col.charset is not None and col.charset.codec is not None
            codecs.add(col.charset.codec)
            bare.append(False)
        else:
            return None
    if fmt == "sql":
        codec = "utf-8"  # SET NAMES utf8mb4
    elif len(codecs) > 1:
        return None
    else:
        codec = codecs.pop() if codecs else "utf-8"
    if codec.lower().replace("-", "_") not in {c.replace("-", "_") for c in _LINE_CODECS}:
        return None
    vs = [f"v{i}" for i in range(len(columns))]
    checked = [v for v, b in zip(vs, bare, strict=True) if not b or fmt != "sql"]
    pieces = []
    for v, b in zip(vs, bare, strict=True):
        if fmt == "sql":
            pieces.append(f"('NULL' if {v} is None else str({v}))" if b else
                          f"('NULL' if {v} is None else \"'\" + {v} + \"'\")")  # fmt: skip
        elif fmt == "tsv":
            pieces.append(f"('\\\\N' if {v} is None else str({v}))")
        else:
            pieces.append(f"('NULL' if {v} is None else '\"' + str({v}) + '\"')")
    sep = {"sql": " + ', ' + ", "tsv": " + '\\t' + ", "csv": " + ',' + "}[fmt]
    special = {"sql": "\\x00\\n\\r\\x1a'\\\\", "tsv": "\\x00\\t\\n\\r\\\\", "csv": '"'}[fmt]
    unpack = "(" + "".join(v + ", " for v in vs) + ")"
    chk = "".join(f"{{{v} or ''}}" for v in checked)
    line = sep.join(pieces)
    src = (
        "def write(rows):\n"
        f"    chk = ''.join([f\"{chk}\" for {unpack} in rows])\n"
        f"    if _special.search(chk):\n"
        "        return None\n"
    )
    if fmt == "sql":
        src += f"    return [('(' + {line} + ')').encode('utf-8') for {unpack} in rows]\n"
    else:
        src += (
            f"    return ''.join([{line} + '\\n' for {unpack} in rows])"
            f".encode({codec!r}, 'replace')\n"
        )
    ns: dict[str, Any] = {"_special": re.compile(f"[{special}]")}
    exec(compile(src, "<export-rows>", "exec"), ns)  # our own generated code
    ns["write"].source = src
    return ns["write"]
