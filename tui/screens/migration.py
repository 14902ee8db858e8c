"""The migration view: the plan and preflight for one table and target, then the run, live.

A worker builds the plan (:func:`ibdtool.server.build_plan`: statements for this server,
preflight checks, the simulator's prediction). Nothing runs until ``y``. Then a worker iterates
:meth:`ibdtool.server.Migration.events` and posts each event here: the progress bar with
elapsed time and ETA, a line per statement, the result with sizes before and after. ``x`` calls
:meth:`Migration.cancel` (``KILL QUERY`` from another connection). Every statement is in the
command log (the server's ``on_statement`` hook) and so is the result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Header, ProgressBar, RichLog, Static
from textual.worker import get_current_worker

from ibdtool.errors import IbdtoolError
from ibdtool.present import hms, human_bytes, shown
from ibdtool.server import (
    Event,
    ExecSettings,
    Migration,
    Plan,
    PlanSettings,
    Server,
    TableInfo,
    TableResult,
    build_plan,
    parse_target,
)
from ibdtool.tui.commandlog import LogEntry
from ibdtool.tui.shown import safe

if TYPE_CHECKING:
    from ibdtool.tui.appstate import AppState

POLL = 0.2  # seconds between progress reads: at most five updates a second
LOG_EVERY = 1.0  # seconds between progress lines in the migration log
SEVERITY = {"error": ("✗", "red"), "warning": ("!", "yellow"), "info": ("·", "dim")}


@dataclass
class PlanReady(Message):
    plan: Plan


@dataclass
class PlanFailed(Message):
    message: str


@dataclass
class MigrationEvent(Message):
    event: Event


@dataclass
class MigrationDone(Message):
    results: list[TableResult]
    interrupted: bool
    error: str | None = None


def plan_view(plan: Plan) -> RenderableType:
    """Server checks, then the table: formats, facts, checks, prediction and statements."""
    parts: list[RenderableType] = []
    for c in plan.checks:
        mark, style = SEVERITY.get(c.severity, ("·", "dim"))
        parts.append(safe(f"{mark} {c.message}", style=style))
    for note in plan.notes:
        parts.append(safe(f"! {note}", style="yellow"))
    for tp in plan.tables:
        t = tp.table
        head = safe(t.name, style="bold")
        head.append(
            shown(f"  {t.current_format(plan.vendor) if t.innodb else '-'} → {tp.target.label}  ")
        )
        style = {"convert": "green", "skip": "dim", "refuse": "bold red"}[tp.action]
        head.append(
            {"convert": "convert", "skip": "skip", "refuse": "REFUSED"}[tp.action], style=style
        )
        parts.append(head)
        if t.file_size is not None:
            facts = f"{human_bytes(t.file_size)} file, {human_bytes(t.allocated_size)} allocated"
            summary = t.page_summary()
            parts.append(safe(facts + (f"; pages: {summary}" if summary else ""), style="dim"))
        if tp.skip_reason:
            parts.append(safe(tp.skip_reason, style="dim"))
        for c in tp.checks:
            mark, style = SEVERITY.get(c.severity, ("·", "dim"))
            parts.append(safe(f"{mark} {c.message}", style=style))
        if tp.prediction:
            p = tp.prediction
            change = (
                f"saves {p.saving_pct:.0f}%" if p.saving_pct >= 0 else f"grows {-p.saving_pct:.0f}%"
            )
            ci = f" (95% CI {human_bytes(p.ci95[0])}–{human_bytes(p.ci95[1])})" if p.ci95 else ""
            parts.append(
                safe(
                    f"predicted: {human_bytes(p.predicted)} allocated{ci}, {change} against "
                    f"{human_bytes(p.allocated_now)} now ({p.how})"
                )
            )
        elif tp.prediction_note and tp.action == "convert":
            parts.append(safe(f"no prediction: {tp.prediction_note}", style="dim"))
        columns, rows, lines = tp.options_view()
        if rows:
            # the chosen target beside the other ways to store the table (issue 22 item 7)
            options = Table(*[c.lstrip(">") for c in columns], box=None, padding=(0, 1))
            for i, name in enumerate(columns):
                options.columns[i].justify = "right" if name.startswith(">") else "left"
            for row in rows:
                chosen = row[0].startswith("→")
                options.add_row(*[safe(c, style="bold" if chosen else "") for c in row])
            parts.append(options)
        parts += [safe(line, style="dim") for line in lines]
        if tp.action == "convert":
            grid = Table.grid(padding=(0, 1))
            grid.add_column(no_wrap=False)
            for step in tp.steps:
                line = safe(step.display, style="bold" if step.kind == "rebuild" else "")
                line.append(shown(f"   -- {step.why}"), style="dim")
                grid.add_row(line)
                if step.kind in ("attribute", "rebuild"):
                    timeout = tp.settings.lock_wait_timeout if tp.settings else 60
                    for lk in step.locks(timeout):
                        grid.add_row(safe(f"  lock: {lk.text}", style="dim"))
            for lk in tp.verify_locks():
                grid.add_row(safe(f"then, to verify (y) — lock: {lk.text}", style="dim"))
            grid.add_row(
                safe(
                    "f instead: verify under FLUSH TABLES … FOR EXPORT — every write to the "
                    "table waits while the server writes its dirty pages and they are read back",
                    style="dim",
                )
            )
            parts.append(grid)
    return Group(*parts)


class MigrationScreen(Screen[bool]):
    """Plan, confirm, run and watch one conversion (see module doc)."""

    HELP = """\
