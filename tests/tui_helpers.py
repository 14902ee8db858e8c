"""Helpers for the TUI tests: a sparse copy of sample files as a data directory, waiting for the
app's workers, and widget text.

What a test asserts is what a widget shows: Static content rendered by Rich to plain text, the
line-API widgets' lines (page map, hex dump), DataTable cells.
"""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text
from textual.widget import Widget
from textual.widgets import DataTable, Static

from tests.conftest import sparse_copy
from tests.samples_manifest import sample

#: the files of the TUI tests' data directory: folder (schema) -> sample paths
DATADIR_FILES = {
    "mysql80": ["mysql80/mixed_zlib_lz4.ibd", "mysql80/attr_only_zlib.ibd", "mysql80/plain.ibd"],
    "mariadb": [
        "mariadb/p16k-plain.ibd",
        "mariadb/p16k-crc32_pc_lz4.ibd",
        "mariadb/p16k-rc_kbs8.ibd",
    ],
}


def make_datadir(root: Path) -> Path:
    """``root/<folder>/<file>``: sparse copies (git keeps no holes)."""
    for folder, files in DATADIR_FILES.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        for rel in files:
            sparse_copy(sample(rel), root / folder / Path(rel).name)
    return root


async def settle(pilot: Any, timeout: float = 120) -> None:
    """Let every worker finish and the messages they posted be handled, and again while those
    messages start more workers, until a round ends with none left (at most ``timeout`` s).

    Two rounds were not always enough: a scan batch's last message starts the next batch, and
    a browser's listing that came in two messages (its walk took over 0.1 s, as it can under
    load) makes two batches, the second started after the second round looked: the status
    still said "scanning" and rows had no compression yet."""
    deadline = time.monotonic() + timeout
    while True:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        running = [w for w in pilot.app.workers if not w.is_finished]
        if not running:
            return
        assert time.monotonic() < deadline, f"workers still running after {timeout} s: {running}"


def rich_text(renderable: Any, width: int = 200) -> str:
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def static_text(widget: Widget) -> str:
    assert isinstance(widget, Static), widget
    return rich_text(widget.content)


def lines_of(widget: Any, count: int | None = None) -> list[str]:
    """The text of a line-API widget's visible lines."""
    height = count if count is not None else widget.size.height
    return [widget.render_line(y).text for y in range(height)]


def table_rows(table: DataTable[Any]) -> list[list[str]]:
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


def assert_columns_fit(table: DataTable[Any]) -> None:
    """Every column is drawn as wide as its label and widest cell, now: called right after a
    table is filled, before the app is idle again (no await in between), it fails on a table
    whose widths wait for the idle measuring (a header drawn then kept the old widths; see
    ``ibdtool.tui.tables``). Widths measured here: a cell's text, its cells by Rich."""
    cells = [table.get_row_at(i) for i in range(table.row_count)]
    assert cells, "no rows drawn"
    for k, column in enumerate(table.ordered_columns):
        drawn = column.get_render_width(table) - 2 * table.cell_padding
        widest = max(
            [Text.from_markup(str(column.label)).cell_len]
            + [c.cell_len if isinstance(c, Text) else cell_len(str(c)) for c in
               (row[k] for row in cells)]
        )  # fmt: skip
        assert drawn >= widest, (str(column.label), drawn, widest)
