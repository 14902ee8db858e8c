"""Run a :class:`~ibdtool.server.plan.Plan`, one table at a time, as a stream of events.

:meth:`Migration.events` is a generator: the CLI wraps it in a Rich bar, the TUI runs it in a
worker. Each DDL runs on its own connection in a thread while this generator polls the progress
sources on the main connection and yields :class:`Event` objects (``progress`` at most every
``poll`` seconds). :meth:`Migration.cancel` (thread-safe; the CLI calls it on Ctrl-C) sends
``KILL QUERY`` for the running statement from a separate connection; the table's state is then
checked and reported. A dropped connection is detected, the tool reconnects, waits for the
statement if the server is still running it, and decides from the tablespace's space id (a
rebuild makes a new one) whether it took effect.

Every server-wide setting changed for the run (``innodb_compression_algorithm`` on MariaDB, the
performance_schema consumer and instruments) is journaled when set and put back when the table or
the batch ends, on success, failure, interruption or an exception alike.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ibdtool.errors import InputError
from ibdtool.server import sql
from ibdtool.server.bufferpool import (
    STUCK_AFTER,
    current_lsn,
    dirty_pages,
    unwritten_pages,
    wait_flushed,
)
from ibdtool.server.connection import Session
from ibdtool.server.context import Server
from ibdtool.server.errors import ER_QUERY_INTERRUPTED, ServerError
from ibdtool.server.flushwatch import FlushWatch, Waiting
from ibdtool.server.journal import Journal
from ibdtool.server.pacing import Pacing
from ibdtool.server.pagestate import Verification, verify
from ibdtool.server.plan import Plan, TablePlan
from ibdtool.server.progress import (
    FileGrowth,
    GlobalChange,
    Progress,
    Reading,
    StageEvents,
    apply_change,
    choose_sources,
    same_setting,
)
from ibdtool.server.results import Event, Sizes, StatementResult, TableResult
from ibdtool.server.steps import Step
from ibdtool.server.table_info import TableInfo, TableOptions

ETA_MIN_FRACTION = 0.01  # as gh-ost: no ETA before 1% is done
FILE_FRACTION_CAP = 0.99  # an estimate-based bar never shows done before the statement is
ORPHAN_WAIT = 60.0  # seconds to wait for a killed statement when leaving early
#: how to verify a table that ended awaiting_flush
AWAITING_FLUSH_HINT = (
    "to verify it later, run the same migrate with --verify (with --journal, the tables it "
    "left unverified): it waits for the pages without a lock; --flush-for-export writes them "
    "at once but blocks writes to the table meanwhile"
)


@dataclass
class ExecSettings:
    max_running: int | None = 25  # pause before a table while Threads_running >= this
    pacing: Pacing = field(default_factory=Pacing)  # --max-load, --critical-load, pause file
    pause: float = 0.0  # seconds between tables
    poll: float = 0.5  # seconds between progress reads
    flush_for_export: bool = False  # FLUSH TABLES … FOR EXPORT (blocks writes) before measuring
    #: without it: seconds the batch waits, after its last conversion, for the pages of the
    #: tables not verified yet (each is verified as soon as its pages are written, while the
    #: batch goes on)
    flush_wait: float = 300.0
    nudge: bool = True  # lower the page cleaner's pre-flush mark while tables wait (no lock)
    progress: str = "auto"  # "auto" | "performance_schema" | "processlist" | "file"
    stop_on_error: bool = True
    throttle_poll: float = 2.0
    reconnect_timeout: float = 60.0


class _Outcome:
    OK = "ok"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


class _Running:
    """A statement running on the worker connection in a thread."""

    def __init__(self, session: Session, step: Step) -> None:
        self.session = session
        self.step = step
        self.rows: list[dict[str, Any]] = []
        self.error: ServerError | None = None
        self.thread = threading.Thread(target=self._run, name="ibdtool-ddl", daemon=True)

    def _run(self) -> None:
        try:
            self.rows = self.session.query(self.step.sql, self.step.args)
        except ServerError as exc:
            self.error = exc
        except Exception as exc:  # anything else must still end the statement cleanly
            self.error = ServerError(f"{type(exc).__name__}: {exc}")


class Migration:
    """Executes a plan; iterate :meth:`events` to drive it (see module doc)."""

    def __init__(
        self,
        server: Server,
        plan: Plan,
        settings: ExecSettings | None = None,
        journal: Journal | None = None,
    ) -> None:
        self.server = server
        self.plan = plan
        self.settings = settings or ExecSettings()
        self.journal = journal
        self.results: list[TableResult] = []
        self._cancel = threading.Event()
        self._worker: Session | None = None
        self._changes: list[GlobalChange] = []  # batch-wide (performance_schema)
        self._running: _Running | None = None
        self._killed = False
        self.interrupted = False
        self.stopped: str | None = None  # why a critical load stopped the batch
        self._watch = FlushWatch()  # converted tables whose pages are not all written yet
        self._nudges: list[GlobalChange] = []  # the page cleaner's settings, while tables wait
        self._nudge_at_once: bool | None = None  # the flavor's answer, read once
        self._watched_at = 0.0  # monotonic time of the last reading of the watch
        self._verifying = False  # a --verify pass: journal table_verified, not table_done
        load = dict(self.settings.pacing.max_load)
        if self.settings.max_running and "Threads_running" not in load:
            load["Threads_running"] = self.settings.max_running
        self.pacing = replace(self.settings.pacing, max_load=load)

    # -- control ---------------------------------------------------------------------------------

    def cancel(self) -> str:
        """Stop: kill the running statement (from another connection) and end the batch.
        What that does, in a line for the user: a statement is running and will be killed,
        or none is and the batch stops before the next table."""
        self._cancel.set()
        running = self._running
        if running is not None and running.thread.is_alive():
            return f"KILL QUERY for the running statement: {running.step.display}"
        return "no statement is running: the batch stops before the next table"

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def _journal(self, event: str, **fields: Any) -> None:
        if self.journal is not None:
            self.journal.write(event, target=self.plan.target.label, **fields)

    def _wait(self, seconds: float) -> None:
        self._cancel.wait(seconds)

    # -- connections -----------------------------------------------------------------------------

    def _worker_session(self) -> Session:
        if self._worker is None:
            self._worker = self.server.new_session("worker", read_timeout=None)
        return self._worker

    def _drop_worker(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    def _kill(self, thread_id: int) -> None:
        with self.server.new_session("kill", read_timeout=10) as killer:
            killer.execute(sql.kill_query(thread_id))

    # -- global settings ---------------------------------------------------------------------------

    def _set(self, change: GlobalChange, on: Session) -> None:
        self._journal("global_set", change=change.to_json())
        apply_change(on, change)

    def _restore(self, changes: list[GlobalChange]) -> list[str]:
        """Put every change back (last first); returns problems, never raises."""
        problems: list[str] = []
        while changes:
            ch = changes.pop()
            try:
                apply_change(self.server.session, ch, restore=True)
                self._journal("global_restored", change=ch.to_json())
            except ServerError as exc:
                try:
                    self.server.session = self.server.new_session("main")
                    apply_change(self.server.session, ch, restore=True)
                    self._journal("global_restored", change=ch.to_json())
                except ServerError:
                    problems.append(
                        f"could not restore {ch.name} to {ch.previous!r}: {exc.message}"
                    )
        return problems

    def _restore_leftovers(self) -> Iterator[Event]:
        if self.journal is None:
            return
        st = self.journal.state(self.plan.target.label)
        for ch in st.unrestored:
            current = self._current_value(ch)
            if current is not None and not same_setting(current, ch.value):
                self._journal("global_restored", change=ch.to_json(), note="changed since")
                continue
            problems = self._restore([ch])
            msg = (
                f"an earlier run left {ch.name}={ch.value!r}; restored to {ch.previous!r}"
                if not problems
                else problems[0]
            )
            yield Event("global_restored", message=msg, data={"change": ch.to_json()})

    def _current_value(self, ch: GlobalChange) -> str | None:
        s = self.server.session
        if ch.kind == "variable":
            v = s.scalar(sql.show_global(ch.name))
            return None if v is None else str(v)
        if ch.kind == "consumer":
            for row in s.query(sql.PFS_CONSUMERS):
                if row["name"] == ch.name:
                    return str(row["enabled"])
            return None
        for row in s.query(sql.PFS_INSTRUMENTS):
            if row["name"] == ch.name:
                return f"{row['enabled']}/{row['timed']}"
        return None

    # -- the batch -------------------------------------------------------------------------------

    def events(self) -> Iterator[Event]:
        plan = self.plan
        names = [t.table.name for t in plan.tables]
        done_before: dict[str, dict[str, Any]] = {}
        clean_end = False
        try:
            yield from self._restore_leftovers()
            if self.journal is not None:
                state = self.journal.state(plan.target.label)
                done_before = state.done
                if state.batches:
                    yield Event(
                        "resume",
                        message=f"journal {self.journal.path}: {len(state.done)} of "
                        f"{len(names)} tables already done",
                        data={"done": sorted(state.done)},
                    )
            self._journal(
                "batch_start",
                server=plan.server,
                connection=self.server.opts.describe(),
                tables=names,
                algorithm=plan.settings.algorithm,
            )
            yield Event("batch_start", message=f"{len(plan.runnable)} of {len(names)} to convert")
            yield from self._setup_progress()
            for i, tp in enumerate(plan.tables):
                if self.cancelled:
                    break
                name = tp.table.name
                if tp.action == "refuse":
                    self.results.append(TableResult(name, "refused", tp.refusal or ""))
                    yield Event("table_refused", name, tp.refusal or "")
                    continue
                if name in done_before:
                    msg = f"done in the journal at {done_before[name].get('ts')}"
                    self.results.append(TableResult(name, "skipped", msg))
                    yield Event("table_skipped", name, msg)
                    continue
                if tp.action == "skip":
                    self.results.append(TableResult(name, "skipped", tp.skip_reason or ""))
                    self._journal("table_skipped", table=name, reason=tp.skip_reason)
                    yield Event("table_skipped", name, tp.skip_reason or "")
                    continue
                if i and self.settings.pause:
                    yield Event("pause", name, f"pausing {self.settings.pause:g}s between tables")
                    self._wait(self.settings.pause)
                    if self.cancelled:
                        break
                yield from self._check_watch()
                yield from self._throttle(name)
                if self.cancelled:
                    break
                if self.stopped:
                    self.results.append(TableResult(name, "stopped", self.stopped))
                    break
                result = yield from self._run_table(tp)
                self.results.append(result)
                if result.status == "interrupted":
                    self.interrupted = True
                    break
                if result.status == "failed" and self.settings.stop_on_error:
                    yield Event("batch_stopped", name, "stopping the batch after a failure")
                    break
            yield from self._drain()
            clean_end = True
        finally:
            self._stop_orphan()
            problems = self._restore(self._nudges)
            problems += self._restore(self._changes)
            if self.cancelled:
                ran = {r.table for r in self.results}
                for tp in self.plan.tables:  # what the interruption left undone, by name
                    if tp.table.name not in ran and tp.action not in ("refuse", "skip"):
                        self.results.append(
                            TableResult(tp.table.name, "not_run", "interrupted before it started")
                        )
                # interrupted when the summary shows it: a Ctrl-C after the last table
                # finished cut nothing short
                self.interrupted = self.interrupted or any(
                    r.status in ("interrupted", "not_run") for r in self.results
                )
            self._drop_worker()
        for p in problems:
            yield Event("restore_failed", message=p)
        if clean_end:
            summary = {r.table: r.status for r in self.results}
            self._journal("batch_done", results=summary, interrupted=self.interrupted)
            yield Event(
                "batch_done",
                message=_interrupted_text(self.results)
                if self.interrupted
                else (f"stopped: {self.stopped}" if self.stopped else "done"),
                data={"results": [r.to_json() for r in self.results]},
            )

    def verify_events(self) -> Iterator[Event]:
        """``migrate --verify``: convert nothing; read back each table of the plan (not
        refused) in the target format once the server has written its pages (no lock; the
        page cleaner nudged while any waits, at most ``flush_wait`` seconds). Journaled as
        ``table_verified``, so a batch that ended with tables awaiting their flush is proved
        later."""
        self._verifying = True
        clean_end = False
        try:
            yield from self._restore_leftovers()
            tables = [tp for tp in self.plan.tables if tp.action != "refuse"]
            yield Event("batch_start", message=f"verifying {len(tables)} tables (no lock)")
            for tp in self.plan.tables:
                name = tp.table.name
                if tp.action == "refuse":
                    self.results.append(TableResult(name, "refused", tp.refusal or ""))
                    yield Event("table_refused", name, tp.refusal or "")
                    continue
                result = TableResult(name, "awaiting_flush")
                self.results.append(result)
                fresh = self._sizes(tp.table)
                lsn = current_lsn(self.server.session) if fresh.space_ids else None
                if lsn is None:
                    yield from self._read_back(tp, result, False)
                    yield from self._table_done(result)
                    continue
                self._watch.add(Waiting(name, fresh.space_ids, lsn, payload=(tp, result)))
            yield from self._check_watch(force=True)
            yield from self._drain()
            clean_end = True
        finally:
            problems = self._restore(self._nudges)
        for p in problems:
            yield Event("restore_failed", message=p)
        if clean_end:
            yield Event(
                "batch_done",
                message="interrupted" if self.cancelled else "done",
                data={"results": [r.to_json() for r in self.results]},
            )

    def _stop_orphan(self) -> None:
        """Left early (an exception, a second Ctrl-C, the consumer closed the generator) while
        a statement runs: kill it rather than leave a rebuild going unattended."""
        running = self._running
        if running is None or not running.thread.is_alive():
            return
        self.interrupted = True
        with contextlib.suppress(ServerError):
            self._kill(running.session.thread_id)
        running.thread.join(ORPHAN_WAIT)

    def _setup_progress(self) -> Iterator[Event]:
        wants_pfs = self.settings.progress in ("auto", "performance_schema")
        if not (wants_pfs and StageEvents.available(self.server) and self.plan.runnable):
            return
        try:
            changes = StageEvents(self.server.session).needed_changes()
            for ch in changes:
                self._set(ch, self.server.session)
                self._changes.append(ch)
        except ServerError as exc:
            yield Event("note", message=f"performance_schema progress unavailable: {exc.message}")
            return
        if changes:
            names = ", ".join(c.name for c in changes)
            yield Event("global_set", message=f"enabled {names} for the run (restored afterwards)")

    def _throttle(self, name: str, between_tables: bool = True) -> Iterator[Event]:
        """Wait while paused or loaded (:mod:`ibdtool.server.pacing`); between tables a
        critical load stops the batch (sets :attr:`stopped`)."""
        pacing = self.pacing
        names = pacing.names
        while not self.cancelled:
            status = self.server.read_status(names) if names else {}
            verdict = pacing.check(status, pacing.lags())
            if verdict.action == "go":
                return
            if verdict.action == "stop":
                if between_tables:
                    self.stopped = verdict.reason
                    yield Event("batch_stopped", name, f"stopping the batch: {verdict.reason}")
                    return
                return  # mid-table: finish the table, the next check stops
            yield Event("throttled", name, verdict.reason, data={"status": status})
            self._wait(self.settings.throttle_poll)

    def pause(self) -> None:
        """Hold before the next statement (thread- and signal-safe); :meth:`resume` ends it."""
        self.pacing.pause()

    def resume(self) -> None:
        self.pacing.resume()

    # -- one table -------------------------------------------------------------------------------

    def _sizes(self, table: TableInfo) -> Sizes:
        from ibdtool.server.tables import read_tablespaces

        rows = []
        for sp in table.spaces:
            rows += read_tablespaces(self.server, sp.name)
        if not rows:
            return Sizes(None, None, [])
        fs = [r.file_size for r in rows]
        al = [r.allocated_size for r in rows]
        return Sizes(
            None if None in fs else sum(x or 0 for x in fs),
            None if None in al else sum(x or 0 for x in al),
            [r.space for r in rows],
        )

    def _run_table(self, tp: TablePlan) -> Generator[Event, None, TableResult]:
        table = tp.table
        name = table.name
        result = TableResult(name, "failed")
        result.before = self._sizes(table)
        self._journal("table_start", table=name, before=result.before.to_json())
        yield Event(
            "table_start",
            name,
            f"{table.current_format(self.plan.vendor)} → {tp.target.label}",
            data={"before": result.before.to_json()},
        )
        table_changes: list[GlobalChange] = []
        outcome = _Outcome.OK
        deferred = False
        try:
            for step in tp.steps:
                if step.kind == "set_global":
                    assert step.variable is not None and step.value is not None
                    previous = self.server.variable(step.variable, fresh=True) or ""
                    if previous.lower() != str(step.value).lower():
                        ch = GlobalChange("variable", step.variable, previous, str(step.value))
                        self._set(ch, self.server.session)
                        table_changes.append(ch)
                        yield Event(
                            "global_set",
                            name,
                            f"SET GLOBAL {step.variable} = {step.value!r} (was {previous!r})",
                        )
                    continue
                if step.kind != "session":
                    yield from self._throttle(name, between_tables=False)
                outcome = yield from self._statement(tp, step, result)
                if outcome != _Outcome.OK:
                    break
            if outcome == _Outcome.OK:
                deferred = yield from self._finish(tp, result, bool(table_changes))
        finally:
            problems = self._restore(table_changes)
        for ch_problem in problems:
            yield Event("restore_failed", name, ch_problem)
        if outcome == _Outcome.OK and deferred:
            result.status = "awaiting_flush"  # until its pages are written and read back
            self._journal(
                "table_converted",
                table=name,
                before=result.before.to_json(),
                unflushed_pages=result.unflushed_pages,
                seconds=round(result.seconds, 3),
            )
            yield Event(
                "table_converted",
                name,
                result.message,
                data={"status": result.status, "unflushed_pages": result.unflushed_pages},
            )
            return result
        if outcome == _Outcome.OK:
            yield from self._table_done(result)
            return result
        state = self._table_state(tp, result)
        result.status = outcome
        result.message = (result.message + "; " if result.message else "") + state
        self._journal(
            f"table_{outcome}" if outcome == _Outcome.INTERRUPTED else "table_failed",
            table=name,
            error=result.message,
        )
        yield Event(f"table_{outcome}", name, result.message, data={"result": result.to_json()})
        return result

    def _statement(
        self, tp: TablePlan, step: Step, result: TableResult
    ) -> Generator[Event, None, str]:
        name = tp.table.name
        try:
            worker = self._worker_session()
        except ServerError as exc:
            result.message = exc.message
            return _Outcome.FAILED
        if step.kind == "session":
            start = time.monotonic()
            try:
                worker.execute(step.sql, step.args)
            except ServerError as exc:
                result.statements.append(StatementResult(step.display, 0.0, exc.message))
                result.message = exc.message
                return _Outcome.FAILED
            result.statements.append(StatementResult(step.display, time.monotonic() - start))
            return _Outcome.OK
        progress = self._progress_for(tp, worker)
        running = _Running(worker, step)
        self._running = running
        self._killed = False
        start = time.monotonic()
        yield Event(
            "statement_start", name, step.why, sql=step.display, data={"sources": progress.names}
        )
        running.thread.start()
        best = 0.0
        while True:
            running.thread.join(self.settings.poll)
            if not running.thread.is_alive():
                break
            if self.cancelled and not self._killed:
                yield from self._send_kill(name, worker.thread_id)
            reading = self._read_progress(progress, worker.thread_id)
            if reading is not None and reading.fraction is not None:
                best = max(best, reading.fraction)
                yield _progress_event(name, best, time.monotonic() - start, reading)
            yield from self._check_watch()  # earlier tables, verified while this one runs
        self._running = None
        seconds = time.monotonic() - start
        error = running.error
        if self._killed and error is None:
            yield Event(
                "kill_too_late",
                name,
                "the statement finished before the KILL QUERY reached it: its work is kept",
                sql=step.display,
            )
        if error is None:
            error = _optimize_error(running.rows)
        if error is not None and error.lost_connection and not self._killed:
            outcome = yield from self._after_lost_connection(tp, step, result, worker.thread_id)
            result.statements.append(
                StatementResult(
                    step.display,
                    time.monotonic() - start,
                    None if outcome == _Outcome.OK else error.message,
                )
            )
            return outcome
        result.statements.append(
            StatementResult(step.display, seconds, error.message if error else None)
        )
        self._journal(
            "statement",
            table=name,
            sql=step.display,
            seconds=round(seconds, 3),
            error=error.message if error else None,
        )
        if error is not None:
            if self._killed or error.interrupted:
                result.message = "interrupted (KILL QUERY)"
                return _Outcome.INTERRUPTED
            result.message = error.message
            return _Outcome.FAILED
        notes = [str(r.get("Msg_text")) for r in running.rows if r.get("Msg_type") == "note"]
        yield Event("statement_done", name, "; ".join(notes), sql=step.display, elapsed=seconds)
        return _Outcome.OK

    def _send_kill(self, name: str, thread_id: int) -> Iterator[Event]:
        self._killed = True
        try:
            self._kill(thread_id)
            yield Event(
                "killing",
                name,
                f"KILL QUERY {thread_id} sent; waiting for the server to stop the statement",
            )
        except ServerError as exc:
            yield Event("killing", name, f"KILL QUERY {thread_id} failed: {exc.message}")

    def _read_progress(self, progress: Progress, thread_id: int) -> Reading | None:
        try:
            return progress.read(thread_id)
        except ServerError:
            return None

    def _progress_for(self, tp: TablePlan, worker: Session) -> Progress:
        table = tp.table

        def file_source() -> FileGrowth | None:
            paths = table.local_paths
            if not paths or len(paths) != len(table.spaces):
                return None
            return FileGrowth([p.parent for p in paths], _expected_new_size(tp, paths))

        sources = choose_sources(
            self.server, self.server.session, self.settings.progress, file_source
        )
        for src in sources:
            if isinstance(src, StageEvents):
                with contextlib.suppress(ServerError):
                    src.instrument_thread(worker.thread_id)
        return Progress(sources)

    # -- after the statements ----------------------------------------------------------------------

    def _table_done(self, result: TableResult) -> Iterator[Event]:
        """The table's final word: journaled and streamed as ``table_done``."""
        result.status = "awaiting_flush" if result.awaiting_flush else "done"
        self._journal(
            "table_verified" if self._verifying else "table_done",
            table=result.table,
            status=result.status,
            before=result.before.to_json() if result.before else None,
            after=result.after.to_json() if result.after else None,
            verified=result.verified,
            unflushed_pages=result.unflushed_pages,
            seconds=round(result.seconds, 3),
        )
        yield Event(
            "table_done",
            result.table,
            result.message,
            data={"status": result.status, "result": result.to_json()},
        )

    def _finish(
        self, tp: TablePlan, result: TableResult, changed_global: bool
    ) -> Generator[Event, None, bool]:
        """Measure and verify the new file. With ``flush_for_export`` under FLUSH TABLES … FOR
        EXPORT, which blocks writes meanwhile; by default without a lock: at once when the
        server has written the conversion's pages, else the table joins the watch (it is
        verified once they are written, while the batch goes on: returns True) and the page
        cleaner is nudged. A table whose pages take the global codec when written (MariaDB's
        classic format with the codec set for it) is waited for here, before that global is
        put back."""
        table = tp.table
        name = table.name
        if self.settings.flush_for_export:
            yield from self._finish_locked(tp, result)
            return False
        try:
            fresh = self._sizes(table)
            lsn = current_lsn(self.server.session) if fresh.space_ids else None
            left: int | None = None
            if lsn is not None:
                try:
                    pairs = [(sid, lsn) for sid in fresh.space_ids]
                    left = sum(
                        unwritten_pages(self.server.session, self.server.flavor, pairs).values()
                    )
                except ServerError:
                    lsn = None
            if lsn is None:
                # the server will not say its LSN: the old bounded wait on the dirty count
                yield from self._wait_flushed(name, fresh.space_ids, result)
            elif left:
                item = Waiting(name, fresh.space_ids, lsn, unwritten=left, payload=(tp, result))
                result.unflushed_pages = left
                keeps_codec = changed_global and self.server.flavor.writes_take_global_codec(
                    self.server.variables
                )
                if not keeps_codec:
                    self._watch.add(item)
                    result.message = (
                        f"converted; {left} page{'s' if left != 1 else ''} of the new file not "
                        "written yet: verified once the server writes them (no lock), while the "
                        "batch goes on"
                    )
                    return True
                yield from self._wait_for(item, self.settings.flush_wait)
            else:
                result.unflushed_pages = 0
        except ServerError as exc:
            yield Event("note", name, f"could not measure the result: {exc.message}")
        yield from self._read_back(tp, result, changed_global)
        return False

    def _finish_locked(self, tp: TablePlan, result: TableResult) -> Iterator[Event]:
        """``--flush-for-export``: the pages written under FLUSH TABLES … FOR EXPORT, then
        read back while it holds."""
        table = tp.table
        name = table.name
        worker = self._worker_session()
        locked = False
        start = 0.0
        try:
            fresh = self._sizes(table)
            dirty = dirty_pages(self.server.session, self.server.flavor, fresh.space_ids)
            yield Event(
                "locking",
                name,
                f"FLUSH TABLES … FOR EXPORT: every write to {name} waits until UNLOCK TABLES"
                + (f" ({dirty} dirty pages to write first)" if dirty is not None else ""),
                data={"dirty_pages": dirty},
            )
            statement = sql.flush_for_export(table.schema, table.table)
            start = time.monotonic()
            worker.execute(statement)
            locked = True
            result.statements.append(
                StatementResult(
                    statement.removeprefix(sql.TAG).strip() + ";", time.monotonic() - start
                )
            )
            result.unflushed_pages = 0
            yield from self._read_back(tp, result, False, locked=True)
        except ServerError as exc:
            yield Event("note", name, f"could not measure the result: {exc.message}")
        finally:
            if locked:
                try:
                    worker.execute(sql.UNLOCK_TABLES)
                except ServerError:
                    self._drop_worker()  # a closed connection releases the lock too
                result.lock_seconds = time.monotonic() - start
        if locked:
            result.message += f" (writes blocked {result.lock_seconds:.1f}s by the flush)"

    def _read_back(
        self, tp: TablePlan, result: TableResult, changed_global: bool, locked: bool = False
    ) -> Iterator[Event]:
        """Read the new file(s) and say what they hold (``result.message``)."""
        table = tp.table
        name = table.name
        result.verifications = []
        try:
            result.after = self._sizes(table)
            yield Event("verifying", name, "reading the pages" + (" (flushed)" if locked else ""))
            for path in self._new_paths(table):
                result.verifications.append(self._verify(tp, path))
        except ServerError as exc:
            yield Event("note", name, f"could not measure the result: {exc.message}")
        except InputError as exc:
            # the file as the server left it: page 0 not written yet, say
            result.verify_error = exc.message
        if result.awaiting_flush:
            result.message = self._awaiting_flush_message(result, changed_global)
            result.hint = AWAITING_FLUSH_HINT
            return
        if result.verifications:
            bad = [v.message for v in result.verifications if not v.ok]
            result.message = "; ".join(bad) if bad else result.verifications[0].message
        elif result.verify_error:
            result.message = f"pages not verified: {result.verify_error}"
        elif not self.server.local_datadir:
            result.message = "pages not verified (the datadir is not readable here)"
        else:
            result.message = "pages not verified: the catalog names no file of it under the datadir"
        if not locked and result.unflushed_pages is None:
            result.message += " (the server did not say which pages are flushed)"

    # -- tables waiting for their pages ------------------------------------------------------------

    def _nudge_values(self) -> dict[str, str | None]:
        """The flavor's nudge variables as they are now (read fresh). Raises ServerError."""
        return {v: self.server.variable(v, fresh=True) for v in self.server.flavor.nudge_variables}

    def _nudge_due(self) -> bool:
        """Tables wait and the page cleaner should be nudged now: it has written none of their
        pages for :data:`STUCK_AFTER` seconds, or at once where it never writes them by itself
        (MariaDB with the mark at 0; read once a batch)."""
        if not self.settings.nudge or self._nudges or not self._watch:
            return False
        if self._nudge_at_once is None:
            try:
                self._nudge_at_once = self.server.flavor.nudge_at_once(self._nudge_values())
            except ServerError:
                self._nudge_at_once = False
        return self._watch.stalled(0.0 if self._nudge_at_once else STUCK_AFTER)

    def _nudge_on(self, name: str) -> Iterator[Event]:
        """Have the page cleaner write now (server-wide, no lock), once, while tables wait
        (:meth:`_nudge_due`): the flavor's :meth:`~ibdtool.server.dialects.base.Dialect.
        flush_nudge` variables, each journaled before it is set and put back, last first, once
        none waits, at the batch's end, on an error or a cancel (a run killed outright leaves
        them in the journal: the next run with it puts them back). A page cleaner at work is
        left alone (nudged harder, MySQL 8.0.15's writers stalled 4–9 s after the ALTER)."""
        if not self._nudge_due():
            return
        try:
            current = self._nudge_values()
            for variable, value in self.server.flavor.flush_nudge(current):
                ch = GlobalChange("variable", variable, current[variable] or "", value)
                self._set(ch, self.server.session)
                self._nudges.append(ch)
        except ServerError as exc:
            yield Event("note", name, f"could not nudge the page cleaner: {exc.message}")
            return
        if not self._nudges:
            return
        sets = ", ".join(f"{ch.name} = {ch.value} (was {ch.previous})" for ch in self._nudges)
        yield Event(
            "global_set",
            name,
            f"SET GLOBAL {sets} while converted tables wait for their pages to be written: the "
            "page cleaner writes them now, no lock (put back once none waits)",
            data={"changes": [ch.to_json() for ch in self._nudges]},
        )

    def _nudge_off(self) -> Iterator[Event]:
        if not self._nudges:
            return
        for p in self._restore(self._nudges):
            yield Event("restore_failed", message=p)

    def _check_watch(self, force: bool = False) -> Iterator[Event]:
        """Verify the waiting tables whose pages are now written (at most every
        ``throttle_poll`` seconds: the buffer pool view walks the whole pool)."""
        if not self._watch:
            return
        now = time.monotonic()
        if not force and now - self._watched_at < self.settings.throttle_poll:
            return
        self._watched_at = now
        try:
            ready = self._watch.poll(self.server.session, self.server.flavor)
        except ServerError as exc:
            yield Event("note", message=f"could not read the buffer pool: {exc.message}")
            return
        for item in ready:
            yield from self._settle(item, 0)
        if not self._watch:
            yield from self._nudge_off()
        else:
            yield from self._nudge_on(self._watch.waiting[0].name)

    def _settle(self, item: Waiting, unwritten: int | None) -> Iterator[Event]:
        """A waiting table's end: its pages written (``unwritten`` 0) or not (the deadline)."""
        tp, result = item.payload
        result.unflushed_pages = unwritten
        yield from self._read_back(tp, result, False)
        yield from self._table_done(result)

    def _wait_for(self, item: Waiting, timeout: float) -> Iterator[Event]:
        """Wait here, bounded, for one table's pages (the codec case of :meth:`_finish`)."""
        watch, self._watch = self._watch, FlushWatch()
        self._watch.add(item)
        try:
            deadline = time.monotonic() + timeout
            while self._watch and not self.cancelled and time.monotonic() < deadline:
                self._wait(self.settings.throttle_poll)
                try:
                    self._watch.poll(self.server.session, self.server.flavor)
                except ServerError:
                    break
                yield from self._nudge_on(item.name)
            item.payload[1].unflushed_pages = item.unwritten if self._watch else 0
        finally:
            self._watch = watch
        if not self._watch:
            yield from self._nudge_off()

    def _drain(self) -> Iterator[Event]:
        """The batch's tail: wait, at most ``flush_wait`` seconds, for the tables still
        waiting; those left end ``awaiting_flush`` with what their file holds so far."""
        if not self._watch:
            return
        n = len(self._watch.waiting)
        timeout = self.settings.flush_wait
        yield Event(
            "flushing",
            message=f"{n} converted table{'s' if n != 1 else ''} with {self._watch.unwritten} "
            f"pages not written yet; waiting up to {timeout:g}s for the page cleaner (no lock)",
            data={"dirty_pages": self._watch.unwritten, "tables": n},
        )
        deadline = time.monotonic() + timeout
        while self._watch and not self.cancelled:
            yield from self._check_watch(force=True)
            if not self._watch or time.monotonic() >= deadline:
                break
            self._wait(min(self.settings.throttle_poll, max(0.0, deadline - time.monotonic())))
        for item in self._watch.take_all():
            yield from self._settle(item, item.unwritten)
        yield from self._nudge_off()

    def _awaiting_flush_message(self, result: TableResult, changed_global: bool) -> str:
        """Converted, but the file is not the table yet: say so, with what was on disk (how
        to get an exact check is :data:`AWAITING_FLUSH_HINT`)."""
        n = result.unflushed_pages
        parts = [
            f"converted; {n} page{'s' if n != 1 else ''} of the new file not yet written by the "
            "server when the wait ended, so the file is not verified yet"
        ]
        if result.verifications:
            parts.append("on disk so far: " + "; ".join(v.message for v in result.verifications))
        if changed_global and self.server.flavor.writes_take_global_codec(self.server.variables):
            parts.append("pages written after the global is put back take its old value")
        return "; ".join(parts)

    def _wait_flushed(
        self, name: str, space_ids: list[int], result: TableResult
    ) -> Iterator[Event]:
        """Wait, without a lock, for the page cleaner to write the new space's dirty pages."""
        last = None
        for rd in wait_flushed(
            self.server.session,
            self.server.flavor,
            space_ids,
            self.settings.flush_wait,
            self.settings.throttle_poll,
            self._cancel.wait,
        ):
            last = rd
            if rd.pages:
                yield Event(
                    "flushing",
                    name,
                    f"{rd.pages} pages of the new tablespace are in the buffer pool, not in the "
                    f"file yet; waiting up to {self.settings.flush_wait:g}s for the page cleaner "
                    "(no lock)",
                    elapsed=rd.elapsed,
                    data={"dirty_pages": rd.pages},
                )
            elif rd.pages is None:
                yield Event("note", name, f"dirty pages unknown: {rd.error}")
            if rd.stuck:
                yield Event(
                    "note",
                    name,
                    f"the page cleaner wrote none of the {rd.pages} pages in "
                    f"{STUCK_AFTER:g}s: it writes when the server needs the room or the redo "
                    "space; --flush-for-export writes them now (blocking writes meanwhile)",
                )
        result.unflushed_pages = last.pages if last is not None else None

    def _new_paths(self, table: TableInfo) -> list[Path]:
        from ibdtool.server.tables import read_tablespaces

        out: list[Path] = []
        for sp in table.spaces:
            for fresh in read_tablespaces(self.server, sp.name):
                if fresh.local_path is not None:
                    out.append(fresh.local_path)
        return out

    def _verify(self, tp: TablePlan, path: Path) -> Verification:
        t = tp.target
        return verify(
            path,
            server=self.plan.vendor,
            kind=t.kind,
            algorithm=t.algorithm,
            level=t.level,
            key_block_size=t.key_block_size * 1024 if t.key_block_size else None,
        )

    def _table_state(self, tp: TablePlan, result: TableResult) -> str:
        """After a failure or a kill: is the table readable, what are its options, its file?"""
        table = tp.table
        try:
            s = self.server.session
            s.query(sql.probe_readable(table.schema, table.table))
            row = s.query_one(sql.ONE_TABLE_ANY_SCHEMA, (table.schema, table.table)) or {}
            now = TableOptions.parse(row.get("create_options"), row.get("row_format"))
            sizes = self._sizes(table)
        except ServerError as exc:
            return f"state unknown: {exc.message}"
        parts = ["the table is readable"]
        rebuilt = result.before is not None and sizes.space_ids != result.before.space_ids
        parts.append("it was rebuilt" if rebuilt else "same tablespace (not rebuilt)")
        if now == table.options:
            parts.append("options unchanged")
        else:
            label = TableInfo(table.schema, table.table, "InnoDB", None, "", now).current_format(
                self.plan.vendor
            )
            parts.append(f"options now say {label}")
            if not rebuilt and self.server.flavor.page_compression_is_attribute:
                parts.append("pages not rewritten: run again to finish")
        leftovers = []
        for p in table.local_paths:
            leftovers += [f.name for f in p.parent.glob("#sql*.ibd")]
        if leftovers:
            parts.append(f"leftover {', '.join(sorted(set(leftovers)))}")
        elif table.local_paths:
            parts.append("no #sql file left")
        return ", ".join(parts)

    def _after_lost_connection(
        self, tp: TablePlan, step: Step, result: TableResult, old_thread: int
    ) -> Generator[Event, None, str]:
        name = tp.table.name
        self._drop_worker()
        yield Event("connection_lost", name, "lost the connection during the statement")
        deadline = time.monotonic() + self.settings.reconnect_timeout
        while True:
            try:
                self.server.session.close()
                self.server.session = self.server.new_session("main")
                break
            except ServerError as exc:
                if time.monotonic() > deadline or self.cancelled:
                    result.message = f"could not reconnect: {exc.message}"
                    return _Outcome.FAILED
                self._wait(1.0)
        yield Event("reconnected", name, "reconnected; checking the statement on the server")
        progress = self._progress_for(tp, self.server.session)
        start = time.monotonic()
        best = 0.0
        while not self.cancelled:
            row = self.server.session.query_one(self.server.flavor.process_query, (old_thread,))
            if row is None or str(row.get("command")) != "Query":
                break
            reading = self._read_progress(progress, old_thread)
            if reading is not None and reading.fraction is not None:
                best = max(best, reading.fraction)
                ev = _progress_event(name, best, time.monotonic() - start, reading)
                ev.message = "still running on the server"
                yield ev
            self._wait(self.settings.poll)
        if self.cancelled:
            yield from self._send_kill(name, old_thread)
            return _Outcome.INTERRUPTED
        before = result.before.space_ids if result.before else []
        after = self._sizes(tp.table).space_ids
        if step.kind == "rebuild" and after and after != before:
            yield Event("note", name, "the statement completed on the server (new tablespace)")
            return _Outcome.OK
        if step.kind == "attribute":
            row = self.server.session.query_one(
                sql.ONE_TABLE_ANY_SCHEMA, (tp.table.schema, tp.table.table)
            )
            now = TableOptions.parse((row or {}).get("create_options"), None)
            if now.compression == (tp.target.algorithm if tp.target.kind == "page" else None):
                return _Outcome.OK
        result.message = "the connection dropped and the statement did not take effect"
        return _Outcome.FAILED


