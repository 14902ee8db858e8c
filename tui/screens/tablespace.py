"""The tablespace view: the inspect summary and the page map of one file.

A thread worker opens the file and posts :class:`~ibdtool.tui.messages.ScanStarted` at once, so
the format, sizes and the (unread) page map show before the allocation map is read; then it runs
:func:`ibdtool.tablespace.inspect.inspect_tablespace`, which reads the allocation map (SEEK_DATA,
FIEMAP) a window of pages at a time just before their pages (a ``window_map`` hook that logs the
call and fills the page map's allocation colouring: a page-compressed file's millions of
extents are never held at once, and the first pages are drawn before the last window is read),
with an ``on_page`` hook that fills the page map, checks for cancellation between pages and
posts progress at most ten times a second. The finished
:class:`~ibdtool.tablespace.inspect.InspectResult` replaces the header with the full summary.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, ProgressBar, Static
from textual.worker import Worker, get_current_worker

from ibdtool.errors import IbdtoolError
from ibdtool.fs import Allocation, WindowCounts
from ibdtool.parsers.page import PageInfo
from ibdtool.present import disk_text, format_rows, human_bytes, inspect_rows, shown
from ibdtool.tablespace import (
    IndexNames,
    InspectResult,
    Tablespace,
    format_name,
    index_names_of,
    inspect_tablespace,
)
from ibdtool.tui.commandlog import Cancelled
from ibdtool.tui.messages import FileOpened, ScanFailed, ScanFinished, ScanProgress, ScanStarted
from ibdtool.tui.pagemodel import MODE_TITLES, Mode, PageMapModel, model_for, scan_into
from ibdtool.tui.screens.prompt import PromptScreen, ask_page
from ibdtool.tui.shown import safe
from ibdtool.tui.widgets.legend import Legend
from ibdtool.tui.widgets.pagemap import PageMap

if TYPE_CHECKING:
    from ibdtool.tui.appstate import AppState

PROGRESS_INTERVAL = 0.1  # seconds between progress messages: at most ~10 a second
#: past 16 M pages (256 GiB of 16K pages) only the summary is made, holes counted without a
#: read, so a 15 TiB sparse file costs seconds and no GiBs. Memory is no longer what limits the
#: map (4 bytes a page, ibdtool.tui.pagemodel: 64 MiB here); time is: the map is filled by one
#: Python call per page, pages in holes included (``inspect``'s ``on_page``), ~4 minutes for 16 M
#: pages. Lifting the limit needs the scan to hand the map its hole runs whole.
MAP_MAX_PAGES = 1 << 24
MODES = list(Mode)


def _summary_grid(r: InspectResult) -> Table:
    """The inspect summary, a grid of the rows the CLI's ``inspect`` prints."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="cyan", no_wrap=True)
    grid.add_column()
    for name, value in inspect_rows(r):
        grid.add_row(name, safe(Text.assemble(*value)))
    return grid


