"""A conversion plan: per table, the statements, the preflight checks and the prediction.

The statements come from the server's dialect (:mod:`ibdtool.server.dialects`: MySQL tags the
table and rebuilds, MariaDB sets the global codec and rebuilds), after a session step that caps
``lock_wait_timeout``; every rebuild names its ALGORITHM/LOCK so the server refuses rather than
silently blocking writes. :func:`build_plan` joins them with the preflight checks
(:mod:`ibdtool.server.preflight`), what is already there, and the simulator's prediction.
The vocabulary (:class:`Target`, :class:`Step`, :class:`PlanSettings`) is
:mod:`ibdtool.server.steps`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from ibdtool.advise import Estimate
from ibdtool.errors import InputError
from ibdtool.fs import DropCost, dense_drop_cost, drop_total
from ibdtool.parsers.vendor import Vendor
from ibdtool.server import sql
from ibdtool.server.bufferpool import dirty_pages
from ibdtool.server.context import Server
from ibdtool.server.locks import Lock, locks_json, verify_locks
from ibdtool.server.preflight import Check, drop_checks, server_checks, table_checks
from ibdtool.server.probe import ProbeResult, change_text, latency_change, latency_text
from ibdtool.server.steps import DEFAULT_LOCK_WAIT_TIMEOUT, PlanSettings, Step, Target
from ibdtool.server.table_info import TableInfo
from ibdtool.server.tables import reload_page_states

ROW_SAMPLE_PAGES = 400  # pages the ROW_FORMAT=COMPRESSED prediction samples in bigger files
#: above this share of the table's pages dirty in the buffer pool, no prediction from the file
DIRTY_PREDICT_MAX = 0.25


@dataclass
class Prediction:
    """Bytes the table allocates now, and after the conversion (:class:`Estimate`: value,
    95% interval, basis)."""

    allocated_now: int
    allocated: Estimate
    #: what freeing the files' extents costs (:func:`ibdtool.fs.drop_total`): the old files,
    #: which the rebuild unlinks as it ends, and the new ones, which a later DROP TABLE frees
    drop_old: dict[str, Any] | None = None
    drop_new: dict[str, Any] | None = None
    #: the chosen target beside a few other ways to store the table (``compare``)
    options: list[Option] = field(default_factory=list)
    #: what the rebuild alone (no compression) would allocate: the bloat of the table's
    #: history is ``allocated_now`` less this (None: not modelled)
    rebuild_alone: Estimate | None = None

    @property
    def rebuild_saving(self) -> Estimate | None:
        r = self.rebuild_alone
        if r is None:
            return None
        now = self.allocated_now
        return Estimate(now - r.value, now - r.high, now - r.low, r.basis)

    @property
    def predicted(self) -> int:
        return round(self.allocated.value)

    @property
    def ci95(self) -> tuple[int, int] | None:
        a = self.allocated
        return None if a.is_exact else (round(a.low), round(a.high))

    @property
    def saving_pct(self) -> float:
        now = self.allocated_now
        return 100.0 * (now - self.allocated.value) / now if now else 0.0

    @property
    def how(self) -> str:
        return self.allocated.basis

    def to_json(self) -> dict[str, Any]:
        return {
            "allocated_now": self.allocated_now,
            "predicted_allocated": self.predicted,
            "ci95": list(self.ci95) if self.ci95 else None,
            "saving_pct": round(self.saving_pct, 2),
            "how": self.how,
            "allocated": self.allocated.to_json(),
            "drop_old": self.drop_old,
            "drop_new": self.drop_new,
            "options": [o.to_json() for o in self.options],
            "rebuild_alone": None
            if self.rebuild_alone is None
            else {
                "allocated": self.rebuild_alone.to_json(),
                "saving": self.rebuild_saving.to_json() if self.rebuild_saving else None,
            },
        }


@dataclass
class TablePlan:
    table: TableInfo
    target: Target
    steps: list[Step] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    skip_reason: str | None = None
    prediction: Prediction | None = None
    prediction_note: str | None = None
    dirty_pages: int | None = None  # of the table's spaces in the buffer pool, when planned
    settings: PlanSettings | None = None
    #: the workload probe's reads of the table before the conversion, and after it
    probe: ProbeResult | None = None
    probe_after: ProbeResult | None = None
    probe_note: str | None = None  # why a table was not probed

    def options_view(self) -> tuple[tuple[str, ...], list[tuple[str, ...]], list[str]]:
        """The decision view (issue 22 item 7): the columns, a row per way to store the table
        (the chosen one marked), and lines on the probe's latencies (and their change)."""
        rows = [o.cells() for o in self.prediction.options] if self.prediction else []
        lines: list[str] = []
        if self.probe is not None:
            lines.append(latency_text(self.probe))
        if self.probe_after is not None:
            lines.append(latency_text(self.probe_after))
            if self.probe is not None:
                lines.append(change_text(self.probe, self.probe_after))
        if self.probe_note:
            lines.append(self.probe_note)
        return OPTION_COLUMNS, rows, lines

    @property
    def refused(self) -> bool:
        return any(c.refuses for c in self.checks)

    @property
    def action(self) -> str:
        if self.refused:
            return "refuse"
        return "skip" if self.skip_reason else "convert"

    @property
    def refusal(self) -> str | None:
        errors = [c.message for c in self.checks if c.refuses]
        return "; ".join(errors) if errors else None

    @property
    def globals(self) -> dict[str, str]:
        return {
            s.variable: str(s.value)
            for s in self.steps
            if s.kind == "set_global" and s.variable and s.value is not None
        }

    @property
    def _timeout(self) -> int:
        return self.settings.lock_wait_timeout if self.settings else DEFAULT_LOCK_WAIT_TIMEOUT

    @property
    def _flush(self) -> bool:
        return bool(self.settings and self.settings.flush_for_export)

    def verify_locks(self) -> list[Lock]:
        return verify_locks(self._flush)

    def to_json(self, vendor: Vendor) -> dict[str, Any]:
        return {
            "table": self.table.name,
            "action": self.action,
            "current": self.table.current_format(vendor),
            "target": self.target.label,
            "skip_reason": self.skip_reason,
            "statements": [s.to_json(self._timeout) for s in self.steps],
            "verification": {
                "flush_for_export": self._flush,
                "locks": locks_json(verify_locks(self._flush)),
            },
            "dirty_pages": self.dirty_pages,
            "checks": [c.to_json() for c in self.checks],
            "prediction": self.prediction.to_json() if self.prediction else None,
            "prediction_note": self.prediction_note,
            "file_size": self.table.file_size,
            "allocated_size": self.table.allocated_size,
            "pages": self.table.page_summary(),
            "probe": self.probe.to_json() if self.probe else None,
            "probe_after": self.probe_after.to_json() if self.probe_after else None,
            "probe_note": self.probe_note,
            "latency_change": latency_change(self.probe, self.probe_after)
            if self.probe and self.probe_after
            else None,
        }