def _interrupted_text(results: list[TableResult]) -> str:
    """``interrupted: 1 done, 1 interrupted, 2 not run`` — the summary's own counts."""
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status.replace("_", " ")] = counts.get(r.status.replace("_", " "), 0) + 1
    return "interrupted: " + ", ".join(f"{n} {status}" for status, n in counts.items())


def _progress_event(name: str, best: float, elapsed: float, reading: Reading) -> Event:
    """A progress event; no ETA from a source that only measures against an estimate (the
    new file's size): that would be a guess shown as a number."""
    if reading.estimated:
        past = reading.total is not None and reading.done > reading.total
        return Event(
            "progress",
            name,
            fraction=min(best, FILE_FRACTION_CAP),
            elapsed=elapsed,
            reading=reading,
            data={"eta_unknown": True, "past_estimate": past},
        )
    eta = elapsed * (1 - best) / best if best >= ETA_MIN_FRACTION else None
    return Event("progress", name, fraction=best, elapsed=elapsed, eta=eta, reading=reading)


def _optimize_error(rows: list[dict[str, Any]]) -> ServerError | None:
    """OPTIMIZE TABLE reports failures as result rows, not as an error."""
    for r in rows:
        if str(r.get("Msg_type", "")).lower() == "error":
            text = str(r.get("Msg_text"))
            code = ER_QUERY_INTERRUPTED if "interrupted" in text.lower() else -1
            return ServerError(f"OPTIMIZE TABLE: {text}", code)
    return None


def _expected_new_size(tp: TablePlan, paths: list[Path]) -> int:
    """Bytes the rebuilt file(s) should reach: the pages again, at the target's page size."""
    t = tp.target
    total = 0
    for p in paths:
        st = p.stat()
        physical = next(
            (s.state.physical_size for s in tp.table.spaces if s.local_path == p and s.state),
            None,
        )
        logical = next(
            (s.state.page_size for s in tp.table.spaces if s.local_path == p and s.state), None
        )
        if not physical or not logical:
            total += st.st_size
            continue
        pages = st.st_size // physical
        new_physical = t.key_block_size * 1024 if t.kind == "row" and t.key_block_size else logical
        total += pages * new_physical
    return total
