"""Where a running ALTER's progress can be read, best source first.

* ``performance_schema``: ``events_stages_current`` WORK_COMPLETED/WORK_ESTIMATED for the ALTER's
  thread (InnoDB's ``stage/innodb/alter table (…)`` stages, ``stage/sql/copy to tmp table`` for
  COPY). Needs ``performance_schema=ON`` at start; the ``events_stages_current`` consumer (off by
  default) and the stage instruments are switched on for the run and put back afterwards.
* ``processlist``: ``information_schema.PROCESSLIST`` STAGE/MAX_STAGE/PROGRESS, where the
  dialect reports them (MariaDB; only ALGORITHM=COPY fills them, INPLACE shows 0/0/0 throughout).
* ``file``: the growth of the ``#sql-*.ibd`` file the rebuild writes in the schema directory,
  against the size the new file is expected to reach (datadir local only). That size is our
  estimate, not the server's: its readings are marked ``estimated`` (no ETA is made from them)
  and may pass it.

Each source returns a :class:`Reading` or None (nothing to say right now); :class:`Progress`
asks them in order. Readings are raw; the executor keeps the shown fraction from going back.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ibdtool.server import localfs, sql
from ibdtool.server.connection import Session
from ibdtool.server.context import Server, on
from ibdtool.server.errors import ServerError

SOURCES = ("performance_schema", "processlist", "file")
#: InnoDB stages before the last ones, where completed == estimated means "no estimate"
EARLY_STAGES = frozenset({"read PK and internal sort", "merge sort", "insert"})


@dataclass(frozen=True)
class Reading:
    source: str
    stage: str | None
    done: float
    total: float | None
    unit: str  # "work" (InnoDB stage units), "rows", "%", "bytes"
    estimated: bool = False  # total is our estimate, not the server's: no ETA from it

    @property
    def past_estimate(self) -> bool:
        return self.estimated and self.total is not None and self.done > self.total

    @property
    def fraction(self) -> float | None:
        if not self.total:
            return None
        return max(0.0, min(1.0, self.done / self.total))


@dataclass
class GlobalChange:
    """A server-wide setting we changed and must put back (also recorded in the journal)."""

    kind: str  # "variable" | "consumer" | "instrument"
    name: str
    previous: str
    value: str

    def to_json(self) -> dict[str, str]:
        return {
            "kind": self.kind,
            "name": self.name,
            "previous": self.previous,
            "value": self.value,
        }


def _typed(value: str) -> str | int | float:
    """A numeric setting as a number: the server refuses a quoted string for a numeric
    variable (``innodb_max_dirty_pages_pct_lwm = '0.001'``: error 1232)."""
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value


_WORDS = {"on": "1", "true": "1", "yes": "1", "off": "0", "false": "0", "no": "0"}


def same_setting(a: str, b: str) -> bool:
    """Whether two spellings of a setting are the same value: the server reads back
    ``0.001000`` for ``0.001`` and ``0`` for ``OFF`` (``SELECT @@GLOBAL.…``)."""
    x, y = (_WORDS.get(v.strip().lower(), v.strip().lower()) for v in (a, b))
    if x == y:
        return True
    try:
        return float(x) == float(y)
    except ValueError:
        return False


def apply_change(session: Session, change: GlobalChange, restore: bool = False) -> None:
    value = change.previous if restore else change.value
    if change.kind == "variable":
        session.execute(sql.set_global(change.name), (_typed(value),))
    elif change.kind == "consumer":
        session.execute(sql.PFS_SET_CONSUMER, (value, change.name))
    elif change.kind == "instrument":
        enabled, _, timed = value.partition("/")
        session.execute(sql.PFS_SET_INSTRUMENT, (enabled, timed or enabled, change.name))
    else:
        raise ValueError(change.kind)


class Source(Protocol):
    name: str

    def read(self, thread_id: int) -> Reading | None: ...


class StageEvents:
    """performance_schema stage events (see module doc)."""

    name = "performance_schema"

    def __init__(self, session: Session) -> None:
        self.session = session

    @staticmethod
    def available(server: Server) -> bool:
        return server.performance_schema

    def needed_changes(self) -> list[GlobalChange]:
        """The consumers and instruments to switch on (empty when they already are)."""
        changes: list[GlobalChange] = []
        for row in self.session.query(sql.PFS_CONSUMERS):
            if str(row["enabled"]).upper() != "YES":
                changes.append(GlobalChange("consumer", str(row["name"]), "NO", "YES"))
        for row in self.session.query(sql.PFS_INSTRUMENTS):
            enabled, timed = str(row["enabled"]).upper(), str(row["timed"]).upper()
            if enabled != "YES":
                changes.append(
                    GlobalChange("instrument", str(row["name"]), f"{enabled}/{timed}", "YES/YES")
                )
        return changes

    def instrument_thread(self, thread_id: int) -> None:
        row = self.session.query_one(sql.PFS_THREAD_INSTRUMENTED, (thread_id,))
        if row is not None and str(row["instrumented"]).upper() != "YES":
            self.session.execute(sql.PFS_INSTRUMENT_THREAD, (thread_id,))

    def read(self, thread_id: int) -> Reading | None:
        row = self.session.query_one(sql.PFS_STAGE, (thread_id,))
        if row is None or row.get("work_estimated") in (None, 0):
            return None
        name = str(row["event_name"])
        stage = name.removeprefix("stage/innodb/alter table ").strip("()")
        if stage == name:
            stage = name.removeprefix("stage/sql/")
        done, total = float(row["work_completed"] or 0), float(row["work_estimated"])
        if done >= total and stage in EARLY_STAGES:
            # InnoDB estimates from the table's statistics; without them (a table never
            # analyzed) the estimate just follows the work done: no information, let the
            # next source speak
            return None
        unit = "rows" if "copy to tmp table" in name else "work"
        return Reading(self.name, stage, done, total, unit)


class ProcesslistProgress:
    """MariaDB's PROCESSLIST STAGE/MAX_STAGE/PROGRESS, as one fraction over all stages."""

    name = "processlist"

    def __init__(self, session: Session, query: str) -> None:
        self.session = session
        self.query = query  # the dialect's PROCESSLIST row of one thread

    def read(self, thread_id: int) -> Reading | None:
        row = self.session.query_one(self.query, (thread_id,))
        if row is None:
            return None
        stage, max_stage = int(row.get("stage") or 0), int(row.get("max_stage") or 0)
        pct = float(row.get("progress") or 0)
        if max_stage <= 0 or stage <= 0:
            return None
        overall = ((stage - 1) + min(pct, 100.0) / 100.0) / max_stage
        label = f"{row.get('state') or 'stage'} ({stage}/{max_stage})"
        return Reading(self.name, label, 100.0 * overall, 100.0, "%")


