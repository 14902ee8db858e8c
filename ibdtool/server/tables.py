"""InnoDB tables and their tablespaces as the server's catalog and the files on disk tell them.

:func:`list_tables` joins ``information_schema.TABLES`` (engine, row format, create options) with
the InnoDB catalog (``INNODB_TABLESPACES``/``INNODB_SYS_TABLESPACES``: space id, FILE_SIZE,
ALLOCATED_SIZE, FS_BLOCK_SIZE, flags, file path) and, when the datadir is local, the page-level
state from :mod:`ibdtool.server.pagestate`, into the records of
:mod:`ibdtool.server.table_info`. MySQL 5.7 and MariaDB name tablespaces in the
servers' filename encoding (``my-db`` → ``my@002ddb``, ``ü`` → ``@1o``:
:mod:`ibdtool.parsers.filename`); MySQL 8 names them as written.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ibdtool.errors import InputError
from ibdtool.parsers import filename
from ibdtool.parsers.identity import FTS_NAME
from ibdtool.server import localfs, sql
from ibdtool.server.context import Server
from ibdtool.server.pagestate import page_state
from ibdtool.server.table_info import NOT_FLUSHED, SpaceInfo, TableInfo, TableOptions
from ibdtool.tablespace import IndexNames, from_rows


def _space_from_row(row: dict[str, Any], datadir: Path | None) -> SpaceInfo:
    def num(key: str) -> int | None:
        v = row.get(key)
        return None if v is None else int(v)

    path = row.get("path")
    if isinstance(path, bytes):
        path = path.decode("utf-8", "replace")
    space = SpaceInfo(
        space=int(row["space"]),
        name=str(row["name"]),
        flag=int(row.get("flag") or 0),
        row_format=row.get("row_format"),
        page_size=num("page_size"),
        zip_page_size=num("zip_page_size"),
        space_type=row.get("space_type"),
        fs_block_size=num("fs_block_size"),
        file_size=num("file_size"),
        allocated_size=num("allocated_size"),
        path=path,
        local_path=localfs.tablespace_file(datadir, path),
    )
    if space.local_path is not None and not space.file_size:
        try:
            st = space.local_path.stat()
        except OSError:
            return space
        if st.st_size:
            space.file_size, space.allocated_size = st.st_size, st.st_blocks * 512
            space.sizes_from = "stat"
    return space


def read_tablespaces(server: Server, name: str | None = None) -> list[SpaceInfo]:
    if name is None:
        rows = server.session.query(server.flavor.tablespaces_query)
    else:
        rows = server.session.query(server.flavor.tablespace_by_name_query, (name,))
    return [_space_from_row(r, server.local_datadir) for r in rows]


def index_names(server: Server, space: int) -> IndexNames:
    """The server's names (and root pages) of a tablespace's indexes."""
    rows = server.session.query(server.flavor.indexes_of_space_query, (space,))
    return from_rows([(r["id"], r["name"], r["page_no"]) for r in rows])


def reload_page_states(table: TableInfo) -> None:
    """Read the table's files again (after a flush made them current)."""
    for space in table.spaces:
        space.state = None
        space.state_error = None
        _load_page_state(space)


def _load_page_state(space: SpaceInfo) -> None:
    if space.local_path is None:
        return
    try:
        state = page_state(space.local_path)
    except InputError as exc:
        # the table names the file: the problem without its path, which fills a terminal
        space.state_error = exc.message.removeprefix(f"{space.local_path}: ")
        if "page 0 is all zeros" in space.state_error:
            space.state_error = NOT_FLUSHED
        return
    except OSError as exc:
        space.state_error = f"{space.local_path}: {exc.strerror or exc}"
        return
    if state.space_id == 0 and space.space != 0 and not state.data_pages:
        space.state_error = NOT_FLUSHED
        return
    if state.space_id != space.space:
        # the file under this path belongs to another server (e.g. a wrong --datadir)
        space.state_error = (
            f"{space.local_path}: space id {state.space_id} is not the server's {space.space}"
        )
        space.local_path = None
        return
    space.state = state


