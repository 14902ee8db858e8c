"""Batch reports over whole data directories: find the tablespaces, scan them, flag, total, diff.

The engine behind ``ibdtool report``. :func:`discover` turns data directories and files into
:class:`Target`\\ s (schema and table from the path, the way the server names its files);
:class:`Scanner` runs :func:`scan_one` on each in worker processes and yields one row per
tablespace as each file finishes, so a caller can stream rows with flat memory; :class:`Totals`
sums rows per schema and overall; :class:`Comparer` diffs rows against an earlier report.

A row is built from :func:`ibdtool.tablespace.inspect.inspect_path` (its ``compression`` and
``checksum`` shapes are kept as they are) plus the flags in :data:`FLAGS`. A file that cannot be
read becomes a row with ``error`` set and the sizes ``stat`` gave; the scan goes on.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from dataclasses import fields as dataclass_fields
from functools import lru_cache, partial
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ibdtool.errors import IbdtoolError, InputError
from ibdtool.fs import dense_extents
from ibdtool.parsers import filename
from ibdtool.parsers.constants import Algorithm
from ibdtool.parsers.identity import FTS_NAME
from ibdtool.parsers.vendor import Vendor
from ibdtool.report import saved as schema
from ibdtool.report.rowstore import RowStore
from ibdtool.tablespace import (
    PARALLEL_MIN_PAGES,
    FileSource,
    InspectResult,
    Tablespace,
    inspect_path,
    inspect_tablespace,
    summarise_sdi,
    sys_table_ids,
)
from ibdtool.workers import WorkerPool

if TYPE_CHECKING:
    from ibdtool.tablespace import Schemas

SCHEMA_VERSION = 1
GIB = 1 << 30

#: state flags: name -> what it means (also the valid ``--fail-on`` names)
FLAGS: dict[str, str] = {
    "checksum": "pages whose checksum does not verify",
    "mixed": "more than one page-compression algorithm among the pages",
    "needs_rebuild": "the table declares one compression state but a large share of its pages "
    "are in the other (ALTER without a rebuild: OPTIMIZE TABLE or ALTER … FORCE)",
    "no_holes": "compressed pages but no holes at all (copied without sparse, or the "
    "filesystem cannot punch holes)",
    "unpunched": "compressed pages whose slot holds more blocks than their image needs",
    "fragmented": "more extents per GiB than the threshold: DROP TABLE may stall (XFS, btrfs)",
    "costly_saving": "compression split the file into many extents (a DROP stall, a scattered "
    "cold scan) for a small saving: fewer than the threshold's percent saved",
    "slow_drop": "the predicted DROP TABLE time (freeing the file's extents) is longer than the "
    "threshold: the statement would stall its connection, and on ext4 with discard the disk",
    "error": "the file could not be read",
}

#: ``needs_rebuild``: share of the pages a server compresses (all but page 0, XDES and
#: never-written pages) found in the state the table does not declare
REBUILD_SHARE = 0.25
#: ``fragmented``: extents per GiB of file size (an average extent under 128 KiB) ...
FRAGMENTED_EXTENTS_PER_GIB = 8192
#: ... and at least this many extents in the file (small files drop fast whatever their layout)
FRAGMENTED_MIN_EXTENTS = 1024
#: ``slow_drop``: a predicted DROP TABLE longer than this many seconds
SLOW_DROP_SECONDS = 1.0
#: ``costly_saving``: at least FRAGMENTED_MIN_EXTENTS extents for less than this percent saved
COSTLY_SAVING_PCT = 25.0
DEFAULT_SAMPLE = 400
#: files from this size on are scanned one at a time, split over every core by page ranges
BIG_FILE_BYTES = PARALLEL_MIN_PAGES * 16384

_IBD = re.compile(r".+\.ibd$")
_SYSTEM = re.compile(r"ibdata\d+$")
_UNDO = re.compile(r"(undo_?\d+|.+\.ibu)$")
DATADIR_MARKERS = (
    "ibdata1",
    "mysql.ibd",
    "undo_001",
    "undo001",
    "ib_logfile0",
    "#innodb_redo",
    "aria_log_control",
    "auto.cnf",
)


# --- discovery -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Target:
    """One file to scan, named the way the server names it."""

    path: str
    #: ``schema_dir/file`` for files in a schema folder, the bare file name for server-level
    #: files (system, undo, dictionary, general tablespaces): what ``--compare`` matches on
    name: str
    schema: str | None
    table: str | None
    partition: str | None
    #: table | system | undo | dictionary | general | intermediate | directory
    kind: str
    size: int
    #: set for a directory that could not be listed
    error: str | None = None
    #: a FULLTEXT index's auxiliary tablespace (``FTS_<table id>_…``): its table's id and what
    #: part of the index it holds (``CONFIG``, ``INDEX_1 of index 0x1e``); ``table`` is None
    #: until :func:`tie_fulltext` finds the table
    fts_table_id: int | None = None
    fts_part: str | None = None


def decode_filename(name: str) -> str:
    """A folder or file name in the servers' filename encoding back to the identifier
    (:mod:`ibdtool.parsers.filename`: ``@1o`` and ``@00fc`` alike); what is not encoded is kept."""
    return filename.decode(name)


def is_datadir(directory: Path) -> bool:
    """Does ``directory`` look like a server's data directory (not a schema folder)?"""
    return any((directory / marker).exists() for marker in DATADIR_MARKERS)


#: what a tablespace's file name matches (``re.match``); sent as is to a remote agent's walk
TABLESPACE_NAMES = (_IBD, _SYSTEM, _UNDO)


