"""Tables fit the terminal they are printed on, and no number in them is ever cut.

Each command runs on a terminal of 80, 120 and 200 columns (a pseudo-terminal, ``COLUMNS`` set
as a shell sets it; on a pipe tables keep their natural width whatever ``COLUMNS`` says) and its
text is
read against the JSON output of the same command, an independent reading of the same figures:
every size, percentage and count printed must be one the JSON holds, whole. Columns that do not
fit are dropped and named in a ``hidden: … — use --wide`` line; ``--wide`` shows them all.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ibdtool.present.text import human_bytes
from tests.catalog import REPO
from tests.cli_runner import cli_env, ibdtool_command, run_ibdtool
from tests.conftest import SAMPLES
from tests.server_fixtures import conn_args, make_table

WIDTHS = (80, 120, 200)
UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}
SIZE = re.compile(r"(?<![\w.])(\d+(?:\.\d)?) (B|KiB|MiB|GiB|TiB)\b")
HIDDEN = re.compile(r"(?:^|\n)hidden: (.+?)\s+—\s+use\s+--wide\s*(?:\n|$)", re.DOTALL)


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run(width: int | None, *args: str | Path) -> str:
    """stdout of ``ibdtool ARGS`` on a terminal ``width`` columns wide (a pseudo-terminal, as
    a shell would give it, ``COLUMNS`` set), or on a pipe when ``width`` is None."""
    if width is None:
        proc = run_ibdtool(*args, env=cli_env(COLUMNS="80"))  # a pipe ignores COLUMNS
        assert proc.returncode == 0, proc.stderr
        return proc.stdout
    primary, secondary = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(primary, 65536)
            except OSError:  # EIO: the child closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        proc = subprocess.run(
            ibdtool_command(*args),
            stdin=subprocess.DEVNULL,
            stdout=secondary,
            stderr=subprocess.PIPE,
            env=cli_env(COLUMNS=str(width), NO_COLOR="1", TERM="xterm"),
            cwd=REPO,
            timeout=300,
            check=False,
        )
    finally:
        os.close(secondary)
        reader.join(timeout=30)
        os.close(primary)
    assert proc.returncode == 0, proc.stderr
    return ANSI.sub("", b"".join(chunks).decode()).replace("\r\n", "\n")


def run_json(*args: str | Path) -> Any:
    return json.loads(run(None, *args))


def sizes(text: str) -> list[float]:
    """Every ``452.0 KiB`` in ``text`` as bytes."""
    return [float(n) * UNITS[u] for n, u in SIZE.findall(text)]


def matches(printed: float, expected: int) -> bool:
    """``printed`` is ``expected`` shown with one decimal of its unit."""
    unit = next(m for m in reversed(UNITS.values()) if abs(expected) >= m or m == 1)
    return abs(printed - expected) <= 0.05 * unit + 0.5


def assert_fits(text: str, width: int) -> None:
    assert "…" not in text, text
    for line in text.splitlines():
        assert len(line.rstrip()) <= width, (width, line)


def header_of(text: str, first: str) -> str:
    return next(line for line in text.splitlines() if line.strip().split()[:1] == [first])


def hidden_names(text: str) -> list[str]:
    """The columns a ``hidden: …`` footer names (it may wrap)."""
    found = HIDDEN.findall(text)
    return " ".join(found[0].split()).split(", ") if found else []


# --- report ------------------------------------------------------------------------------------

REPORT_TITLES = (
    "Tablespace", "Format", "Row format", "Compression", "Logical", "Allocated", "Saved",
    "Extents", "DROP", "Unpunched", "Bad pages", "Flags",
)  # fmt: skip
SHORT = {"Allocated": "Alloc", "Row format": "Row fmt", "Compression": "Compr.", "Bad pages": "Bad",
         "Unpunched": "Unpunch.", "Extents": "Ext.", "Best predicted": "Predicted"}  # fmt: skip


@pytest.fixture(scope="module")
def report_json() -> dict[str, Any]:
    doc: dict[str, Any] = run_json("report", SAMPLES / "mysql80", "--simulate", "--format", "json")
    return doc


@pytest.mark.parametrize("simulate", [False, True], ids=["plain", "simulate"])
@pytest.mark.parametrize("width", WIDTHS)
def test_report_fits_and_every_number_is_whole(
    report_json: dict[str, Any], width: int, simulate: bool
) -> None:
    extra = ["--simulate"] if simulate else []
    text = run(width, "report", SAMPLES / "mysql80", *extra)
    assert_fits(text, width)
    titles = [*REPORT_TITLES, *(["Best predicted"] if simulate else [])]
    tablespaces = text.split("\nSchemas")[0]
    head = header_of(tablespaces, "Tablespace")
    shown = [
        t
        for t in titles
        if any(re.search(rf"(^|\s){re.escape(n)}(\s|$)", head) for n in (t, SHORT.get(t, t)))
    ]
    named = hidden_names(tablespaces)
    assert sorted(shown + named) == sorted(titles), (shown, named)
    assert "Allocated" in shown and "Tablespace" in shown
    if width == 200 and not simulate:
        assert named == []
    lines = tablespaces.splitlines()
    for row in report_json["tablespaces"]:
        line = next(ln for ln in lines if ln.strip().startswith(f"{row['schema']}.{row['table']} "))
        expected = [row["logical_size"], row["allocated_size"]]
        sim = row.get("simulation") or {}
        if simulate and sim.get("predicted_allocated") is not None:
            expected.append(sim["predicted_allocated"])
        found = sizes(line)
        assert found, line
        for value in found:
            assert any(matches(value, e) for e in expected), (value, expected, line)
        assert any(matches(v, row["allocated_size"]) for v in found), line
        if "Saved" in shown:
            assert f" {row['saving_pct']:.0f}%" in line, line
        if "Bad pages" in shown:
            assert re.search(rf"\s{row['checksum']['invalid']}\s", line), line


def test_report_wide_shows_every_column_at_any_width() -> None:
    text = run(80, "report", SAMPLES / "mysql80", "--simulate", "--wide")
    assert not HIDDEN.search(text)
    head = header_of(text, "Tablespace")
    for title in [*REPORT_TITLES, "Best predicted"]:
        assert title in head
    assert "…" not in text


# --- simulate ----------------------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_simulate_fits_and_every_number_is_whole(width: int) -> None:
    path = SAMPLES / "mariadb" / "p16k-plain.ibd"
    doc = run_json("simulate", path, "--json")
    text = run(width, "simulate", path)
    assert_fits(text, width)
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip().startswith("algorithm")) + 2
    rows = [ln for ln in lines[start:] if ln.strip()][: len(doc["results"])]
    assert len(rows) == len(doc["results"])
    percent = {f"{r['saving_pct']:.1f}%" for r in doc["results"]}
    for line in rows:
        found = sizes(line)
        assert len(found) == 1, line
        assert any(matches(found[0], r["predicted_allocated"]) for r in doc["results"]), line
        saving = re.findall(r"(?<![±\d.])-?\d+\.\d%", line)  # not the interval's ±x.y%
        if "saving" in header_of(text, "algorithm"):
            assert saving and saving[0] in percent, line


# --- pages -------------------------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_pages_fit_and_every_cell_is_the_json_value(width: int) -> None:
    path = SAMPLES / "mysql80" / "mixed_zlib_lz4.ibd"
    rows = [json.loads(line) for line in run(None, "pages", path, "--json").splitlines()]
    text = run(width, "pages", path)
    assert_fits(text, width)
    lines = text.splitlines()
    columns = [c.lower() for c in lines[0].split()]
    named = hidden_names(text)
    every = run(width, "pages", path, "--wide").splitlines()[0].lower().split()
    assert sorted(columns + named) == sorted(every) and not hidden_names(
        run(width, "pages", path, "--wide")
    )
    assert set(every) <= set(rows[0])
    body = lines[1 : len(rows) + 1]
    assert len(body) == len(rows)
    for row, line in zip(rows, body, strict=True):
        expected = []
        for name in columns:
            value = "INVALID" if name == "checksum" and row["valid"] is False else row[name]
            if value is not None and value != "":
                expected.append(str(value))
        assert line.split() == expected, (line, expected)


# --- inspect -----------------------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_inspect_fits_and_its_numbers_are_the_json_ones(width: int) -> None:
    path = SAMPLES / "mysql80" / "mixed_zlib_lz4.ibd"
    doc = run_json("inspect", path, "--json")
    text = run(width, "inspect", path)
    assert_fits(text, width)
    flat = " ".join(text.split())
    assert f"Pages {doc['pages']} " in flat
    for name, n in doc["page_types"].items():
        assert f"{name} {n}" in flat, name
    for name, n in doc["compression"].items():
        assert f"{name} {n} " in flat, name
    disk = flat.split("Disk ", 1)[1]
    logical, allocated = sizes(disk)[:2]
    assert matches(logical, doc["logical_size"]) and matches(allocated, doc["allocated_size"])


def test_a_pipe_keeps_every_column_whatever_columns_says() -> None:
    text = run(None, "report", SAMPLES / "mysql80")
    head = header_of(text, "Tablespace")
    assert all(title in head for title in REPORT_TITLES)
    assert not hidden_names(text)


# --- server status / server tables ---------------------------------------------------------------

SERVER_TITLES = (
    "table", "format", "row format", "file size", "allocated", "saved", "block",
    "DROP", "pages on disk", "note",
)  # fmt: skip
SERVER_SHORT = {"row format": "row fmt", "file size": "size", "allocated": "alloc",
                "pages on disk": "pages"}  # fmt: skip


@pytest.fixture(scope="module")
def fit_server(mariadb: Any) -> Any:
    """Tables with a long name, page-compressed and plain, one flushed and one not."""
    make_table(mariadb, "fit", "plain_table", rows=3000)
    mariadb.query("FLUSH TABLES fit.plain_table FOR EXPORT")  # its pages on disk
    mariadb.query("UNLOCK TABLES")
    make_table(mariadb, "fit", "a_table_with_a_rather_long_name_x", rows=3000, options=(
        "PAGE_COMPRESSED=1"
    ))  # fmt: skip
    return mariadb


def catalog_sizes(srv: Any) -> dict[str, tuple[int, int]]:
    """FILE_SIZE and ALLOCATED_SIZE of the schema's tables, asked of the server by the test."""
    rows = srv.query(
        "SELECT NAME, FILE_SIZE, ALLOCATED_SIZE FROM information_schema.INNODB_SYS_TABLESPACES "
        "WHERE NAME LIKE 'fit/%%'"
    )
    return {str(n).replace("/", "."): (int(f), int(a)) for n, f, a in rows}