def list_tables(
    server: Server,
    *,
    schemas: list[str] | None = None,
    tables: list[tuple[str, str]] | None = None,
    with_pages: bool = True,
) -> tuple[list[TableInfo], list[SpaceInfo]]:
    """Tables (InnoDB or not), by schema and table name, and the tablespaces that belong to no
    listed table (a FULLTEXT index's ``FTS_<table id>_…`` ones belong to their table).

    ``tables`` as (schema, table) pairs, or ``schemas``, or every user table.
    """
    s = server.session
    rows: list[dict[str, Any]] = []
    if tables:
        for schema, table in tables:
            rows += s.query(sql.ONE_TABLE_ANY_SCHEMA, (schema, table))
    elif schemas:
        for schema in schemas:
            rows += s.query(sql.TABLES_IN_SCHEMA, (schema,))
    else:
        rows = s.query(sql.TABLES)
    wanted = {(str(r["schema"]), str(r["table"])) for r in rows}
    spaces = read_tablespaces(server)
    by_name = {sp.name: sp for sp in spaces}
    by_folded = {sp.name.casefold(): sp for sp in spaces}
    innodb_tables = {
        str(r["name"]).casefold(): r for r in s.query(server.flavor.innodb_tables_query)
    }
    shared_names = {sp.space: sp.name for sp in spaces if sp.shared}
    partitions: dict[tuple[str, str], list[tuple[str, str | None]]] = {}
    for p in s.query(sql.PARTITIONS):
        key = (str(p["schema"]), str(p["table"]))
        if key in wanted:
            partitions.setdefault(key, []).append((str(p["partition"]), p["subpartition"]))
    special: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for ix in s.query(sql.SPECIAL_INDEXES):
        key = (str(ix["schema"]), str(ix["table"]))
        special.setdefault(key, []).append((str(ix["index_name"]), str(ix["index_type"])))
    fts_of = fts_spaces_by_table_id(spaces)
    used: set[int] = set()
    out: list[TableInfo] = []
    for r in rows:
        schema, table = str(r["schema"]), str(r["table"])
        info = TableInfo(
            schema=schema,
            table=table,
            engine=r.get("engine"),
            row_format=r.get("row_format"),
            create_options=str(r.get("create_options") or ""),
            options=TableOptions.parse(r.get("create_options"), r.get("row_format")),
            table_rows=r.get("table_rows"),
            data_length=r.get("data_length"),
            index_length=r.get("index_length"),
        )
        kinds = special.get((schema, table), [])
        info.fulltext = [n for n, t in kinds if t == "FULLTEXT"]
        info.spatial = [n for n, t in kinds if t == "SPATIAL"]
        names: list[tuple[str, str | None]] = [
            (_catalog_name(server, schema, table, part, sub), f"{part}/{sub}" if sub else part)
            for part, sub in partitions.get((schema, table), [])
        ] or [(_catalog_name(server, schema, table), None)]
        for pname, plabel in names:
            sp = by_name.get(pname) or by_folded.get(pname.casefold())
            if sp is not None:
                sp.partition = plabel
                info.spaces.append(sp)
                used.add(sp.space)
                if sp.shared:
                    info.shared_tablespace = sp.name
            it = innodb_tables.get(pname.casefold())
            if it is not None and it.get("table_id") is not None:
                for fts in fts_of.get(int(it["table_id"]), []):
                    info.fts_spaces.append(fts)
                    used.add(fts.space)
            if sp is not None:
                continue
            if it is not None and it.get("space") is not None:
                space_id = int(it["space"])
                if space_id == 0 or (it.get("space_type") in ("System", "General")):
                    info.shared_tablespace = shared_names.get(space_id) or (
                        "innodb_system" if space_id == 0 else f"space {space_id}"
                    )
        if with_pages and info.innodb:
            for sp in [*info.spaces, *info.fts_spaces]:
                if not sp.shared:
                    _load_page_state(sp)
        out.append(info)
    others = [sp for sp in spaces if sp.space not in used]
    out.sort(key=lambda t: (t.schema.casefold(), t.table.casefold(), t.schema, t.table))
    others.sort(key=lambda sp: sp.name.casefold())
    return out, others


def fts_table_id(name: str) -> int | None:
    """The id of the table a full-text auxiliary tablespace belongs to, from its name
    (``shop/FTS_0000000000000012_CONFIG``: 0x12), or None for any other name."""
    m = FTS_NAME.fullmatch(name.rsplit("/", 1)[-1].removesuffix(".ibd"))
    return int(m["table"], 16) if m else None


def fts_spaces_by_table_id(spaces: list[SpaceInfo]) -> dict[int, list[SpaceInfo]]:
    """The FULLTEXT auxiliary tablespaces (``FTS_<table id>_…``) by the id of their table."""
    out: dict[int, list[SpaceInfo]] = {}
    for sp in spaces:
        tid = fts_table_id(sp.name)
        if tid is not None:
            out.setdefault(tid, []).append(sp)
    for group in out.values():
        group.sort(key=lambda sp: sp.name)
    return out


def _catalog_name(
    server: Server,
    schema: str,
    table: str,
    partition: str | None = None,
    subpartition: str | None = None,
) -> str:
    """The InnoDB catalog's name of a table's (or partition's) tablespace: MySQL 8's
    dictionary names it as written, 5.7 and MariaDB in the filename encoding (compared
    case-insensitively: the separators' case changed within 8.0)."""
    if server.flavor.names_as_written:
        stem = table
        if partition is not None:
            stem += f"#p#{partition}" + (f"#sp#{subpartition}" if subpartition else "")
        return f"{schema}/{stem}"
    stem = filename.table_file_stem(table, partition, subpartition)
    return f"{filename.encode(schema)}/{stem}"


def split_table_name(text: str, default_schema: str | None) -> tuple[str, str]:
    """``db.t`` or ``t`` (with a default schema) → (schema, table); backticks allowed."""
    m = re.fullmatch(r"\s*(?:(`(?:[^`]|``)+`|[^.`]+)\.)?(`(?:[^`]|``)+`|[^.`]+)\s*", text)
    if not m:
        raise InputError(f"{text!r}: expected SCHEMA.TABLE")

    def unquote(part: str) -> str:
        return part[1:-1].replace("``", "`") if part.startswith("`") else part

    schema = unquote(m.group(1)) if m.group(1) else default_schema
    if not schema:
        raise InputError(f"{text!r}: which schema? write SCHEMA.TABLE or give --database")
    return schema, unquote(m.group(2))


def space_kind(space: SpaceInfo) -> str:
    """What a tablespace that belongs to no listed table is."""
    name = space.name
    if space.space_type == "General":
        return "general"
    if space.space == 0 or name in ("innodb_system", "innodb_temporary"):
        return "system"
    if name.startswith("innodb_undo") or re.fullmatch(r"undo_?\d+", name):
        return "undo"
    if re.search(r"/fts_[0-9a-f]{16}_", name, re.IGNORECASE):
        return "fulltext"
    return "table"
