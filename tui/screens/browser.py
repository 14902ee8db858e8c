"""The browser: a data directory as a tree of folders (schemas) and their tablespaces.

Files are found with :func:`ibdtool.report.batch.walk_targets` and listed as the walk finds
them, a batch every :data:`PROGRESS_INTERVAL`, with what ``stat`` says (logical and allocated
size, saving): a batch that falls after the rows shown is appended, and only one that would
land among them redraws the table (at most once a :data:`REDRAW_INTERVAL` while listing), so a
directory of 100,000 files shows its first screen at once and the keys answer all along; a
thread worker then runs
:func:`ibdtool.report.batch.scan_one` on each file in the order shown and fills in the compression
and the flags ``ibdtool report`` raises (mixed, needs rebuild, unpunched…). The worker pauses
while another screen is on top, so it never competes with the tablespace being looked at.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static
from textual.worker import get_current_worker

from ibdtool.errors import IbdtoolError
from ibdtool.parsers.filename import decode, table_label
from ibdtool.present import human_bytes, shown
from ibdtool.report import ScanOptions, Target, fulltext_owners, scan_one, walk_targets
from ibdtool.tui.messages import RowsScanned, ScanFailed
from ibdtool.tui.screens.prompt import PromptScreen
from ibdtool.tui.shown import safe
from ibdtool.tui.tables import Row, add_rows, fill_table, set_cells

if TYPE_CHECKING:
    from ibdtool.tui.appstate import AppState

PROGRESS_INTERVAL = 0.1
#: while files are still being listed, a redraw of the whole table at most this often
REDRAW_INTERVAL = 1.0
#: a scan worker takes files until it has this many bytes or files, then the next one starts
BATCH_BYTES = 256 << 20
BATCH_FILES = 16
#: flag names of ``ibdtool report`` as the browser shows them
FLAG_LABELS = {
    "checksum": "checksum!",
    "mixed": "mixed",
    "needs_rebuild": "rebuild",
    "no_holes": "no holes",
    "unpunched": "unpunched",
    "fragmented": "fragmented",
    "error": "error",
}
FLAG_STYLES = {"checksum!": "bold red", "error": "bold red", "rebuild": "yellow", "mixed": "yellow"}
SORTS = ("name", "logical", "allocated", "saved", "compression", "flags")
COLUMNS = ("name", "logical", "allocated", "saved", "compression", "flags")
FILLED_WIDTHS = {"compression": 11, "flags": 20}


@dataclass
class Entry:
    """One tablespace file: what ``stat`` said, then the report row once scanned."""

    target: Target
    folder: str
    allocated: int | None
    row: dict[str, Any] | None = None
    #: a FULLTEXT tablespace's table, once found (:func:`ibdtool.report.fulltext_owners`)
    owner: str | None = None

    @property
    def name(self) -> str:
        """The file as the table it belongs to, decoded as report names it: ``Bestellübersicht``,
        ``events partition p2023``, ``docs FULLTEXT CONFIG``; other files by their name."""
        t = self.target
        if t.fts_table_id is not None:
            table = self.owner or f"(table id 0x{t.fts_table_id:x})"
            return f"{table} FULLTEXT {t.fts_part}"
        if t.kind == "table" and t.table:
            return table_label(None, t.table, t.partition)
        return Path(t.path).name

    @property
    def sort_name(self) -> tuple[str, bool, str]:
        """By table, a FULLTEXT tablespace after its table's file."""
        t = self.target
        if t.fts_table_id is not None:
            return (self.owner or "", True, self.name)
        return (t.table or Path(t.path).name, False, self.name)

    @property
    def logical(self) -> int:
        return self.target.size

    @property
    def saved(self) -> float | None:
        if self.allocated is None or not self.logical:
            return None
        return 100 * (self.logical - self.allocated) / self.logical

    @property
    def compression(self) -> str:
        row = self.row
        if row is None:
            return ""
        if row.get("error"):
            return "?"
        if row.get("key_block_size"):
            return f"zip {row['key_block_size'] // 1024}K"
        return str(row.get("page_compression") or "")

    @property
    def flags(self) -> list[str]:
        if self.row is None:
            return []
        return [FLAG_LABELS.get(f, f) for f in self.row.get("flags", [])]

    def text(self) -> str:
        """What the filter matches against."""
        return " ".join(
            [
                self.folder,
                decode_folder(self.folder),
                Path(self.target.path).name,
                self.name,
                self.compression,
                *self.flags,
            ]
        ).lower()


