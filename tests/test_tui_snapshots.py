"""SVG snapshots of the main screens at 80×24 (pytest-textual-snapshot).

The app runs on sparse copies of sample files under a relative ``datadir`` (so the paths shown
do not depend on the temporary directory), after every worker finished. The simulation's CPU
columns are measured CPU time, so its snapshot runs with a clock that ticks a millisecond a
call (and so always times the same pages the same number of times).
Update with ``pytest tests/test_tui_snapshots.py --snapshot-update`` and look at the report.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import ibdtool.advise.cpu_cost
from ibdtool.tui.app import create_app
from tests.tui_helpers import make_datadir
from tests.tui_helpers import settle as settle_workers

SIZE = (80, 24)
FILE = "datadir/mysql80/mixed_zlib_lz4.ibd"


@pytest.fixture
def in_datadir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    make_datadir(tmp_path / "datadir")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _drawn(pilot: Any) -> str:
    """The screen as the snapshot would take it, without the ids each export makes anew."""
    return re.sub(r"terminal-[\w-]+", "", pilot.app.export_screenshot())


async def settle(pilot: Any) -> None:
    """Every worker done, its messages handled, and the screen drawn with what they changed
    (a modal pushed next shows the screen below as last drawn): drawn again until two frames
    0.1 s apart are the same (at most 5 s). Under a full suite's load one pause of 0.1 s left
    the simulation's table header at the widths it had before its rows came."""
    await settle_workers(pilot)
    await pilot.wait_for_scheduled_animations()
    await pilot.pause(0.1)
    last = _drawn(pilot)
    for _ in range(50):
        await pilot.pause(0.1)
        now = _drawn(pilot)
        if now == last:
            return
        last = now


def after(*keys: str) -> Any:
    async def run(pilot: Any) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)

    return run


def test_browser(snap_compare: Any, in_datadir: Path) -> None:
    assert snap_compare(create_app("datadir"), terminal_size=SIZE, run_before=after())


def test_tablespace_by_type(snap_compare: Any, in_datadir: Path) -> None:
    assert snap_compare(create_app(FILE), terminal_size=SIZE, run_before=after("right"))


def test_tablespace_by_compression(snap_compare: Any, in_datadir: Path) -> None:
    assert snap_compare(create_app(FILE), terminal_size=SIZE, run_before=after("2", "end"))


def test_tablespace_by_allocation(snap_compare: Any, in_datadir: Path) -> None:
    app = create_app("datadir/mariadb/p16k-plain.ibd")
    assert snap_compare(app, terminal_size=SIZE, run_before=after("4"))


def test_page_view(snap_compare: Any, in_datadir: Path) -> None:
    keys = ("right", "right", "right", "right", "enter")
    assert snap_compare(create_app(FILE), terminal_size=SIZE, run_before=after(*keys))


class TickingClock:
    """``time`` for ibdtool.advise.cpu_cost: every call is one millisecond later."""

    def __init__(self) -> None:
        self.now = 0

    def thread_time_ns(self) -> int:
        self.now += 1_000_000
        return self.now


def test_simulation(snap_compare: Any, in_datadir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ibdtool.advise.cpu_cost, "time", TickingClock())
    app = create_app("datadir/mysql80/plain.ibd")
    assert snap_compare(app, terminal_size=SIZE, run_before=after("s"))


def test_help(snap_compare: Any, in_datadir: Path) -> None:
    assert snap_compare(create_app(FILE), terminal_size=SIZE, run_before=after("question_mark"))