def is_tablespace_name(name: str) -> bool:
    return any(p.match(name) for p in TABLESPACE_NAMES)


def classify(
    path: Path, server_level: bool, size: int | None = None, folder: str | None = None
) -> Target:
    """Name, schema, table and kind of one tablespace file.

    ``server_level``: the file sits at the top of a data directory, where the system, undo and
    dictionary tablespaces and general tablespaces (``CREATE TABLESPACE``) live. ``size``:
    ``st_size`` when known (a remote file, a walk's ``lstat``), else taken from ``stat``.
    ``folder``: the name of the folder the file is in, when known (else from its absolute path).
    """
    name = path.name
    if size is None:
        try:
            size = path.stat().st_size
        except OSError:
            size = 0
    if _SYSTEM.match(name):
        return Target(str(path), name, None, None, None, "system", size)
    if _UNDO.match(name):
        return Target(str(path), name, None, None, None, "undo", size)
    stem = name.removesuffix(".ibd")
    if name == "mysql.ibd" and server_level:
        return Target(str(path), name, "mysql", None, None, "dictionary", size)
    if server_level:
        return Target(str(path), name, None, decode_filename(stem), None, "general", size)
    if folder is None:
        folder = path.absolute().parent.name
    fts = FTS_NAME.fullmatch(stem)
    if fts is not None:
        return Target(
            str(path),
            f"{folder}/{name}",
            decode_filename(folder),
            None,
            None,
            "fulltext",
            size,
            fts_table_id=int(fts["table"], 16),
            fts_part=fts_part(fts),
        )
    parts = filename.split_table_file(stem)
    return Target(
        str(path),
        f"{folder}/{name}",
        decode_filename(folder),
        parts.table,
        parts.partition_label,
        "intermediate" if parts.temporary else "table",
        size,
    )


def fts_part(m: re.Match[str]) -> str:
    """What one auxiliary tablespace of a FULLTEXT index holds, its ids in hex as in the file
    name: ``CONFIG``, ``INDEX_1 of index 0x1e``."""
    if m["common"]:
        return m["common"].upper()
    return f"INDEX_{m['n']} of index 0x{int(m['index'], 16):x}"


def fulltext_owners(targets: Iterable[Target], rows: Iterable[dict[str, Any]]) -> dict[int, str]:
    """table id -> table name, for the FULLTEXT tablespaces among ``targets``: from the SDI of
    the tables' own files (MySQL 8: ``se_private_id``), else from SYS_TABLES in the system
    tablespace of their data directory (MariaDB, MySQL 5.x; local files only)."""
    out: dict[int, str] = {}
    for row in rows:
        sdi = row.get("sdi") or {}
        if isinstance(sdi.get("table_id"), int) and row.get("table") and not row.get("fulltext"):
            out[sdi["table_id"]] = str(row["table"])
    wanted = {t.fts_table_id for t in targets if t.fts_table_id is not None} - set(out)
    if not wanted:
        return out
    systems: set[str] = set()
    for t in targets:
        if t.fts_table_id in wanted and t.schema is not None:
            ibdata = Path(t.path).absolute().parent.parent / "ibdata1"
            if ibdata.is_file():
                systems.add(str(ibdata))
    for path in sorted(systems):
        try:
            ids = sys_table_ids(path)
        except (InputError, OSError):
            continue  # a system tablespace we cannot read ties nothing
        for tid, name in ids.items():
            if tid in wanted:
                out.setdefault(tid, filename.split_table_file(name.split("/", 1)[-1]).table)
    return out


def tie_fulltext(rows: list[dict[str, Any]] | RowStore, targets: Iterable[Target]) -> None:
    """Name each FULLTEXT tablespace's row after its table (``table``), found by the table id
    in its file name (:func:`fulltext_owners`); the rows stay in their schema's totals.
    ``rows`` a :class:`~ibdtool.report.rowstore.RowStore`: its rows are packed again."""
    targets = list(targets)
    if not any(t.fts_table_id is not None for t in targets):
        return  # no FULLTEXT tablespace: no row to name (and no pass over packed rows)
    listed = rows.in_arrival_order() if isinstance(rows, RowStore) else rows
    owners = fulltext_owners(targets, listed)

    def tie(row: dict[str, Any]) -> bool:
        fts = row.get("fulltext")
        if fts and row.get("table") is None:
            row["table"] = owners.get(int(fts["table_id"], 16))
            return True
        return False

    if isinstance(rows, RowStore):
        rows.rewrite(tie)
    else:
        for row in rows:
            tie(row)


def discover(paths: Iterable[str | os.PathLike[str]]) -> list[Target]:
    """Every tablespace under each data directory or folder, and each file given.

    A missing path is bad input (:class:`InputError`); a folder that cannot be listed becomes a
    target with ``error`` set, so that it shows in the report. Each file is listed once.
    """
    return list(walk_targets(paths))


