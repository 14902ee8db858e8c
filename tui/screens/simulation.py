"""The simulation view: what each page-compression algorithm would allocate for this file.

Runs :func:`ibdtool.advise.simulate.simulate_path` in a thread worker for every algorithm and every
block size at once (recompressing a page costs the same whatever the block size), so ``b``/``B``
only redraw. The table has one row per algorithm for the chosen block size with a bar of the
predicted allocated size, beside today's allocation and the logical size on the same scale;
ROW_FORMAT=COMPRESSED estimates and the recommendations follow. The CPU column shows median
µs per page; the line above the table gives the highlighted algorithm's spread over the
repetitions (:mod:`ibdtool.advise.cpu_cost`). ``x`` cancels between pages.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, ProgressBar, Static
from textual.worker import Worker, get_current_worker

from ibdtool.advise import (
    DEFAULT_SCENARIOS,
    BlockSpec,
    SimResult,
    parse_block_sizes,
    recommendations,
    simulate_path,
)
from ibdtool.errors import IbdtoolError
from ibdtool.present import (
    ci_text,
    cost_note,
    cost_text,
    current_state_text,
    drop_note,
    human_bytes,
    rebuild_text,
    recommendation_text,
    scenario_label,
    seconds_text,
    shown,
    simulation_heading,
    us_text,
)
from ibdtool.tui.commandlog import Cancelled
from ibdtool.tui.messages import SimulationFailed, SimulationFinished, SimulationProgress
from ibdtool.tui.shown import safe
from ibdtool.tui.tables import fill_table
from ibdtool.tui.widgets.barchart import bar

if TYPE_CHECKING:
    from ibdtool.tui.appstate import AppState

PROGRESS_INTERVAL = 0.1
BAR_MIN, BAR_MAX = 8, 60


#: the simulation table's columns, and the ROW_FORMAT=COMPRESSED table's
SIM_COLUMNS = ("algorithm", "predicted", "95% CI", "saving", "size", "µs c/d", "DROP")
ZIP_COLUMNS = ("KEY_BLOCK_SIZE", "predicted", "95% CI", "splits", "size")


class SimulationScreen(Screen[None]):
    """The simulate table and bar chart for one tablespace."""

    HELP = """\
## Simulation

Every page is decompressed if need be, recompressed the way each server would, and
the blocks a filesystem allocates for the result are summed (a seeded sample with a
95% interval on large files). Bars share one scale with today's allocation.
CPU µs per page (compress/decompress) are medians of repeated runs on the
same pages; the line above the table shows the highlighted algorithm's
spread, and the advice says whether its cheapest is clear or within noise.