@dataclass
class Plan:
    server: str
    vendor: Vendor
    target: Target
    settings: PlanSettings
    tables: list[TablePlan]
    checks: list[Check]
    notes: list[str] = field(default_factory=list)

    @property
    def runnable(self) -> list[TablePlan]:
        return [t for t in self.tables if t.action == "convert"]

    @property
    def refused(self) -> list[TablePlan]:
        return [t for t in self.tables if t.action == "refuse"]

    def to_json(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "target": self.target.label,
            "algorithm": self.settings.algorithm,
            "checks": [c.to_json() for c in self.checks],
            "notes": self.notes,
            "tables": [t.to_json(self.vendor) for t in self.tables],
        }


# --- statements ------------------------------------------------------------------------------


def statements(server: Server, table: TableInfo, target: Target, st: PlanSettings) -> list[Step]:
    session = Step(
        "session",
        sql.SET_LOCK_WAIT_TIMEOUT,
        "give up instead of queueing every query on the table behind a metadata lock",
        variable="lock_wait_timeout",
        value=st.lock_wait_timeout,
    )
    return [session, *server.flavor.rebuild_steps(table, target, st, server.variables)]


# --- already there? --------------------------------------------------------------------------


def already_there(table: TableInfo, target: Target, vendor: Vendor) -> str | None:
    """Why the table needs nothing, or None. Pages are checked when they can be read."""
    o = table.options
    fraction = table.uncompressed_fraction
    states = [s.state for s in table.spaces if s.state is not None]
    algos: set[str] = set()
    for stt in states:
        algos |= set(stt.algorithms)
    if target.kind == "row":
        if o.row_compressed and o.key_block_size == target.key_block_size:
            return f"already ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE={target.key_block_size}"
        return None
    if target.kind == "none":
        if o.row_compressed or table.page_compression(vendor):
            return None
        if algos:
            return None  # options say none, pages are still compressed
        return "already uncompressed"
    algo = table.page_compression(vendor)
    if algo != target.algorithm or o.row_compressed:
        return None
    if target.level is not None and o.page_compression_level != target.level:
        return None
    if not states:
        return f"already {target.label} by its options (pages not checked: datadir not local)"
    if fraction is not None and fraction >= 0.10:
        return None
    if algos - {target.algorithm}:
        return None
    return f"already {target.label}: {table.page_summary()}"


