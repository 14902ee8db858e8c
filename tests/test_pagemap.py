"""``inspect --map`` and ``--map-svg``: the page map as a picture, counted against inspect.

The oracle is ``inspect --json`` of the same file, read separately: the cells of each glyph in
the terminal map and the rectangles of each label in the SVG must number exactly the pages of
that type in ``page_types`` (or of that algorithm in ``compression``).
"""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest

from ibdtool.present.pagemap import PageMap
from tests.cli_runner import run_ibdtool
from tests.conftest import SAMPLES, corpus_file
from tests.test_terminal_width import run as run_on_terminal

LEGEND = re.compile(r"^(\S) (.+) ([\d,]+)$")


def inspect_json(path: Path) -> dict[str, object]:
    proc = run_ibdtool("inspect", "--json", path)
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, object] = json.loads(proc.stdout)
    return doc


def read_map(text: str) -> tuple[list[str], dict[str, tuple[str, int]]]:
    """The map's rows and its legend (glyph → (label, pages)) from ``inspect --map`` text."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Page map by"))
    rows: list[str] = []
    legend: dict[str, tuple[str, int]] = {}
    for line in lines[start + 1 :]:
        m = LEGEND.match(line.rstrip())
        if m:
            legend[m[1]] = (m[2], int(m[3].replace(",", "")))
        elif legend or not line.strip():
            break
        else:
            rows.append(line.rstrip())
    return rows, legend


@pytest.mark.parametrize(
    ("rel", "mode", "key"),
    [
        ("samples/mysql80/mixed_zlib_lz4.ibd", "type", "page_types"),
        ("samples/mysql80/mixed_zlib_lz4.ibd", "compression", "compression"),
        ("corpus:innodb-java-reader/mysql56/column/char/tb04.ibd", "type", "page_types"),
    ],
)
def test_map_cells_per_category_are_inspects_counts(rel: str, mode: str, key: str) -> None:
    path = corpus_file(rel.split(":", 1)[1]) if rel.startswith("corpus:") else SAMPLES.parent / rel
    expected = inspect_json(path)[key]
    width = 40
    text = run_on_terminal(width, "inspect", "--map", "--map-by", mode, path)
    rows, legend = read_map(text)
    assert all(len(row) <= width for row in rows)
    assert "1 cell = 1 page" in " ".join(text.split())
    cells = Counter("".join(rows))
    assert {label: cells[glyph] for glyph, (label, _n) in legend.items()} == expected
    assert {label: n for label, n in legend.values()} == expected
    assert len(set(legend)) == len(legend)  # a glyph per category: readable without colour


def test_svg_rectangles_per_type_and_never_overwrites(tmp_path: Path) -> None:
    path = SAMPLES / "mysql80" / "zlib.ibd"
    out = tmp_path / "map.svg"
    proc = run_ibdtool("inspect", "--map-svg", out, path)
    assert proc.returncode == 0, proc.stderr
    rects = ET.parse(out).getroot().findall("{http://www.w3.org/2000/svg}rect[@data-label]")
    assert Counter(r.get("data-label") for r in rects) == inspect_json(path)["page_types"]
    before = out.read_bytes()
    again = run_ibdtool("inspect", "--map-svg", out, path)
    assert again.returncode == 2 and again.stderr.startswith("ibdtool: error: ")
    assert out.read_bytes() == before
    link = tmp_path / "link.svg"
    os.symlink(tmp_path / "elsewhere.svg", link)
    refused = run_ibdtool("inspect", "--map-svg", link, path)
    assert refused.returncode == 2 and not (tmp_path / "elsewhere.svg").exists()


def test_a_cell_stands_for_several_pages_when_the_map_is_full() -> None:
    labels = ["INDEX"] * 900 + ["ALLOCATED"] * 100
    pm = PageMap("type", labels)
    per_cell, rows = pm.cells(width=10, max_rows=10)
    assert per_cell == 10 and len(rows) == 10 and all(len(r) == 10 for r in rows)
    shown = Counter(c.label for row in rows for c in row)
    assert shown == {"INDEX": 90, "ALLOCATED": 10}
    assert {c.label: c.pages for c in pm.legend()} == {"INDEX": 900, "ALLOCATED": 100}


def test_report_html_map_counts_each_files_pages_by_type() -> None:
    from html.parser import HTMLParser

    class Maps(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.current: str | None = None
            self.maps: dict[str, Counter[str]] = {}

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            a = dict(attrs)
            if tag == "div" and a.get("class") == "map":
                self.current = a["data-name"]
                self.maps[self.current or ""] = Counter()
            elif tag == "rect" and self.current is not None and "data-type" in a:
                self.maps[self.current or ""][a["data-type"] or ""] += 1

    folder = SAMPLES / "mysql80"
    proc = run_ibdtool("report", folder, "--format", "html", "--map")
    assert proc.returncode == 0, proc.stderr
    parser = Maps()
    parser.feed(proc.stdout)
    files = sorted(folder.glob("*.ibd"))
    assert len(parser.maps) == len(files)
    for path in files:
        assert parser.maps[f"mysql80/{path.name}"] == inspect_json(path)["page_types"], path
