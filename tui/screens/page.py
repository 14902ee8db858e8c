"""The page view: one page's verdict, its decoded fields and hex dumps of both images.

A thread worker reads the page with :func:`ibdtool.tablespace.page_dump.dump_page` (the stored
bytes, the decoded page — a ROW_FORMAT=COMPRESSED index page rebuilt to the server's uncompressed
frame — the engine's :class:`~ibdtool.parsers.page.PageInfo` and the field layouts of
:mod:`ibdtool.parsers.pages`), as ``ibdtool page`` does; nothing here parses bytes itself.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Container, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from ibdtool.errors import IbdtoolError
from ibdtool.parsers.page import PageInfo
from ibdtool.parsers.pages import FieldGroup
from ibdtool.parsers.space import SpaceFormat
from ibdtool.parsers.zip_page import ZipFill
from ibdtool.present import human_bytes, shown
from ibdtool.tablespace import (
    PageDump,
    dump_name,
    dump_page,
    save_page,
    unpunched_bytes,
    zip_fill_text,
)
from ibdtool.tui.messages import PageLoaded, ScanFailed
from ibdtool.tui.pagemodel import PageMapModel
from ibdtool.tui.screens.prompt import ask_page
from ibdtool.tui.shown import safe
from ibdtool.tui.widgets.hexdump import HexDump, region_legend

if TYPE_CHECKING:
    from ibdtool.tui.appstate import AppState


class PageScreen(Screen[None]):
    """Fields on one side, hex dumps on the other (stacked on narrow terminals)."""

    HELP = """\
## Page

