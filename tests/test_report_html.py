"""The HTML report, rendered by headless Chromium: its tables read back from the DOM after the
page's own script ran, against ``stat``, the JSON report and how each file was made."""

from __future__ import annotations

import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests import test_report as base
from tests.test_report import LAYOUT, run, stat_sizes

# the data directories and their JSON report, shared with test_report (session fixtures)
datadir = base.datadir
changed_datadir = base.changed_datadir
doc = base.doc


class Tables(HTMLParser):
    """Every ``<table id=…>`` (rows of ``{key: (data-v, text)}``) and the chart's bars."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[dict[str, Any]]] = {}
        self.sorted_by: dict[str, tuple[str, str]] = {}
        self.bars: list[dict[str, str]] = []
        self._table: str | None = None
        self._row: dict[str, Any] | None = None
        self._cell: tuple[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table" and a.get("id"):
            self._table = a["id"]
            self.tables[self._table] = []
        elif tag == "th" and self._table and a.get("aria-sort"):
            self.sorted_by[self._table] = (a.get("data-key") or "", a["aria-sort"] or "")
        elif tag == "tr" and self._table and "data-name" in a:
            self._row = {"_name": a["data-name"], "_class": a.get("class")}
        elif tag == "td" and self._row is not None:
            self._cell = (a.get("data-key") or "", a.get("data-v"))
            self._text = []
        elif tag == "rect" and "data-schema" in a:
            self.bars.append({k: v or "" for k, v in a.items()})

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self._row is not None:
            key, value = self._cell
            self._row[key] = (value, "".join(self._text))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table:
            self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None


def render(page: Path, tmp_path: Path, fragment: str = "") -> Tables:
    """The DOM after the page's scripts ran, as headless Chromium prints it."""
    browser = shutil.which("chromium")
    if browser is None:
        pytest.fail("chromium is needed (Debian package chromium; scripts/setup.sh --test)")
    proc = subprocess.run(
        [
            browser, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run", f"--user-data-dir={tmp_path / 'chromium'}", "--dump-dom",
            page.resolve().as_uri() + fragment,
        ],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0 and "<table" in proc.stdout, proc.stderr[-2000:]
    parser = Tables()
    parser.feed(proc.stdout)
    return parser


def _html(tmp_path: Path, *args: str | Path) -> Path:
    proc = run(*args, "--format", "html")
    assert proc.returncode == 0, proc.stderr
    page = tmp_path / "report.html"
    page.write_text(proc.stdout)
    return page


def test_html_tables_read_back_from_chromium_match_stat_and_json(
    datadir: Path, doc: dict[str, Any], tmp_path: Path
) -> None:
    page = _html(tmp_path, datadir)
    text = page.read_text()
    assert " src=" not in text and " href=" not in text  # nothing loaded from anywhere
    dom = render(page, tmp_path, "#sort=tablespaces:allocated_size:desc")
    rows = dom.tables["tablespaces"]
    assert sorted(r["_name"] for r in rows) == sorted(LAYOUT)
    json_rows = {r["name"]: r for r in doc["tablespaces"]}
    for r in rows:
        name = r["_name"]
        size, allocated = stat_sizes(datadir / name)
        assert (int(r["logical_size"][0]), int(r["allocated_size"][0])) == (size, allocated)
        assert set(filter(None, r["flags"][1].split(", "))) == LAYOUT[name].flags
        want = json_rows[name]
        assert int(r["extents"][0]) == want["extents"]
        assert int(r["checksum_invalid"][0]) == want["checksum"]["invalid"]
        assert int(r["unpunched_pages"][0]) == want["unpunched_pages"]
    # the page's script sorted the table as the URL asked
    assert dom.sorted_by["tablespaces"] == ("allocated_size", "descending")
    allocated = [int(r["allocated_size"][0]) for r in rows]
    assert allocated == sorted(allocated, reverse=True)
    assert [r["_name"] for r in rows] != sorted(LAYOUT)  # it did move rows
    # per-schema totals and the chart, against the JSON report's totals
    totals = {(t["schema"] or "(server)"): t for t in doc["totals"]["by_schema"]}
    schemas = {r["schema"][1]: r for r in dom.tables["schemas"]}
    assert set(schemas) == set(totals)
    for name, t in totals.items():
        assert int(schemas[name]["files"][0]) == t["files"]
        assert int(schemas[name]["logical_size"][0]) == t["logical_size"]
        assert int(schemas[name]["allocated_size"][0]) == t["allocated_size"]
        bars = {b["class"]: int(b["data-v"]) for b in dom.bars if b["data-schema"] == name}
        assert bars == {"logical": t["logical_size"], "allocated": t["allocated_size"]}


def test_html_changes_section(
    datadir: Path, changed_datadir: Path, doc: dict[str, Any], tmp_path: Path
) -> None:
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    page = _html(tmp_path, changed_datadir, "--compare", old)
    dom = render(page, tmp_path, "#sort=changes:allocated_delta:asc")
    changes = {r["_name"]: r for r in dom.tables["changes"]}
    assert set(changes) == {
        "shop/customers.ibd",
        "shop/refunds.ibd",
        "shop/orders.ibd",
        "blog/posts.ibd",
    }
    assert changes["shop/customers.ibd"]["status"][1] == "dropped"
    assert changes["shop/refunds.ibd"]["status"][1] == "added"
    before = stat_sizes(datadir / "blog/posts.ibd")[1]
    after = stat_sizes(changed_datadir / "blog/posts.ibd")[1]
    assert int(changes["blog/posts.ibd"]["allocated_delta"][0]) == after - before
    deltas = [int(r["allocated_delta"][0]) for r in dom.tables["changes"]]
    assert deltas == sorted(deltas)