def walk_targets(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Target]:
    """:func:`discover`'s targets as the walk finds them (folders and files in name order),
    for a caller that shows them while the walk goes on (the TUI's browser)."""
    seen: set[str] = set()
    found: list[Target] = []

    def add(t: Target) -> None:
        key = os.path.realpath(t.path)
        if key not in seen:
            seen.add(key)
            found.append(t)

    for given in paths:
        root = Path(given)
        try:
            st = root.stat()
        except FileNotFoundError:
            raise InputError(f"{root}: no such file or directory") from None
        except OSError as exc:
            raise InputError(f"{root}: {exc.strerror}") from None
        if not stat.S_ISDIR(st.st_mode):
            add(classify(root, server_level=is_datadir(root.absolute().parent)))
            yield from found
            found.clear()
            continue
        top_is_datadir = is_datadir(root)
        unlisted: list[OSError] = []
        for folder, dirnames, filenames in os.walk(root, onerror=unlisted.append):
            dirnames.sort()
            here = Path(folder)
            names = sorted(f for f in filenames if is_tablespace_name(f))
            if not names:
                continue
            # the folder resolved once: a file that is no link is the resolved folder's entry
            # (one lstat a file, where realpath takes one a path component)
            real_here = os.path.realpath(folder)
            server_level = top_is_datadir and here == root
            folder_name = here.absolute().name
            for fname in names:
                path = here / fname
                try:
                    entry = os.lstat(path)
                    link = stat.S_ISLNK(entry.st_mode)
                except OSError:
                    link = True  # gone: as stat sees it (size 0)
                if link:  # the link's target names and sizes it
                    target = classify(path, server_level, folder=folder_name)
                    key = os.path.realpath(path)
                else:
                    target = classify(path, server_level, entry.st_size, folder_name)
                    key = os.path.join(real_here, fname)
                if key not in seen:
                    seen.add(key)
                    found.append(target)
            yield from found
            found.clear()
        for problem in unlisted:
            where = Path(problem.filename) if problem.filename else root
            add(unlisted_target(where, problem.strerror or str(problem)))
        yield from found
        found.clear()


def unlisted_target(where: Path, why: str) -> Target:
    """A folder that could not be listed, as a target that becomes its error row."""
    return Target(
        str(where),
        f"{where.name}/",
        decode_filename(where.name),
        None,
        None,
        "directory",
        0,
        error=f"{where}: cannot list directory: {why}",
    )


# --- one row per file ------------------------------------------------------------------------


@dataclass(frozen=True)
class ScanOptions:
    simulate: bool = False
    sample: int = DEFAULT_SAMPLE
    seed: int = 1
    fragmented_per_gib: int = FRAGMENTED_EXTENTS_PER_GIB
    fragmented_min_extents: int = FRAGMENTED_MIN_EXTENTS
    slow_drop_seconds: float = SLOW_DROP_SECONDS
    costly_saving_pct: float = COSTLY_SAVING_PCT
    #: processes for one file's pages (set by :class:`Scanner`)
    file_jobs: int = 1
    #: add a sampled page-type map to each row (``report --map``, drawn by the HTML page)
    page_map: bool = False
    #: ``--schema``: CREATE TABLE statements, each naming its table's indexes by order
    schemas: Schemas | None = None


_ALWAYS_PLAIN_TYPES = ("FSP_HDR", "XDES", "ALLOCATED")


def declared_compression(r: InspectResult) -> str | None:
    """What the table asks for: the SDI ``COMPRESSION=`` option (MySQL 8), the full_crc32
    algorithm or the classic PAGE_COMPRESSION bit in the FSP flags (MariaDB); ``None`` where
    the file does not say (MySQL 5.7 keeps the option in the .frm, ROW_FORMAT=COMPRESSED)."""
    fmt = r.fmt
    if fmt.zip:
        return None
    if fmt.full_crc32:
        algo = fmt.fcrc32_algorithm
        return algo.value if algo else Algorithm.NONE.value
    if fmt.flags.page_compressed:
        return "page_compressed"
    if r.sdi is not None:
        value = (r.sdi.compression or "").strip().lower()
        return value if value and value != "none" else Algorithm.NONE.value
    if r.vendor is Vendor.MARIADB:
        return Algorithm.NONE.value
    return None


def compressible_pages(r: InspectResult) -> int:
    """Pages a page-compressing server would compress: all but page 0, XDES and empty ones."""
    fixed = sum(r.page_types.get(t, 0) for t in _ALWAYS_PLAIN_TYPES)
    return max(0, r.pages - fixed)


def _flags(row: dict[str, Any], r: InspectResult, opts: ScanOptions) -> list[str]:
    flags: list[str] = []
    if row["checksum"]["invalid"]:
        flags.append("checksum")
    algos = [a for a in r.compression if a != Algorithm.NONE.value]
    if len(algos) > 1:
        flags.append("mixed")
    share = row["uncompressed_share"]
    declared = row["declared_compression"]
    if share is not None and declared is not None:
        # compression declared and most pages plain, or declared off and most compressed
        off_share = 1 - share if declared == Algorithm.NONE.value else share
        if off_share > REBUILD_SHARE:
            flags.append("needs_rebuild")
    block = row["fs_block_size"] or 1
    if r.unpunched_pages and row["allocated_size"] >= row["logical_size"] // block * block:
        flags.append("no_holes")
    if r.unpunched_pages:
        flags.append("unpunched")
    extents, per_gib = row["extents"], row["extents_per_gib"]
    if (
        extents is not None
        and per_gib is not None
        and extents >= opts.fragmented_min_extents
        and per_gib > opts.fragmented_per_gib
    ):
        flags.append("fragmented")
    drop = row.get("drop_seconds")
    if drop is not None and drop > opts.slow_drop_seconds:
        flags.append("slow_drop")
    if (
        extents is not None
        and extents >= opts.fragmented_min_extents
        and row["compressed_pages"]
        and row["saving_pct"] < opts.costly_saving_pct
    ):
        flags.append("costly_saving")
    return flags