class FileGrowth:
    """Bytes of the new ``#sql*.ibd`` files against the size they are expected to reach."""

    name = "file"

    def __init__(self, schema_dirs: Sequence[Path], expected_bytes: int) -> None:
        self.schema_dirs = list(dict.fromkeys(schema_dirs))
        self.expected = max(1, expected_bytes)
        self.before = {d: localfs.sql_files(d) for d in self.schema_dirs}

    def read(self, thread_id: int) -> Reading | None:
        size = 0
        found = False
        for d in self.schema_dirs:
            for p in localfs.rebuild_files(d, self.before[d]):
                with contextlib.suppress(OSError):
                    size += os.stat(p).st_size
                    found = True
        if not found:
            return None
        return Reading(
            self.name,
            "writing the new file",
            float(size),
            float(self.expected),
            "bytes",
            estimated=True,
        )


class Progress:
    """Asks each source in turn; ``last_source`` says which one answered last."""

    def __init__(self, sources: Sequence[Source]) -> None:
        self.sources = list(sources)
        self.last_source: str | None = None
        self.errors: list[str] = []

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.sources]

    def read(self, thread_id: int) -> Reading | None:
        for src in self.sources:
            try:
                r = src.read(thread_id)
            except ServerError as exc:
                self.errors.append(f"{src.name}: {exc.message}")
                continue
            if r is not None:
                self.last_source = src.name
                return r
        return None


def choose_sources(
    server: Server,
    monitor: Session,
    wanted: str,
    file_source: Callable[[], FileGrowth | None],
) -> list[Source]:
    """The sources for ``wanted`` ("auto" or one of :data:`SOURCES`), best first."""
    out: list[Source] = []
    names = SOURCES if wanted == "auto" else (wanted,)
    for name in names:
        if name == "performance_schema" and StageEvents.available(server):
            out.append(StageEvents(monitor))
        elif name == "processlist" and server.flavor.processlist_progress:
            out.append(ProcesslistProgress(monitor, server.flavor.process_query))
        elif name == "file":
            fg = file_source()
            if fg is not None:
                out.append(fg)
    return out


def source_unavailable_reason(server: Server, wanted: str) -> str | None:
    """Why an explicitly asked-for source cannot work on this server, or None."""
    if wanted == "performance_schema" and not on(server.variables.get("performance_schema")):
        return "performance_schema is OFF on this server (it can only be enabled at start)"
    if wanted == "processlist" and not server.flavor.processlist_progress:
        return "only MariaDB reports progress in PROCESSLIST"
    if wanted == "file" and server.local_datadir is None:
        return "the datadir is not readable from here (give --datadir if it is mounted)"
    return None
