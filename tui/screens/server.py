"""The server view (``ibdtool tui --server …``): the tables of a live server, as ``server tables``.

A thread worker connects (:class:`ibdtool.server.Server`, every statement reported to the
command log) and lists the tables with :func:`ibdtool.server.list_tables`: file and allocated
size from information_schema, the format the catalog declares, and the pages' real state when
the datadir is readable from here. ``m`` picks a target and opens the migration view for the
table under the cursor; ``enter`` opens its tablespace file in the page-map view.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from ibdtool.errors import IbdtoolError
from ibdtool.parsers.vendor import Vendor
from ibdtool.present import human_bytes, shown
from ibdtool.server import ConnectionOptions, Server, TableInfo, list_tables
from ibdtool.server import index_names as server_index_names
from ibdtool.tablespace import IndexNames
from ibdtool.tui.commandlog import LogEntry
from ibdtool.tui.screens.browser import matches
from ibdtool.tui.screens.prompt import PromptScreen
from ibdtool.tui.screens.targets import TargetScreen
from ibdtool.tui.shown import safe
from ibdtool.tui.tables import Row, fill_table

if TYPE_CHECKING:
    from ibdtool.tui.appstate import AppState

COLUMNS = ("table", "file size", "allocated", "saved", "format", "pages on disk", "note")


@dataclass
class TablesListed(Message):
    server: Server
    tables: list[TableInfo]


@dataclass
class ServerFailed(Message):
    message: str


def sql_logger(app: AppState) -> Any:
    """The ``on_statement`` hook of :class:`Server`: every statement into the command log."""

    def log(sql: str, seconds: float, error: str | None) -> None:
        started = datetime.now() - timedelta(seconds=seconds)
        text = " ".join(sql.split())
        app.command_log.add(
            LogEntry(started, "sql", text, seconds, "ok" if error is None else f"error: {error}")
        )

    return log


class ServerScreen(Screen[None]):
    """Tables of one server (see module doc)."""

    HELP = """\
## Server

