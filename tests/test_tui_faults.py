"""The TUI under faults: NO_COLOR, files that are not tablespaces, and a crash.

Driven with Textual's pilot over files made here (a sample copied sparsely, an all-zero file,
a real page 0 followed by written zeros), and for the crash through the real ``ibdtool tui``
command in a subprocess on Textual's headless driver: exit status and stderr are what a script
sees.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ibdtool.tablespace.checksum import check_file
from ibdtool.tui.app import create_app
from ibdtool.tui.screens.page import PageScreen
from ibdtool.tui.screens.simulation import SimulationScreen
from ibdtool.tui.screens.tablespace import TablespaceScreen
from tests.conftest import corpus_file, sparse_copy
from tests.samples_manifest import sample
from tests.test_bad_input import ACTOR, PAGE, REPO
from tests.test_tui import SIZE, open_file, settle
from tests.tui_helpers import static_text


@pytest.mark.asyncio
async def test_no_color_opens_the_page_map_page_and_simulation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NO_COLOR makes Textual strip colours from every segment; a padding segment without a
    style crashed the app as soon as a tablespace was drawn."""
    path = sparse_copy(sample("mariadb/p16k-crc32_pc_lz4.ibd"), tmp_path / "t.ibd")
    monkeypatch.setenv("NO_COLOR", "1")
    app = create_app(path)
    assert app.no_color
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TablespaceScreen) and screen.result is not None
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, PageScreen)
        await pilot.press("escape", "s")
        await settle(pilot)
        assert isinstance(app.screen, SimulationScreen) and app.screen.result is not None
    assert app.crash is None


def _folder_with(tmp_path: Path, name: str, data: bytes) -> Path:
    folder = tmp_path / "db"
    folder.mkdir()
    (folder / name).write_bytes(data)
    return folder


@pytest.mark.asyncio
async def test_simulate_key_on_an_all_zero_file_says_it_is_not_a_tablespace(
    tmp_path: Path,
) -> None:
    folder = _folder_with(tmp_path, "never_flushed.ibd", bytes(64 * PAGE))
    app = create_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("right")  # into the folder
        screen = await open_file(pilot, tmp_path, "db", "never_flushed.ibd")
        assert screen.failed is not None and "page 0 is all zeros" in screen.failed
        await pilot.press("s")
        await settle(pilot)
        sim = app.screen
        assert isinstance(sim, SimulationScreen)
        assert sim.failed is not None and "page 0 is all zeros" in sim.failed
        assert "page 0 is all zeros" in static_text(sim.query_one("#sim-status"))
    assert folder.is_dir()


@pytest.mark.asyncio
async def test_simulate_key_with_nothing_to_time_shows_a_note(tmp_path: Path) -> None:
    """Page 0 of a real tablespace then written zeros: every sampled page is empty, so no
    algorithm was timed; the advice died on ``min()`` of nothing."""
    data = corpus_file(ACTOR).read_bytes()[:PAGE] + bytes(63 * PAGE)
    path = _folder_with(tmp_path, "header_only.ibd", data) / "header_only.ibd"
    app = create_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        sim = app.screen
        assert isinstance(sim, SimulationScreen) and sim.failed is None
        assert "no page with data was simulated" in static_text(sim.query_one("#sim-notes"))


CRASHING_TUI = textwrap.dedent(
    """
    import sys
    from ibdtool.tui.screens.tablespace import TablespaceScreen

    def on_mount(self):
        raise ValueError("min() arg is an empty sequence")

    TablespaceScreen.on_mount = on_mount  # a bug planted where a real one was
    from ibdtool.cli import main
    sys.argv[0] = "ibdtool"
    main()
    """
)


def test_a_crash_is_one_line_and_a_failing_exit_status() -> None:
    """A bug inside the app used to leave a screenful of traceback and exit status 0."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(
        HOME="/tmp",
        PYTHONPATH=str(REPO),
        TEXTUAL_DRIVER="textual.drivers.headless_driver:HeadlessDriver",
    )
    path = corpus_file(ACTOR)
    proc = subprocess.run(
        [sys.executable, "-c", CRASHING_TUI, "tui", str(path)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode != 0, proc
    assert proc.stderr.splitlines() == [
        "ibdtool: error: the terminal UI crashed: ValueError: min() arg is an empty sequence"
    ], proc.stderr


@pytest.mark.asyncio
async def test_terabyte_sparse_file_gets_a_summary_without_a_page_map(tmp_path: Path) -> None:
    """actor.ibd stretched to 1 TiB of holes: 67 million pages. A page map of them needed
    ~870 MB and a Python call per page; the summary counts the holes run by run instead."""
    path = tmp_path / "actor.ibd"
    path.write_bytes(corpus_file(ACTOR).read_bytes())
    os.truncate(path, 1 << 40)
    n_pages = path.stat().st_size // PAGE
    app = create_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TablespaceScreen)
        assert screen.failed is None and screen.result is not None
        assert screen.model is None
        assert screen.result.pages == n_pages
        small = check_file(str(corpus_file(ACTOR)), jobs=1)  # the same 8 pages, dense
        assert screen.result.checksum_empty == small.empty + n_pages - 8
        assert screen.result.checksum_valid == small.valid
        info = " ".join(static_text(screen.query_one("#cursor-info")).split())
        assert f"no page map: {n_pages:,} pages" in info
