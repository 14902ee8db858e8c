"""``ibdtool tui --keyring``: the page map of an encrypted corpus table, with and without keys.

Expected values: CATALOG.md's tally of the file (4 ENCRYPTED pages) and the SDI page the
decrypted file must then show (a MySQL 8 table always has one).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ibdtool.parsers.keyring import read_keyring
from ibdtool.tui.app import create_app
from ibdtool.tui.screens.tablespace import TablespaceScreen
from tests.catalog import load_catalog
from tests.conftest import corpus_file
from tests.tui_helpers import settle, static_text

REL = "percona-parser/tests/encrypted_test.ibd"
KEYRING = "percona-parser/tests/keyring_test"


async def _legend_and_summary(path: Path, with_key: bool) -> tuple[str, str]:
    keyring = read_keyring(corpus_file(KEYRING)) if with_key else None
    app = create_app(path, keyring=keyring)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TablespaceScreen)
        legend = " ".join(static_text(screen.query_one("#legend")).split())
        summary = " ".join(static_text(screen.query_one("#summary-text")).split())
        return legend, summary


@pytest.mark.asyncio
async def test_page_map_shows_real_types_only_with_the_key(tmp_path: Path) -> None:
    path = Path(shutil.copy(corpus_file(REL), tmp_path / "t.ibd"))
    encrypted = {e.rel: e for e in load_catalog()}[REL].page_types["ENCRYPTED"]
    legend, summary = await _legend_and_summary(path, with_key=False)
    assert f"ENCRYPTED {encrypted} " in legend + " ", legend
    assert "no key" in summary
    legend, summary = await _legend_and_summary(path, with_key=True)
    assert "ENCRYPTED" not in legend and "SDI 1 " in legend + " ", legend
    assert f"{encrypted} decrypted" in summary, summary
