"""The command log screen (``@``): every file operation and SQL statement, with timing."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from ibdtool.tui.commandlog import LogEntry
from ibdtool.tui.screens.browser import matches
from ibdtool.tui.screens.prompt import PromptScreen
from ibdtool.tui.shown import safe
from ibdtool.tui.tables import Row, add_rows, fill_table

if TYPE_CHECKING:
    from ibdtool.tui.appstate import AppState

KIND_STYLES = {"file": "cyan", "sql": "magenta"}
COLUMNS = ("time", "kind", "took", "operation")


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


class CommandLogScreen(Screen[None]):
    """The log, newest at the bottom; new entries appear as they are made."""

    HELP = """\
## Command log

What the app ran, as lazygit's `@` shows the git commands it ran: file operations
(open, pread, lseek SEEK_DATA/SEEK_HOLE, FIEMAP) and SQL, with their timing.
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter"),
        Binding("backslash", "clear_filter", "Clear filter", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.filter_text = ""
        self.shown: list[LogEntry] = []

    @property
    def ibd_app(self) -> AppState:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield DataTable(id="log", cursor_type="row")
        yield Static("", id="log-detail")
        yield Static("", id="log-status")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "command log"
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)
        table.focus()
        self.reload()

    def reload(self) -> None:
        """The table filled again with the entries the filter keeps (widths with the rows:
        :mod:`ibdtool.tui.tables`), the cursor on the newest."""
        table = self.query_one(DataTable)
        self.shown = []
        entries = self.ibd_app.command_log.entries()
        rows = [row for row in map(self._row, entries) if row is not None]
        fill_table(table, COLUMNS, rows)
        status = f"{len(rows)} of {len(entries)} entries"
        if self.filter_text:
            status += f" · filter /{self.filter_text}"
        self.query_one("#log-status", Static).update(safe(status))
        table.move_cursor(row=table.row_count - 1, animate=False)

    def _row(self, entry: LogEntry) -> Row | None:
        """The row of ``entry`` (kept in :attr:`shown`), None when the filter drops it."""
        line = f"{entry.kind} {entry.text} {entry.outcome}".lower()
        if not matches(line, self.filter_text):
            return None
        text = safe(entry.text)
        if entry.outcome != "ok":
            style = "yellow" if entry.outcome == "cancelled" else "red"
            text.append(f"  [{entry.outcome}]", style=style)
        self.shown.append(entry)
        cells = (
            entry.started.strftime("%H:%M:%S.%f")[:-3],
            safe(entry.kind, style=KIND_STYLES.get(entry.kind, "")),
            safe(_duration(entry.seconds), justify="right"),
            text,
        )
        return str(len(self.shown) - 1), cells

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The whole operation of the row under the cursor (the table cuts long SQL)."""
        if 0 <= event.cursor_row < len(self.shown):
            entry = self.shown[event.cursor_row]
            text = safe(entry.text)
            if entry.outcome != "ok":
                text.append(f"  [{entry.outcome}]", style="red")
            self.query_one("#log-detail", Static).update(text)

    def add_entry(self, entry: LogEntry) -> None:
        """A new entry while the log is shown: append it and follow it if at the bottom."""
        table = self.query_one(DataTable)
        at_end = table.cursor_row >= table.row_count - 1
        row = self._row(entry)
        if row is None:
            return
        add_rows(table, [row])
        if at_end:
            table.move_cursor(row=table.row_count - 1, animate=False)

    def action_filter(self) -> None:
        def apply(value: str | None) -> None:
            if value is not None:
                self.filter_text = value.strip()
                self.reload()

        self.app.push_screen(PromptScreen("/", "text, kind or outcome", self.filter_text), apply)

    def action_clear_filter(self) -> None:
        self.filter_text = ""
        self.reload()
