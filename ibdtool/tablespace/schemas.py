"""``--schema``: table definitions the user gives, and the file each one belongs to.

The option takes the text of one or more ``CREATE TABLE`` statements (``SHOW CREATE TABLE``
output, a ``mysqldump --no-data`` file), or ``@FILE`` to read them from a file. A tablespace
takes the statement whose table name is the one its file name says (``t#P#p0.ibd`` → ``t``,
``@0024``-style escapes decoded; case-insensitive); a command that reads one file also takes
the only statement when there is just one, whatever the file is called. A statement that
cannot be read is an error for its own table's file only.

:func:`index_names_by_order` names a tablespace's indexes from such a definition. A ``CREATE
TABLE`` holds no index ids, so they are matched by order: the clustered index (PRIMARY KEY,
else the first UNIQUE key on NOT NULL columns, else GEN_CLUST_INDEX) and then the secondary
indexes as ``SHOW CREATE TABLE`` lists them, against the indexes found in the pages ordered by
root page (then id), FTS_DOC_ID_INDEX second when the table has a FULLTEXT key (R-trees and
FULLTEXT indexes have no B-tree pages here and are left out on both sides). InnoDB creates a
fresh table's indexes in that order with consecutive ids and root pages, so the names hold for
a table created as it is; an index added or dropped later can shift them — the output says
"by order".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ibdtool.errors import InputError
from ibdtool.parsers.ddl import DdlError, parse_create_tables
from ibdtool.parsers.filename import split_table_file
from ibdtool.parsers.tabledef import TableDef
from ibdtool.tablespace.index_names import IndexNames

MAX_SCHEMA_BYTES = 64 << 20


@dataclass(frozen=True)
class Schemas:
    """The definitions given with ``--schema``."""

    tables: tuple[TableDef, ...]
    #: table name → why its statement could not be read (the others are still used)
    failed: tuple[tuple[str, str], ...] = ()

    def for_file(self, path: str | Path, *, single: bool = False) -> TableDef | None:
        """The definition of the table ``path`` holds; ``single``: the command reads one file,
        which takes the only statement given whatever its name. :class:`InputError` when the
        table's statement could not be read."""
        want = split_table_file(Path(path).stem).table.lower()
        for t in self.tables:
            if t.name.lower() == want:
                return t
        for name, why in self.failed:
            if name.lower() == want:
                raise InputError(f"--schema: CREATE TABLE {name}: {why}")
        if single and len(self.tables) == 1 and not self.failed:
            return self.tables[0]
        return None


def _one_line(text: str) -> str:
    """A message quoting the statement's names on one line (its front end escapes the rest)."""
    return " ".join(text.splitlines())


def load_schemas(text: str | None) -> Schemas | None:
    """``--schema``'s value (SQL, or ``@FILE``) → its definitions; :class:`InputError` when it
    cannot be read or holds no ``CREATE TABLE``."""
    if text is None:
        return None
    if text.startswith("@"):
        from ibdtool.fs import read_capped

        try:
            data = read_capped(text[1:], MAX_SCHEMA_BYTES, "--schema file")
        except InputError as exc:
            raise InputError(f"--schema {exc.message}") from None
        text = data.decode("utf-8", errors="replace")
    elif len(text) > MAX_SCHEMA_BYTES:
        raise InputError(f"--schema: {len(text):,} characters, more than {MAX_SCHEMA_BYTES:,}")
    try:
        tables, failed = parse_create_tables(text)
    except DdlError as exc:
        raise InputError(f"--schema: {_one_line(str(exc))}") from None
    if not tables and failed:
        name, why = next(iter(failed.items()))
        raise InputError(f"--schema: CREATE TABLE {_one_line(name)}: {_one_line(why)}")
    if not tables:
        raise InputError("--schema: no CREATE TABLE statement")
    return Schemas(tuple(tables), tuple(failed.items()))


FTS_DOC_ID_INDEX = "FTS_DOC_ID_INDEX"


def btree_names(table: TableDef) -> list[str]:
    """The table's B-trees in the order InnoDB creates them: the clustered index, then
    FTS_DOC_ID_INDEX when a FULLTEXT key made InnoDB add it (MariaDB 10.11 and MySQL 5.7 both
    put it second), then the secondary indexes (FULLTEXT and SPATIAL keys have no B-tree)."""
    names = [table.clustered.name]
    if table.fulltext and table.index(FTS_DOC_ID_INDEX) is None:
        names.append(FTS_DOC_ID_INDEX)
    return names + [ix.name for ix in table.indexes[1:]]


def index_names_by_order(table: TableDef, roots: dict[int, int]) -> IndexNames:
    """Names for the B-tree index ids in ``roots`` (id → root page) from ``table``, by order."""
    order = sorted(roots, key=lambda i: (roots[i], i))
    names = btree_names(table)
    out = IndexNames(source="schema")
    for name, iid in zip(names, order, strict=False):
        out.names[iid] = name
        out.roots[iid] = roots[iid]
    if len(order) != len(names):
        out.warnings.append(
            f"--schema declares {len(names)} B-tree indexes of {table.name}, the file has "
            f"{len(order)}: named by order as far as they go"
        )
    return out