@pytest.mark.xdist_group("mariadb")
@pytest.mark.parametrize("width", WIDTHS)
def test_server_tables_fit_and_every_number_is_whole(fit_server: Any, width: int) -> None:
    args = ["server", "tables", "fit", *conn_args(fit_server)]
    text = run(width, *args)
    assert_fits(text, width)
    head = header_of(text, "table")
    shown = [
        t
        for t in SERVER_TITLES
        if any(re.search(rf"(^|\s){re.escape(n)}(\s|$)", head) for n in (t, SERVER_SHORT.get(t, t)))
    ]
    named = hidden_names(text)
    assert sorted(shown + named) == sorted(SERVER_TITLES), (shown, named)
    assert {"table", "format", "allocated"} <= set(shown)
    if width == 200:
        assert named == []
    wide = run(width, *args, "--wide")
    assert not hidden_names(wide)
    assert all(t in header_of(wide, "table") for t in SERVER_TITLES)
    catalog = catalog_sizes(fit_server)
    assert len(catalog) == 2
    lines = text.splitlines()
    for name, (file_size, allocated) in catalog.items():
        line = next(ln for ln in lines if ln.strip().startswith(f"{name} "))
        found = sizes(line)
        assert any(matches(v, allocated) for v in found), (line, allocated)
        for value in found:
            assert matches(value, file_size) or matches(value, allocated), (value, line)
        if "file size" in shown:
            assert any(matches(v, file_size) for v in found), (line, file_size)
        if "saved" in shown and allocated:
            saved = round(100 * (file_size - allocated) / file_size)
            assert re.search(rf"\s{saved}%(\s|$)", line), (line, saved)


