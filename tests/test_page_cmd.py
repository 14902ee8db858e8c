"""``ibdtool page PATH N``: the bytes and fields of one page, and the TUI's save key.

Expected values are the file's own bytes read here: the raw output is the page's slice of the
file, every field of the JSON says an offset and size whose bytes, read here, give its value;
the decompressed page of a MariaDB lz4 page is the index root its ``.cfg`` names; a zip page
rebuilt holds the rows the server loaded.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ibdtool.parsers.cfg import parse_cfg
from ibdtool.parsers.compact_rec import iter_records
from ibdtool.tui.app import create_app
from ibdtool.tui.screens.page import PageScreen
from ibdtool.tui.widgets.hexdump import REGION_COLORS, HexDump
from tests.cli_runner import cli_env, ibdtool_command, run_ibdtool
from tests.conftest import sparse_copy
from tests.samples_manifest import manifest, sample
from tests.test_tui import SIZE, settle
from tests.tui_helpers import lines_of, static_text

PAGE = 16384


def _raw(*args: str) -> bytes:
    proc = subprocess.run(ibdtool_command(*args), capture_output=True, env=cli_env())
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("rel", ["mysql57/plain.ibd", "mariadb/p16k-pc_lz4.ibd"])
def test_raw_is_the_pages_slice_of_the_file(rel: str) -> None:
    data = sample(rel).read_bytes()
    for n in (0, 3, len(data) // PAGE - 1):
        assert _raw("page", str(sample(rel)), str(n), "--raw") == data[n * PAGE : (n + 1) * PAGE]


def test_logical_page_of_a_compressed_page_is_the_index_root_the_cfg_names() -> None:
    path = sample("mariadb/p16k-pc_lz4.ibd")
    page = _raw("page", str(path), "3", "--raw", "--logical")
    stored = _raw("page", str(path), "3", "--raw")
    assert len(page) == PAGE and page != stored and len(stored) == PAGE
    assert page[:24] == stored[:24]  # key version, page number, links and LSN stay in clear
    assert int.from_bytes(page[24:26], "big") == 17855  # INDEX once decompressed
    table = parse_cfg(path.with_suffix(".cfg").read_bytes())
    primary = table.indexes[0]
    assert primary.root == 3
    assert int.from_bytes(page[66:74], "big") == primary.index_id


def test_json_fields_point_at_their_bytes() -> None:
    import json

    path = sample("mysql57/plain.ibd")
    data = path.read_bytes()[3 * PAGE : 4 * PAGE]
    proc = run_ibdtool("page", str(path), "3", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert bytes.fromhex(doc["stored_hex"]) == data and doc["type"] == "INDEX"
    checked = 0
    for group in doc["stored"]["groups"] + doc["logical"]["groups"]:
        for f in group["fields"]:
            value = f["value"].split()[0]
            if f["size"] in (2, 4, 8) and value.isdigit():
                raw = int.from_bytes(data[f["offset"] : f["offset"] + f["size"]], "big")
                if f["name"] == "PAGE_N_HEAP":
                    raw &= 0x7FFF  # bit 15 is the compact flag, shown as a note
                assert int(value) == raw, f
                checked += 1
    assert checked >= 15  # FIL header, index header


def test_hex_and_text() -> None:
    path = sample("mysql57/plain.ibd")
    data = path.read_bytes()[:PAGE]
    hexed = run_ibdtool("page", str(path), "0", "--hex").stdout.splitlines()
    assert len(hexed) == PAGE // 16
    assert hexed[1].startswith("00000010: " + data[16:32].hex(" "))
    text = run_ibdtool("page", str(path), "0").stdout
    assert "FSP_HDR" in text and "FIL_PAGE_OFFSET" in text


@pytest.mark.parametrize("args", [["99999"], ["3", "--raw", "--json"]])
def test_bad_page_is_one_line_and_exit_2(args: list[str]) -> None:
    proc = run_ibdtool("page", str(sample("mysql57/plain.ibd")), *args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.asyncio
async def test_tui_saves_the_page_once_and_never_through_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ibd = tmp_path / "plain.ibd"
    sparse_copy(sample("mysql57/plain.ibd"), ibd)
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    os.symlink(victim, out / "plain.ibd.page4.bin")  # a planted link under page 4's name
    app = create_app(ibd)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("right", "right", "right", "enter")
        await settle(pilot)
        assert isinstance(app.screen, PageScreen)
        await pilot.press("w")
        saved = out / "plain.ibd.page3.bin"
        assert saved.read_bytes() == ibd.read_bytes()[3 * PAGE : 4 * PAGE]
        saved.write_bytes(b"mine")
        await pilot.press("w")  # exists: refused, not overwritten
        assert saved.read_bytes() == b"mine"
        await pilot.press("n")
        await settle(pilot)
        await pilot.press("w")
        assert victim.read_bytes() == b"keep"
        assert (out / "plain.ibd.page4.bin").is_symlink()


@pytest.mark.asyncio
async def test_tui_page_view_shows_a_zip_page_rebuilt(tmp_path: Path) -> None:
    """A ROW_FORMAT=COMPRESSED index page: the 8K image as stored beside the 16K page the
    server works on, rebuilt; its records are the rows the server loaded (manifest) and its
    real fill the bytes its header counts (read here from the file)."""
    rel = "mariadb/p16k-rc_kbs8.ibd"
    ibd = tmp_path / "z.ibd"
    sparse_copy(sample(rel), ibd)
    cfg = parse_cfg(sample(rel).with_suffix(".cfg").read_bytes())
    root = {ix.name: ix.root for ix in cfg.indexes}["idx_customer"]  # a leaf: one page
    stored = ibd.read_bytes()[root * 8192 : (root + 1) * 8192]
    heap_top, garbage = (int.from_bytes(stored[o : o + 2], "big") for o in (40, 46))
    app = create_app(ibd)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        page = app.screen
        assert isinstance(page, PageScreen)
        await pilot.press("colon", *str(root), "enter")
        await settle(pilot)
        hexdump = page.query_one(HexDump)
        (left, _), (right, regions) = hexdump.images
        assert left == stored
        titles = lines_of(hexdump, 1)[0]
        assert "stored (8192 bytes)" in titles and "decoded (16384 bytes)" in titles
        assert len(right) == 16384 and right[:38] == stored[:38]
        assert right[99:107] == b"infimum\x00" and right[112:120] == b"supremum"
        walked = list(iter_records(right))
        assert len(walked) == manifest()[rel]["rows"] and not any(h.deleted for h in walked)
        fields = " ".join(static_text(page.query_one("#fields-text")).split())
        assert f"zip fill records {heap_top - 120 - garbage:,} bytes" in fields
        assert "image " in fields and "of 8,192 bytes" in fields
        # the decoded page is laid out as a page: records up to the heap top, then free space
        colours = {c for c in regions[94:heap_top]}
        assert colours == {REGION_COLORS["records"]}
        assert set(regions[heap_top : heap_top + 16]) == {REGION_COLORS["free"]}


def test_logical_zip_page_is_rebuilt_and_a_damaged_one_says_why(tmp_path: Path) -> None:
    rel = "mariadb/p16k-rc_kbs8.ibd"
    root = {
        ix.name: ix.root for ix in parse_cfg(sample(rel).with_suffix(".cfg").read_bytes()).indexes
    }
    n = root["idx_customer"]
    page = _raw("page", str(sample(rel)), str(n), "--raw", "--logical")
    assert len(page) == PAGE and len(list(iter_records(page))) == manifest()[rel]["rows"]
    data = bytearray(sample(rel).read_bytes())
    data[n * 8192 + 200 : n * 8192 + 260] = bytes(60)  # inside the zlib stream
    bad = tmp_path / "bad.ibd"
    bad.write_bytes(bytes(data))
    import json

    proc = run_ibdtool("page", str(bad), str(n), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["rebuild_problem"].startswith("cannot rebuild the compressed page: ")
    assert doc["logical_hex"] is None and doc["zip_fill"] is None  # the stored image only
    assert doc["valid"] is False
