"""The browser over a directory of thousands of tablespaces (hard links of real samples,
:mod:`tests.fleet_tree`), driven with Textual's pilot: the listing fills in batches while the
walk goes on, keys answer while files are listed and scanned, and at the end every file is
shown once in the order a one-shot redraw gives (the second computation: ``rebuild()``).

Not timed (the machine is shared): the first screen's time and the scan rate are printed for
the record; ``bench/bench_tui.py`` holds the timed rows.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable

from ibdtool.tui.app import create_app
from ibdtool.tui.screens.browser import BrowserScreen
from tests.fleet_tree import build_fleet_tree
from tests.tui_helpers import static_text

SCHEMAS, PER_SCHEMA = 20, 250
SIZE = (120, 40)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_fleet_tree(tmp_path_factory.mktemp("tui-many") / "d", SCHEMAS, PER_SCHEMA)


def keys(table: DataTable[Any]) -> list[str]:
    return [str(k.value) for k in table.rows]


@pytest.mark.asyncio
async def test_thousands_of_files_fill_in_while_the_keys_answer(tree: Path) -> None:
    total = SCHEMAS * PER_SCHEMA
    app = create_app(tree)
    async with app.run_test(size=SIZE) as pilot:
        start = time.monotonic()
        screen = app.screen
        assert isinstance(screen, BrowserScreen)
        table = screen.query_one(DataTable)
        while not table.row_count:
            await pilot.pause(0.02)
        first = time.monotonic() - start
        # the first rows are up before the last file is scanned, and the keys answer then
        assert screen.scanned < total
        await pilot.press("down", "down", "down")
        assert table.cursor_row == 3
        while screen.scanned < 40:
            await pilot.pause(0.05)
        # read in the same tick as the count (no await between): the status of a scan still
        # going on, whatever the machine's speed
        assert screen.scanned < total
        status = static_text(screen.query_one("#browser-status"))
        assert "files/s" in status and "scanning" in status
        await pilot.press("s")  # sort by logical size mid-scan: redrawn, scan goes on
        assert screen.sort_column == "logical"
        await pilot.press("s", "s", "s", "s", "s")  # back to name
        assert screen.sort_column == "name"
        while screen.listing:
            await pilot.pause(0.05)
        await pilot.pause(0.2)
        listed = keys(table)
        files = [k for k in listed if not k.startswith("folder:")]
        assert len(files) == len(set(files)) == total
        screen.rebuild()  # the same table drawn in one piece
        assert keys(table) == listed
        print(
            f"\nfirst rows after {first:.2f} s; {screen.scanned} of {total} files scanned "
            f"at {screen.scan_rate() or 0:,.0f} files/s"
        )
        app.exit()