# --- prediction ------------------------------------------------------------------------------


#: the page codecs set beside the chosen target in the plan's side-by-side view, when the
#: server has them (the strong default and the fast one every server line offers)
COMPARE_CODECS = ("zlib", "lz4")
#: the ROW_FORMAT=COMPRESSED block size set beside a page-compression target
COMPARE_KEY_BLOCK_SIZE = 8
OPTION_COLUMNS = ("option", ">allocated", ">saved", ">CPU µs/page", ">extents", ">DROP after")


@dataclass
class Option:
    """One way to store the table, side by side with the chosen target (issue 22 item 7):
    the bytes it would allocate, the CPU a page costs (compress + decompress, the simulator's
    timing; None for ROW_FORMAT=COMPRESSED, which it does not time), the FIEMAP extents of the
    file after and what a DROP TABLE of it would then cost."""

    label: str
    chosen: bool
    allocated: int
    low: int
    high: int
    saving_pct: float
    compress_us: float | None = None
    decompress_us: float | None = None
    extents: int | None = None
    drop: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        def us(x: float | None) -> float | None:
            return None if x is None else round(x, 1)

        return {
            "option": self.label,
            "chosen": self.chosen,
            "predicted_allocated": self.allocated,
            "ci95": [self.low, self.high]
            if (self.low, self.high) != (self.allocated,) * 2
            else None,
            "saving_pct": round(self.saving_pct, 2),
            "compress_us_per_page": us(self.compress_us),
            "decompress_us_per_page": us(self.decompress_us),
            "extents_after": self.extents,
            "drop_after": self.drop,
        }

    def cells(self) -> tuple[str, ...]:
        """The row of :data:`OPTION_COLUMNS` (the CLI's and the TUI's)."""
        from ibdtool.present import human_bytes, range_text

        cpu = (
            ""
            if self.compress_us is None or self.decompress_us is None
            else f"{self.compress_us:.0f} + {self.decompress_us:.0f}"
        )
        d = self.drop or {}
        return (
            ("→ " if self.chosen else "  ") + self.label,
            human_bytes(self.allocated),
            f"{self.saving_pct:.0f}%",
            cpu,
            "" if self.extents is None else f"{self.extents:,}",
            "" if d.get("seconds") is None else range_text(d["seconds"], d["low"], d["high"]),
        )