#: the keys of ``inspect --json`` a report row keeps, with the same meaning
INSPECT_KEYS = (
    "vendor",
    "format",
    "page_size",
    "physical_page_size",
    "row_format",
    "key_block_size",
    "page_compression",
    "pages",
    "logical_size",
    "allocated_size",
    "fs_block_size",
    "extents",
    "data_ranges",
    "compression",
    "checksum",
    "unpunched_pages",
    "unpunched_bytes",
    "sdi",
    "space_kind",
    "indexes",
    "index_names_from",
    "warnings",
)


def _base_row(t: Target) -> dict[str, Any]:
    return {
        "path": t.path,
        "name": t.name,
        "schema": t.schema,
        "table": t.table,
        "partition": t.partition,
        "kind": t.kind,
        "fulltext": None
        if t.fts_table_id is None
        else {"table_id": f"0x{t.fts_table_id:x}", "part": t.fts_part},
    }


def as_created(partition: str, created: Iterable[str]) -> str:
    """The partition label from a file name (lower-cased by MySQL 8.0.17+: ``pa/pasp0``) in the
    case the table's SDI gives it (``Pa/Pasp0``), when exactly one partition matches."""
    same = [c for c in created if c.lower() == partition.lower()]
    return same[0] if len(same) == 1 else partition


@lru_cache(maxsize=64)
def sibling_partitions(folder: str, table_stem: str) -> tuple[str, ...]:
    """The partitions of the table whose files start ``<table_stem>#p#`` in ``folder``, as
    created: MySQL 8 keeps the table's SDI in one partition's file only, so the others ask it
    (once per table and worker process). Empty when no file of the table holds it."""
    prefix = f"{table_stem}#p#".lower()
    try:
        names = sorted(n for n in os.listdir(folder) if n.lower().startswith(prefix))
    except OSError:
        return ()
    for name in names:
        if not name.endswith(".ibd"):
            continue
        try:
            with Tablespace(os.path.join(folder, name)) as ts:
                if ts.format.sdi_root is None:
                    return ()
                found = summarise_sdi(ts.sdi())
        except (InputError, OSError):
            continue
        if found is not None and found.partitions:
            return tuple(found.partitions)
    return ()


def _partition_as_created(t: Target, r: InspectResult, local: bool) -> str | None:
    """``t.partition`` in the case it was created with, where the file name lost it (the
    sibling files are asked only when they are on this machine)."""
    if not t.partition:
        return t.partition
    if r.sdi is not None and r.sdi.partitions:
        return as_created(t.partition, r.sdi.partitions)
    stem = os.path.basename(t.path)
    if (
        not local or r.fmt.sdi_root is None or "#p#" not in stem
    ):  # only 8.0.17+ lower-cases the names
        return t.partition
    table_stem = stem[: stem.index("#p#")]
    return as_created(t.partition, sibling_partitions(os.path.dirname(t.path), table_stem))


def row_from_inspect(
    t: Target, r: InspectResult, opts: ScanOptions, local: bool = True
) -> dict[str, Any]:
    """The report row of one tablespace (see README, ``report --json``)."""
    doc = r.to_json()
    row = _base_row(t)
    row.update((k, doc[k]) for k in INSPECT_KEYS)
    row["sdi"] = (
        None
        if r.sdi is None
        else {"schema": r.sdi.schema, "table": r.sdi.table, "table_id": r.sdi.table_id}
    )
    row["partition"] = _partition_as_created(t, r, local)
    logical, allocated = doc["logical_size"], doc["allocated_size"]
    compressed = r.pages - r.compression.get(Algorithm.NONE.value, 0)
    eligible = compressible_pages(r)
    row["compressed_pages"] = compressed
    row["uncompressed_share"] = (
        None if r.fmt.zip or not eligible else round(max(0, eligible - compressed) / eligible, 4)
    )
    row["declared_compression"] = declared_compression(r)
    row["saving"] = logical - allocated
    row["saving_pct"] = round(100 * (logical - allocated) / logical, 2) if logical else 0.0
    ext = doc["extents"]
    row["extents_per_gib"] = round(ext * GIB / logical, 1) if ext is not None and logical else None
    cost = r.drop_cost
    row["drop_seconds"] = None if cost is None else doc["drop_cost"]["seconds"]
    row["drop_low"] = None if cost is None else doc["drop_cost"]["low"]
    row["drop_high"] = None if cost is None else doc["drop_cost"]["high"]
    row["drop_basis"] = None if cost is None else cost.basis
    lay = r.layout
    row["mean_extent_bytes"] = None if lay is None else round(lay.mean_extent_bytes)
    row["scan_layout_factor"] = None if lay is None else round(lay.scan_factor, 3)
    saved_mib = (logical - allocated) / (1 << 20)
    row["extents_per_saved_mib"] = (
        round((ext - dense_extents(logical)) / saved_mib, 1) if ext is not None and saved_mib > 0
        else None
    )  # fmt: skip
    row["problem_pages"] = len(r.problems)
    row["error"] = None
    row["flags"] = _flags(row, r, opts)
    return row


def error_row(t: Target, message: str, local: bool = True) -> dict[str, Any]:
    """A file that could not be read: its sizes from ``stat`` (when even that works); not for
    a remote one (``local`` false), whose listing gave them (:mod:`ibdtool.report.remote`)."""
    row = _base_row(t)
    logical = allocated = None
    try:
        st = os.stat(t.path) if local else None
        if st is not None and stat.S_ISREG(st.st_mode):
            logical, allocated = st.st_size, st.st_blocks * 512
    except OSError:
        pass
    row.update(
        {
            "logical_size": logical,
            "allocated_size": allocated,
            "saving": None if logical is None or allocated is None else logical - allocated,
            "error": message,
            "flags": ["error"],
        }
    )
    return row