By default the file simulated is the one a conversion's rebuild writes (records repacked
as the bulk load packs them, the history's free space and garbage gone), with what the
rebuild alone frees above the table; `a` switches to the pages as they are (what
punching holes alone would do) and back.
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("b", "block(1)", "Block size"),
        Binding("B", "block(-1)", "Previous block size", show=False),
        Binding("x", "cancel", "Cancel"),
        Binding("r", "run", "Run again"),
        Binding("a", "as_is", "As is / rebuilt"),
    ]

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)
        self.result: SimResult | None = None
        self.blocks: list[BlockSpec] = []
        self.block_index = 0
        self.failed: str | None = None
        self._worker: Worker[None] | None = None
        #: simulate the pages as they are (``simulate --as-is``), not the rebuilt file
        self.as_is = False

    @property
    def ibd_app(self) -> AppState:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with VerticalScroll(id="sim-body"):
            yield Static("", id="sim-info")
            yield ProgressBar(id="sim-progress", show_eta=True)
            yield Static("", id="sim-status")
            yield Static("", id="sim-block")
            yield Static("", id="sim-cost")
            yield DataTable(id="sim-table", cursor_type="row", zebra_stripes=True)
            yield DataTable(id="zip-table", cursor_type="row")
            yield Static("", id="sim-notes")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = shown(f"{self.path} · simulate")
        table = self.query_one("#sim-table", DataTable)
        table.add_columns(*SIM_COLUMNS)
        zt = self.query_one("#zip-table", DataTable)
        zt.add_columns(*ZIP_COLUMNS)
        zt.display = False
        table.focus()
        self.action_run()

    # --- the worker ------------------------------------------------------------------------

    def action_run(self) -> None:
        if self._worker is not None and not self._worker.is_finished:
            return
        self.failed = None
        self.query_one("#sim-progress", ProgressBar).display = True
        self.query_one("#sim-progress", ProgressBar).update(total=None, progress=0)
        self.query_one("#sim-status", Static).update("simulating… (x cancels)")
        self._worker = self.run_simulation()

    @work(thread=True, exclusive=True, group="simulate", exit_on_error=False)
    def run_simulation(self) -> None:
        worker = get_current_worker()
        last = 0.0

        def progress(done: int, total: int) -> None:
            nonlocal last
            if worker.is_cancelled:
                raise Cancelled
            now = time.monotonic()
            if now - last >= PROGRESS_INTERVAL or done == total:
                last = now
                self.post_message(SimulationProgress(done, total))

        blocks = parse_block_sizes(["all"])
        text = (
            f"simulate {len(DEFAULT_SCENARIOS)} algorithms × {len(blocks)} block sizes "
            f"on {self.path}" + (" as it is" if self.as_is else " as rebuilt")
        )
        try:
            with self.ibd_app.command_log.timed("file", text) as run:
                result = simulate_path(
                    self.path,
                    DEFAULT_SCENARIOS,
                    blocks,
                    progress=progress,
                    keyring=self.ibd_app.keyring,
                    as_rebuilt=not self.as_is,
                )
                run.detail = (
                    "full scan"
                    if result.full
                    else f"{result.pages_sampled:,} of {result.pages:,} pages sampled"
                )
            self.post_message(SimulationFinished(result))
        except Cancelled:
            self.post_message(SimulationFailed("cancelled"))
        except IbdtoolError as exc:
            self.post_message(SimulationFailed(exc.message))
        except Exception as exc:
            self.post_message(SimulationFailed(f"unexpected {type(exc).__name__}: {exc}"))

    def on_simulation_progress(self, message: SimulationProgress) -> None:
        self.query_one("#sim-progress", ProgressBar).update(
            total=message.total, progress=message.done
        )
        self.query_one("#sim-status", Static).update(
            f"simulating… {message.done:,} of {message.total:,} pages (x cancels)"
        )

    def on_simulation_failed(self, message: SimulationFailed) -> None:
        self.failed = message.message
        self.query_one("#sim-progress", ProgressBar).display = False
        style = "yellow" if message.message == "cancelled" else "bold red"
        self.query_one("#sim-status", Static).update(
            safe(
                message.message + ("  (r runs it again)" if message.message == "cancelled" else ""),
                style=style,
            )
        )

    def on_simulation_finished(self, message: SimulationFinished) -> None:
        r = message.result
        self.result = r
        self.query_one("#sim-progress", ProgressBar).display = False
        self.query_one("#sim-status", Static).update("")
        seen: dict[BlockSpec, None] = {}
        for x in r.results:
            seen.setdefault(x.block)
        self.blocks = list(seen)
        own = BlockSpec(r.fs_block_size)
        self.block_index = self.blocks.index(own) if own in self.blocks else 0
        info = safe(simulation_heading(r))
        rebuilt = rebuild_text(r)  # the rebuild alone: the bloat of the table's history
        if rebuilt:
            info.append("\n" + rebuilt)
        current = current_state_text(r)
        if current:
            info.append("\n" + current)
        self.query_one("#sim-info", Static).update(info)
        self._draw()

    # --- drawing ---------------------------------------------------------------------------

    def _bar_width(self, cpu_width: int) -> int:
        # the columns left of the bar and every cell's padding take 57 cells, the screen's
        # padding and scrollbar 3, then the CPU column and the DROP time (8 and its padding)
        return max(BAR_MIN, min(BAR_MAX, self.size.width - 70 - max(6, cpu_width)))

    def _draw(self) -> None:
        r = self.result
        if r is None or not self.blocks:
            return
        block = self.blocks[self.block_index]
        labels = "  ".join(
            f"[{b.label}]" if i == self.block_index else b.label for i, b in enumerate(self.blocks)
        )
        self.query_one("#sim-block", Static).update(
            Text.assemble(("block size ", "bold"), (block.label, "bold cyan"), f"   {labels}")
        )
        rows = [x for x in r.results if x.block == block]
        scale = max([r.logical_size, r.allocated_size, *(x.predicted for x in rows)])
        cpus = [
            "-"
            if x.compress_us is None
            else f"{us_text(x.compress_us)}/{us_text(x.decompress_us or 0)}"
            for x in rows
        ]
        width = self._bar_width(max((len(c) for c in cpus), default=1))
        table = self.query_one("#sim-table", DataTable)
        cells_of: list[tuple[str, tuple[str | Text, ...]]] = []
        for key, label, style, size, color in (
            ("today", "today (allocated)", "bold", r.allocated_size, "#b0b0b0"),
            ("logical", "logical size", "dim", r.logical_size, "#5c6370"),
        ):
            now = r.drop_now if key == "today" else None
            drop = "" if now is None else seconds_text(now.seconds)
            cells = (human_bytes(size), "", "", bar(size, scale, width, color), "", drop)
            cells_of.append((key, (safe(label, style=style), *cells)))
        best = min(rows, key=lambda x: x.predicted) if rows else None
        for x, cpu in zip(rows, cpus, strict=True):
            saving = safe(f"{x.saving_pct:.1f}%", style="green" if x.saving_pct > 0 else "red")
            color = "#98c379" if x is best else "#5f9ee8"
            if x.scenario.server == "what-if":
                color = "#8787af"
            cells_of.append(
                (
                    x.scenario.label,
                    (
                        scenario_label(x.scenario),
                        human_bytes(x.predicted),
                        ci_text(x.ci95, x.predicted),
                        saving,
                        bar(x.predicted, scale, width, color),
                        cpu,
                        "" if x.drop_cost is None else seconds_text(x.drop_cost.seconds),
                    ),
                )
            )
        fill_table(table, SIM_COLUMNS, cells_of)
        zt = self.query_one("#zip-table", DataTable)
        zt.display = bool(r.row_compressed)
        zip_cells: list[tuple[str, tuple[str | Text, ...]]] = [
            (
                str(z.key_block_size),
                (
                    f"{z.key_block_size // 1024}K",
                    human_bytes(z.predicted_size),
                    ci_text(z.ci95, z.predicted_size),
                    f"{100 * z.failure_rate:.0f}%",
                    bar(z.predicted_size, scale, width, "#c678dd"),
                ),
            )
            for z in r.row_compressed
        ]
        fill_table(zt, ZIP_COLUMNS, zip_cells)
        notes = Text()
        for rec in recommendations(r):
            if rec.block == block:
                notes.append_text(Text.assemble(*recommendation_text(rec, r.page_size)))
                notes.append("\n")
        if any(x.scenario.server == "what-if" for x in rows):
            notes.append("zstd rows are a what-if, not an InnoDB option\n", style="dim")
        for note in r.notes:
            notes.append(shown(note) + "\n", style="yellow")
        drop_line = drop_note(r)
        if drop_line:
            notes.append(drop_line + "\n", style="dim")
        self.query_one("#sim-notes", Static).update(notes)
        highlighted: str | None = None
        if table.is_valid_coordinate(table.cursor_coordinate):
            highlighted = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        self._show_cost(highlighted)

    def _show_cost(self, key: str | None) -> None:
        """The highlighted algorithm's CPU per page with its spread (``key``: its row's, the
        scenario label), or how the figures were measured."""
        r = self.result
        line = Text()
        if r is not None and self.blocks:
            block = self.blocks[self.block_index]
            rows = [x for x in r.results if x.block == block and x.scenario.label == key]
            x = rows[0] if rows else None
            if x is not None and x.compress is not None:
                line.append(scenario_label(x.scenario), style="bold")
                line.append(
                    f" µs/page: compress {cost_text(x.compress)}, "
                    f"decompress {cost_text(x.decompress)}"
                )
            else:
                line.append(cost_note(r) or "", style="dim")
        self.query_one("#sim-cost", Static).update(line)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "sim-table":
            self._show_cost(event.row_key.value)

    def on_resize(self) -> None:
        self._draw()

    # --- actions ---------------------------------------------------------------------------

    def action_block(self, step: int) -> None:
        if self.blocks:
            self.block_index = (self.block_index + step) % len(self.blocks)
            self._draw()

    def action_cancel(self) -> None:
        if self._worker is not None and not self._worker.is_finished:
            self._worker.cancel()

    def action_as_is(self) -> None:
        """Switch between the file as rebuilt and as it is, and simulate again."""
        if self._worker is not None and not self._worker.is_finished:
            return
        self.as_is = not self.as_is
        self.action_run()

    def commands(self) -> list[SystemCommand]:
        return [
            SystemCommand(
                "Next block size",
                "Show another filesystem block size",
                lambda: self.action_block(1),
            ),
            SystemCommand("Cancel simulation", "Stop the running simulation", self.action_cancel),
            SystemCommand("Run simulation again", "Simulate again", self.action_run),
            SystemCommand(
                "Simulate as is / as rebuilt",
                "The pages as they are (punching alone), or the file the rebuild writes",
                self.action_as_is,
            ),
        ]