class _Sum:
    """One option's figures added up over a table's files (its partitions)."""

    def __init__(self) -> None:
        self.predicted = self.low = self.high = 0
        self.cpu: list[tuple[int, float | None, float | None]] = []
        self.extents: int | None = 0
        self.costs: list[DropCost] = []
        self.files = 0

    def add(self, predicted: int, ci: tuple[int, int] | None, extents: int | None) -> None:
        self.predicted += predicted
        lo, hi = ci or (predicted, predicted)
        self.low += lo
        self.high += hi
        self.extents = None if extents is None or self.extents is None else self.extents + extents
        self.files += 1

    def option(self, label: str, chosen: bool, now: int, n_files: int) -> Option | None:
        if self.files != n_files:
            return None

        def mean(i: int) -> float | None:
            """Per page, weighted by the files' pages (None when a file was not timed)."""
            known = [(n, x[i]) for n, *x in self.cpu]
            total = sum(n for n, _ in known)
            if not known or total == 0:
                return None
            acc = 0.0
            for n, v in known:
                if v is None:
                    return None
                acc += n * v
            return acc / total

        return Option(
            label,
            chosen,
            self.predicted,
            self.low,
            self.high,
            100.0 * (now - self.predicted) / now if now else 0.0,
            mean(0),
            mean(1),
            self.extents,
            drop_total(self.costs) if len(self.costs) == n_files else None,
        )


def _page_label(algorithm: str, level: int | None) -> str:
    return f"page:{algorithm}" + ("" if level is None else f":{level}")


def predict(
    server: Server, table: TableInfo, target: Target, jobs: int | None, compare: bool = False
) -> Prediction:
    """What the simulator expects the table to allocate after the conversion (local files);
    with ``compare``, the same for a few other ways to store it (:class:`Option`)."""
    from ibdtool.advise import BlockSpec, Scenario, rebuilt_allocation, simulate_path

    paths = table.local_paths
    if not paths or len(paths) != len(table.spaces):
        raise InputError("the datadir is not readable from here")
    if target.kind == "none":
        # the rebuild writes uncompressed pages, which allocate the whole (rebuilt) file
        now = sum(p.stat().st_blocks * 512 for p in paths)
        alone: Estimate | None = None
        for p in paths:
            one = rebuilt_allocation(p)
            alone = one if alone is None else alone + one
        assert alone is not None
        after = Estimate(alone.value, alone.low, alone.high, f"as rebuilt: {alone.basis}")
        return Prediction(now, after, rebuild_alone=alone)
    server_kind = server.flavor.name

    def level_of(codec: str, level: int | None = None) -> int | None:
        if level is None and codec in ("zlib", "lzma"):
            return int(server.variables.get("innodb_compression_level") or 6)
        return level

    if target.kind == "page":
        codec = target.algorithm or "zlib"
        scenarios = [Scenario(server_kind, codec, level_of(codec, target.level))]
    else:
        scenarios = [Scenario(server_kind, "zlib", level_of("zlib"))]
    if compare:
        scenarios += [
            Scenario(server_kind, c, level_of(c))
            for c in COMPARE_CODECS
            if server.has_codec(c) and all(c != x.algorithm for x in scenarios)
        ]
    chosen_label = target.label
    sums: dict[str, _Sum] = {}
    row_kbs = (
        [target.key_block_size]
        if target.kind == "row"
        else [COMPARE_KEY_BLOCK_SIZE]
        if compare and server.page_size <= 16384
        else []
    )
    if compare and target.kind == "row":
        row_kbs += [k for k in (4, 8) if k != target.key_block_size and server.page_size <= 16384]
    now = 0
    exact = True
    sampled = 0
    old_costs: list[DropCost] = []
    chosen_key = ""
    rebuilt: Estimate | None = None
    as_rebuilt = whole = True
    for p in paths:
        block = p.stat().st_blksize if not table.fs_block_size else table.fs_block_size
        row = target.kind == "row"
        # the ROW_FORMAT what-if deflates each page several times: a sample is enough
        big = p.stat().st_size > ROW_SAMPLE_PAGES * 16384
        sample = ROW_SAMPLE_PAGES if row and big else None
        res = simulate_path(
            p, scenarios, [BlockSpec(block)], sample=sample, jobs=jobs, row_compressed=row
        )
        now += res.allocated_size
        as_rebuilt = as_rebuilt and res.as_rebuilt
        if res.rebuild is not None:
            rebuilt = res.rebuild if rebuilt is None else rebuilt + res.rebuild
        if res.drop_now is not None:
            old_costs.append(res.drop_now)
        if target.kind == "page" or compare:
            for i, r in enumerate(res.results):
                label = _page_label(r.scenario.algorithm, r.scenario.level)
                if i == 0 and target.kind == "page":
                    chosen_key = label
                    # as rebuilt, even every page simulated leaves the model's error
                    whole = whole and res.full
                    exact = exact and res.full and not res.as_rebuilt
                    sampled += res.pages_sampled
                s = sums.setdefault(label, _Sum())
                s.add(r.predicted, r.ci95, r.extents)
                s.cpu.append((res.pages, r.compress_us, r.decompress_us))
                if r.drop_cost is not None:
                    s.costs.append(r.drop_cost)
        zips = res.row_compressed
        if row_kbs and not row:
            # a page-compression target: the ROW_FORMAT=COMPRESSED what-if on a sample
            zips = simulate_path(
                p,
                scenarios[:1],
                [BlockSpec(block)],
                sample=ROW_SAMPLE_PAGES if big else None,
                jobs=jobs,
                row_compressed=True,
                costs=False,
            ).row_compressed
        for z in zips:
            kbs = z.key_block_size // 1024
            if kbs not in row_kbs:
                continue
            label = f"row:{kbs}"
            s = sums.setdefault(label, _Sum())
            size = z.predicted_size
            dense = dense_drop_cost(p, size)
            s.add(size, z.ci95, dense.extents)
            s.costs.append(dense)
            if row and kbs == target.key_block_size:
                chosen_key = label
                whole = whole and res.full
                exact = exact and res.full and not res.as_rebuilt
                sampled += res.pages_sampled
    if chosen_key not in sums:
        raise InputError(f"the simulator gave no prediction for {target.label}")
    chosen = sums[chosen_key]
    how = (
        "simulate"
        + (" as rebuilt" if as_rebuilt else "")
        + ", "
        + ("full scan" if whole else f"{sampled} pages sampled")
    )
    allocated = (
        Estimate.exact(chosen.predicted, how)
        if exact
        else Estimate(chosen.predicted, chosen.low, chosen.high, how)
    )
    n = len(paths)
    options: list[Option] = []
    if compare:
        for label, s in sums.items():
            opt = s.option(
                chosen_label if label == chosen_key else label, label == chosen_key, now, n
            )
            if opt is not None:
                options.append(opt)
        options.sort(key=lambda o: (not o.chosen, o.label))
    return Prediction(
        now,
        allocated,
        drop_total(old_costs) if len(old_costs) == n else None,
        drop_total(chosen.costs) if len(chosen.costs) == n else None,
        options,
        rebuilt if as_rebuilt else None,
    )