@dataclass
class FilesListed(Message):
    """The walk found these files (sizes from ``stat``, not scanned yet); ``done``: the walk
    is over."""

    entries: list[Entry]
    done: bool = True


@dataclass
class Folder:
    name: str
    entries: list[Entry] = field(default_factory=list)
    collapsed: bool = False
    #: what its row shows: files shown, their logical and allocated bytes
    shown: int = 0
    logical: int = 0
    allocated: int = 0


def _sort_key(column: str) -> Callable[[Entry], Any]:
    return {
        "name": lambda e: e.sort_name,
        "logical": lambda e: e.logical,
        "allocated": lambda e: e.allocated or 0,
        "saved": lambda e: e.saved if e.saved is not None else -1e9,
        "compression": lambda e: e.compression,
        "flags": lambda e: (len(e.flags), " ".join(e.flags)),
    }[column]


def _folder_key(name: str) -> tuple[bool, str]:
    """Folders in the table: the top one first, then by name."""
    return (name != ".", name)


def decode_folder(folder: str) -> str:
    """A folder under the root with each part decoded (``my@002ddb`` -> ``my-db``)."""
    return "/".join(decode(part) for part in folder.split("/"))


def matches(text: str, query: str) -> bool:
    """htop's ``|`` alternatives, k9s's ``!`` inversion, case-insensitive substrings."""
    query = query.strip().lower()
    if not query:
        return True
    invert = query.startswith("!")
    words = [w.strip() for w in query.removeprefix("!").split("|") if w.strip()]
    hit = any(w in text for w in words)
    return hit != invert