@pytest.mark.xdist_group("mariadb")
@pytest.mark.parametrize("width", WIDTHS)
def test_server_status_fits_and_keeps_numbers_with_their_units(fit_server: Any, width: int) -> None:
    doc = json.loads(run(None, "server", "status", "--json", *conn_args(fit_server)))
    text = run(width, "server", "status", *conn_args(fit_server))
    assert_fits(text, width)
    flat = " ".join(text.split())
    # a number and its unit on one line: every size of the flattened text is one of the lines'
    assert len(SIZE.findall(text)) == len(SIZE.findall(flat)) >= 2, text
    assert f"Page size {doc['page_size'] // 1024}K" in flat
    assert f"{human_bytes(doc['fs_block_size'])} blocks" in flat
    for codec in doc["codecs"]:
        assert codec in flat
    for warning in doc["warnings"]:
        assert " ".join(warning.split()) in flat, warning
    # --wide: one line per value (none continues on the next), whatever the width
    wide = run(width, "server", "status", "--wide", *conn_args(fit_server))
    rows = [ln for ln in wide.splitlines() if ln.strip()]
    assert rows and not [ln for ln in rows if ln.startswith(" ")], wide
    free = re.compile(r"\d+(?:\.\d)? \w+ free")  # the disk is shared: its free space moves
    assert free.sub("", " ".join(wide.split())) == free.sub("", flat)


# --- wrapping between words ----------------------------------------------------------------------

WORDS = st.lists(
    st.one_of(
        st.sampled_from(["22.0", "4.0", "100%", "~93%", "1,024", "GiB", "KiB", "free", "blocks"]),
        st.text(alphabet="abcdefghij(),:", min_size=1, max_size=14),
    ),
    min_size=1,
    max_size=30,
)


@given(words=WORDS, width=st.integers(min_value=4, max_value=60))
def test_line_breaks_split_between_words_and_keep_numbers_with_their_unit(
    words: list[str], width: int
) -> None:
    from ibdtool.cli.fit import _NUMBER, line_breaks

    text = " ".join(words)
    lines, pos = [], 0
    for end, start in line_breaks(text, width):
        lines.append(text[pos:end])
        pos = start
    lines.append(text[pos:])
    assert " ".join(lines).split() == words  # nothing lost, nothing cut inside a word
    for line in lines[:-1]:
        assert not _NUMBER.fullmatch(line.split()[-1]), lines  # a number goes with the next word
    for line in lines:
        parts = line.split()
        # too wide only when it cannot break: one word, or a number and its unit (chained)
        if len(line) > width:
            assert all(_NUMBER.fullmatch(p) for p in parts[:-1]), (width, lines)