class TablespaceScreen(Screen[None]):
    """Summary, page map, legend and the page under the cursor."""

    HELP = """\
## Tablespace

The page map draws one cell per page (or per group of pages when zoomed out: the
group's most common category, drawn `▓` when its pages differ). Colour it by page
type, compression algorithm, stored size, allocation on disk or checksum.
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "next_mode", "Colour"),
        Binding("1", "mode('type')", "Type", show=False),
        Binding("2", "mode('compression')", "Compression", show=False),
        Binding("3", "mode('ratio')", "Ratio", show=False),
        Binding("4", "mode('allocation')", "Allocation", show=False),
        Binding("5", "mode('checksum')", "Checksum", show=False),
        Binding("6", "mode('index')", "Index", show=False),
        Binding("7", "mode('level')", "Level", show=False),
        Binding("s", "simulate", "Simulate"),
        Binding("colon", "jump", "Jump to page", show=False),
        Binding("slash", "filter", "Filter"),
        Binding("backslash", "clear_filter", "Clear filter", show=False),
        Binding("n", "next_match(1)", "Next match", show=False),
        Binding("N", "next_match(-1)", "Previous match", show=False),
        Binding("i", "toggle_summary", "Summary", show=False),
        Binding("r", "rescan", "Rescan", show=False),
    ]

    def __init__(
        self, path: str | Path, names_from: Callable[[], IndexNames] | None = None
    ) -> None:
        super().__init__()
        self.path = Path(path)
        #: where the page map's index names come from when not the file's SDI or .cfg (a server)
        self.names_from = names_from
        self.model: PageMapModel | None = None
        self.result: InspectResult | None = None
        self.opened: FileOpened | None = None
        self.started: ScanStarted | None = None
        self.failed: str | None = None
        self.filter_text = ""
        self._match: bytes | None = None
        self._cursor = (0, 1)

    @property
    def ibd_app(self) -> AppState:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with VerticalScroll(id="summary"):
            yield Static("opening…", id="summary-text")
            yield ProgressBar(id="scan-progress", show_eta=True)
        yield PageMap(id="pagemap")
        yield Static("", id="cursor-info")
        yield Legend("", id="legend")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = shown(str(self.path))
        self.query_one(PageMap).focus()
        self.scan()

    # --- the scan worker -------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="scan", exit_on_error=False)
    def scan(self) -> None:
        worker = get_current_worker()
        log = self.ibd_app.command_log
        try:
            with log.timed("file", f"open {self.path}") as run:
                ts = Tablespace(self.path, self.ibd_app.keyring)
                run.detail = f"{ts.n_pages:,} pages of {ts.physical_size} bytes"
            with ts:
                allocated = ts.allocation_stat[1]
                self.post_message(FileOpened(ts.format, ts.size, allocated, ts.n_pages))
                if ts.n_pages > MAP_MAX_PAGES:
                    self._summary_only(ts, worker)
                    return
                model = model_for(ts)  # its allocation codes come a window at a time (scan_into)
                with log.timed("file", f"index names of {self.path}") as run:
                    schema = self.ibd_app.schema_for(self.path)
                    names = (
                        self.names_from() if self.names_from else index_names_of(ts, None, schema)
                    )
                    if not names.names:
                        names = index_names_of(ts, None, schema)
                    model.index_names = names.names
                    run.detail = f"{len(names.names)} {names.described}"
                self.post_message(ScanStarted(ts.format, None, model, ts.size))
                total = ts.n_pages
                last = time.monotonic()

                def window_map(start: int, stop: int) -> tuple[Allocation, WindowCounts]:
                    if worker.is_cancelled:
                        raise Cancelled
                    text = f"lseek SEEK_DATA/SEEK_HOLE + FIEMAP {self.path}"
                    with log.timed("file", text) as run:
                        alloc, counts = ts.window_allocation(start, stop)
                        extents = "?" if counts.extents is None else f"{counts.extents:,}"
                        run.detail = (
                            f"pages {start:,}–{max(start, stop - 1):,}: {counts.ranges:,} data "
                            f"ranges, {extents} extents"
                        )
                    return alloc, counts

                def on_page(info: PageInfo) -> None:
                    nonlocal last
                    if worker.is_cancelled:
                        raise Cancelled
                    now = time.monotonic()
                    if now - last >= PROGRESS_INTERVAL:
                        last = now
                        self.post_message(ScanProgress(info.page_no + 1, total))

                with log.timed("file", f"pread {ts.size:,} bytes of {self.path}") as run:
                    result = scan_into(
                        ts, model, on_page=on_page, window_map=window_map, schema=schema
                    )
                    a = result.allocation
                    run.detail = (
                        f"{total:,} pages decoded, {a.data_range_count:,} data ranges, "
                        f"{a.extents if a.extents is not None else '?'} extents, "
                        f"{a.allocated:,} bytes allocated"
                    )
            self.post_message(ScanProgress(total, total))
            self.post_message(ScanFinished(result))
        except Cancelled:
            return
        except IbdtoolError as exc:
            self.post_message(ScanFailed(exc.message))
        except Exception as exc:  # a parser bug must not take the whole app down
            self.post_message(ScanFailed(f"unexpected {type(exc).__name__}: {exc}"))

    def _summary_only(self, ts: Tablespace, worker: Worker[None]) -> None:
        """The scan of a file too big for a page map: progress by runs, no map."""
        total = ts.n_pages

        def progress(done: int) -> None:
            if worker.is_cancelled:
                raise Cancelled
            self.post_message(ScanProgress(done, total))

        with self.ibd_app.command_log.timed("file", f"inspect {self.path} (no page map)") as run:
            result = inspect_tablespace(
                ts, progress=progress, schema=self.ibd_app.schema_for(self.path)
            )
            run.detail = f"{total:,} pages counted"
        self.post_message(ScanProgress(total, total))
        self.post_message(ScanFinished(result))

    # --- messages from the worker ----------------------------------------------------------

    def on_file_opened(self, message: FileOpened) -> None:
        self.opened = message
        self._show_header()

    def on_scan_started(self, message: ScanStarted) -> None:
        self.started = message
        self.model = message.model
        pagemap = self.query_one(PageMap)
        pagemap.set_model(message.model)
        self.query_one("#scan-progress", ProgressBar).update(total=message.model.n_pages)
        self._show_header()
        self._refresh_legend()

    def on_scan_progress(self, message: ScanProgress) -> None:
        self.query_one("#scan-progress", ProgressBar).update(
            total=message.total, progress=message.done
        )
        if self.filter_text:
            self._apply_filter()
        self.query_one(PageMap).pages_changed()
        self._refresh_legend()
        self._show_cursor()

    def on_scan_finished(self, message: ScanFinished) -> None:
        self.result = message.result
        self.query_one("#scan-progress", ProgressBar).display = False
        self._set_summary(_summary_grid(message.result))
        if self.model is None:
            self.query_one("#cursor-info", Static).update(
                safe(
                    f"no page map: {message.result.pages:,} pages are more than a map holds "
                    f"({MAP_MAX_PAGES:,}); the summary above counts them all",
                    style="yellow",
                )
            )
        self._refresh_legend()
        self._show_cursor()

    def on_scan_failed(self, message: ScanFailed) -> None:
        self.failed = message.message
        self.query_one("#scan-progress", ProgressBar).display = False
        self._set_summary(safe(message.message, style="bold red"))
        self.notify(shown(message.message), title="cannot read", severity="error", markup=False)

    # --- display ---------------------------------------------------------------------------

    def _show_header(self) -> None:
        """Before the scan ends: what page 0, fstat and then the allocation map tell, and the
        scan's progress."""
        o = self.opened
        if o is None:
            return
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="cyan", no_wrap=True)
        grid.add_column()
        label = format_name(o.fmt, name=str(self.path))
        for name, value in format_rows(o.fmt, o.fmt.vendor, label):
            grid.add_row(name, safe(value))
        grid.add_row("Row format", o.fmt.flags.row_format or "(full_crc32: not in the flags)")
        s = self.started
        if s is None or s.allocation is None:
            saved = 100 * (o.logical_size - o.allocated) / o.logical_size if o.logical_size else 0
            disk = (
                f"{human_bytes(o.logical_size)} logical → {human_bytes(o.allocated)} allocated "
                f"({saved:.0f}% saved) · "
                + ("reading the extent map…" if s is None else "extents counted as pages are read")
            )
            grid.add_row("Disk", disk)
        else:
            grid.add_row("Disk", disk_text(s.logical_size, s.allocation))
        # the bar below counts the pages; the grid is not laid out again ten times a second
        grid.add_row("Pages", f"{o.pages:,}" if s is None else f"{o.pages:,}  reading…")
        self._set_summary(grid)

    def _set_summary(self, content: RenderableType) -> None:
        text = self.query_one("#summary-text", Static)
        text.update(content)
        # a Rich grid that grows between two frames kept its first height now and then
        text.clear_cached_dimensions()
        self.query_one("#summary").refresh(layout=True)

    def _refresh_legend(self) -> None:
        if self.model is None:
            return
        mode = self.query_one(PageMap).mode
        self.query_one(Legend).show(mode, self.model.counts(mode), self.model.n_pages)

    def _show_cursor(self) -> None:
        model = self.model
        if model is None:
            return
        page, count = self._cursor
        info = self.query_one("#cursor-info", Static)
        if count > 1:
            mode = self.query_one(PageMap).mode
            groups = model.group_counts(mode, page, count)
            text = safe(f"pages {page:,}–{page + count - 1:,}: ", style="bold")
            for i, (cat, n) in enumerate(groups[:5]):
                if i:
                    text.append(" · ")
                text.append("█", style=cat.color).append(shown(f" {cat.label} {n}"))
            info.update(text)
            return
        labels = model.labels(page)
        text = safe(f"page {page:,}: ", style="bold")
        alloc = model.allocated_at(page)
        if page >= model.scanned:
            text.append("not read yet", style="dim")
        else:
            text.append(shown(labels[Mode.TYPE]), style="bold")
            comp = labels[Mode.COMPRESSION]
            if comp not in ("none", "empty"):
                stored = model.stored_size(page)  # read from the header: the map keeps none
                size = f" {human_bytes(stored)} of {human_bytes(model.physical_size)}"
                text.append(f" · {comp}{size if stored else ''}")
            elif comp == "empty":
                text.append(" · all zero")
            text.append(f" · checksum {labels[Mode.CHECKSUM]}")
            if labels[Mode.INDEX] != "not an index page":
                text.append(shown(f" · {labels[Mode.INDEX]} {labels[Mode.LEVEL]}"))
        text.append(f" · {human_bytes(alloc)} allocated ({labels[Mode.ALLOCATION]})")
        info.update(text)

    @on(PageMap.CursorMoved)
    def _cursor_moved(self, message: PageMap.CursorMoved) -> None:
        self._cursor = (message.page, message.pages)
        self._show_cursor()

    @on(PageMap.PageSelected)
    def _page_selected(self, message: PageMap.PageSelected) -> None:
        self.open_page(message.page)

    def open_page(self, page: int) -> None:
        from ibdtool.tui.screens.page import PageScreen

        if self.model is not None:
            self.app.push_screen(PageScreen(self.path, page, self.model))

    # --- actions ---------------------------------------------------------------------------

    def action_next_mode(self) -> None:
        pagemap = self.query_one(PageMap)
        self.set_mode(MODES[(MODES.index(pagemap.mode) + 1) % len(MODES)])

    def action_mode(self, name: str) -> None:
        self.set_mode(Mode(name))

    def set_mode(self, mode: Mode) -> None:
        self.query_one(PageMap).mode = mode
        self._refresh_legend()
        self._show_cursor()

    def action_simulate(self) -> None:
        from ibdtool.tui.screens.simulation import SimulationScreen

        self.app.push_screen(SimulationScreen(self.path))

    def action_jump(self) -> None:
        if self.model is not None:
            ask_page(self, self.model.n_pages, self.query_one(PageMap).jump_to)

    def action_filter(self) -> None:
        def apply(value: str | None) -> None:
            if value is not None:
                self.filter_text = value.strip()
                self._apply_filter()
                if self.filter_text:
                    self.action_next_match(1, from_cursor=True)

        self.app.push_screen(
            PromptScreen("/", "type, algorithm, hole, unpunched, invalid… (a|b)", self.filter_text),
            apply,
        )

    def action_clear_filter(self) -> None:
        self.filter_text = ""
        self._apply_filter()

    def _apply_filter(self) -> None:
        pagemap = self.query_one(PageMap)
        if not self.filter_text or self.model is None:
            self._match = None
            pagemap.set_match(None)
            return
        self._match = self.model.matches(self.filter_text)
        pagemap.set_match(self._match)

    def action_next_match(self, direction: int, from_cursor: bool = False) -> None:
        if self._match is None:
            return
        pagemap = self.query_one(PageMap)
        k = pagemap.pages_per_cell
        here = pagemap.cursor
        if direction > 0:
            found = self._match.find(1, here if from_cursor else here + k)
        else:
            found = self._match.rfind(1, 0, here)
        if found < 0:
            self.notify(
                shown(f"no more pages match {self.filter_text!r}"), severity="warning", markup=False
            )
            return
        pagemap.move_to(found)

    def action_toggle_summary(self) -> None:
        self.toggle_class("summary-expanded")

    def action_rescan(self) -> None:
        self.result = None
        self.query_one("#scan-progress", ProgressBar).display = True
        self.scan()

    def commands(self) -> list[SystemCommand]:
        """Entries for the command palette while this screen is shown."""
        out = [
            SystemCommand(f"Colour by {MODE_TITLES[m]}", "Page map colouring", self._setter(m))
            for m in Mode
        ]
        out += [
            SystemCommand("Simulate compression", "Run the simulator", self.action_simulate),
            SystemCommand("Jump to page…", "Move the cursor to a page number", self.action_jump),
            SystemCommand("Filter pages…", "Dim pages that do not match", self.action_filter),
            SystemCommand("Rescan", "Read the file again", self.action_rescan),
        ]
        return out

    def _setter(self, mode: Mode) -> Callable[[], None]:
        return lambda: self.set_mode(mode)