class BrowserScreen(Screen[None]):
    """Folders and tablespaces, sortable and filterable (see module doc)."""

    HELP = """\
## Browser

Every tablespace under the directory, grouped by folder (schema). Sizes come from
`stat` at once; compression and flags appear as each file is scanned.
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open"),
        Binding("slash", "filter", "Filter"),
        Binding("backslash", "clear_filter", "Clear filter", show=False),
        Binding("s", "sort", "Sort"),
        Binding("o", "reverse", "Reverse", show=False),
        Binding("space", "toggle_folder", "Fold", show=False),
        Binding("R", "rescan", "Rescan", show=False),
    ]

    def __init__(
        self, root: str | Path, select: str | Path | None = None, *, lazy: bool = False
    ) -> None:
        """``lazy``: list the directory only when this screen is first shown (when the app
        opens a file, its folder is walked once the user goes back to it, not while the
        file is being read)."""
        super().__init__()
        self.lazy = lazy
        self.explored = False
        self.root = Path(root)
        self.select = str(select) if select is not None else None
        self.folders: dict[str, Folder] = {}
        self.by_path: dict[str, Entry] = {}
        self.filter_text = ""
        self.sort_column = "name"
        self.reverse = False
        self.scanned = 0
        self._shown = True  # False while another screen is on top: scanning pauses
        self._batch_running = False
        self.listing = False  # the walk is still going
        #: files to scan, in the order shown when it was last drawn (scanned ones are skipped)
        self._todo: deque[Entry] = deque()
        #: FULLTEXT tablespaces whose table is not known yet
        self._loose: set[str] = set()
        #: the folders in the table, in order, and its file rows' entries (what appends go after)
        self._drawn: list[str] = []
        self._last: dict[str, Entry] = {}
        self._redraw_at = 0.0
        self._redraw_pending = False
        self._scan_started: float | None = None

    @property
    def ibd_app(self) -> AppState:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield DataTable(id="files", cursor_type="row", zebra_stripes=False)
        yield Static("listing…", id="browser-status")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = shown(str(self.root))
        table = self.query_one(DataTable)
        for name in COLUMNS:
            # the columns a scan fills get fixed widths: they start empty
            table.add_column(name, key=name, width=FILLED_WIDTHS.get(name))
        table.focus()
        if not self.lazy:
            self.explored = True
            self.explore()

    def on_screen_suspend(self) -> None:
        self._shown = False

    def on_screen_resume(self) -> None:
        self._shown = True
        if not self.explored:
            self.explored = True
            self.explore()
        self._scan_next()

    # --- the workers -----------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="browse-list", exit_on_error=False)
    def explore(self) -> None:
        log = self.ibd_app.command_log
        worker = get_current_worker()
        self.listing = True
        listed = 0
        try:
            with log.timed("file", f"walk {self.root}") as run:
                batch: list[Entry] = []
                last = time.monotonic()
                for t in walk_targets([self.root]):
                    if worker.is_cancelled:
                        return
                    batch.append(self._entry(t))
                    now = time.monotonic()
                    if now - last >= PROGRESS_INTERVAL:
                        listed += len(batch)
                        self.post_message(FilesListed(batch, done=False))
                        batch, last = [], now
                listed += len(batch)
                run.detail = f"{listed} tablespaces"
        except IbdtoolError as exc:
            self.listing = False
            self.post_message(ScanFailed(exc.message))
            return
        self.post_message(FilesListed(batch, done=True))

    def on_files_listed(self, message: FilesListed) -> None:
        self._listed(message.entries, message.done)
        self._scan_next()

    def _scan_next(self) -> None:
        """Scan the next few unscanned files, in the order shown, unless another screen is on
        top (each batch is a short worker, so nothing waits in a thread while paused)."""
        if not self._shown or self._batch_running:
            return
        batch: list[Target] = []
        size = 0
        while self._todo:
            e = self._todo.popleft()
            if e.row is not None or self.by_path.get(e.target.path) is not e:
                continue
            batch.append(e.target)
            size += e.logical
            if size >= BATCH_BYTES or len(batch) >= BATCH_FILES:
                break
        if batch:
            self._batch_running = True
            if self._scan_started is None:
                self._scan_started = time.monotonic()
            self.scan_batch(batch)

    # not exclusive: one batch at a time is _scan_next's rule, and the next batch starts while
    # the last one's thread is still returning from its final message
    @work(thread=True, group="browse", exit_on_error=False)
    def scan_batch(self, targets: list[Target]) -> None:
        worker = get_current_worker()
        log = self.ibd_app.command_log
        rows: list[dict[str, Any]] = []
        last = time.monotonic()
        for i, target in enumerate(targets):
            if worker.is_cancelled:
                return
            with log.timed("file", f"inspect {target.path}") as run:
                row = scan_one(target, ScanOptions())
                run.detail = ", ".join(row.get("flags", [])) or "no flags"
                if row.get("error"):
                    run.outcome = f"error: {row['error']}"
            rows.append(row)
            now = time.monotonic()
            final = i == len(targets) - 1
            if now - last >= PROGRESS_INTERVAL or final:
                last = now
                self.post_message(RowsScanned(rows, final))
                rows = []

    def _entry(self, t: Target) -> Entry:
        folder = os.path.relpath(os.path.dirname(t.path) or ".", self.root)
        try:
            allocated: int | None = os.stat(t.path).st_blocks * 512
        except OSError:
            allocated = None
        return Entry(t, "." if folder == "." else folder, allocated)

    def _listed(self, entries: list[Entry], done: bool = True) -> None:
        """Files the walk found: appended after the rows shown where they sort after them,
        else the table redrawn (at most once a :data:`REDRAW_INTERVAL` while listing)."""
        self.listing = not done
        for e in entries:
            folder = self.folders.setdefault(e.folder, Folder(e.folder))
            folder.entries.append(e)
            self.by_path[e.target.path] = e
            self._todo.append(e)
            if e.target.fts_table_id is not None:
                self._loose.add(e.target.path)
        tied = self._tie_fulltext()
        if tied or self._redraw_pending or not self._append(entries):
            self._redraw_pending = True
        if self._redraw_pending and (done or time.monotonic() >= self._redraw_at):
            self.rebuild()
        if self.select and self.select in self.query_one(DataTable).rows:
            self.move_to(self.select)
            self.select = None
        self._status()

    def _append(self, entries: list[Entry]) -> bool:
        """Add the rows of ``entries`` at the end of the table; False (nothing added) when
        one would not land there in the order shown."""
        table = self.query_one(DataTable)
        order = _sort_key(self.sort_column)
        placed: list[tuple[Folder, Entry]] = []
        last_folder = self._drawn[-1] if self._drawn else None
        last = dict(self._last)
        for e in entries:
            if not matches(e.text(), self.filter_text):
                continue
            folder = self.folders[e.folder]
            if last_folder is not None and _folder_key(e.folder) < _folder_key(last_folder):
                return False
            before = last.get(e.folder)
            if before is not None and self._after(order, before, e) is False:
                return False
            last_folder, last[e.folder] = e.folder, e
            placed.append((folder, e))
        rows: list[Row] = []
        for folder, e in placed:
            key = f"folder:{folder.name}"
            if not self._drawn or self._drawn[-1] != folder.name:
                self._drawn.append(folder.name)
                folder.shown = folder.logical = folder.allocated = 0
                rows.append((key, self._folder_cells(folder)))
            folder.shown += 1
            folder.logical += e.logical
            folder.allocated += e.allocated or 0
            self._last[folder.name] = e
            if not folder.collapsed:
                rows.append((e.target.path, self._cells(e)))
        # the widths with the rows (ibdtool.tui.tables): a batch arrives while the app is busy
        add_rows(table, rows)
        for name in dict.fromkeys(f.name for f, _ in placed):
            cells = self._folder_cells(self.folders[name])
            set_cells(table, f"folder:{name}", dict(zip(COLUMNS, cells, strict=True)))
        return True

    def _after(self, order: Callable[[Entry], Any], before: Entry, e: Entry) -> bool:
        """Does ``e`` sort after ``before`` (the order shown, reversed or not)?"""
        a, b = order(before), order(e)
        return bool(a > b) if self.reverse else bool(b >= a)

    def on_rows_scanned(self, message: RowsScanned) -> None:
        table = self.query_one(DataTable)
        for row in message.rows:
            entry = self.by_path.get(row["path"])
            if entry is None:
                continue
            self.scanned += entry.row is None
            entry.row = row
            before = entry.allocated or 0
            if row.get("allocated_size") is not None:
                entry.allocated = row["allocated_size"]
            folder = self.folders.get(entry.folder)
            if folder is not None and self._last.get(entry.folder) is not None:
                folder.allocated += (entry.allocated or 0) - before
            key = entry.target.path
            if key in table.rows:
                set_cells(table, key, dict(zip(COLUMNS, self._cells(entry), strict=True)))
        if message.final:
            self._batch_running = False
            if self._tie_fulltext():
                self.rebuild()
            if self.scanned == len(self.by_path) and self.sort_column in ("compression", "flags"):
                self.rebuild()
            self._scan_next()
        self._status()

    def _tie_fulltext(self) -> bool:
        """Name FULLTEXT tablespaces after their tables (SYS_TABLES, or the scanned SDIs);
        True when one more was named."""
        if not self._loose:
            return False
        loose = [self.by_path[p] for p in self._loose if p in self.by_path]
        entries = list(self.by_path.values())
        rows = [e.row for e in entries if e.row is not None]
        owners = fulltext_owners([e.target for e in entries], rows)
        named = False
        for e in loose:
            owner = owners.get(e.target.fts_table_id or 0)
            if owner:
                e.owner, named = owner, True
                self._loose.discard(e.target.path)
        return named

    def on_scan_failed(self, message: ScanFailed) -> None:
        self.query_one("#browser-status", Static).update(safe(message.message, "bold red"))

    # --- the table -------------------------------------------------------------------------

    def _cells(self, e: Entry) -> tuple[Any, ...]:
        flags = Text()
        for i, f in enumerate(e.flags):
            if i:
                flags.append(" ")
            flags.append(f, style=FLAG_STYLES.get(f, "cyan"))
        saved = e.saved
        return (
            safe("  " + e.name),
            safe(human_bytes(e.logical), justify="right"),
            safe(human_bytes(e.allocated), justify="right"),
            Text("" if saved is None else f"{saved:.0f}%", justify="right"),
            safe(e.compression),
            safe(flags),
        )

    def display_order(self) -> list[Entry]:
        out: list[Entry] = []
        for folder in self._sorted_folders():
            out.extend(self._visible(folder))
        return out

    def _sorted_folders(self) -> list[Folder]:
        return sorted(self.folders.values(), key=lambda f: _folder_key(f.name))

    def _folder_cells(self, folder: Folder) -> tuple[Any, ...]:
        logical, allocated = folder.logical, folder.allocated
        saved = 100 * (logical - allocated) / logical if logical else 0
        label = Text("▸ " if folder.collapsed else "▾ ", style="bold")
        label.append(shown(f"{decode_folder(folder.name)}/"), style="bold").append(
            f" {folder.shown}", style="dim"
        )
        return (
            label,
            safe(human_bytes(logical), justify="right", style="bold"),
            safe(human_bytes(allocated), justify="right", style="bold"),
            safe(f"{saved:.0f}%", justify="right", style="bold"),
            "",
            "",
        )

    def _visible(self, folder: Folder) -> list[Entry]:
        visible = [e for e in folder.entries if matches(e.text(), self.filter_text)]
        return sorted(visible, key=_sort_key(self.sort_column), reverse=self.reverse)

    def rebuild(self) -> None:
        """Redraw the whole table in the order and filter chosen; the files not scanned yet
        are then scanned in that order."""
        table = self.query_one(DataTable)
        keep = self.cursor_key()
        rows: list[Row] = []
        self._drawn, self._last = [], {}
        self._redraw_pending = False
        self._redraw_at = time.monotonic() + REDRAW_INTERVAL
        order: list[Entry] = []
        for folder in self._sorted_folders():
            visible = self._visible(folder)
            folder.shown = len(visible)
            folder.logical = sum(e.logical for e in visible)
            folder.allocated = sum(e.allocated or 0 for e in visible)
            if not visible:
                continue
            self._drawn.append(folder.name)
            self._last[folder.name] = visible[-1]
            order.extend(visible)
            rows.append((f"folder:{folder.name}", self._folder_cells(folder)))
            if folder.collapsed:
                continue
            rows.extend((e.target.path, self._cells(e)) for e in visible)
        # the widths with the rows (ibdtool.tui.tables); the columns a scan fills keep theirs
        fill_table(table, COLUMNS, rows, FILLED_WIDTHS)
        shown_paths = {e.target.path for e in order}
        rest = [e for e in self.by_path.values() if e.target.path not in shown_paths]
        self._todo = deque(e for e in [*order, *rest] if e.row is None)
        if keep is not None:
            self.move_to(keep)
        self._status()

    def cursor_key(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        except Exception:
            return None
        return key.value

    def move_to(self, key: str) -> None:
        table = self.query_one(DataTable)
        if key in table.rows:
            table.move_cursor(row=table.get_row_index(key), animate=False)

    def _status(self) -> None:
        """The line under the table, from the folders' running sums (not a pass over every
        file: it is redrawn as each batch of files is listed or scanned)."""
        drawn = [self.folders[name] for name in self._drawn if name in self.folders]
        count = sum(f.shown for f in drawn)
        logical = sum(f.logical for f in drawn)
        allocated = sum(f.allocated for f in drawn)
        pct = 100 * (logical - allocated) / logical if logical else 0
        text = Text()
        if not self.by_path:
            text.append(
                "listing…" if self.listing else f"no tablespaces under {shown(self.root)}",
                style="dim" if self.listing else "yellow",
            )
        else:
            text.append(f"{count} tablespaces", style="bold")
            if self.listing:
                text.append(f" (listing: {len(self.by_path):,} found)", style="dim")
            text.append(
                f" · {human_bytes(logical)} logical → {human_bytes(allocated)} allocated "
                f"({pct:.0f}% saved)"
            )
            if self.scanned < len(self.by_path):
                text.append(f" · scanning {self.scanned}/{len(self.by_path)}", style="dim")
                rate = self.scan_rate()
                if rate is not None:
                    text.append(f" · {rate:,.0f} files/s", style="dim")
            text.append(f" · sort {self.sort_column}{' ↓' if self.reverse else ''}", style="dim")
            if self.filter_text:
                text.append(f" · filter /{shown(self.filter_text)}", style="cyan")
        self.query_one("#browser-status", Static).update(text)

    def scan_rate(self) -> float | None:
        """Files scanned a second since the scan began (None before one is done)."""
        if self._scan_started is None or not self.scanned:
            return None
        return self.scanned / max(1e-6, time.monotonic() - self._scan_started)

    # --- actions ---------------------------------------------------------------------------

    def action_open(self) -> None:
        key = self.cursor_key()
        if key is None:
            return
        if key.startswith("folder:"):
            self.action_toggle_folder()
            return
        from ibdtool.tui.screens.tablespace import TablespaceScreen

        self.app.push_screen(TablespaceScreen(key))

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()

    @on(DataTable.HeaderSelected)
    def _header_selected(self, event: DataTable.HeaderSelected) -> None:
        column = str(event.column_key.value)
        if column == self.sort_column:
            self.reverse = not self.reverse
        else:
            self.sort_column, self.reverse = column, column not in ("name", "compression")
        self.rebuild()

    def action_toggle_folder(self) -> None:
        key = self.cursor_key()
        if key is None:
            return
        if not key.startswith("folder:"):
            entry = self.by_path.get(key)
            if entry is None:
                return
            key = f"folder:{entry.folder}"
        folder = self.folders.get(key.removeprefix("folder:"))
        if folder is not None:
            folder.collapsed = not folder.collapsed
            self.rebuild()
            self.move_to(key)

    def action_sort(self) -> None:
        self.sort_column = SORTS[(SORTS.index(self.sort_column) + 1) % len(SORTS)]
        self.reverse = self.sort_column not in ("name", "compression")
        self.rebuild()

    def action_reverse(self) -> None:
        self.reverse = not self.reverse
        self.rebuild()

    def action_filter(self) -> None:
        def apply(value: str | None) -> None:
            if value is not None:
                self.filter_text = value.strip()
                self.rebuild()

        self.app.push_screen(
            PromptScreen("/", "name, compression or flag (a|b, !a)", self.filter_text), apply
        )

    def action_clear_filter(self) -> None:
        self.filter_text = ""
        self.rebuild()

    def action_rescan(self) -> None:
        self.workers.cancel_group(self, "browse")
        self.folders.clear()
        self.by_path.clear()
        self._todo.clear()
        self._loose.clear()
        self.scanned = 0
        self._scan_started = None
        self._batch_running = False
        self.rebuild()
        self.explore()

    def commands(self) -> list[SystemCommand]:
        return [
            SystemCommand(f"Sort by {c}", "Sort the tablespaces", self._sorter(c)) for c in SORTS
        ] + [
            SystemCommand("Filter…", "Show only matching tablespaces", self.action_filter),
            SystemCommand("Rescan", "List and scan the directory again", self.action_rescan),
        ]

    def _sorter(self, column: str) -> Callable[[], None]:
        def sort() -> None:
            self.sort_column = column
            self.rebuild()

        return sort