def _predict_table(server: Server, tp: TablePlan, st: PlanSettings) -> None:
    """Predict from the file only when it holds the table: compare it with what the server
    says (the catalog's size, the space's dirty pages); with ``flush_for_export`` make it hold
    the table first (a write lock while the server writes them), else say how far it lags."""
    t = tp.table
    spaces = [s.space for s in t.spaces]
    tp.dirty_pages = (
        dirty_pages(server.session, server.flavor, spaces) if server.local_datadir else None
    )
    lag = t.unflushed()
    if st.flush_for_export and (lag or tp.dirty_pages):
        with server.new_session("flush", read_timeout=None) as flusher:
            flusher.execute(sql.flush_for_export(t.schema, t.table))
            try:
                # measured while the lock holds: after UNLOCK, MariaDB's purge may dirty the
                # pages again (it resets DB_TRX_ID of purged history), which the file read
                # here does not need to know about
                tp.dirty_pages = dirty_pages(server.session, server.flavor, spaces)
                reload_page_states(t)
            finally:
                flusher.execute(sql.UNLOCK_TABLES)
        lag = t.unflushed()
    if lag:
        dirty = f", {tp.dirty_pages} pages dirty in the buffer pool" if tp.dirty_pages else ""
        tp.prediction_note = (
            f"{lag}{dirty}: the file is not the table; predict after the page cleaner writes "
            "them, or with --flush-for-export (blocks writes while it flushes)"
        )
        return
    n_dirty = tp.dirty_pages or 0
    pages, size_basis = table_pages(t, n_dirty)
    if n_dirty and pages and n_dirty > DIRTY_PREDICT_MAX * pages:
        tp.prediction_note = (
            f"{n_dirty} of the table's {pages} pages ({size_basis}) are dirty in the buffer pool: "
            "the file is not the table yet; predict after the page cleaner writes them, or "
            "with --flush-for-export (blocks writes while it flushes)"
        )
        return
    try:
        tp.prediction = predict(server, t, tp.target, _jobs(st), compare=st.compare)
    except InputError as exc:
        tp.prediction_note = exc.message
        return
    tp.checks += drop_checks(tp.prediction.drop_old, tp.prediction.drop_new, st.slow_drop_seconds)
    if n_dirty and pages:
        # the file lags by these pages: each may cost, once written, anything about an
        # average page of the prediction more or less than what is on disk now
        p = tp.prediction
        each = p.allocated.value / pages
        p.allocated = p.allocated.widened(
            n_dirty * each,
            n_dirty * each,
            f"{n_dirty} of {pages} pages ({100 * n_dirty / pages:.0f}%, {size_basis}) dirty in the "
            "buffer pool: the interval widened by an average page each",
        )


