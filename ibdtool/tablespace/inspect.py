"""Summarise a whole tablespace: what InnoDB thinks is in it and what the filesystem stores.

One pass over the pages (:meth:`Tablespace.pages`) joined with the file's allocation map gives
page counts by real type and by compression algorithm, checksum verdicts, and compressed pages
whose slot was never punched. The result's :meth:`InspectResult.to_json` is the documented
``inspect --json`` shape.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ibdtool.errors import InputError
from ibdtool.fs import (
    FIEMAP_BIG_BATCH,
    Allocation,
    AllocationTotals,
    DropCost,
    Layout,
    WindowCounts,
    drop_cost,
    join_windows,
    layout,
)
from ibdtool.parsers.checksum import ChecksumAlgo
from ibdtool.parsers.constants import (
    SDI_INDEX_ID,
    Algorithm,
)
from ibdtool.parsers.identity import Identity, identify
from ibdtool.parsers.rowformat import row_format
from ibdtool.parsers.space import SpaceFormat
from ibdtool.parsers.vendor import Vendor
from ibdtool.tablespace.index_names import IndexNames, from_cfg
from ibdtool.tablespace.inspect_tally import tally_run
from ibdtool.tablespace.page_tally import PageTally
from ibdtool.tablespace.reader import Tablespace

if TYPE_CHECKING:  # ibdtool.parsers.keyring loads construct and cryptography: only with --keyring
    from ibdtool.parsers.keyring import Keyring
    from ibdtool.parsers.page import PageInfo
    from ibdtool.parsers.sdi import SdiEntry
    from ibdtool.parsers.tabledef import TableDef
    from ibdtool.tablespace.zip_fill import ZipFillSummary

MAX_LISTED_PAGES = 1000


def format_name(fmt: SpaceFormat, name: str | None = None) -> str:
    """What page 0 (and the file's name) tell of the tablespace, before any scan."""
    return identify(fmt, name=name).label


class SdiSummary:
    """The SDI's table records: one for a table, 63–68 for mysql.ibd, several for a general
    tablespace. ``table``, ``schema``, ``row_format`` and ``compression`` are set only when
    there is one table. A plain class: nothing compares or prints it (start-up)."""

    def __init__(self) -> None:
        self.table: str | None = None
        self.schema: str | None = None
        self.row_format: str | None = None
        self.compression: str | None = None
        self.indexes: dict[int, str] = {}  # index id -> name
        self.tables: list[str] = []  # "schema.table" of every table record
        #: the table's partitions as created, ``p`` or ``p/sp`` (MySQL 8.0.17+ file names hold
        #: them lower-cased)
        self.partitions: list[str] = []
        #: the table's InnoDB table id (``se_private_id``): the hex in its FULLTEXT tablespaces'
        #: names (``fts_<table id>_…``); set only when there is one table
        self.table_id: int | None = None


_DD_ROW_FORMATS = {1: "FIXED", 2: "DYNAMIC", 3: "COMPRESSED", 4: "REDUNDANT", 5: "COMPACT"}


def _kv(text: object) -> dict[str, str]:
    """``key=value;key=value`` strings of the SDI (options, se_private_data)."""
    if not isinstance(text, str):
        return {}
    return dict(kv.split("=", 1) for kv in text.split(";") if "=" in kv)


def summarise_sdi(entries: list[SdiEntry]) -> SdiSummary | None:
    """Table name, row format, COMPRESSION= option and index names from the SDI (§8.4).

    The JSON comes from the file, so every value is type-checked: a damaged or hostile SDI
    yields fewer facts, never an exception.
    """
    out = SdiSummary()
    found: list[tuple[str | None, str | None, str | None, str | None, list[tuple[int, str]]]] = []
    table_ids: list[int | None] = []
    for e in entries:
        obj = e.obj.get("dd_object") if isinstance(e.obj, dict) else None
        if e.sdi_type != 1 or not isinstance(obj, dict):
            continue
        name, schema, rf = obj.get("name"), obj.get("schema_ref"), obj.get("row_format")
        indexes: list[tuple[int, str]] = []
        raw_indexes = obj.get("indexes")
        for idx in raw_indexes if isinstance(raw_indexes, list) else []:
            if not isinstance(idx, dict):
                continue
            index_id = _kv(idx.get("se_private_data")).get("id", "")
            idx_name = idx.get("name")
            if index_id.isdigit():
                indexes.append((int(index_id), idx_name if isinstance(idx_name, str) else "?"))
        partitions = _partition_labels(obj)
        tid = obj.get("se_private_id")
        table_ids.append(tid if isinstance(tid, int) and not isinstance(tid, bool) else None)
        found.append(
            (
                name if isinstance(name, str) else None,
                schema if isinstance(schema, str) else None,
                _DD_ROW_FORMATS.get(rf)
                if isinstance(rf, int) and not isinstance(rf, bool)
                else None,
                _kv(obj.get("options")).get("compress"),
                indexes,
            )
        )
    if not found:
        return None
    out.tables = [f"{s or '?'}.{t or '?'}" for t, s, *_ in found]
    if len(found) == 1:
        out.table, out.schema, out.row_format, out.compression, _ = found[0]
        out.partitions = partitions
        out.table_id = table_ids[0]
    for table, _s, _rf, _c, indexes in found:
        for iid, iname in indexes:
            out.indexes[iid] = iname if len(found) == 1 else f"{table}.{iname}"
    return out


def _partition_labels(table: dict[str, Any]) -> list[str]:
    """``p`` / ``p/sp`` of every partition in an SDI table object (type-checked)."""
    out: list[str] = []
    parts = table.get("partitions")
    for p in parts if isinstance(parts, list) else []:
        name = p.get("name") if isinstance(p, dict) else None
        if not isinstance(name, str):
            continue
        subs = p.get("subpartitions")
        names = (
            [s.get("name") for s in subs if isinstance(s, dict)] if isinstance(subs, list) else []
        )
        out += [f"{name}/{s}" for s in names if isinstance(s, str)] or [name]
    return out


class InspectResult:
    """Everything ``ibdtool inspect`` reports for one file.

    A plain class (issue 24, item 4: start-up): nothing compares or prints a result, and a
    dataclass of these 30 fields took ~1 ms to make at every start of the command."""

    def __init__(
        self,
        *,
        path: str,
        fmt: SpaceFormat,
        vendor: Vendor,
        pages: int,
        logical_size: int,
        allocation: AllocationTotals,
        page_types: Counter[str],
        compression: Counter[str],
        checksum_by_algo: Counter[str],
        invalid_pages: list[int],
        unverifiable: int,
        problems: list[tuple[int, str]],
        unpunched_pages: int,
        unpunched_bytes: int,
        compressed_bytes: int,
        index_pages: Counter[int],
        avg_fill: float | None,
        sdi: SdiSummary | None,
        trailing_bytes: int,
        warnings: list[str],
        free: dict[str, int] | None = None,
        encryption: dict[str, Any] | None = None,
        identity: Identity | None = None,
        index_names: IndexNames | None = None,
        index_levels: Counter[tuple[int, int]] | None = None,
        compact_pages: int = 0,
        redundant_pages: int = 0,
        zip_fill: ZipFillSummary | None = None,
        drop_cost: DropCost | None = None,
        layout: Layout | None = None,
    ) -> None:
        self.path = path
        self.fmt = fmt
        self.vendor = vendor
        self.pages = pages
        self.logical_size = logical_size
        #: the file's allocation figures (its map is not kept: a split scan reads it a window
        #: a process, :func:`ibdtool.fs.join_windows`)
        self.allocation = allocation
        self.page_types = page_types
        self.compression = compression
        self.checksum_by_algo = checksum_by_algo
        self.invalid_pages = invalid_pages
        self.unverifiable = unverifiable
        self.problems = problems
        self.unpunched_pages = unpunched_pages
        self.unpunched_bytes = unpunched_bytes
        self.compressed_bytes = compressed_bytes  # sum of stored images of compressed pages
        self.index_pages = index_pages
        self.avg_fill = avg_fill
        self.sdi = sdi
        self.trailing_bytes = trailing_bytes
        self.warnings = warnings
        #: pages the extent descriptors call free: count, how many still hold data, bytes on disk
        self.free: dict[str, int] = {} if free is None else free
        #: page 0's encryption info / crypt data and what the scan saw (None: not encrypted)
        self.encryption = encryption
        self.identity = identity
        #: index id → name, from the SDI, the .cfg beside the file, or a server
        self.index_names: IndexNames = IndexNames() if index_names is None else index_names
        #: (index id, level) → pages
        self.index_levels: Counter[tuple[int, int]] = (
            Counter() if index_levels is None else index_levels
        )
        #: index pages (the SDI's aside) in compact format and in REDUNDANT format
        self.compact_pages = compact_pages
        self.redundant_pages = redundant_pages
        #: ROW_FORMAT=COMPRESSED leaf pages rebuilt
        #: (:func:`~ibdtool.tablespace.zip_fill.zip_fill_summary`); None otherwise
        self.zip_fill = zip_fill
        #: what freeing the file's extents would cost (DROP TABLE); None without FIEMAP
        self.drop_cost = drop_cost
        #: how contiguous the file is, and its cold scan against dense; None without FIEMAP
        self.layout = layout

    @property
    def checksum_valid(self) -> int:
        return sum(
            n for a, n in self.checksum_by_algo.items() if a not in _NOT_VALID and a != "empty"
        )

    @property
    def checksum_empty(self) -> int:
        return self.checksum_by_algo.get(ChecksumAlgo.EMPTY.value, 0)

    @property
    def page_compression(self) -> str:
        """The tablespace's page-compression algorithm(s) as found on disk."""
        algos = sorted(a for a in self.compression if a != Algorithm.NONE.value)
        if self.fmt.full_crc32 and self.fmt.fcrc32_algorithm:
            declared = self.fmt.fcrc32_algorithm.value
            if declared != "none" and declared not in algos:
                algos.append(declared)
        return "+".join(algos) if algos else "none"

    @property
    def label(self) -> str:
        """The format as ``inspect`` words it: server, version and kind of tablespace."""
        ident = self.identity or identify(self.fmt, name=self.path)
        return ident.label

    @property
    def kind(self) -> str:
        return (self.identity or identify(self.fmt, name=self.path)).kind.value

    @property
    def row_format(self) -> str | None:
        """One row format for the tablespace (:mod:`ibdtool.parsers.rowformat`); None for spaces
        that hold many tables or none (system, undo, temporary, the dictionary)."""
        if self.kind in ("system", "undo", "temporary", "dictionary"):
            return None
        declared = self.sdi.row_format if self.sdi else self.index_names.row_format
        if self.sdi and len(self.sdi.tables) > 1:
            return None
        return row_format(self.fmt.flags, self.compact_pages, self.redundant_pages, declared)

    def indexes(self) -> list[dict[str, Any]]:
        """Per index found in the pages or named by a source: name, pages, pages per level."""
        names = self.index_names.names
        ids = sorted(set(self.index_pages) | set(names), key=lambda i: (i not in names, i))
        out = []
        for iid in ids:
            levels = {lv: n for (i, lv), n in sorted(self.index_levels.items()) if i == iid}
            out.append(
                {
                    "id": iid,
                    "name": names.get(iid, "SDI" if iid == SDI_INDEX_ID else None),
                    "root": self.index_names.roots.get(iid),
                    "pages": self.index_pages.get(iid, 0),
                    "leaf_pages": levels.get(0, 0),
                    "height": max(levels) + 1 if levels else 0,
                    "pages_by_level": levels,
                }
            )
        return out

    def to_json(self) -> dict[str, Any]:
        a = self.allocation
        return {
            "path": self.path,
            "vendor": self.vendor.value,
            "format": self.label,
            "space_kind": self.kind,
            "page_size": self.fmt.logical_size,
            "physical_page_size": self.fmt.physical_size,
            "space_id": self.fmt.space_id,
            "fsp_flags": self.fmt.flags.raw,
            "fsp_flags_decoded": self.fmt.flags.names(),
            "full_crc32": self.fmt.full_crc32,
            "row_format": self.row_format,
            "key_block_size": self.fmt.key_block_size,
            "page_compression": self.page_compression,
            "server_version": self.fmt.server_version,
            "pages": self.pages,
            "logical_size": self.logical_size,
            "allocated_size": a.allocated,
            "fs_block_size": a.fs_block_size,
            "extents": a.extents,
            "unwritten_extents": a.unwritten_extents,
            "drop_cost": None if self.drop_cost is None else self.drop_cost.to_json(),
            "layout": None if self.layout is None else self.layout.to_json(),
            "data_ranges": a.data_range_count,
            "page_types": dict(self.page_types.most_common()),
            "compression": dict(self.compression.most_common()),
            "checksum": {
                "valid": self.checksum_valid,
                "invalid": len(self.invalid_pages),
                "empty": self.checksum_empty,
                "unverifiable": self.unverifiable,
                "by_algorithm": dict(self.checksum_by_algo.most_common()),
                "invalid_pages": self.invalid_pages[:MAX_LISTED_PAGES],
            },
            "unpunched_pages": self.unpunched_pages,
            "unpunched_bytes": self.unpunched_bytes,
            "compressed_image_bytes": self.compressed_bytes,
            "avg_index_fill": None if self.avg_fill is None else round(self.avg_fill, 4),
            "zip_fill": None if self.zip_fill is None else self.zip_fill.to_json(),
            "free_pages": self.free,
            "sdi": None
            if self.sdi is None
            else {
                "schema": self.sdi.schema,
                "table": self.sdi.table,
                "row_format": self.sdi.row_format,
                "compression": self.sdi.compression,
                "tables": self.sdi.tables,
                "indexes": [
                    {"id": i, "name": n, "pages": self.index_pages.get(i, 0)}
                    for i, n in self.sdi.indexes.items()
                ],
            },
            "indexes": self.indexes(),
            "problems": [{"page": n, "problem": p} for n, p in self.problems[:MAX_LISTED_PAGES]],
            "trailing_bytes": self.trailing_bytes,
            "index_names_from": self.index_names.source,
            "warnings": self.warnings,
            "encryption": self.encryption,
        }


_NOT_VALID = {ChecksumAlgo.INVALID.value, ChecksumAlgo.ENCRYPTED.value}


PARALLEL_MIN_PAGES = 16384  # below 256 MiB of 16K pages one process is as fast
#: pages whose allocation map one process reads at once when it scans a file alone (the TUI's
#: page map, a progress bar, ``jobs`` 1): 1 GiB of 16K pages, a few hundred KiB of packed
#: ranges on a page-compressed file, where the whole map of 6.5 million extents is ~16 MB
WINDOW_PAGES = 1 << 16

#: reads the allocation of pages [start, stop) (:meth:`Tablespace.window_allocation`)
WindowMap = Callable[[int, int], tuple[Allocation, WindowCounts]]


def _tally_range(
    ts: Tablespace,
    start: int,
    stop: int,
    *,
    on_page: Callable[[PageInfo], None] | None = None,
    progress: Callable[[int], None] | None = None,
    alloc: Allocation | None = None,
) -> PageTally:
    """The tally of pages [start, stop), a run of at most ``RUN_PAGES`` at a time, so that the
    per-page allocation and free maps stay small; runs in holes are counted, not read.
    ``alloc``: a map that holds the window (:meth:`Tablespace.window_allocation`), else the
    file's."""
    if alloc is None:
        alloc = ts.allocation
    block = alloc.fs_block_size
    psize = ts.physical_size
    tally = PageTally()
    zero = bytes(psize)
    if on_page is not None:  # the TUI's page map: the decoder's record of every page
        from ibdtool.tablespace.header_pages import header_pages
    for first, end, has_data in ts.page_runs(start, stop, ranges=alloc.data_ranges):
        free = ts.free_window(first, end)
        if not has_data and on_page is None:
            info = ts._decode(zero, first, None)
            if info.empty and info.problem is None and info.index is None:
                tally.add_zero_run(info, end - first, free.count(1))
                if progress is not None:
                    progress(end)
                continue
        per_page = alloc.per_page_allocated(psize, end - first, first)
        if on_page is None:
            # the common pages inline, the rest through the decoder
            # (ibdtool.tablespace.inspect_tally)
            tally_run(ts, first, end, tally, per_page, free)
            if progress is not None:
                progress(end)
            continue
        for info in header_pages(ts, first, end, alloc.data_ranges):  # the decoder's, sooner
            k = info.page_no - first
            if on_page is not None:
                on_page(info)
            tally.add(info, per_page[k], block, bool(free[k]))
            if progress is not None and info.page_no % 4096 == 4095:
                progress(info.page_no + 1)
    ts.check_not_shrunk()
    return tally


class _WindowTally:
    """:func:`_tally_range` of a window of a split scan, the allocation map of its own pages
    read here (in parallel with the other windows'), and what they add to the file's totals.

    A FIEMAP call maps every extent it asks for, those past the window too (to the end of a
    file that has fewer): each window asks for about as many as it holds, as many as its
    pages at first (a page-compressed page has one), then the extents a page this process
    met in its windows before, with room to spare, in calls of one size."""

    def __init__(self) -> None:
        self.pages = 0  # pages of this process's windows so far (each process its own)
        self.extents = 0  # … and their extents

    def __call__(self, ts: Tablespace, start: int, stop: int) -> tuple[PageTally, WindowCounts]:
        pages = stop - start
        want = pages + 16
        if self.pages:
            want = min(want, 64 + 3 * pages * self.extents // (2 * self.pages))
        calls = -(-want // FIEMAP_BIG_BATCH)
        alloc, counts = ts.window_allocation(start, stop, batch=-(-want // calls))
        if counts.extents is not None:
            self.pages += pages
            self.extents += counts.extents
        return _tally_range(ts, start, stop, alloc=alloc), counts


def _tally_windows(
    ts: Tablespace,
    on_page: Callable[[PageInfo], None] | None,
    progress: Callable[[int], None] | None,
    window_map: WindowMap | None,
) -> tuple[PageTally, AllocationTotals]:
    """The one-process scan of a local file a window of :data:`WINDOW_PAGES` at a time, each
    window's allocation map read just before its pages (``window_map``, else
    :meth:`Tablespace.window_allocation`) and dropped after them, the totals joined as a
    split scan joins its parts' (:func:`ibdtool.fs.join_windows`): the map is never held
    whole, and a caller drawing pages (the TUI) sees the first ones before the last window's
    map is read."""
    read = window_map or ts.window_allocation
    n = ts.n_pages
    size, allocated, block = ts.allocation_stat
    tally = PageTally()

    def windows() -> Iterator[WindowCounts]:  # joined as they come: none is kept
        for start in range(0, max(n, 1), WINDOW_PAGES):
            stop = min(n, start + WINDOW_PAGES)
            alloc, counts = read(start, stop)
            tally.merge(
                _tally_range(ts, start, stop, on_page=on_page, progress=progress, alloc=alloc)
            )
            del alloc  # this window's map: gone before the next one is read
            yield counts

    return tally, join_windows(size, allocated, block, windows())


def index_names_of(
    ts: Tablespace, sdi: SdiSummary | None = None, schema: TableDef | None = None
) -> IndexNames:
    """The SDI's index names (``sdi`` if already read), else the .cfg file's beside ``ts``,
    else ``schema``'s by order (:mod:`ibdtool.tablespace.schemas`; one more pass over the page
    headers)."""
    if sdi is None and ts.format.sdi_root is not None:
        try:
            sdi = summarise_sdi(ts.sdi())
        except InputError:
            sdi = None
    if sdi is not None and sdi.indexes:
        return IndexNames(source="sdi", names=dict(sdi.indexes))
    cfg = from_cfg(ts.path, ts.format.space_id, ts.read_sibling)
    if cfg is not None and cfg.source is not None:
        return cfg
    if schema is not None and ts.format.space_id != 0:  # not the system tablespace's many
        # only with --schema: keep start-up light
        from ibdtool.tablespace.records import scan_indexes
        from ibdtool.tablespace.schemas import index_names_by_order

        found = scan_indexes(ts)
        roots = {i: p.root for i, p in found.items() if p.root is not None}
        if ts.format.sdi_root is not None:
            roots = {i: r for i, r in roots.items() if r != ts.format.sdi_root}
        named = index_names_by_order(schema, roots)
        named.warnings[:0] = cfg.warnings if cfg is not None else []
        return named
    return cfg or IndexNames()


def inspect_tablespace(
    ts: Tablespace,
    *,
    with_sdi: bool = True,
    progress: Callable[[int], None] | None = None,
    on_page: Callable[[PageInfo], None] | None = None,
    jobs: int | None = None,
    with_zip_fill: bool = True,
    schema: TableDef | None = None,
    window_map: WindowMap | None = None,
) -> InspectResult:
    """One pass over ``ts`` (see module doc). ``progress(pages_done)`` is called now and then;
    ``on_page(info)``, when given, sees every page as it is read (the TUI's page map), and may
    raise to stop the scan. A local file scanned in this process has its allocation map read
    a window at a time (:func:`_tally_windows`); ``window_map(start, stop)`` then reads each
    window's (the TUI's logs the call and fills its page map's allocation from it).
    ``with_zip_fill``: rebuild ROW_FORMAT=COMPRESSED leaf pages for their real fill
    (:func:`~ibdtool.tablespace.zip_fill.zip_fill_summary`, up to a second a file; ``report``
    does not). ``schema``: the table's ``--schema`` definition (index names)."""
    n = ts.n_pages
    jobs = jobs or os.cpu_count() or 1
    alloc: AllocationTotals
    if on_page is None and progress is None and jobs > 1 and n >= PARALLEL_MIN_PAGES:
        # pickle, pipes: only when it forks
        from ibdtool.tablespace.parallel import map_ranges, windows

        parts_of = windows(n, jobs, ts.physical_size)
        if ts.is_local and "allocation" not in ts.__dict__:
            # each window's map read by the process that scans it: none whole before the fork
            size, allocated, block = ts.allocation_stat
            parts = map_ranges(ts, _WindowTally(), parts_of, jobs)
            alloc = join_windows(size, allocated, block, [counts for _, counts in parts])
            tallies = [tally for tally, _ in parts]
        else:
            alloc = ts.allocation.totals()
            ts.data_ranges  # noqa: B018  (the data map once, before any fork)
            tallies = map_ranges(ts, _tally_range, parts_of, jobs)
        tally = tallies[0]
        for part in tallies[1:]:
            tally.merge(part)
    elif window_map is not None or (ts.is_local and "allocation" not in ts.__dict__):
        tally, alloc = _tally_windows(ts, on_page, progress, window_map)
    else:
        alloc = ts.allocation.totals()
        tally = _tally_range(ts, 0, n, on_page=on_page, progress=progress)
    types, comp, chk = tally.types, tally.comp, tally.chk
    stored_types, invalid, problems = tally.stored_types, tally.invalid, tally.problems
    index_pages, unverifiable = tally.index_pages, tally.unverifiable
    unpunched_pages, unpunched_total = tally.unpunched_pages, tally.unpunched_bytes
    compressed_total = tally.compressed_bytes
    fill_sum, fill_n = tally.fill_sum, tally.fill_n
    free = {
        "pages": tally.free_pages,
        "with_data": tally.free_with_data,
        "allocated_bytes": tally.free_allocated,
    }
    sdi = None
    warnings = list(ts.format.warnings)
    if with_sdi:
        try:
            sdi = summarise_sdi(ts.sdi())
        except InputError as exc:
            warnings.append(exc.message)
        warnings.extend(f"{ts.path}: {w}" for w in ts.sdi_warnings)
    encryption = encryption_summary(ts, tally)
    if ts.trailing_bytes:
        warnings.append(f"truncated: last page has {ts.trailing_bytes} of {ts.physical_size} bytes")
    names = index_names_of(ts, sdi, schema) if with_sdi else IndexNames()
    warnings.extend(names.warnings)
    identity = identify(ts.format, stored_types, str(ts.path), sdi.tables if sdi else ())
    vendor = identity.vendor
    zip_fill = None
    if ts.format.zip and with_zip_fill:
        from ibdtool.tablespace.zip_fill import zip_fill_summary  # zip files only

        zip_fill = zip_fill_summary(ts, tally.zip_leaves)
    return InspectResult(
        drop_cost=drop_cost(str(ts.path), alloc.extents, alloc.st_size) if ts.is_local else None,
        layout=layout(
            alloc.extents,
            alloc.data_range_count,
            alloc.data_bytes,
            alloc.st_size,
            alloc.contiguous_runs,
        ),
        path=str(ts.path),
        fmt=ts.format,
        vendor=vendor,
        pages=ts.n_pages,
        logical_size=ts.size,
        allocation=alloc,
        page_types=types,
        compression=comp,
        checksum_by_algo=chk,
        invalid_pages=invalid,
        unverifiable=unverifiable,
        problems=problems,
        unpunched_pages=unpunched_pages,
        unpunched_bytes=unpunched_total,
        compressed_bytes=compressed_total,
        index_pages=index_pages,
        avg_fill=fill_sum / fill_n if fill_n else None,
        sdi=sdi,
        trailing_bytes=ts.trailing_bytes,
        warnings=warnings,
        free=free,
        encryption=encryption,
        identity=identity,
        index_names=names,
        index_levels=tally.index_levels,
        compact_pages=tally.compact_pages,
        redundant_pages=tally.redundant_pages,
        zip_fill=zip_fill,
    )


def encryption_summary(ts: Tablespace, tally: PageTally) -> dict[str, Any] | None:
    """Page 0's key information (shown with or without a key) and the pages' encryption."""
    fmt = ts.format
    info = fmt.mysql_encryption or fmt.mariadb_crypt
    if info is None and not tally.encrypted:
        return None
    doc: dict[str, Any] = info.as_dict() if info is not None else {"vendor": fmt.vendor.value}
    versions = sorted(tally.key_versions)
    dec = ts.decryptor
    doc.update(
        {
            "pages_encrypted": tally.encrypted,
            "pages_decrypted": tally.decrypted,
            "page_key_versions": {"min": versions[0], "max": versions[-1]} if versions else None,
            "decrypted_with": dec.source if dec is not None else None,
            "cipher": dec.cipher.value if dec is not None and dec.cipher else None,
        }
    )
    return doc


def inspect_path(
    path: str | os.PathLike[str], keyring: Keyring | None = None, **kw: Any
) -> InspectResult:
    with Tablespace(path, keyring) as ts:
        return inspect_tablespace(ts, **kw)
