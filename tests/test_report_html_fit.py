"""The HTML report fits a 1920-pixel window, and ``--map`` draws a readable map of a big file.

Oracle: headless Chromium at 1920 × 1080. The page is a datadir whose names are as long as
MySQL allows (64-character table names in a long schema name, FTS-like hex names, a partition),
reported with ``--map --simulate``; a probe script added to a copy of the page measures, after
layout, the document's scroll width against the window's client width and each table's right
edge, and each page map's box. A screenshot taken the same way is the window's width. The big
file's map (6,400 pages, sampled to 512 cells) must be a block at least 48 px tall and at most
800 px wide, not a strip a few pixels high.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tests.cli_runner import run_ibdtool
from tests.conftest import corpus_file

WIDTH, HEIGHT = 1920, 1080
PROBE = """<script>window.addEventListener('load', () => {
  const d = document.documentElement;
  const box = e => { const r = e.getBoundingClientRect(); return [r.width, r.height, r.right]; };
  document.body.setAttribute('data-probe', JSON.stringify({
    scroll: d.scrollWidth, client: d.clientWidth,
    tables: [...document.querySelectorAll('table')].map(box),
    maps: [...document.querySelectorAll('svg.pagemap')].map(box)}));
});</script>"""


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    browser = shutil.which("chromium")
    if browser is None:
        pytest.fail("chromium is needed (Debian package chromium; scripts/setup.sh --test)")
    return subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", f"--user-data-dir={tmp_path / 'chromium'}",
         f"--window-size={WIDTH},{HEIGHT}", *args],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip


def _datadir(tmp_path: Path) -> Path:
    schema = tmp_path / "dd" / "shop_with_a_rather_long_schema_name_for_testing"
    schema.mkdir(parents=True)
    long = "_and_a_table_name_padded_to_sixty_four_chars"
    for name in ("p16k-pc_zlib-1000rows", "p16k-plain-1000rows", "p16k-rc_kbs8-1000rows"):
        table = f"fts_0000000000000451_00000000000000f1_{name}{long}"[:64]
        shutil.copyfile(corpus_file(f"mariadb-10.11/{name}.ibd"), schema / f"{table}.ibd")
    big = schema / "events#P#p2023_a_partition_with_a_long_name.ibd"
    shutil.copyfile(corpus_file("mysql-made/mysql8015-t_plain_1k.ibd"), big)
    with open(big, "r+b") as fh:  # 6,400 pages: the map samples 512 cells of many pages
        fh.truncate(6400 * 16384)
    return schema.parent


def test_html_report_fits_1920_px_and_maps_are_readable(tmp_path: Path) -> None:
    root = _datadir(tmp_path)
    res = run_ibdtool("report", "--format", "html", "--map", "--simulate", "--sample", "8",
                      "-j", "1", root)  # fmt: skip
    assert res.returncode == 0, res.stderr
    page = tmp_path / "probe.html"
    page.write_text(res.stdout.replace("</body>", PROBE + "</body>"))
    dom = _chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    m = re.search(r'data-probe="([^"]*)"', dom.stdout)
    assert m, dom.stdout[-500:]
    probe = json.loads(m.group(1).replace("&quot;", '"'))
    assert probe["client"] > WIDTH - 40  # the window is 1920 px (less a scrollbar)
    assert probe["scroll"] <= probe["client"], probe  # nothing falls off to the right
    assert probe["tables"] and all(right <= probe["client"] for _w, _h, right in probe["tables"])
    maps = probe["maps"]
    assert len(maps) == 4, maps
    big_w, big_h, _ = max(maps, key=lambda b: b[0] * b[1])
    assert big_h >= 48 and big_w <= 800, maps  # a block, not a 1024 × 2 px hairline
    assert all(h >= 8 for _w, h, _r in maps), maps
    shot = tmp_path / "shot.png"
    res2 = _chromium(tmp_path, f"--screenshot={shot}", (tmp_path / "probe.html").as_uri())
    assert res2.returncode == 0 and shot.is_file(), res2.stderr[-1000:]
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])  # IHDR
    assert (width, height) == (WIDTH, HEIGHT)