def _best_scenarios(vendor: str) -> list[Any]:
    from ibdtool.advise import DEFAULT_SCENARIOS

    servers = {"mysql": ("mysql",), "mariadb": ("mariadb",)}.get(vendor, ("mysql", "mariadb"))
    return [s for s in DEFAULT_SCENARIOS if s.server in servers]


def no_simulation(row: dict[str, Any], note: str | None) -> dict[str, Any]:
    """A row's ``simulation`` without a prediction; ``note`` says why."""
    return {
        "best": None,
        "server": None,
        "algorithm": None,
        "level": None,
        "block_size": row.get("fs_block_size"),
        "predicted_allocated": None,
        "ci95": None,
        "saving": None,
        "pages_sampled": None,
        "as_rebuilt": None,
        "rebuild_alone": None,
        "note": note,
    }


def simulation_for(
    t: Target,
    row: dict[str, Any],
    opts: ScanOptions,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """The best page-compression prediction for this file's server and filesystem (sampled);
    ``progress(pages_done, pages)`` as the sampled pages are simulated."""
    from ibdtool.advise import simulate_path

    out = no_simulation(row, None)
    if t.kind != "table":
        out["note"] = f"{t.kind} tablespaces cannot be page-compressed"
        return out
    if row.get("key_block_size"):
        # an ALTER to page compression repacks the rows; `ibdtool simulate` approximates it
        out["note"] = "ROW_FORMAT=COMPRESSED tablespace: see `ibdtool simulate` for an estimate"
        return out
    try:
        sim = simulate_path(
            t.path,
            _best_scenarios(row["vendor"]),
            sample=opts.sample,
            seed=opts.seed,
            jobs=opts.file_jobs,
            row_compressed=False,
            progress=progress,
            costs=False,  # the best saving is all a report shows
        )
    except InputError as exc:
        out["note"] = exc.message.removeprefix(f"{t.path}: ")
        return out
    best = min(sim.results, key=lambda x: (x.predicted, x.scenario))
    out.update(
        best=best.scenario.label,
        server=best.scenario.server,
        algorithm=best.scenario.algorithm,
        level=best.scenario.level,
        block_size=best.block.size,
        predicted_allocated=best.predicted,
        ci95=list(best.ci95) if best.ci95 else None,
        saving=sim.allocated_size - best.predicted,
        pages_sampled=sim.pages_sampled,
        # the prediction is of the file the conversion's rebuild writes; the rebuild alone
        # (no compression) frees the free space and garbage of the table's history
        as_rebuilt=sim.as_rebuilt,
        rebuild_alone=None
        if sim.rebuild is None or sim.rebuild_saving is None
        else {"allocated": sim.rebuild.to_json(), "saving": sim.rebuild_saving.to_json()},
    )
    return out


#: share of a file's progress given to the inspect pass when ``--simulate`` follows it
INSPECT_SHARE = 0.1


class SourceLost(IbdtoolError):
    """The place files are read from went away (a remote host's connection): raised through
    :func:`scan_one`, since no later file there can be read either."""


def scan_one(
    t: Target,
    opts: ScanOptions,
    progress: Callable[[float], None] | None = None,
    source: Callable[[str], FileSource] | None = None,
) -> dict[str, Any]:
    """Inspect one file into a row; any failure becomes an error row, never an exception
    (but :class:`SourceLost`).

    ``progress(fraction)`` (0–1) is called as the simulation goes through the file's pages.
    ``source(path)`` opens the file elsewhere (``report host:path``: no map, no simulation)."""
    local = source is None
    if t.error:
        return error_row(t, t.error, local)
    try:
        table_def = opts.schemas.for_file(t.path) if opts.schemas else None
        if source is not None:
            with Tablespace(t.path, source=source(t.path)) as ts:
                result = inspect_tablespace(ts, jobs=1, with_zip_fill=False, schema=table_def)
        elif not stat.S_ISREG(os.stat(t.path).st_mode):  # a FIFO would block the open
            return error_row(t, f"{t.path}: not a regular file")
        else:
            result = inspect_path(
                t.path, jobs=opts.file_jobs, with_zip_fill=False, schema=table_def
            )
        row = row_from_inspect(t, result, opts, local)
    except SourceLost:
        raise
    except InputError as exc:
        return error_row(t, exc.message, local)
    except OSError as exc:
        return error_row(t, f"{t.path}: {exc.strerror or exc}", local)
    except Exception as exc:  # a parser bug must not end a 4,000-file report
        message = f"{t.path}: unexpected {type(exc).__name__}: {exc} (please report)"
        return error_row(t, message, local)
    if not local:
        return row
    if opts.page_map:
        from ibdtool.present import sampled_types

        try:
            row["map"] = sampled_types(t.path)
        except (InputError, OSError):
            row["map"] = None
    if opts.simulate:
        if progress:
            progress(INSPECT_SHARE)
        try:
            row["simulation"] = simulation_for(t, row, opts, _share(progress))
        except Exception as exc:
            row["simulation"] = no_simulation(row, f"unexpected {type(exc).__name__}: {exc}")
    return row


def _share(progress: Callable[[float], None] | None) -> Callable[[int, int], None] | None:
    """Pages simulated as the part of a file's progress after the inspect pass."""
    if progress is None:
        return None
    report = progress

    def on_pages(done: int, total: int) -> None:
        # the end is 1.0 exactly, whatever the float sum gives (seen: 1.0000000000000002)
        share = min(1.0, done / total) if total > 0 else 1.0
        report(1.0 if share >= 1.0 else INSPECT_SHARE + (1 - INSPECT_SHARE) * share)

    return on_pages


#: a target as the tuple of its fields, the way it crosses to a worker (a tuple pickles in
#: a seventh of the time a frozen dataclass takes)
target_fields = attrgetter(*(f.name for f in dataclass_fields(Target)))


def _scan_fields(opts: ScanOptions, task: tuple[Any, ...]) -> tuple[int, dict[str, Any]]:
    target = Target(*task)
    return target.size, scan_one(target, opts)


def _died_row(task: tuple[Any, ...], why: str) -> tuple[int, dict[str, Any]]:
    """The row of a file whose worker process died (OOM killer, kill -9) while reading it."""
    target = Target(*task)
    return target.size, error_row(target, f"{target.path}: {why}")


def _task_label(task: tuple[Any, ...]) -> str:
    return str(task[0])


class Scanner:
    """Scan targets on ``jobs`` cores, yielding ``(bytes, row)`` as files finish.

    Big files (as big as :mod:`ibdtool.tablespace.inspect` splits) come first, one at a time, each
    split over every core by page ranges: two 1 GiB files of unequal cost finish together instead of
    one core doing the slow one alone. The rest go to a pool of worker processes, one file
    a task, largest first, each worker holding the next file while it reads one (it never waits
    for this process between files). Use as a context manager: the pool is forked on entry,
    before the caller starts a progress thread, and torn down on exit, also when the caller
    stops early.
    """

    def __init__(self, targets: list[Target], opts: ScanOptions, jobs: int) -> None:
        by_size = sorted(targets, key=lambda t: -t.size)
        self.big = [t for t in by_size if t.size >= BIG_FILE_BYTES]
        self.small = [t for t in by_size if t.size < BIG_FILE_BYTES]
        self.cores = max(1, jobs)
        self.opts = opts
        self._pool: Any = None
        #: ``(target, fraction)`` while a big file is scanned in this process (the small ones
        #: go whole to the workers)
        self.on_progress: Callable[[Target, float], None] | None = None

    def __enter__(self) -> Scanner:
        workers = min(self.cores, len(self.small))
        if workers > 1:
            # the options are the workers' from the fork: a task is the target alone
            scan = partial(_scan_fields, replace(self.opts, file_jobs=1))
            self._pool = WorkerPool(
                scan, workers, died=_died_row, label=_task_label, depth=2
            ).__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self._pool is not None:
            self._pool.__exit__(*exc_info)
            self._pool = None
        self.big, self.small = [], []  # the targets' memory is the writers' from here on

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        whole = replace(self.opts, file_jobs=self.cores)
        for t in self.big:
            cb = self.on_progress
            yield t.size, scan_one(t, whole, None if cb is None else partial(cb, t))
        if self._pool is None:
            one = replace(self.opts, file_jobs=1)
            yield from ((t.size, scan_one(t, one)) for t in self.small)
        else:
            # drawn as workers fall idle
            yield from self._pool.map_unordered(map(target_fields, self.small))


def sort_key(row: dict[str, Any]) -> tuple[str, str, bool, str, str]:
    """Rows in a report: by schema (server-level files first), then table (a FULLTEXT index's
    tablespaces after their table's file), then name, then path."""
    fts = bool(row.get("fulltext"))
    table = row.get("table") if row.get("table") is not None else row.get("name")
    return (row.get("schema") or "", table or "", fts, row.get("name") or "", row.get("path") or "")


# --- totals ----------------------------------------------------------------------------------

_SUMMED = (
    "pages",
    "logical_size",
    "allocated_size",
    "saving",
    "extents",
    "compressed_pages",
    "unpunched_pages",
    "unpunched_bytes",
    # the predicted DROP time of every file: per schema, what DROP DATABASE would cost
    "drop_seconds",
    "drop_low",
    "drop_high",
)


def _empty_total() -> dict[str, Any]:
    total: dict[str, Any] = {"files": 0, "errors": 0}
    total.update(dict.fromkeys(_SUMMED, 0))
    total["checksum_invalid"] = 0
    total["flags"] = dict.fromkeys(FLAGS, 0)
    return total


class Totals:
    """Sums of rows per schema and overall, and per host for rows that name one (``report
    host:path``: schemas are then per host too); memory grows with schemas, not files."""

    def __init__(self) -> None:
        self.all = _empty_total()
        self.schemas: dict[tuple[str, str | None], dict[str, Any]] = {}
        self.hosts: dict[str, dict[str, Any]] = {}

    def add(self, row: dict[str, Any]) -> None:
        host = row.get("host")
        totals = [self.all]
        if host is not None:
            total = self.hosts.setdefault(host, {**_empty_total(), "host_error": None})
            if row.get("kind") == "host":
                total["host_error"] = total["host_error"] or row.get("error")
            totals.append(total)
        if row.get("kind") != "host":
            totals.append(self.schemas.setdefault((host or "", row.get("schema")), _empty_total()))
        for total in totals:
            total["files"] += row.get("kind") != "host"
            total["errors"] += 1 if row.get("error") else 0
            for key in _SUMMED:
                total[key] += row.get(key) or 0
            total["checksum_invalid"] += (row.get("checksum") or {}).get("invalid", 0)
            for flag in row.get("flags", ()):
                total["flags"][flag] = total["flags"].get(flag, 0) + 1
            sim = row.get("simulation")
            if sim is not None:
                part = total.setdefault(
                    "simulation",
                    {
                        "files": 0,
                        "allocated_size": 0,
                        "predicted_allocated": 0,
                        "rebuild_saving": 0,
                    },
                )
                if sim.get("predicted_allocated") is not None:
                    part["files"] += 1
                    part["allocated_size"] += row.get("allocated_size") or 0
                    part["predicted_allocated"] += sim["predicted_allocated"]
                    alone = sim.get("rebuild_alone")
                    if alone:
                        part["rebuild_saving"] += round(alone["saving"]["value"])

    @staticmethod
    def _finish(total: dict[str, Any]) -> dict[str, Any]:
        out = dict(total)
        logical = out["logical_size"]
        out["saving_pct"] = round(100 * out["saving"] / logical, 2) if logical else 0.0
        for key in ("drop_seconds", "drop_low", "drop_high"):
            out[key] = round(out[key], 3)
        if "simulation" in out:
            sim = dict(out["simulation"])
            sim["saving"] = sim["allocated_size"] - sim["predicted_allocated"]
            out["simulation"] = sim
        return out

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "all": self._finish(self.all),
            "by_schema": [
                {**({"host": host} if self.hosts else {}), "schema": schema, **self._finish(total)}
                for (host, schema), total in sorted(
                    self.schemas.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")
                )
            ],
        }
        if self.hosts:
            out["by_host"] = [
                {"host": host, **self._finish(total)} for host, total in sorted(self.hosts.items())
            ]
        return out


