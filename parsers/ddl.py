"""``CREATE TABLE …`` (as ``SHOW CREATE TABLE`` prints it) → a :class:`TableDef`.

Only what InnoDB's record layout needs is read: each column's type, length, charset, NULL-ability
and ENUM/SET members (virtual generated columns are not stored and are left out), the PRIMARY
KEY and the other keys with their column prefixes, and the table's default charset. Without a
primary key the first UNIQUE key on NOT NULL columns is the clustered index, as InnoDB chooses;
without one either, the hidden DB_ROW_ID is. FULLTEXT and SPATIAL keys are skipped (a FULLTEXT
key adds InnoDB's hidden FTS_DOC_ID column at the end of the clustered records). Temporal
columns are taken in their MySQL 5.6.4+ formats.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Generator
from dataclasses import dataclass, replace

from ibdtool.parsers.charsets import Charset, charset_by_name, collation_charset_name
from ibdtool.parsers.columns import frac_bytes
from ibdtool.parsers.decimals import decimal_size
from ibdtool.parsers.errors import ParseError
from ibdtool.parsers.tabledef import (
    Column,
    IndexField,
    Kind,
    TableDef,
    clustered_layout,
    secondary_layout,
)

#: one token. Runs of ordinary characters are taken whole and possessively (``++``, ``*+``),
#: so a 20 MB string literal costs one pass and no backtracking state per character; a quote,
#: backquote or comment that never closes is ``open`` and ends the statement with an error
#: (trying it again at every later character would take quadratic time).
_TOKEN = re.compile(
    r"""\s*+(?:
      (?P<comment>/\*(?:[^*]++|\*(?!/))*+\*/|--[^\n]*+|\#[^\n]*+)
    |       (?P<bq>`(?:[^`]++|``)*+`)
    | (?P<str>'(?:[^'\\]++|\\.|'')*+'|"(?:[^"\\]++|\\.|"")*+")
    | (?P<num>\d++(?:\.\d++)?)
    | (?P<word>[A-Za-z_$@#][\w$@#]*+)
    | (?P<punct>[(),;=.])
    | (?P<open>['"`]|/\*)
    | (?P<other>\S)
    )""",
    re.VERBOSE | re.DOTALL,
)
#: a CREATE TABLE of 4,096 columns, each an ENUM of a few members, is far below this
MAX_STATEMENT_TOKENS = 2_000_000
#: parentheses in a DEFAULT or generated column's expression
MAX_NESTING = 200
#: the rest of a statement that is not read: everything up to its ``;`` (strings, names and
#: comments, which may hold a ``;``, taken whole); an unclosed one stops it, for _TOKEN to see
_REST = re.compile(
    r"""(?:[^;'"`/\#-]++
      | '(?:[^'\\]++|\\.|'')*+' | "(?:[^"\\]++|\\.|"")*+" | `(?:[^`]++|``)*+`
      | /\*(?:[^*]++|\*(?!/))*+\*/ | --[^\n]*+ | \#[^\n]*+
      | /(?!\*) | -(?!-)
    )*+""",
    re.VERBOSE | re.DOTALL,
)
#: the largest length, precision or prefix a column type takes (BLOB(4294967295))
MAX_NUMBER = (1 << 32) - 1
#: InnoDB takes at most 1017 columns (MySQL) or 4096 (MariaDB's table limit): more is not a
#: table a server wrote
MAX_COLUMNS = 4096
#: what MySQL and MariaDB accept: VARCHAR(65535) bytes, CHAR(255), DECIMAL(65, 38), TIME(6),
#: BIT(64), FLOAT(255, 30) (the old M,D form)
_TYPE_LIMITS = {"varchar": 65535, "varbinary": 65535, "varcharacter": 65535, "char": 255,
                "character": 255, "binary": 255, "bit": 64, "float": 255, "double": 255,
                "real": 255, "decimal": 65, "numeric": 65, "dec": 65, "fixed": 65,
                "datetime": 6, "timestamp": 6, "time": 6}  # fmt: skip

_INTS = {"tinyint": 1, "bool": 1, "boolean": 1, "smallint": 2, "mediumint": 3, "int": 4,
         "integer": 4, "bigint": 8}  # fmt: skip
_BLOBS = {"tinyblob", "blob", "mediumblob", "longblob"}
_TEXTS = {"tinytext", "text", "mediumtext", "longtext", "long"}
_GEOMS = {"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring",
          "multipolygon", "geometrycollection", "geomcollection"}  # fmt: skip
#: other spellings of the types below (MySQL's "Data Type Storage" aliases)
_TYPE_ALIASES = {"int1": "tinyint", "int2": "smallint", "int3": "mediumint", "middleint":
                 "mediumint", "int4": "int", "int8": "bigint", "float4": "float", "float8":
                 "double", "nvarchar": "varchar", "varchar2": "varchar", "raw": "varbinary",
                 "clob": "longtext", "number": "decimal"}  # fmt: skip
_FIXED_BINARY = {"inet6": (Kind.INET6, 16), "uuid": (Kind.UUID, 16), "inet4": (Kind.INET4, 4)}
_KEY_WORDS = {"primary", "unique", "key", "index", "fulltext", "spatial", "constraint",
              "foreign", "check", "period", "system"}  # fmt: skip


_UNREAD_KEYS = ("fulltext", "spatial")  # no B-tree of their own in the record layout
FTS_DOC_ID = Column("FTS_DOC_ID", Kind.INT, 8, nullable=False, unsigned=True, hidden=True)


class DdlError(ParseError):
    """A CREATE TABLE statement ibdtool cannot read."""


@dataclass
class _Tok:
    kind: str
    text: str

    @property
    def word(self) -> str:
        return self.text.lower() if self.kind == "word" else ""


def _tokens(sql: str) -> Generator[_Tok, bool | None, None]:
    """The tokens of ``sql``, one at a time (a dump's INSERT data is never held as tokens).
    Sending True after a token skips the rest of its statement in one regex pass (up to the
    next ``;`` outside quotes and comments), which is what a dump's data costs then."""
    pos = 0
    while pos < len(sql):
        m = _TOKEN.match(sql, pos)
        if m is None or m.end() == pos:
            if sql[pos:].strip() == "":
                break
            raise DdlError(f"cannot read the statement at {sql[pos : pos + 20]!r}")
        pos = m.end()
        kind = m.lastgroup or "other"
        text = m.group(kind)
        if kind == "comment":
            continue
        if kind == "open":
            what = {"/*": "comment", "`": "quoted name"}.get(text, "string")
            raise DdlError(f"a {what} opened at character {m.start(kind)} never closes")
        if kind == "bq":
            tok = _Tok("name", text[1:-1].replace("``", "`"))
        elif kind == "str":
            q = text[0]
            body = text[1:-1].replace(q + q, q)
            body = re.sub(
                r"\\(.)",
                lambda x: {"n": "\n", "t": "\t", "0": "\0"}.get(x.group(1), x.group(1)),
                body,
            )
            tok = _Tok("str", body)
        else:
            tok = _Tok(kind, text)
        if (yield tok):
            rest = _REST.match(sql, pos)
            assert rest is not None  # it matches the empty string
            pos = rest.end()


class _Parser:
    def __init__(self, toks: list[_Tok]) -> None:
        self.toks = toks
        self.i = 0

    def peek(self, k: int = 0) -> _Tok:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else _Tok("eof", "")

    def take(self) -> _Tok:
        t = self.peek()
        if t.kind == "eof":
            raise DdlError("the statement ends too early")
        self.i += 1
        return t

    def expect(self, text: str) -> None:
        t = self.take()
        if t.text.lower() != text:
            raise DdlError(f"expected {text!r}, found {t.text!r}")

    def accept(self, *words: str) -> bool:
        if self.peek().text.lower() == words[0] and all(
            self.peek(k).text.lower() == w for k, w in enumerate(words)
        ):
            self.i += len(words)
            return True
        return False

    def name(self) -> str:
        t = self.take()
        if t.kind not in ("name", "word", "str"):
            raise DdlError(f"expected a name, found {t.text!r}")
        return t.text

    def skip_parens(self) -> list[_Tok]:
        """Skip a balanced ( … ) group; the tokens inside."""
        self.expect("(")
        depth, start = 1, self.i
        while depth:
            t = self.take()
            if t.text == "(":
                depth += 1
                if depth > MAX_NESTING:
                    raise DdlError(f"parentheses nested deeper than {MAX_NESTING}")
            elif t.text == ")":
                depth -= 1
        return self.toks[start : self.i - 1]

    def args(self) -> list[_Tok]:
        if self.peek().text != "(":
            return []
        return [t for t in self.skip_parens() if t.text != ","]

    def skip_expr(self) -> None:
        """Skip one DEFAULT/ON UPDATE value: a literal, a word (with call parens), or ( … )."""
        if self.peek().text == "(":
            self.skip_parens()
            return
        self.take()
        if self.peek().text == "(":
            self.skip_parens()


def _number(text: str, what: str) -> int:
    """A length or precision token as an int, at most :data:`MAX_NUMBER` (``10`` followed by
    5,000 zeros is an error, not an OverflowError or a huge allocation later)."""
    whole = text.split(".")[0]
    if len(whole) > len(str(MAX_NUMBER)) or int(whole) > MAX_NUMBER:
        shown = whole if len(whole) <= 20 else f"a {len(whole)}-digit number"
        raise DdlError(f"{what}: {shown} is larger than any length a server takes")
    return int(whole)


def _charset(name: str | None, collation: str | None, default: Charset) -> Charset:
    if collation and not name:
        name = collation_charset_name(collation)
    if not name:
        return default
    cs = charset_by_name(name)
    if cs is None:
        raise DdlError(f"unknown character set {name}")
    return cs


def _column(
    p: _Parser, name: str, table_cs: Charset, inline: list[str] | None = None
) -> Column | None:
    """One column definition; ``inline`` gets "primary" / "unique" for a key written on the
    column itself (``id INT PRIMARY KEY``)."""
    tname = p.take().word
    if not tname:
        raise DdlError(f"column {name}: no type")
    if tname in ("double", "char", "long") and p.peek().word in (
        "precision",
        "varying",
        "varchar",
        "varbinary",
    ):
        nxt = p.take().word
        if tname == "long":  # LONG VARCHAR, LONG VARBINARY: MEDIUMTEXT, MEDIUMBLOB
            nxt = {"varchar": "mediumtext", "varbinary": "mediumblob"}.get(nxt, nxt)
        tname = {"varying": "varchar", "precision": "double"}.get(nxt, nxt)
    if tname in ("national", "nchar"):
        tname = "char" if tname == "nchar" else p.take().word
        if tname in ("char", "character") and p.peek().word == "varying":
            p.take()
            tname = "varchar"
    tname = _TYPE_ALIASES.get(tname, tname)
    args = p.args()
    nums = [_number(t.text, f"column {name}") for t in args if t.kind == "num"]
    limit = _TYPE_LIMITS.get(tname)
    if limit is not None and nums and nums[0] > limit:
        raise DdlError(f"column {name}: {tname}({nums[0]}) is more than the {limit} it can be")
    if (
        len(nums) > 1
        and tname in ("decimal", "numeric", "dec", "fixed")
        and nums[1] > min(38, nums[0])
    ):
        raise DdlError(f"column {name}: {tname}({nums[0]},{nums[1]}): scale out of range")
    members = tuple(t.text for t in args if t.kind == "str")
    unsigned = False
    nullable = True
    cs_name = coll = None
    virtual = False
    while p.peek().kind != "eof" and p.peek().text not in (",", ")"):
        w = p.take().word
        if w in ("unsigned", "zerofill"):
            unsigned = True
        elif w == "signed":
            pass
        elif w in ("character", "charset"):
            if w == "character":
                p.expect("set")
            cs_name = p.name()
        elif w == "collate":
            coll = p.name()
        elif w == "binary":
            pass
        elif w == "not":
            p.expect("null")
            nullable = False
        elif w == "null":
            nullable = True
        elif w == "default":
            p.skip_expr()
        elif w == "on":
            p.expect("update")
            p.skip_expr()  # ON UPDATE CURRENT_TIMESTAMP
        elif w in ("comment",):
            p.take()
        elif w == "generated":
            p.expect("always")
        elif w == "as":
            if p.peek().word == "row":  # MariaDB: AS ROW START / END (system versioning)
                p.take()
                p.take()
            else:
                p.skip_parens()
                virtual = True
        elif w in ("stored", "persistent"):
            virtual = False
        elif w == "virtual":
            virtual = True
        elif w == "check":
            p.skip_parens()
        elif w == "references":
            p.name()
            if p.peek().text == ".":
                p.take()
                p.name()
            p.args()
            _skip_reference_options(p)
        elif w == "primary" or w == "unique":
            p.accept("key") or p.accept("index")
            if w == "primary":
                nullable = False
            if inline is not None:
                inline.append(w)
        elif w == "key" and inline is not None:  # "KEY" alone on a column: PRIMARY KEY
            nullable = False
            inline.append("primary")
        elif w == "compressed":  # MariaDB column compression: the values are zlib streams
            raise DdlError(f"column {name}: COMPRESSED columns are not supported")
        elif w == "srid":
            p.take()
        # AUTO_INCREMENT, INVISIBLE, VISIBLE, COLUMN_FORMAT x, STORAGE x … change no layout
    if virtual:
        return None
    if tname == "serial":
        tname, unsigned, nullable = "bigint", True, False
    text_cs = _charset(cs_name, coll, table_cs)  # BINARY: a _bin collation, same charset
    if tname in _INTS:
        return Column(name, Kind.INT, _INTS[tname], nullable, unsigned)
    if tname in ("float", "double", "real"):
        if tname == "float" and not (nums and nums[0] > 24):
            return Column(name, Kind.FLOAT, 4, nullable, unsigned)
        return Column(name, Kind.DOUBLE, 8, nullable, unsigned)
    if tname in ("decimal", "numeric", "dec", "fixed"):
        prec = nums[0] if nums else 10
        scale = nums[1] if len(nums) > 1 else 0
        return Column(name, Kind.DECIMAL, decimal_size(prec, scale), nullable, unsigned,
                      precision=prec, scale=scale)  # fmt: skip
    fsp = nums[0] if nums else 0
    temporal = {
        "date": (Kind.DATE, 3),
        "datetime": (Kind.DATETIME, 5 + frac_bytes(fsp)),
        "timestamp": (Kind.TIMESTAMP, 4 + frac_bytes(fsp)),
        "time": (Kind.TIME, 3 + frac_bytes(fsp)),
        "year": (Kind.YEAR, 1),
    }
    if tname in temporal:
        kind, size = temporal[tname]
        return Column(name, kind, size, nullable, fsp=fsp if kind is not Kind.DATE else 0)
    if tname == "bit":
        bits = nums[0] if nums else 1
        return Column(name, Kind.BIT, (bits + 7) // 8, nullable)
    if tname == "enum":
        return Column(name, Kind.ENUM, 1 if len(members) < 256 else 2, nullable, elements=members)
    if tname == "set":
        size = (len(members) + 7) // 8
        return Column(name, Kind.SET, 8 if size > 4 else size, nullable, elements=members)
    if tname in ("char", "character", "binary"):
        n = nums[0] if nums else 1
        cs = None if tname == "binary" or text_cs.codec is None else text_cs
        return Column(name, Kind.CHAR, n * (cs.mbmaxlen if cs else 1), nullable, charset=cs)
    if tname in ("varchar", "varbinary", "varcharacter"):
        if not nums:
            raise DdlError(f"column {name}: {tname} needs a length")
        cs = None if tname == "varbinary" or text_cs.codec is None else text_cs
        return Column(
            name, Kind.VARCHAR, nums[0] * (cs.mbmaxlen if cs else 1), nullable, charset=cs
        )
    if tname in _TEXTS:
        cs = None if text_cs.codec is None else text_cs
        return Column(name, Kind.BLOB, 1 << 16, nullable, charset=cs)
    if tname in _BLOBS:
        return Column(name, Kind.BLOB, 1 << 16, nullable)
    if tname == "json":
        return Column(name, Kind.JSON, 1 << 16, nullable)
    if tname in _GEOMS:
        return Column(name, Kind.GEOMETRY, 1 << 16, nullable)
    if tname in _FIXED_BINARY:
        kind, size = _FIXED_BINARY[tname]
        return Column(name, kind, size, nullable)
    raise DdlError(f"column {name}: type {tname} is not supported")


def _skip_reference_options(p: _Parser) -> None:
    """``MATCH FULL|PARTIAL|SIMPLE`` and ``ON DELETE|UPDATE <action>`` after REFERENCES."""
    while True:
        if p.accept("match"):
            p.take()
        elif p.peek().word == "on" and p.peek(1).word in ("delete", "update"):
            p.take()
            p.take()
            action = p.take().word
            if action in ("set", "no"):
                p.take()  # SET NULL, SET DEFAULT, NO ACTION
        else:
            return


class _UnreadKey(Exception):
    """A key with no B-tree of its own in the record layout this module builds."""


def _key_parts(
    p: _Parser, cols: dict[str, Column], virtual: frozenset[str] = frozenset()
) -> list[IndexField]:
    p.expect("(")
    parts: list[IndexField] = []
    unread = ""
    while True:
        if p.peek().text == "(":  # a functional key part: a hidden virtual column
            p.skip_parens()
            while p.peek().text not in (",", ")"):
                p.take()
            unread = "on an expression"
            if p.take().text == ")":
                raise _UnreadKey(unread)
            continue
        cname = p.name()
        col = cols.get(cname) or next(
            (c for k, c in cols.items() if k.lower() == cname.lower()), None
        )
        if col is None and cname.lower() in virtual:
            unread = f"on the virtual column {cname}"
            while p.peek().text not in (",", ")"):
                p.take()
            if p.take().text == ")":
                raise _UnreadKey(unread)
            continue
        if col is None:
            raise DdlError(f"key names unknown column {cname}")
        prefix = 0
        if p.peek().text == "(":
            arg = p.args()
            if len(arg) != 1 or arg[0].kind != "num":
                raise DdlError(f"key part {cname}: a prefix length is one number")
            prefix = _number(arg[0].text, f"key part {cname}") * col.mbmaxlen
        while p.peek().text not in (",", ")"):
            p.take()  # ASC / DESC
        parts.append(IndexField(col, prefix))
        if p.take().text == ")":
            if unread:
                raise _UnreadKey(unread)
            return parts


def parse_create_table(sql: str) -> TableDef:
    """Read a CREATE TABLE statement; :class:`DdlError` says what it could not read."""
    try:
        return _create_table(sql)
    except (IndexError, ValueError) as exc:
        if isinstance(exc, DdlError):
            raise
        raise DdlError(f"cannot read the statement ({exc})") from None


def parse_create_tables(sql: str) -> tuple[list[TableDef], dict[str, str]]:
    """Every ``CREATE TABLE`` in ``sql`` — ``SHOW CREATE TABLE`` output, a ``mysqldump
    --no-data`` file — in order, and for each one that could not be read its table's name →
    why; other statements (``SET``, ``DROP TABLE``, views…) are skipped."""
    out: list[TableDef] = []
    failed: dict[str, str] = {}
    statement: list[_Tok] = []
    skipping = False  # a statement that is not CREATE TABLE: its tokens are not kept
    depth = 0
    lexer = _tokens(sql)
    skip = None
    while True:
        try:
            tok = lexer.send(skip)
        except StopIteration:
            tok = _Tok("eof", "")
        skip = None
        if tok.kind != "eof" and not (tok.kind == "punct" and tok.text == ";"):
            if skipping:
                continue
            statement.append(tok)
            depth += (tok.text == "(") - (tok.text == ")")
            why = None
            if len(statement) == 4 and not _creates_table(statement):
                skipping, statement = True, []
            elif len(statement) > MAX_STATEMENT_TOKENS:
                why = f"more than {MAX_STATEMENT_TOKENS:,} tokens: not a table a server wrote"
            elif depth > MAX_NESTING + 1:  # +1: the column list's own
                why = f"parentheses nested deeper than {MAX_NESTING}"
            if why is not None:
                failed[_statement_table(statement)] = why
                skipping, statement = True, []
            skip = skipping or None
            continue
        if statement and _creates_table(statement):
            try:
                out.append(_from_tokens(statement))
            except (IndexError, ValueError) as exc:
                failed[_statement_table(statement)] = str(exc)
        statement, skipping, depth = [], False, 0
        if tok.kind == "eof":
            return out, failed


def _creates_table(statement: list[_Tok]) -> bool:
    words = [t.word for t in statement[:4]]
    return words[:1] == ["create"] and "table" in words


def _statement_table(toks: list[_Tok]) -> str:
    """The table a CREATE TABLE statement names (best effort, for messages and matching)."""
    skip = ("create", "or", "replace", "temporary", "table", "if", "not", "exists")
    i = 0
    while i < len(toks) and toks[i].word in skip:
        i += 1
    if i + 2 < len(toks) and toks[i + 1].text == ".":
        i += 2
    return toks[i].text if i < len(toks) else "?"


def _create_table(sql: str) -> TableDef:
    toks = list(itertools.islice(_tokens(sql), MAX_STATEMENT_TOKENS + 1))
    if len(toks) > MAX_STATEMENT_TOKENS:
        raise DdlError(f"more than {MAX_STATEMENT_TOKENS:,} tokens: not a table a server wrote")
    return _from_tokens(toks)


def _from_tokens(toks: list[_Tok]) -> TableDef:
    p = _Parser(toks)
    p.expect("create")
    p.accept("or", "replace")
    p.accept("temporary")
    p.expect("table")
    p.accept("if", "not", "exists")
    name = p.name()
    if p.peek().text == ".":
        p.take()
        name = p.name()
    body_start = p.i
    p.skip_parens()  # first find the table options (its default charset)
    body_end = p.i
    table_cs_name = table_coll = None
    while p.peek().kind != "eof":
        w = p.take().word
        if w in ("charset", "character"):
            if w == "character":
                p.accept("set")
            p.accept("=")
            table_cs_name = p.name()
        elif w == "collate":
            p.accept("=")
            table_coll = p.name()
    utf8mb4 = charset_by_name("utf8mb4")
    assert utf8mb4 is not None
    table_cs = _charset(table_cs_name, table_coll, utf8mb4)
    body = _Parser(p.toks[body_start + 1 : body_end - 1])
    columns: dict[str, Column] = {}
    order: list[str] = []
    keys: list[tuple[str, str, list[IndexField]]] = []
    virtual: set[str] = set()
    while body.peek().kind != "eof":
        first = body.peek()
        if first.kind == "word" and first.word in _KEY_WORDS:
            _table_key(body, columns, keys, frozenset(virtual))
        else:
            cname = body.name()
            inline: list[str] = []
            col = _column(body, cname, table_cs, inline)
            if len(order) >= MAX_COLUMNS:
                raise DdlError(f"more than {MAX_COLUMNS} columns")
            if col is None:
                virtual.add(cname.lower())
            else:
                columns[cname] = col
                order.append(cname)
                for kind in inline:  # id INT PRIMARY KEY, code CHAR(3) UNIQUE
                    keys.append((kind, "PRIMARY" if kind == "primary" else cname,
                                 [IndexField(col)]))  # fmt: skip
        if body.peek().text == ",":
            body.take()
        elif body.peek().kind != "eof":
            raise DdlError(f"unexpected {body.peek().text!r} in the column list")
    if not columns:
        raise DdlError("no stored columns")
    cols = tuple(columns[n] for n in order)
    pk = next((k for k in keys if k[0] == "primary"), None)
    if pk is None:
        pk = next(
            (
                k
                for k in keys
                if k[0] == "unique" and all(not f.column.nullable and not f.prefix for f in k[2])
            ),
            None,
        )
    if pk is not None:
        pk_fields = [IndexField(f.column, f.prefix) for f in pk[2]]
        cols = tuple(
            replace(c, nullable=False) if any(f.column.name == c.name for f in pk_fields) else c
            for c in cols
        )
        by = {c.name: c for c in cols}
        pk_fields = [IndexField(by[f.column.name], f.prefix) for f in pk_fields]
    else:
        pk_fields = []
    stored = cols
    fulltext = any(kind == "fulltext" for kind, _, _ in keys)
    if fulltext and not any(c.name.upper() == "FTS_DOC_ID" for c in cols):
        stored = (*cols, FTS_DOC_ID)  # InnoDB's hidden last column for the FULLTEXT index
    if pk is not None:
        clustered = clustered_layout(stored, pk_fields, pk[1])
    else:
        clustered = clustered_layout(stored, [], "GEN_CLUST_INDEX")
    by = {c.name: c for c in cols}
    indexes = [clustered]
    for kind, kname, parts in keys:
        if pk is not None and kname == pk[1] and kind == pk[0]:
            continue
        if kind in _UNREAD_KEYS:
            continue
        if kind.startswith("unread:"):  # a B-tree whose fields are not known: its place kept
            indexes.append(replace(secondary_layout(kname, [], clustered),
                                   unread=kind.removeprefix("unread:")))  # fmt: skip
            continue
        parts = [IndexField(by[f.column.name], f.prefix) for f in parts]
        indexes.append(secondary_layout(kname, parts, clustered))
    skipped = [
        f"{kind.upper()} {kname}" if kind in _UNREAD_KEYS else f"KEY {kname} ({kind[7:]})"
        for kind, kname, _ in keys
        if kind in _UNREAD_KEYS or kind.startswith("unread:")
    ]
    notes = (f"not read: {', '.join(skipped)}",) if skipped else ()
    return TableDef(name, cols, tuple(indexes), "schema", notes=notes, fulltext=fulltext)


def _table_key(
    p: _Parser,
    cols: dict[str, Column],
    keys: list[tuple[str, str, list[IndexField]]],
    virtual: frozenset[str] = frozenset(),
) -> None:
    w = p.take().word
    if w == "constraint":
        if p.peek().word not in ("primary", "unique", "foreign", "check"):
            p.name()
        w = p.take().word
    if w in ("foreign", "check", "period", "system"):
        while p.peek().kind != "eof" and p.peek().text != ",":
            if p.peek().text == "(":
                p.skip_parens()
            else:
                p.take()
        return
    kind = {
        "primary": "primary",
        "unique": "unique",
        "fulltext": "fulltext",
        "spatial": "spatial",
    }.get(w, "key")
    if w in ("primary", "unique", "fulltext", "spatial"):
        p.accept("key") or p.accept("index")
    name = "PRIMARY" if kind == "primary" else ""
    if p.peek().text != "(":
        if p.peek().word == "using":
            p.take()
            p.take()
        else:
            name = p.name() if kind != "primary" else name
        if p.peek().word == "using":
            p.take()
            p.take()
    unread = ""
    try:
        parts = _key_parts(p, cols, virtual)
    except _UnreadKey as exc:
        parts, unread = [], str(exc)
    if not name:
        name = parts[0].column.name if parts else "(unnamed)"
    while p.peek().kind != "eof" and p.peek().text != ",":
        if p.peek().text == "(":
            p.skip_parens()
        elif p.take().word == "using" and p.peek().word == "hash" and kind == "unique":
            unread = "USING HASH (MariaDB: a hidden hash column)"
    if unread:
        keys.append(("unread:" + unread, name, []))
        return
    keys.append((kind, name, parts))