The tables of a live server as `ibdtool server tables` lists them: sizes from
information_schema, the declared format, and the pages on disk when the datadir is
readable from here. `m` converts the table under the cursor (plan, preflight and
prediction first; nothing runs before you confirm).
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("m", "migrate", "Convert"),
        Binding("enter", "open", "Page map"),
        Binding("slash", "filter", "Filter"),
        Binding("backslash", "clear_filter", "Clear filter", show=False),
        Binding("r", "refresh", "Refresh"),
    ]

    def __init__(self, opts: ConnectionOptions, datadir: str | None = None) -> None:
        super().__init__()
        self.opts = opts
        self.datadir = datadir
        self.server: Server | None = None
        self.tables: list[TableInfo] = []
        self.filter_text = ""

    @property
    def ibd_app(self) -> AppState:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield Static("connecting…", id="server-info")
        yield DataTable(id="server-tables", cursor_type="row")
        yield Static("", id="server-status")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = shown(self.opts.describe())
        table = self.query_one(DataTable)
        for name in COLUMNS:
            table.add_column(name, key=name)
        table.focus()
        self.action_refresh()

    def on_unmount(self) -> None:
        if self.server is not None:
            self.server.close()

    # --- the worker ------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="server", exit_on_error=False)
    def load(self) -> None:
        try:
            server = self.server
            if server is None:
                with self.ibd_app.command_log.timed("sql", f"connect {self.opts.describe()}"):
                    server = Server(
                        self.opts, datadir=self.datadir, on_statement=sql_logger(self.ibd_app)
                    )
            found, _ = list_tables(server, with_pages=True)
            self.post_message(TablesListed(server, found))
        except IbdtoolError as exc:
            self.post_message(ServerFailed(exc.message))
        except Exception as exc:
            self.post_message(ServerFailed(f"unexpected {type(exc).__name__}: {exc}"))

    def on_tables_listed(self, message: TablesListed) -> None:
        self.server = message.server
        self.tables = message.tables
        s = message.server
        info = Text()
        info.append(shown(s.flavor.label), style="bold")
        info.append(shown(f"  {s.opts.describe()}  page size {s.page_size // 1024}K"))
        algo = s.variables.get("innodb_compression_algorithm")
        if algo:
            info.append(shown(f"  innodb_compression_algorithm={algo}"))
        supported, _ = s.punch_hole
        info.append("  punch hole: ")
        info.append(
            {True: "yes", False: "NO", None: "unknown"}[supported],
            style={True: "green", False: "bold red", None: "yellow"}[supported],
        )
        if s.local_datadir is None:
            info.append("  (datadir not readable from here: no page states)", style="yellow")
        self.query_one("#server-info", Static).update(info)
        self.rebuild()

    def on_server_failed(self, message: ServerFailed) -> None:
        self.query_one("#server-info", Static).update(safe(message.message, style="bold red"))
        self.notify(shown(message.message), title="server", severity="error", markup=False)

    # --- the table -------------------------------------------------------------------------

    def rebuild(self) -> None:
        table = self.query_one(DataTable)
        vendor = self.server.flavor.name if self.server else Vendor.MYSQL
        rows: list[Row] = []
        for t in self.tables:
            fmt = t.current_format(vendor) if t.innodb else (t.engine or "-")
            problems = [s.state_error for s in t.spaces if s.state_error]
            note = t.needs_rebuild(vendor) or (problems[0] if problems else "")
            note = note or t.fulltext_summary()
            if not matches(f"{t.name} {fmt} {note}".lower(), self.filter_text):
                continue
            saved = ""
            if t.file_size and t.allocated_size is not None:
                saved = f"{100 * (t.file_size - t.allocated_size) / t.file_size:.0f}%"
            cells = (
                safe(t.name),
                safe(human_bytes(t.file_size), justify="right"),
                safe(human_bytes(t.allocated_size), justify="right"),
                safe(saved, justify="right"),
                safe(fmt),
                safe(t.page_summary() or ""),
                safe(note, style="yellow"),
            )
            rows.append((t.name, cells))
        # the widths with the rows (ibdtool.tui.tables); the cursor stays on its table
        fill_table(table, COLUMNS, rows)
        status = f"{len(rows)} of {len(self.tables)} tables"
        if self.filter_text:
            status += f" · filter /{self.filter_text}"
        self.query_one("#server-status", Static).update(status)

    def cursor_table(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return str(key) if key is not None else None

    def _selected(self) -> TableInfo | None:
        name = self.cursor_table()
        return next((t for t in self.tables if t.name == name), None)

    # --- actions ---------------------------------------------------------------------------

    def action_refresh(self) -> None:
        self.query_one("#server-status", Static).update("reading the catalog…")
        self.load()

    def action_migrate(self) -> None:
        table = self._selected()
        if table is None or self.server is None:
            return
        server = self.server

        def chosen(target: str | None) -> None:
            if target is not None:
                from ibdtool.tui.screens.migration import MigrationScreen

                self.app.push_screen(MigrationScreen(server, table, target), self._after)

        self.app.push_screen(TargetScreen(server, table), chosen)

    def _after(self, changed: bool | None) -> None:
        if changed:
            self.action_refresh()

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()

    def action_open(self) -> None:
        table = self._selected()
        if table is None:
            return
        paths = table.local_paths
        if not paths:
            self.notify(
                shown(f"{table.name}: its file is not readable from here (--datadir?)"),
                severity="warning",
                markup=False,
            )
            return
        from ibdtool.tui.screens.tablespace import TablespaceScreen

        server = self.server
        space = next(s.space for s in table.spaces if s.local_path == paths[0])

        def names() -> IndexNames:
            """The server's index names for the page map (read in the screen's worker)."""
            if server is None:
                return IndexNames()
            with self.ibd_app.command_log.timed("sql", f"index names of space {space}"):
                return server_index_names(server, space)

        self.app.push_screen(TablespaceScreen(paths[0], names_from=names))

    def action_filter(self) -> None:
        def apply(value: str | None) -> None:
            if value is not None:
                self.filter_text = value.strip()
                self.rebuild()

        self.app.push_screen(PromptScreen("/", "table, format or note", self.filter_text), apply)

    def action_clear_filter(self) -> None:
        self.filter_text = ""
        self.rebuild()

    def commands(self) -> list[SystemCommand]:
        return [
            SystemCommand("Convert table…", "Plan a conversion", self.action_migrate),
            SystemCommand("Refresh", "Read the catalog again", self.action_refresh),
        ]
