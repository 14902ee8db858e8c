"""The page map by index and by B-tree level: colourings, legend and the ``/`` filter.

The expected pages come from the file's bytes read here (FIL_PAGE_TYPE at 24, PAGE_LEVEL at 64,
PAGE_INDEX_ID at 66 of every page) and the index names from the ``.cfg`` file beside it, read
with :func:`ibdtool.parsers.cfg.parse_cfg` (the names were checked against the servers' catalogs in
tests/test_index_names.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ibdtool.parsers.cfg import parse_cfg
from ibdtool.tui.app import create_app
from ibdtool.tui.screens.tablespace import TablespaceScreen
from tests.conftest import sparse_copy
from tests.samples_manifest import sample
from tests.test_tui import SIZE, legend
from tests.tui_helpers import settle

PAGE = 16384


def _pages(path: Path) -> list[tuple[int, int, int]]:
    """(page, index id, level) of every INDEX page, from the bytes."""
    data = path.read_bytes()
    out = []
    for n in range(len(data) // PAGE):
        p = data[n * PAGE : (n + 1) * PAGE]
        if int.from_bytes(p[24:26], "big") == 17855:
            out.append((n, int.from_bytes(p[66:74], "big"), int.from_bytes(p[64:66], "big")))
    return out


def _matched(screen: TablespaceScreen) -> set[int]:
    match = screen._match
    assert match is not None
    return {n for n, b in enumerate(match) if b}


@pytest.mark.asyncio
async def test_filter_and_colour_by_index_name_id_and_level(tmp_path: Path) -> None:
    ibd = tmp_path / "plain.ibd"
    sparse_copy(sample("mysql57/plain.ibd"), ibd)
    shutil.copyfile(sample("mysql57/plain.cfg"), tmp_path / "plain.cfg")
    table = parse_cfg((tmp_path / "plain.cfg").read_bytes())
    ids = {ix.name: ix.index_id for ix in table.indexes}
    pages = _pages(ibd)
    app = create_app(ibd)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TablespaceScreen)
        for query, want in (
            ("idx_customer", {n for n, i, _ in pages if i == ids["idx_customer"]}),
            (str(ids["PRIMARY"]), {n for n, i, _ in pages if i == ids["PRIMARY"]}),
            ("level 1", {n for n, _, lv in pages if lv == 1}),
        ):
            await pilot.press("backslash", "slash", *query, "enter")
            assert want and _matched(screen) == want, query
        await pilot.press("6")
        text = legend(screen)
        for name, iid in ids.items():
            n = sum(1 for _, i, _ in pages if i == iid)
            assert f"{name} ({iid}) {n}" in text, text
        await pilot.press("7")
        leaves = sum(1 for *_, lv in pages if lv == 0)
        assert f"level 0 (leaf) {leaves}" in legend(screen)
