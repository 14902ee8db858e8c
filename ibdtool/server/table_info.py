"""One InnoDB table and its tablespaces as ibdtool knows them: the table's compression
options, each tablespace's catalog row and page state, the table's format today and whether a
conversion must rebuild it (data only).

:mod:`ibdtool.server.tables` fills them from the server's catalog and the files on disk; the
planner, preflight checks, executor and dialects read them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ibdtool.fs import drop_total
from ibdtool.parsers.flags import decode_flags
from ibdtool.parsers.vendor import Vendor
from ibdtool.server.pagestate import PageState

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
    #: the FULLTEXT indexes' auxiliary tablespaces (``FTS_<table id>_…``, tied by the table id):
    #: part of the table, but not of ``spaces`` (a rebuild rewrites them only with the table)
    fts_spaces: list[SpaceInfo] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def innodb(self) -> bool:
        return (self.engine or "").lower() == "innodb"

    def _sum(self, attr: str, spaces: list[SpaceInfo] | None = None) -> int | None:
        values = [getattr(s, attr) for s in (self.spaces if spaces is None else spaces)]
        if not values or any(v is None for v in values):
            return None
        return int(sum(values))

    @property
    def file_size(self) -> int | None:
        """The table's own files (its partitions'), without the FULLTEXT auxiliary ones."""
        return self._sum("file_size")

    @property
    def allocated_size(self) -> int | None:
        return self._sum("allocated_size")

    @property
    def drop_cost(self) -> dict[str, Any] | None:
        """What DROP TABLE would cost: the predicted time to free every file of the table
        (its partitions one after another); None for a shared tablespace (no file goes) or
        when a file was not read."""
        if self.shared_tablespace or not self.spaces:
            return None
        costs = [s.state.drop_cost if s.state else None for s in self.spaces]
        if any(c is None for c in costs):
            return None
        return drop_total([c for c in costs if c is not None])

    @property
    def fts_file_size(self) -> int | None:
        """The FULLTEXT auxiliary tablespaces' size (None when the table has none)."""
        return self._sum("file_size", self.fts_spaces)

    @property
    def fts_allocated_size(self) -> int | None:
        return self._sum("allocated_size", self.fts_spaces)

    @property
    def total_file_size(self) -> int | None:
        """The table with its FULLTEXT auxiliary tablespaces."""
        return self._sum("file_size", [*self.spaces, *self.fts_spaces])

    @property
    def total_allocated_size(self) -> int | None:
        return self._sum("allocated_size", [*self.spaces, *self.fts_spaces])

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

    def fulltext_summary(self) -> str:
        """``FULLTEXT ft; +11 FTS tablespaces: 832.0 KiB in all`` ('' without FULLTEXT): the
        file size is the table's own files; its FULLTEXT indexes' tablespaces come on top."""
        if not self.fulltext:
            return ""
        text = f"FULLTEXT {', '.join(self.fulltext)}"
        if self.fts_spaces:
            from ibdtool.present import human_bytes

            total = self.total_file_size
            text += f"; +{len(self.fts_spaces)} FTS tablespaces" + (
                f": {human_bytes(total)} in all" if total is not None else ""
            )
        return text

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
            "drop_cost": self.drop_cost,
            "uncompressed_fraction": None
            if self.uncompressed_fraction is None
            else round(self.uncompressed_fraction, 4),
            "needs_rebuild": self.needs_rebuild(vendor),
            "unflushed": self.unflushed(),
            "tablespaces": [s.to_json(vendor) for s in self.spaces],
            "fts_file_size": self.fts_file_size,
            "fts_allocated_size": self.fts_allocated_size,
            "total_file_size": self.total_file_size,
            "total_allocated_size": self.total_allocated_size,
            "fts_tablespaces": [s.to_json(vendor) for s in self.fts_spaces],
        }