The verdict and the structures of one page as the engine decodes them, and the
stored image beside the decoded (decompressed) page, coloured by region.
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n,right", "step(1)", "Next page"),
        Binding("p,left", "step(-1)", "Previous page"),
        Binding("colon", "jump", "Jump to page", show=False),
        Binding("f", "focus_fields", "Fields", show=False),
        Binding("x", "focus_hex", "Hex", show=False),
        Binding("w", "save", "Save bytes"),
        Binding("y", "copy_hex", "Copy hex", show=False),
    ]

    def __init__(self, path: str | Path, page: int, model: PageMapModel) -> None:
        super().__init__()
        self.path = Path(path)
        self.page = page
        self.model = model
        self.n_pages = model.n_pages
        self.loaded: PageDump | None = None

    @property
    def ibd_app(self) -> AppState:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield Static("", id="page-title")
        with Container(id="page-body"):
            with VerticalScroll(id="fields"):
                yield Static("reading…", id="fields-text")
            with Vertical(id="hex-pane"):
                yield Static("", id="hex-legend")
                yield HexDump(id="hexdump")
        yield Footer()

    def on_mount(self) -> None:
        self.load(self.page)

    # --- the read worker -------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="page", exit_on_error=False)
    def load(self, page: int) -> None:
        log = self.ibd_app.command_log
        try:
            with log.timed("file", f"pread page {page} of {self.path}") as run:
                d = dump_page(self.path, page, self.ibd_app.keyring)
                run.detail = f"{len(d.stored)} bytes, {d.info.type_name}"
            self.post_message(PageLoaded(d))
        except IbdtoolError as exc:
            self.post_message(ScanFailed(exc.message))
        except Exception as exc:
            self.post_message(ScanFailed(f"unexpected {type(exc).__name__}: {exc}"))

    def on_scan_failed(self, message: ScanFailed) -> None:
        self.query_one("#fields-text", Static).update(safe(message.message, style="bold red"))
        self.notify(shown(message.message), severity="error", markup=False)

    def on_page_loaded(self, message: PageLoaded) -> None:
        self.loaded = message.dump
        d = message.dump
        info = d.info
        self.page = info.page_no
        self.sub_title = shown(f"{self.path} · page {info.page_no}")
        self.query_one("#page-title", Static).update(self._title(info, d.fmt))
        groups = [self._verdict(info, d.fmt, d.rebuild_problem, d.zip_fill)]
        groups += [_group(g) for g in d.stored_layout.groups]
        groups += [_group(g) for g in d.logical_layout.groups]
        self.query_one("#fields-text", Static).update(Group(*groups))
        self.query_one("#fields", VerticalScroll).scroll_home(animate=False)
        names = {r.name for r in d.stored_layout.regions + d.logical_layout.regions}
        self.query_one("#hex-legend", Static).update(region_legend(names))
        self.query_one(HexDump).show(
            d.stored,
            d.stored_layout.regions,
            d.logical,
            d.logical_layout.regions,
        )

    # --- display ---------------------------------------------------------------------------

    def _title(self, info: PageInfo, fmt: SpaceFormat) -> Text:
        text = Text()
        text.append(f"page {info.page_no:,} of {self.n_pages:,}  ", style="bold")
        text.append(info.type_name, style="bold cyan")
        if info.is_compressed:
            text.append(f"  {info.compression.value} {human_bytes(info.stored_size)} stored")
        if info.checksum_valid is False:
            text.append("  INVALID", style="bold red")
        elif info.checksum_valid is None:
            text.append("  unverifiable", style="yellow")
        return text

    def _verdict(
        self,
        info: PageInfo,
        fmt: SpaceFormat,
        rebuild_problem: str | None = None,
        zip_fill: ZipFill | None = None,
    ) -> RenderableType:
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="cyan", no_wrap=True)
        grid.add_column()
        grid.add_row("real type", f"{info.type_name} ({info.real_type})")
        grid.add_row("stored type", str(info.stored_type))
        if info.empty:
            grid.add_row("content", "all zero (never written)")
        comp = info.compression.value
        if info.is_compressed:
            comp += f", payload {info.compressed_size} bytes, image {info.stored_size} bytes"
        grid.add_row("compression", comp)
        if info.zip_stream is not None:
            grid.add_row("zlib stream", f"{info.zip_stream} bytes")
        verdict = Text()
        if info.checksum_valid is None:
            verdict.append("unverifiable", style="yellow")
        elif info.checksum_valid:
            verdict.append("valid", style="green")
        else:
            verdict.append("INVALID", style="bold red")
        verdict.append(f" ({info.checksum_algo.value})")
        if info.torn:
            verdict.append(" torn", style="red")
        grid.add_row("checksum", verdict)
        if info.problem:
            grid.add_row("problem", safe(info.problem, style="red"))
        if rebuild_problem:
            grid.add_row("decoded", safe(rebuild_problem, style="red"))
        grid.add_row("LSN", f"{info.lsn:,}")
        if info.page_no < self.model.n_pages:
            alloc = self.model.allocated_at(info.page_no)
            text = f"{alloc:,} of {fmt.physical_size:,} bytes"
            extra = unpunched_bytes(info, alloc, self.model.fs_block_size)
            grid.add_row(
                "allocated",
                safe(text).append(
                    f" ({extra:,} more than the image needs)" if extra else "",
                    style="yellow",
                ),
            )
        if info.index is not None:
            ix = info.index
            grid.add_row(
                "index",
                f"id {ix.index_id}, level {ix.level}, {ix.n_recs} records, "
                f"fill {100 * ix.fill:.0f}%",
            )
        if zip_fill is not None:
            grid.add_row("zip fill", zip_fill_text(zip_fill))
        return Group(Text("Verdict", style="bold underline"), grid, Text())

    # --- actions ---------------------------------------------------------------------------

    def action_step(self, delta: int) -> None:
        target = self.page + delta
        if 0 <= target < self.n_pages:
            self.page = target
            self.load(target)

    def action_jump(self) -> None:
        def go(page: int) -> None:
            self.page = page
            self.load(page)

        ask_page(self, self.n_pages, go)

    def action_save(self) -> None:
        """The stored bytes to ``<file>.page<N>.bin`` in the current directory (a new file)."""
        if self.loaded is None:
            return
        name = dump_name(str(self.path), self.loaded.info.page_no)
        log = self.ibd_app.command_log
        try:
            with log.timed("file", f"create {name} (O_EXCL|O_NOFOLLOW) in {os.getcwd()}"):
                saved = save_page(self.loaded.stored, name, os.getcwd())
        except (IbdtoolError, OSError) as exc:
            why = exc.message if isinstance(exc, IbdtoolError) else exc.strerror or str(exc)
            self.notify(shown(f"{name}: {why}"), title="not saved", severity="error", markup=False)
            return
        self.notify(
            shown(f"{len(self.loaded.stored)} bytes written to {saved}"),
            title="saved",
            markup=False,
        )

    def action_copy_hex(self) -> None:
        """The stored bytes as hex to the terminal's clipboard (OSC 52)."""
        if self.loaded is None:
            return
        self.app.copy_to_clipboard(self.loaded.stored.hex())
        self.notify(f"page {self.loaded.info.page_no}: {len(self.loaded.stored)} bytes as hex")

    def action_focus_fields(self) -> None:
        self.query_one("#fields").focus()

    def action_focus_hex(self) -> None:
        self.query_one(HexDump).focus()

    def commands(self) -> list[SystemCommand]:
        return [
            SystemCommand("Next page", "Show the next page", lambda: self.action_step(1)),
            SystemCommand("Previous page", "Show the previous page", lambda: self.action_step(-1)),
            SystemCommand("Jump to page…", "Show another page", self.action_jump),
        ]


def _group(g: FieldGroup) -> RenderableType:
    parts: list[RenderableType] = [safe(g.title, style="bold underline")]
    if g.fields:
        grid = Table.grid(padding=(0, 1))
        grid.add_column(justify="right", style="dim", no_wrap=True)
        grid.add_column(style="cyan", no_wrap=True)
        grid.add_column()
        for f in g.fields:
            where = f"{f.offset}" if f.size else ""
            value = safe(f.value)
            if f.note:
                value.append(shown(f"  {f.note}"), style="dim")
            grid.add_row(where, f.name, value)
        parts.append(grid)
    for line in g.lines:
        parts.append(safe(line))
    parts.append(Text())
    return Group(*parts)