## Conversion

The exact statements for this server, the preflight checks and the predicted
allocation, and the locks each statement takes. `y` runs them (a dry run until
then) and checks the new file without a lock (pages the server has not written
yet are named); `f` runs them and checks under FLUSH TABLES … FOR EXPORT, which
blocks writes to the table meanwhile. A plan the preflight refuses has no run;
where `--algorithm copy` would lift the refusal (a FULLTEXT table), `c` plans it
that way: ALGORITHM=COPY, LOCK=SHARED, which blocks writes for the whole copy.
The bar shows the server's own progress
(performance_schema stages, the processlist) with elapsed time and ETA, or the
new file's growth with "ETA unknown"; `x` kills the running statement.
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "run", "Run"),
        Binding("f", "run_flushed", "Run, verify under FLUSH … FOR EXPORT (blocks writes)"),
        Binding("c", "plan_copy", "Plan with ALGORITHM=COPY (LOCK=SHARED: blocks writes)"),
        Binding("x", "cancel", "Cancel (KILL QUERY)"),
        Binding("escape", "leave", "Back"),
    ]

    def __init__(self, server: Server, table: TableInfo, target: str) -> None:
        super().__init__()
        self.server = server
        self.table = table
        self.target = target
        self.plan: Plan | None = None
        self.algorithm = "inplace"  # as migrate's --algorithm
        self.migration: Migration | None = None
        self.results: list[TableResult] | None = None
        self.progress_seen: list[float] = []
        self._last_line = 0.0

    @property
    def ibd_app(self) -> AppState:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with VerticalScroll(id="plan"):
            yield Static(
                "planning… (preflight checks and the simulator's prediction)", id="plan-text"
            )
        yield ProgressBar(id="migration-progress", show_eta=False)
        yield Static("", id="migration-status")
        yield RichLog(id="migration-log", wrap=True, markup=False, highlight=False)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = shown(f"{self.table.name} → {self.target}")
        self.query_one("#migration-progress", ProgressBar).display = False
        self.make_plan()

    # --- workers ---------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="server", exit_on_error=False)
    def make_plan(self) -> None:
        try:
            settings = PlanSettings(algorithm=self.algorithm)
            plan = build_plan(self.server, [self.table], parse_target(self.target), settings)
            self.post_message(PlanReady(plan))
        except IbdtoolError as exc:
            self.post_message(PlanFailed(exc.message))
        except Exception as exc:
            self.post_message(PlanFailed(f"unexpected {type(exc).__name__}: {exc}"))

    @work(thread=True, exclusive=True, group="server", exit_on_error=False)
    def execute(self, migration: Migration) -> None:
        worker = get_current_worker()
        try:
            for event in migration.events():
                if worker.is_cancelled and not migration.cancelled:
                    migration.cancel()  # the screen went away: stop the statement
                self.post_message(MigrationEvent(event))
            self.post_message(MigrationDone(migration.results, migration.interrupted))
        except IbdtoolError as exc:
            self.post_message(MigrationDone(migration.results, True, exc.message))
        except Exception as exc:
            message = f"unexpected {type(exc).__name__}: {exc}"
            self.post_message(MigrationDone(migration.results, True, message))

    # --- plan ------------------------------------------------------------------------------

    def on_plan_ready(self, message: PlanReady) -> None:
        plan = self.plan = message.plan
        self.query_one("#plan-text", Static).update(plan_view(plan))
        status = self.query_one("#migration-status", Static)
        if plan.runnable:
            status.update(
                safe(
                    Text.assemble(
                        ("y", "bold"),
                        f" runs these statements on {plan.server} ({self.server.opts.describe()}); "
                        "nothing has run yet",
                    )
                )
            )
        elif self.copy_would_help():
            status.update(
                Text.assemble(
                    ("nothing to run: refused; ", "yellow"),
                    ("c", "bold"),
                    " plans it with ALGORITHM=COPY, LOCK=SHARED (blocks writes for the whole "
                    "copy), as migrate --algorithm copy",
                )
            )
        else:
            why = "refused" if plan.refused else "already in the target format"
            status.update(safe(f"nothing to run: {why}", style="yellow"))
        self.refresh_bindings()

    def copy_would_help(self) -> bool:
        """The plan is refused only for what ``--algorithm copy`` accepts (FULLTEXT)."""
        plan = self.plan
        if plan is None or self.algorithm == "copy" or plan.runnable:
            return False
        errors = [c for tp in plan.tables for c in tp.checks if c.refuses]
        errors += [c for c in plan.checks if c.refuses]
        return bool(errors) and all(c.name == "fulltext" for c in errors)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Run only a plan that can run (never a refused one); ``c`` only where it helps."""
        if action in ("run", "run_flushed"):
            return self.plan is not None and bool(self.plan.runnable) and self.migration is None
        if action == "plan_copy":
            return self.copy_would_help()
        return True

    def action_plan_copy(self) -> None:
        if not self.copy_would_help():
            return
        self.algorithm = "copy"
        self.plan = None
        self.refresh_bindings()
        self.query_one("#plan-text", Static).update("planning with ALGORITHM=COPY…")
        self.make_plan()

    def on_plan_failed(self, message: PlanFailed) -> None:
        self.query_one("#plan-text", Static).update(safe(message.message, style="bold red"))

    # --- the run ---------------------------------------------------------------------------

    def action_run(self, flush_for_export: bool = False) -> None:
        """Run the plan; the check afterwards takes no lock unless ``flush_for_export``."""
        plan = self.plan
        if plan is None or not plan.runnable or self.migration is not None:
            return
        settings = ExecSettings(poll=POLL, flush_for_export=flush_for_export)
        self.migration = Migration(self.server, plan, settings)
        self.query_one("#migration-progress", ProgressBar).display = True
        self.query_one("#migration-status", Static).update("starting…")
        self.execute(self.migration)

    def action_run_flushed(self) -> None:
        self.action_run(flush_for_export=True)

    def action_cancel(self) -> None:
        if self.migration is not None and self.results is None:
            what = self.migration.cancel()
            self.query_one("#migration-status", Static).update(
                Text(f"cancelling: {what}…", style="yellow")
            )

    def action_leave(self) -> None:
        if self.migration is not None and self.results is None:
            self.notify("a conversion is running: x cancels it first", severity="warning")
            return
        self.dismiss(self.results is not None)

    def on_migration_event(self, message: MigrationEvent) -> None:
        ev = message.event
        log = self.query_one(RichLog)
        bar = self.query_one("#migration-progress", ProgressBar)
        status = self.query_one("#migration-status", Static)
        if ev.kind == "progress":
            fraction = ev.fraction or 0.0
            self.progress_seen.append(fraction)
            bar.update(total=100, progress=100 * fraction)
            line = self._progress_line(ev)
            status.update(safe(line))
            now = time.monotonic()
            if now - self._last_line >= LOG_EVERY:
                self._last_line = now
                log.write(safe(f"{ev.table}: {line}", style="dim"))
            return
        if ev.kind == "statement_start":
            bar.update(total=100, progress=0)
            log.write(safe(f"{ev.table}: {ev.sql}", style="bold"))
            status.update(safe(f"running: {ev.sql}"))
            return
        if ev.kind == "statement_done":
            note = f" ({ev.message})" if ev.message else ""
            log.write(safe(f"{ev.table}: done in {hms(ev.elapsed)}{note}", style="green"))
            return
        if ev.kind == "flushing":
            # one table's wait, or the batch's tail (the tables still waiting, no table)
            text = (
                f"{ev.table}: {ev.data.get('dirty_pages')} pages not yet written by the "
                f"server, waiting for its page cleaner ({hms(ev.elapsed)}, no lock)"
                if ev.table
                else ev.message
            )
            status.update(safe(text, style="yellow"))
        style = "red" if ev.kind.endswith(("failed", "interrupted", "refused")) else ""
        prefix = f"{ev.table}: " if ev.table else ""
        if ev.kind == "table_done" and ev.data.get("status") == "awaiting_flush":
            hint = ev.data["result"].get("hint") or ""
            log.write(safe(f"{prefix}awaiting flush: {ev.message}; {hint}", style="yellow"))
            return
        if ev.kind == "table_done":
            style = "green"
        if ev.message:
            log.write(safe(f"{prefix}{ev.message}", style=style or "dim"))

    def _progress_line(self, ev: Event) -> str:
        line = f"{100 * (ev.fraction or 0):3.0f}%  {hms(ev.elapsed)} elapsed, {ev.eta_text}"
        detail = ev.detail_text
        return f"{line}  {detail}" if detail else line

    def on_migration_done(self, message: MigrationDone) -> None:
        self.results = message.results
        bar = self.query_one("#migration-progress", ProgressBar)
        log = self.query_one(RichLog)
        status = self.query_one("#migration-status", Static)
        if message.error:
            log.write(safe(message.error, style="bold red"))
        lines = [self._result_line(r) for r in message.results]
        for line in lines:
            log.write(line)
            self.ibd_app.command_log.add(LogEntry(datetime.now(), "result", line.plain, None, "ok"))
        done = [r for r in message.results if r.ok]
        if done and not message.interrupted:
            bar.update(total=100, progress=100)
        outcome = "interrupted" if message.interrupted else "finished"
        waiting = [r for r in message.results if r.status == "awaiting_flush"]
        if waiting:
            outcome += (
                f"; {len(waiting)} table{'s' if len(waiting) != 1 else ''} awaiting flush "
                "(not verified yet)"
            )
        status.update(safe(f"{outcome}; escape goes back to the tables", style="bold"))

    def _result_line(self, r: TableResult) -> Text:
        style = {"done": "green", "skipped": "dim", "awaiting_flush": "yellow"}.get(r.status, "red")
        if r.status == "done" and r.verified is False:
            style = "yellow"
        status = "awaiting flush" if r.status == "awaiting_flush" else r.status
        text = safe(f"{r.table} → {self.target}: {status}", style=f"bold {style}")
        if r.statements:
            text.append(f" in {hms(r.seconds)}")
        b, a = r.before, r.after
        if b and a and b.allocated_size is not None and a.allocated_size is not None:
            text.append(
                f"; file {human_bytes(b.file_size)} → {human_bytes(a.file_size)}, allocated "
                f"{human_bytes(b.allocated_size)} → {human_bytes(a.allocated_size)}"
                + (" so far" if r.awaiting_flush else "")
            )
        if r.verified is not None:
            text.append("; pages verified" if r.verified else "; pages NOT as expected")
        if r.message:
            text.append(shown(f"; {r.message}"), style="dim")
        if r.hint:
            text.append(shown(f"; {r.hint}"), style="yellow")
        return text

    def commands(self) -> list[SystemCommand]:
        out = []
        if self.check_action("run", ()):
            out.append(
                SystemCommand(
                    "Run the conversion", "Execute the planned statements", self.action_run
                )
            )
        if self.copy_would_help():
            out.append(
                SystemCommand(
                    "Plan with ALGORITHM=COPY",
                    "LOCK=SHARED: blocks writes for the whole copy (migrate --algorithm copy)",
                    self.action_plan_copy,
                )
            )
        out.append(SystemCommand("Cancel the conversion", "KILL QUERY", self.action_cancel))
        return out
