"""The statements that bring a table to a target format on this server, and why these.

Targets: ``page:<codec>[:<level>]`` (transparent page compression), ``row:<kbs>``
(``ROW_FORMAT=COMPRESSED``) and ``none``. Per server:

* MySQL: ``ALTER TABLE … COMPRESSION='zlib'`` only tags the table, so it is followed by
  ``OPTIMIZE TABLE`` (an online INPLACE rebuild; ``ALTER TABLE … FORCE`` when
  ``innodb_optimize_fulltext_only`` would make OPTIMIZE skip the rebuild, or for
  ``--algorithm copy``). Row-format changes rebuild by themselves.
* MariaDB: the algorithm is whatever ``innodb_compression_algorithm`` says when pages are written,
  so the plan sets that global (restored afterwards) and rebuilds with
  ``PAGE_COMPRESSED=1, FORCE`` (a full_crc32 table keeps the algorithm in its flags from then on).

Every rebuild names ``ALGORITHM=INPLACE, LOCK=NONE`` where the statement takes it, so the server
refuses rather than silently blocking writes. :func:`build_plan` joins the statements with the
preflight checks and the simulator's prediction.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from ibdtool.errors import InputError
from ibdtool.server import sql
from ibdtool.server.context import Server
from ibdtool.server.flavor import MARIADB_PAGE_CODECS
from ibdtool.server.preflight import Check, server_checks, table_checks
from ibdtool.server.tables import TableInfo

KEY_BLOCK_SIZES = (1, 2, 4, 8, 16)
DEFAULT_LOCK_WAIT_TIMEOUT = 60
ROW_SAMPLE_PAGES = 400  # pages the ROW_FORMAT=COMPRESSED prediction samples in bigger files


@dataclass(frozen=True)
class Target:
    kind: str  # "page" | "row" | "none"
    algorithm: str | None = None
    level: int | None = None
    key_block_size: int | None = None  # KiB

    @property
    def label(self) -> str:
        if self.kind == "page":
            return f"page:{self.algorithm}" + (f":{self.level}" if self.level is not None else "")
        if self.kind == "row":
            return f"row:{self.key_block_size}"
        return "none"


def parse_target(text: str) -> Target:
    """``page:zlib``, ``page:lzma:3``, ``row:8``, ``none``."""
    t = text.strip().lower()
    if t in ("none", "off", "uncompressed"):
        return Target("none")
    m = re.fullmatch(r"page:([a-z0-9]+)(?::(\d+))?", t)
    if m:
        level = int(m.group(2)) if m.group(2) is not None else None
        if level is not None and not 1 <= level <= 9:
            raise InputError(f"--to {text}: the level must be 1..9")
        return Target("page", algorithm=m.group(1), level=level)
    m = re.fullmatch(r"row:(\d+)k?", t)
    if m:
        kbs = int(m.group(1))
        if kbs not in KEY_BLOCK_SIZES:
            raise InputError(f"--to {text}: KEY_BLOCK_SIZE must be one of 1, 2, 4, 8, 16")
        return Target("row", key_block_size=kbs)
    raise InputError(
        f"--to {text}: expected page:<codec>[:<level>] ({', '.join(MARIADB_PAGE_CODECS)}), "
        "row:<1|2|4|8|16> or none"
    )


@dataclass
class Step:
    """One statement of a plan."""

    kind: str  # "session" | "set_global" | "attribute" | "rebuild"
    sql: str
    why: str
    variable: str | None = None
    value: str | int | None = None

    @property
    def args(self) -> tuple[str | int, ...] | None:
        """Parameters of ``sql`` (the value of a SET), else None."""
        return (
            (self.value,)
            if self.kind in ("session", "set_global") and self.value is not None
            else None
        )

    @property
    def display(self) -> str:
        """The statement as the server receives it, without our tag, ready to paste."""
        from pymysql.converters import escape_item

        text = self.sql
        if self.args:
            text = text % tuple(escape_item(a, "utf8mb4") for a in self.args)
        return text.removeprefix(sql.TAG).strip() + ";"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "sql": self.display, "why": self.why}


@dataclass
class Prediction:
    allocated_now: int
    predicted: int
    ci95: tuple[int, int] | None
    saving_pct: float
    how: str

    def to_json(self) -> dict[str, Any]:
        return {
            "allocated_now": self.allocated_now,
            "predicted_allocated": self.predicted,
            "ci95": list(self.ci95) if self.ci95 else None,
            "saving_pct": round(self.saving_pct, 2),
            "how": self.how,
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

    def to_json(self, mariadb: bool) -> dict[str, Any]:
        return {
            "table": self.table.name,
            "action": self.action,
            "current": self.table.current_format(mariadb),
            "target": self.target.label,
            "skip_reason": self.skip_reason,
            "statements": [s.to_json() for s in self.steps],
            "checks": [c.to_json() for c in self.checks],
            "prediction": self.prediction.to_json() if self.prediction else None,
            "prediction_note": self.prediction_note,
            "file_size": self.table.file_size,
            "allocated_size": self.table.allocated_size,
            "pages": self.table.page_summary(),
        }


@dataclass
class PlanSettings:
    algorithm: str = "inplace"  # "inplace" | "copy"
    force: bool = False
    predict: bool = True
    lock_wait_timeout: int = DEFAULT_LOCK_WAIT_TIMEOUT
    jobs: int | None = None


@dataclass
class Plan:
    server: str
    mariadb: bool
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
            "tables": [t.to_json(self.mariadb) for t in self.tables],
        }


# --- statements per server ------------------------------------------------------------------


def _online(settings: PlanSettings) -> list[str]:
    if settings.algorithm == "copy":
        return ["ALGORITHM=COPY", "LOCK=SHARED"]
    return ["ALGORITHM=INPLACE", "LOCK=NONE"]


def _mysql_steps(server: Server, t: TableInfo, target: Target, st: PlanSettings) -> list[Step]:
    o = t.options
    steps: list[Step] = []
    s, n = t.schema, t.table
    if target.kind == "row":
        clauses = ["ROW_FORMAT=COMPRESSED", f"KEY_BLOCK_SIZE={target.key_block_size}"]
        if o.compression:
            clauses.append("COMPRESSION='None'")
        steps.append(
            Step(
                "rebuild",
                sql.alter_table(s, n, clauses + _online(st)),
                "rebuild as compressed rows",
            )
        )
        return steps
    want = target.algorithm if target.kind == "page" else None
    if o.row_compressed:
        clauses = ["ROW_FORMAT=DYNAMIC", "KEY_BLOCK_SIZE=0"]
        if want:
            clauses.append(f"COMPRESSION='{want}'")
        why = (
            "rebuild with uncompressed rows"
            + (f" and {want} pages" if want else "")
            + ("; indexes may keep KEY_BLOCK_SIZE in SHOW CREATE TABLE, unused with DYNAMIC")
        )
        steps.append(Step("rebuild", sql.alter_table(s, n, clauses + _online(st)), why))
        return steps
    if (o.compression or None) != want:
        value = want or "None"
        steps.append(
            Step(
                "attribute",
                sql.alter_table(s, n, [f"COMPRESSION='{value}'"]),
                "sets the attribute only: existing pages keep their format",
            )
        )
    fulltext_only = (server.variables.get("innodb_optimize_fulltext_only") or "").upper() == "ON"
    if st.algorithm == "copy" or fulltext_only:
        why = (
            "OPTIMIZE would only optimize FULLTEXT (innodb_optimize_fulltext_only=ON)"
            if fulltext_only
            else "rebuild by copy"
        )
        steps.append(Step("rebuild", sql.alter_table(s, n, ["FORCE", *_online(st)]), why))
    else:
        steps.append(
            Step(
                "rebuild",
                sql.optimize_table(s, n),
                "rewrites every page with the new attribute (online INPLACE rebuild)",
            )
        )
    return steps


def _mariadb_steps(server: Server, t: TableInfo, target: Target, st: PlanSettings) -> list[Step]:
    o = t.options
    steps: list[Step] = []
    clauses: list[str] = []
    if target.kind == "page":
        algo = target.algorithm or "zlib"
        current = (server.variables.get("innodb_compression_algorithm") or "").lower()
        if current != algo:
            steps.append(
                Step(
                    "set_global",
                    sql.set_global("innodb_compression_algorithm"),
                    f"pages are compressed with this global's value when written (now {current}); "
                    "restored afterwards",
                    variable="innodb_compression_algorithm",
                    value=algo,
                )
            )
        clauses.append("PAGE_COMPRESSED=1")
        if target.level is not None:
            clauses.append(f"PAGE_COMPRESSION_LEVEL={target.level}")
        if o.row_compressed:
            clauses += ["ROW_FORMAT=DYNAMIC", "KEY_BLOCK_SIZE=0"]
        why = f"rebuild: every page written with {algo}"
    elif target.kind == "row":
        clauses += ["ROW_FORMAT=COMPRESSED", f"KEY_BLOCK_SIZE={target.key_block_size}"]
        if o.page_compressed:
            clauses.append("PAGE_COMPRESSED=0")
        why = "rebuild as compressed rows"
    else:
        if o.page_compressed:
            clauses.append("PAGE_COMPRESSED=0")
        if o.row_compressed:
            clauses += ["ROW_FORMAT=DYNAMIC", "KEY_BLOCK_SIZE=0"]
        why = "rebuild with uncompressed pages" + (
            "; indexes may keep KEY_BLOCK_SIZE in SHOW CREATE TABLE, unused with DYNAMIC"
            if o.row_compressed
            else ""
        )
    clauses.append("FORCE")
    steps.append(Step("rebuild", sql.alter_table(t.schema, t.table, clauses + _online(st)), why))
    return steps


def statements(server: Server, table: TableInfo, target: Target, st: PlanSettings) -> list[Step]:
    session = Step(
        "session",
        sql.SET_LOCK_WAIT_TIMEOUT,
        "give up instead of queueing every query on the table behind a metadata lock",
        variable="lock_wait_timeout",
        value=st.lock_wait_timeout,
    )
    build = _mariadb_steps if server.flavor.mariadb else _mysql_steps
    return [session, *build(server, table, target, st)]


# --- already there? --------------------------------------------------------------------------


def already_there(table: TableInfo, target: Target, mariadb: bool) -> str | None:
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
        if o.row_compressed or table.page_compression(mariadb):
            return None
        if algos:
            return None  # options say none, pages are still compressed
        return "already uncompressed"
    algo = table.page_compression(mariadb)
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


def predict(server: Server, table: TableInfo, target: Target, jobs: int | None) -> Prediction:
    """What the simulator expects the table to allocate after the conversion (local files)."""
    from ibdtool.simulate import BlockSpec, Scenario, simulate

    paths = table.local_paths
    if not paths or len(paths) != len(table.spaces):
        raise InputError("the datadir is not readable from here")
    if target.kind == "none":
        logical = sum(p.stat().st_size for p in paths)
        now = sum(p.stat().st_blocks * 512 for p in paths)
        return Prediction(
            now,
            logical,
            None,
            100.0 * (now - logical) / now if now else 0.0,
            "uncompressed pages allocate the whole file",
        )
    server_kind = "mariadb" if server.flavor.mariadb else "mysql"
    if target.kind == "page":
        level = target.level
        if level is None and target.algorithm in ("zlib", "lzma"):
            level = int(server.variables.get("innodb_compression_level") or 6)
        scenarios = [Scenario(server_kind, target.algorithm or "zlib", level)]
    else:
        scenarios = [Scenario(server_kind, "zlib", 6)]
    now = predicted = 0
    low = high = 0
    exact = True
    sampled = 0
    for p in paths:
        block = p.stat().st_blksize if not table.fs_block_size else table.fs_block_size
        row = target.kind == "row"
        # the ROW_FORMAT what-if deflates each page several times: a sample is enough
        sample = ROW_SAMPLE_PAGES if row and p.stat().st_size > ROW_SAMPLE_PAGES * 16384 else None
        res = simulate(
            p, scenarios, [BlockSpec(block)], sample=sample, jobs=jobs, row_compressed=row
        )
        now += res.allocated_size
        if target.kind == "page":
            r = res.results[0]
            predicted += r.predicted
            lo, hi = r.ci95 or (r.predicted, r.predicted)
        else:
            z = next(
                z for z in res.row_compressed if z.key_block_size // 1024 == target.key_block_size
            )
            predicted += z.predicted_size
            lo, hi = z.ci95 or (z.predicted_size, z.predicted_size)
        low += lo
        high += hi
        exact = exact and res.full
        sampled += res.pages_sampled
    how = "full scan" if exact else f"{sampled} pages sampled"
    saving = 100.0 * (now - predicted) / now if now else 0.0
    return Prediction(now, predicted, None if exact else (low, high), saving, f"simulate, {how}")


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
    mariadb = server.flavor.mariadb
    common = server_checks(server, target)
    plan = Plan(server.flavor.label, mariadb, target, st, [], common)
    for t in tables:
        tp = TablePlan(t, target)
        tp.checks = table_checks(server, t, target, st.algorithm)
        if not tp.refused and not any(c.refuses for c in common):
            reason = None if st.force else already_there(t, target, mariadb)
            if reason:
                tp.skip_reason = reason
            tp.steps = statements(server, t, target, st)
            if st.predict and not reason and target.kind != "none":
                lag = t.unflushed()
                if lag:
                    tp.prediction_note = (
                        f"{lag}; predict after they are flushed (the page cleaner, or "
                        "FLUSH TABLES … FOR EXPORT)"
                    )
                else:
                    try:
                        tp.prediction = predict(server, t, target, _jobs(st))
                    except InputError as exc:
                        tp.prediction_note = exc.message
        else:
            tp.checks = common + tp.checks
        plan.tables.append(tp)
    if mariadb and target.kind == "page" and plan.runnable:
        current = (server.variables.get("innodb_compression_algorithm") or "").lower()
        if current != target.algorithm:
            n = server.session.scalar(sql.CLASSIC_PAGE_COMPRESSED_SPACES)
            if n:
                plan.notes.append(
                    f"{n} classic-format page-compressed tablespace(s) take "
                    f"innodb_compression_algorithm at every page write: pages they write during "
                    f"the run will be {target.algorithm}"
                )
    if plan.runnable and not server.local_datadir:
        plan.notes.append(
            "the datadir is not readable from here: no page-level verification, no prediction"
        )
    return plan