# --- compare ---------------------------------------------------------------------------------

#: row fields whose change makes a tablespace "changed" (sizes and flags come on top)
COMPARED_FIELDS = (
    "format",
    "row_format",
    "key_block_size",
    "page_compression",
    "declared_compression",
    "compressed_pages",
    "error",
)


def match_keys(rows: Iterable[dict[str, Any]]) -> list[str]:
    """What rows are matched on across reports: ``name``, or ``path`` if names repeat; each
    after ``host:`` for rows that name their host (``report host:path``). One pass over
    ``rows`` (a :class:`~ibdtool.report.rowstore.RowStore` unpacks each row once)."""
    names: list[str] = []
    paths: list[str] = []
    for r in rows:
        host = f"{r['host']}:" if r.get("host") else ""
        names.append(host + (r.get("name") or r.get("path") or ""))
        paths.append(host + (r.get("path") or ""))
    return names if len(set(names)) == len(names) else paths


#: what ``--compare`` reads at most: a JSON report of a million tablespaces is about 1 GB
MAX_REPORT_BYTES = 2 << 30


def load_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """An earlier ``report --format json`` document or ``--format jsonl`` stream, checked
    against :mod:`ibdtool.report.saved` (one-line :class:`InputError` when malformed)."""
    from ibdtool.fs import read_capped

    try:
        text = read_capped(path, MAX_REPORT_BYTES, "saved report").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not an ibdtool report (not UTF-8 at byte {exc.start})") from None
    whole_error: json.JSONDecodeError | None = None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        doc, whole_error = None, exc
    except RecursionError:
        raise InputError(f"{path}: not an ibdtool report (nested too deeply)") from None
    try:
        if isinstance(doc, dict) and "tablespaces" in doc:
            version = doc.get("schema_version")
            if version != SCHEMA_VERSION or not isinstance(version, int):
                raise InputError(
                    f"{path}: report schema_version {version!r}; this ibdtool reads "
                    f"{SCHEMA_VERSION}"
                )
            schema.check_document(doc)
            return doc
        if doc is not None and not isinstance(doc, dict):
            raise InputError(
                f"{path}: not an ibdtool report (a JSON {type(doc).__name__}; expected "
                "--format json or jsonl output)"
            )
        rows = _jsonl_rows(text, path, whole_error)
    except schema.Malformed as exc:
        raise InputError(f"{path}: {exc}") from None
    if not rows:
        raise InputError(f"{path}: not an ibdtool report (no tablespaces in it)")
    return {"schema_version": SCHEMA_VERSION, "generated_at": None, "tablespaces": rows}