def table_pages(t: TableInfo, dirty: int = 0) -> tuple[int | None, str]:
    """How many pages the table has, and from what: the file's own count (its pages read by
    :func:`~ibdtool.server.pagestate.page_state`), unless the catalog's DATA_LENGTH +
    INDEX_LENGTH says more (pages still only in the buffer pool), and never fewer than its
    ``dirty`` pages in the buffer pool. The catalog's statistics lag a table just loaded (seen
    on MySQL 8.0.33: 372 pages where the file had 3,328), so they are never used alone when
    the file can be read."""
    states = [s.state for s in t.spaces if s.state is not None]
    page = states[0].physical_size if states else 16384
    catalog = ((t.data_length or 0) + (t.index_length or 0)) // page
    if not states or len(states) != len(t.spaces):
        pages, basis = catalog, "the catalog's DATA_LENGTH + INDEX_LENGTH; the file not read"
    else:
        file_pages = sum(st.pages for st in states)
        if catalog > file_pages:
            pages = catalog
            basis = "the catalog's DATA_LENGTH + INDEX_LENGTH, more than the file holds"
        else:
            lag = "" if catalog * 2 > file_pages else f"; the catalog's statistics say {catalog}"
            pages, basis = file_pages, f"the file's page count{lag}"
    if dirty > pages:
        return dirty, f"at least its dirty pages: {basis} says {pages}"
    return (pages or None), basis


# --- the plan --------------------------------------------------------------------------------


def _jobs(st: PlanSettings) -> int | None:
    """Worker processes for the prediction: none from a thread other than the main one (a
    front end's worker), where starting processes is fragile."""
    if st.jobs is not None:
        return st.jobs
    return None if threading.current_thread() is threading.main_thread() else 1


def build_plan(
    server: Server, tables: list[TableInfo], target: Target, settings: PlanSettings | None = None
) -> Plan:
    st = settings or PlanSettings()
    vendor = server.flavor.name
    common = server_checks(server, target)
    plan = Plan(server.flavor.label, vendor, target, st, [], common)
    for t in tables:
        tp = TablePlan(t, target, settings=st)
        tp.checks = table_checks(server, t, target, st.algorithm)
        if not tp.refused and not any(c.refuses for c in common):
            reason = None if st.force else already_there(t, target, vendor)
            if reason:
                tp.skip_reason = reason
            tp.steps = statements(server, t, target, st)
            if st.predict and not reason and target.kind != "none":
                _predict_table(server, tp, st)
        else:
            tp.checks = common + tp.checks
        plan.tables.append(tp)
    if plan.runnable:
        plan.notes += server.flavor.plan_notes(server.variables, server.session, target)
    if plan.runnable and not server.local_datadir:
        plan.notes.append(
            "the datadir is not readable from here: no page-level verification, no prediction"
        )
    return plan
