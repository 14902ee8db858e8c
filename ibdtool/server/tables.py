"""InnoDB tables and their tablespaces as the server's catalog and the files on disk tell them.

:func:`list_tables` joins ``information_schema.TABLES`` (engine, row format, create options) with
the InnoDB catalog (``INNODB_TABLESPACES``/``INNODB_SYS_TABLESPACES``: space id, FILE_SIZE,
ALLOCATED_SIZE, FS_BLOCK_SIZE, flags, file path) and, when the datadir is local, the page-level
state from :mod:`ibdtool.server.pagestate`. MySQL 5.7 and MariaDB name tablespaces in the
servers' filename encoding (``my-db`` → ``my@002ddb``, ``ü`` → ``@1o``: :mod:`parsers.filename`);
MySQL 8 names them as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ibdtool.errors import InputError
from ibdtool.server import localfs, sql
from ibdtool.server.context import Server
from ibdtool.server.pagestate import PageState, page_state
from ibdtool.tablespace.index_names import IndexNames, from_rows
from parsers import filename
from parsers.flags import decode_flags
from parsers.vendor import Vendor

MARIADB_FLAG_MASK = 0x1FFFF  # the catalog's FLAG carries memory-only bits above these
UNFLUSHED_FRACTION = 0.5  # fewer data pages on disk than this share of the catalog's count
NOT_FLUSHED = "not flushed yet: the server has not written page 0 of the file"


_OPTION = re.compile(r"`?([A-Za-z_]+)`?=(?:'([^']*)'|\"([^\"]*)\"|(\S+))")


@dataclass(frozen=True)
class TableOptions:
    """Compression-related table options from CREATE_OPTIONS and ROW_FORMAT."""

    row_format: str | None = None
    key_block_size: int | None = None  # KiB, as in KEY_BLOCK_SIZE=8
    compression: str | None = None  # MySQL COMPRESSION= attribute, lower case
    page_compressed: bool = False  # MariaDB PAGE_COMPRESSED
    page_compression_level: int | None = None
    partitioned: bool = False

    @classmethod
    def parse(cls, create_options: str | None, row_format: str | None) -> TableOptions:
        text = create_options or ""
        found: dict[str, str] = {}
        for m in _OPTION.finditer(text):
            found[m.group(1).lower()] = next(g for g in m.groups()[1:] if g is not None)
        kbs = found.get("key_block_size")
        compression = found.get("compression")
        level = found.get("page_compression_level")
        rf = found.get("row_format") or row_format
        return cls(
            row_format=rf.upper() if rf else None,
            key_block_size=int(kbs) if kbs and kbs.isdigit() and int(kbs) else None,
            compression=compression.lower()
            if compression and compression.lower() != "none"
            else None,
            page_compressed=found.get("page_compressed", "0").upper() in ("1", "ON", "YES"),
            page_compression_level=int(level) if level and level.isdigit() else None,
            partitioned="partitioned" in text.lower().split(),
        )

    @property
    def row_compressed(self) -> bool:
        return self.row_format == "COMPRESSED" or self.key_block_size is not None


@dataclass
class SpaceInfo:
    """One InnoDB tablespace from the catalog, and its file when we can read it."""

    space: int
    name: str
    flag: int
    row_format: str | None
    page_size: int | None
    zip_page_size: int | None
    space_type: str | None
    fs_block_size: int | None
    file_size: int | None
    allocated_size: int | None
    path: str | None
    local_path: Path | None = None
    partition: str | None = None
    state: PageState | None = None
    state_error: str | None = None
    #: "server" (the catalog's FILE_SIZE/ALLOCATED_SIZE) or "stat": MySQL 8.0.15 reports 0 for
    #: a file whose name is not ASCII, so a local file's own ``stat`` is taken instead
    sizes_from: str = "server"

    @property
    def shared(self) -> bool:
        return self.space == 0 or (self.space_type or "Single") in ("System", "General")

    def flags_algorithm(self, vendor: Vendor) -> str | None:
        """MariaDB full_crc32: the algorithm the tablespace flags fix for every page."""
        if vendor is not Vendor.MARIADB:
            return None
        flags = decode_flags(self.flag & MARIADB_FLAG_MASK)
        if flags.full_crc32 and flags.fcrc32_algorithm is not None:
            return flags.fcrc32_algorithm.value
        return None

    def classic_page_compressed(self, vendor: Vendor) -> bool:
        if vendor is not Vendor.MARIADB:
            return False
        flags = decode_flags(self.flag & MARIADB_FLAG_MASK)
        return not flags.full_crc32 and flags.page_compressed

    def to_json(self, vendor: Vendor) -> dict[str, Any]:
        return {
            "space": self.space,
            "name": self.name,
            "partition": self.partition,
            "space_type": self.space_type,
            "row_format": self.row_format,
            "page_size": self.page_size,
            "zip_page_size": self.zip_page_size,
            "flags": self.flag,
            "flags_algorithm": self.flags_algorithm(vendor),
            "fs_block_size": self.fs_block_size,
            "file_size": self.file_size,
            "allocated_size": self.allocated_size,
            "sizes_from": self.sizes_from,
            "path": self.path,
            "local_path": str(self.local_path) if self.local_path else None,
            "pages": self.state.to_json() if self.state else None,
            "pages_error": self.state_error,
        }


@dataclass
class TableInfo:
    """A table (all its partitions) with its catalog rows and page-level state."""

    schema: str
    table: str
    engine: str | None
    row_format: str | None
    create_options: str
    options: TableOptions
    table_rows: int | None = None
    data_length: int | None = None
    index_length: int | None = None
    spaces: list[SpaceInfo] = field(default_factory=list)
    shared_tablespace: str | None = None  # name of the system/general tablespace holding it
    fulltext: list[str] = field(default_factory=list)
    spatial: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def innodb(self) -> bool:
        return (self.engine or "").lower() == "innodb"

    def _sum(self, attr: str) -> int | None:
        values = [getattr(s, attr) for s in self.spaces]
        if not values or any(v is None for v in values):
            return None
        return int(sum(values))

    @property
    def file_size(self) -> int | None:
        return self._sum("file_size")

    @property
    def allocated_size(self) -> int | None:
        return self._sum("allocated_size")

    @property
    def fs_block_size(self) -> int | None:
        sizes = {s.fs_block_size for s in self.spaces if s.fs_block_size}
        return max(sizes) if sizes else None

    @property
    def space_ids(self) -> list[int]:
        return [s.space for s in self.spaces]

    @property
    def local_paths(self) -> list[Path]:
        return [s.local_path for s in self.spaces if s.local_path is not None]

    def page_compression(self, vendor: Vendor) -> str | None:
        """The algorithm the options (and MariaDB's flags) say pages are compressed with."""
        if vendor is Vendor.MARIADB:
            if not self.options.page_compressed:
                return None
            algos = {s.flags_algorithm(vendor) for s in self.spaces} - {None, "none"}
            if len(algos) == 1:
                return next(iter(algos))
            return "per-page"  # classic format: each page carries its own algorithm
        return self.options.compression

    def current_format(self, vendor: Vendor) -> str:
        """``page:zlib``, ``row:8``, ``none`` … as the catalog tells it."""
        if self.options.row_compressed:
            kbs = self.options.key_block_size or 8
            return f"row:{kbs}"
        algo = self.page_compression(vendor)
        return f"page:{algo}" if algo else "none"

    def page_summary(self) -> str | None:
        states = [s.state for s in self.spaces if s.state is not None]
        if not states:
            return None
        if len(states) == 1:
            return states[0].summary()
        data = sum(st.data_pages for st in states)
        plain = sum(st.uncompressed for st in states)
        return f"{len(states)} partitions, {100 * plain / data:.0f}% uncompressed" if data else None

    @property
    def uncompressed_fraction(self) -> float | None:
        states = [s.state for s in self.spaces if s.state is not None]
        data = sum(st.data_pages for st in states)
        if not states or not data:
            return None
        return sum(st.uncompressed for st in states) / data

    def unflushed(self) -> str | None:
        """When the file holds far fewer pages than the catalog counts: pages still only in
        the buffer pool (a table just loaded or rebuilt), so what is on disk is not the table.
        """
        states = [s.state for s in self.spaces if s.state is not None]
        catalog = (self.data_length or 0) + (self.index_length or 0)
        if not states or not catalog or len(states) != len(self.spaces):
            return None
        page = states[0].physical_size
        written = sum(st.data_pages * (st.scanned and st.pages / st.scanned) for st in states)
        expected = catalog / page
        if expected >= 64 and written < UNFLUSHED_FRACTION * expected:
            return (
                f"only ~{100 * written / expected:.0f}% of the table's pages are on disk yet "
                "(the rest are in the buffer pool)"
            )
        return None

    def needs_rebuild(self, vendor: Vendor) -> str | None:
        """Why the pages lag behind the options, or None when they agree (or we cannot see)."""
        if self.options.row_compressed:
            return None
        algo = self.page_compression(vendor)
        fraction = self.uncompressed_fraction
        if not algo or fraction is None:
            return None
        if fraction >= 0.10:
            return f"{100 * fraction:.0f}% of pages still uncompressed: needs a rebuild"
        mixed = set()
        for s in self.spaces:
            if s.state:
                mixed |= set(s.state.algorithms)
        if algo != "per-page" and mixed - {algo}:
            others = ", ".join(sorted(mixed - {algo}))
            return f"pages still in {others}: needs a rebuild to be all {algo}"
        return None

    def to_json(self, vendor: Vendor) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "table": self.table,
            "engine": self.engine,
            "row_format": self.options.row_format,
            "key_block_size": self.options.key_block_size,
            "create_options": self.create_options,
            "compression": self.options.compression,
            "page_compressed": self.options.page_compressed,
            "page_compression_level": self.options.page_compression_level,
            "page_compression": self.page_compression(vendor),
            "format": self.current_format(vendor),
            "shared_tablespace": self.shared_tablespace,
            "fulltext_indexes": self.fulltext,
            "spatial_indexes": self.spatial,
            "table_rows": self.table_rows,
            "file_size": self.file_size,
            "allocated_size": self.allocated_size,
            "fs_block_size": self.fs_block_size,
            "uncompressed_fraction": None
            if self.uncompressed_fraction is None
            else round(self.uncompressed_fraction, 4),
            "needs_rebuild": self.needs_rebuild(vendor),
            "unflushed": self.unflushed(),
            "tablespaces": [s.to_json(vendor) for s in self.spaces],
        }


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
    """Tables (InnoDB or not) and the tablespaces that belong to no listed table.

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
                continue
            it = innodb_tables.get(pname.casefold())
            if it is not None and it.get("space") is not None:
                space_id = int(it["space"])
                if space_id == 0 or (it.get("space_type") in ("System", "General")):
                    info.shared_tablespace = shared_names.get(space_id) or (
                        "innodb_system" if space_id == 0 else f"space {space_id}"
                    )
        if with_pages and info.innodb:
            for sp in info.spaces:
                if not sp.shared:
                    _load_page_state(sp)
        out.append(info)
    others = [sp for sp in spaces if sp.space not in used]
    return out, others


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