def _jsonl_rows(
    text: str, path: str | os.PathLike[str], whole_error: json.JSONDecodeError | None
) -> list[dict[str, Any]]:
    """The rows of a ``jsonl`` report, but the dropped ones it lists at the end."""
    rows: list[dict[str, Any]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            if not rows and whole_error is not None:  # not JSON lines: a broken document
                e = whole_error
                raise InputError(
                    f"{path}: not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})"
                ) from None
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            raise InputError(f"{path}: line {n}: not valid JSON: {why}") from None
        if isinstance(row, dict) and "path" not in row and "totals" in row:
            continue  # the totals lines that end a report host:path --format jsonl
        if not isinstance(row, dict) or "path" not in row:
            raise InputError(
                f"{path}: line {n}: not an ibdtool report (expected --format json or jsonl output)"
            )
        try:
            schema.check_object(row, schema.ROW)
        except schema.Malformed as exc:
            raise schema.Malformed(f"line {n}: {exc}") from None
        change = row.get("change")
        if change is None or change.get("status") != "dropped":
            rows.append(row)
    return rows


def _sizes(old: dict[str, Any] | None, new: dict[str, Any] | None, key: str) -> dict[str, Any]:
    a = None if old is None else old.get(key)
    b = None if new is None else new.get(key)
    return {"old": a, "new": b, "delta": (b or 0) - (a or 0)}


class Comparer:
    """Diff rows, one at a time as they arrive, against an earlier report's rows."""

    def __init__(self, old_doc: dict[str, Any], source: str, new_keys: Iterable[str]) -> None:
        old_rows = list(old_doc.get("tablespaces", []))
        self.old = dict(zip(match_keys(old_rows), old_rows, strict=True))
        self.against = {"report": source, "generated_at": old_doc.get("generated_at")}
        self.new_keys = set(new_keys)
        self.counts = {"added": 0, "dropped": 0, "changed": 0, "unchanged": 0}
        self.old_totals = Totals()
        for row in old_rows:
            self.old_totals.add(row)

    def change(self, key: str, new: dict[str, Any]) -> dict[str, Any]:
        """The change record of one new row (``status`` added, changed or unchanged)."""
        old = self.old.get(key)
        record = self._record(key, old, new)
        self.counts[record["status"]] += 1
        return record

    def dropped(self, failed_hosts: Iterable[str] = ()) -> list[dict[str, Any]]:
        """Records for the old rows no new row matched, in name order; the rows of
        ``failed_hosts`` (unreachable this time) are not called dropped."""
        out = []
        failed = set(failed_hosts)
        for key in sorted(set(self.old) - self.new_keys):
            if self.old[key].get("host") in failed:
                continue
            out.append(self._record(key, self.old[key], None))
            self.counts["dropped"] += 1
        return out

    @staticmethod
    def _record(key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, Any]:
        ref = new if new is not None else old
        assert ref is not None
        record: dict[str, Any] = {
            "key": key,
            **({"host": ref["host"]} if ref.get("host") else {}),
            "name": ref.get("name"),
            "schema": ref.get("schema"),
            "table": ref.get("table"),
            "path": ref.get("path"),
            "status": "added" if old is None else "dropped" if new is None else "unchanged",
            "logical_size": _sizes(old, new, "logical_size"),
            "allocated_size": _sizes(old, new, "allocated_size"),
            "extents": _sizes(old, new, "extents"),
            "fields": {},
            "flags_added": [],
            "flags_removed": [],
        }
        if old is None or new is None:
            return record
        fields = {
            k: {"old": old.get(k), "new": new.get(k)}
            for k in COMPARED_FIELDS
            if old.get(k) != new.get(k)
        }
        old_invalid = (old.get("checksum") or {}).get("invalid")
        new_invalid = (new.get("checksum") or {}).get("invalid")
        if old_invalid != new_invalid:
            fields["checksum_invalid"] = {"old": old_invalid, "new": new_invalid}
        old_flags, new_flags = set(old.get("flags", ())), set(new.get("flags", ()))
        record["fields"] = fields
        record["flags_added"] = sorted(new_flags - old_flags)
        record["flags_removed"] = sorted(old_flags - new_flags)
        if (
            fields
            or record["flags_added"]
            or record["flags_removed"]
            or record["logical_size"]["delta"]
            or record["allocated_size"]["delta"]
        ):
            record["status"] = "changed"
        return record

    def summary(self, new_totals: Totals) -> dict[str, Any]:
        """Counts, and size deltas overall and per schema (recomputed from the old rows)."""
        old_t, new_t = self.old_totals.to_json(), new_totals.to_json()
        old_by = {(s.get("host"), s["schema"]): s for s in old_t["by_schema"]}
        new_by = {(s.get("host"), s["schema"]): s for s in new_t["by_schema"]}
        schemas = sorted(set(old_by) | set(new_by), key=lambda s: (s[0] or "", s[1] or ""))
        return {
            **self.counts,
            "logical_size": _sizes(old_t["all"], new_t["all"], "logical_size"),
            "allocated_size": _sizes(old_t["all"], new_t["all"], "allocated_size"),
            "by_schema": [
                {
                    **({"host": s[0]} if s[0] is not None else {}),
                    "schema": s[1],
                    "files": _sizes(old_by.get(s), new_by.get(s), "files"),
                    "logical_size": _sizes(old_by.get(s), new_by.get(s), "logical_size"),
                    "allocated_size": _sizes(old_by.get(s), new_by.get(s), "allocated_size"),
                }
                for s in schemas
            ],
        }


def fail_on_hits(rows_flags: dict[str, int], wanted: Iterable[str]) -> list[str]:
    """The ``--fail-on`` conditions found (flag counts from the overall totals)."""
    return [f for f in wanted if rows_flags.get(f, 0)]


# --- the document ----------------------------------------------------------------------------


def thresholds(opts: ScanOptions) -> dict[str, Any]:
    return {
        "needs_rebuild_share": REBUILD_SHARE,
        "fragmented_extents_per_gib": opts.fragmented_per_gib,
        "fragmented_min_extents": opts.fragmented_min_extents,
        "slow_drop_seconds": opts.slow_drop_seconds,
        "costly_saving_pct": opts.costly_saving_pct,
    }


def document(
    rows: list[dict[str, Any]] | RowStore,
    totals: Totals,
    meta: dict[str, Any],
    compare: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``report --format json`` document (README: ``report --json``); ``rows`` may be
    a :class:`~ibdtool.report.rowstore.RowStore`, unpacked as the writers go through it."""
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, **meta}
    doc["flags"] = FLAGS
    doc["tablespaces"] = rows
    doc["totals"] = totals.to_json()
    if compare is not None:
        doc["compare"] = compare
    return doc
