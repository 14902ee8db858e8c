"""Names and values from files and servers never reach a terminal raw (issue 20, item 3).

The oracle is Python's Unicode database, not ibdtool's own pattern: a character "a terminal
obeys" is one of category ``Cc`` (C0, DEL, C1) or ``Cs`` (a file name's undecodable byte), or a
bidirectional embedding, override, isolate or mark (``unicodedata.bidirectional`` LRE, RLE,
PDF, LRO, RLO, LRI, RLI, FSI, PDI, LRM, RLM, ALM). Every front end gets hostile text where it
takes names: a file named with ESC/BEL/RLO/CSI and Rich markup; column and index names in
``--schema``; on a throwaway MariaDB, a table, its column, index and values made by an
unprivileged SQL user; and the TUI driven by a Textual pilot. Each must show the text escaped
(``\\x1b``) and literally (``[bold]`` stays ``[bold]``), with no raw control anywhere in
stdout, stderr or a widget.
"""

from __future__ import annotations

import json
import random
import shutil
import unicodedata
from pathlib import Path
from typing import Any

import pymysql
import pytest
from textual.widgets import DataTable

from ibdtool.tui.app import create_app
from ibdtool.tui.screens.tablespace import TablespaceScreen
from samples.servers import ThrowawayServer
from tests.cli_runner import run_ibdtool
from tests.samples_manifest import manifest, sample
from tests.server_fixtures import clean_env, conn_args, ibdtool
from tests.tui_helpers import settle, static_text, table_rows

BIDI_CONTROLS = {"LRE", "RLE", "PDF", "LRO", "RLO", "LRI", "RLI", "FSI", "PDI", "LRM", "RLM", "ALM"}
#: a file name (no "/") with what takes a terminal over: OSC title, BEL, clear screen, RLO, CSI
HOSTILE = "t\x1b]0;pwned\x07\x1b[2J[bold]x\u202eevil\x9b31m"
MARKUP = "[bold]x"


def obeyed(ch: str, keep: str = "\n") -> bool:
    """Whether a terminal (or a reader's eye) would act on ``ch`` rather than show it."""
    if ch in keep:
        return False
    return unicodedata.category(ch) in ("Cc", "Cs") or unicodedata.bidirectional(ch) in (
        BIDI_CONTROLS
    )


#: what ibdtool escapes besides the controls: the bidi marks (Unicode gives LRM class L, RLM R,
#: ALM AL) and the line/paragraph separators
ALSO = {"\u200e", "\u200f", "\u061c", "\u2028", "\u2029"}


def shown(text: str) -> str:
    """The expected display of ``text``, from the Unicode database: each obeyed character as
    ``\\xNN`` (below U+0100; a lone surrogate U+DC80-DCFF as its byte) or ``\\uNNNN``."""
    out = []
    for ch in text:
        cp = ord(ch)
        if not (obeyed(ch, keep="") or ch in ALSO):
            out.append(ch)
        elif 0xDC80 <= cp <= 0xDCFF:
            out.append(f"\\x{cp - 0xDC00:02x}")
        else:
            out.append(f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}")
    return "".join(out)


def strings(doc: Any) -> list[str]:
    if isinstance(doc, str):
        return [doc]
    if isinstance(doc, dict):
        return [s for k, v in doc.items() for s in (*strings(k), *strings(v))]
    if isinstance(doc, list):
        return [s for v in doc for s in strings(v)]
    return []


def raw_controls(text: str, keep: str = "\n") -> list[str]:
    return sorted({repr(c) for c in text if obeyed(c, keep)})


def assert_clean(text: str, keep: str = "\n") -> None:
    assert not raw_controls(text, keep), (raw_controls(text, keep), text[-2000:])


# --- the helper against the Unicode database -----------------------------------------------------


def test_shown_escapes_exactly_what_unicode_calls_control() -> None:
    """Every code point: escaped when Unicode says a terminal obeys it, left alone otherwise."""
    from ibdtool.present import shown as helper

    for cp in range(0x110000):
        ch = chr(cp)
        if obeyed(ch, keep="") or ch in ALSO:
            assert helper(ch) == shown(ch) != ch, hex(cp)
        elif cp < 0x3000 or cp % 97 == 0:  # the rest is letters: a sample suffices
            assert helper(ch) == ch, hex(cp)
    rng = random.Random(20)
    for _ in range(2000):
        s = "".join(
            chr(rng.choice((rng.randrange(0x300), rng.randrange(0x2000, 0x2100))))
            for _ in range(12)
        )
        assert helper(s) == shown(s) and not raw_controls(helper(s), "")
    assert helper("a\udcffb") == "a\\xffb"  # os.fsdecode's escape of byte 0xff: the byte


# --- CLI front ends on a file with a hostile name ------------------------------------------------


@pytest.fixture(scope="module")
def hostile_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    (root / "db").mkdir()
    shutil.copy(sample("mariadb/p16k-plain.ibd"), root / "db" / f"{HOSTILE}.ibd")
    (root / "db" / f"{HOSTILE}-short.ibd").write_bytes(b"\x00" * 100)  # an error naming it
    return root


CLI_CASES = [
    ("inspect",),
    ("inspect", "--map"),
    ("inspect", "--json"),
    ("checksum",),
    ("checksum", "--json"),
    ("pages",),
    ("pages", "--csv"),
    ("records",),
    ("records", "--json"),
    ("simulate", "--sample", "4", "-a", "zlib"),
    ("report",),
    ("report", "--format", "csv"),
    ("report", "--format", "markdown"),
    ("report", "--format", "html"),
    ("report", "--format", "openmetrics"),
    ("report", "--format", "json"),
]


@pytest.mark.parametrize("args", CLI_CASES, ids=[" ".join(a) for a in CLI_CASES])
def test_cli_shows_a_hostile_file_name_escaped(hostile_dir: Path, args: tuple[str, ...]) -> None:
    path = hostile_dir / "db" / f"{HOSTILE}.ibd"
    if args[0] == "report":
        targets = [str(hostile_dir / "db")]
    elif args[0] in ("pages", "records"):
        targets = [str(path)]
    else:
        targets = [str(path), str(hostile_dir / "db" / f"{HOSTILE}-short.ibd")]
    r = run_ibdtool(*args, *targets, env=dict(clean_env(), COLUMNS="250"))
    assert "Traceback" not in r.stderr, r.stderr
    assert_clean(r.stdout, keep="\n\r" if "csv" in args else "\n")
    assert_clean(r.stderr)
    said = r.stdout + r.stderr
    if args[0] not in ("pages",) and "--json" not in args and "json" not in args:
        assert shown(HOSTILE) in said or shown(HOSTILE).replace("\\", "\\\\") in said, said
    if "--json" in args or "json" in args:
        docs = (
            [json.loads(line) for line in r.stdout.splitlines()]
            if "records" in args
            else [json.loads(r.stdout)]
        )
        assert "records" in args or any(HOSTILE in v for v in strings(docs))  # the exact name


def test_rich_markup_in_a_name_prints_literally(hostile_dir: Path) -> None:
    """``[bold]`` in a name must not become a style (nor swallow the name)."""
    r = run_ibdtool(
        "report", str(hostile_dir / "db"), env=dict(clean_env(), COLUMNS="250", TERM="xterm")
    )
    assert MARKUP in r.stdout, r.stdout
    r = run_ibdtool("inspect", str(hostile_dir / "db" / f"{HOSTILE}.ibd"))
    assert MARKUP in r.stdout, r.stdout


# --- names inside a file: --schema column and index names -------------------------------------

COLUMN = "cust\x1b]0;col\x07\u202e[bold]"
INDEX = "idx\x1b[2J\u2066x"


def hostile_schema() -> str:
    ddl = manifest()["mariadb/p16k-plain.ibd"]["ddl"]
    return (
        ddl.replace("`customer`", f"`{COLUMN}`")
        .replace("`idx_customer`", f"`{INDEX}`")
        .replace("`t_p16k_plain`", f"`{HOSTILE}`")
    )


@pytest.mark.parametrize(
    "args",
    [
        ("records",),
        ("records", "--index", INDEX),
        ("inspect",),
        ("pages",),
        ("inspect", "--map", "--map-by", "index"),
    ],
    ids=["records", "records-index", "inspect", "pages", "inspect-map"],
)
def test_cli_shows_schema_names_escaped(hostile_dir: Path, args: tuple[str, ...]) -> None:
    path = hostile_dir / "db" / f"{HOSTILE}.ibd"
    r = run_ibdtool(
        *args, str(path), "--schema", hostile_schema(), env=dict(clean_env(), COLUMNS="250")
    )
    assert "Traceback" not in r.stderr, r.stderr
    assert_clean(r.stdout)
    assert_clean(r.stderr)
    if args[0] == "records":
        assert shown(COLUMN) in r.stdout, r.stdout[:2000]
    if args[0] == "pages" or "index" in args:
        assert shown(INDEX) in r.stdout, r.stdout[:3000]


# --- a live MariaDB: names and values chosen by an unprivileged SQL user ------------------------

TABLE = "tab\x1b]0;owned\x07\u202e[bold]name\x9b2J"
COL = "col\x1b[31m\u2067"
IDX = "ix\x1b[5m"
VALUE = "val\x1b]2;title\x07\u202e\x9b\x85end"


def q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


@pytest.fixture(scope="module")
def evil_table(mariadb: ThrowawayServer) -> ThrowawayServer:
    mariadb.query("DROP DATABASE IF EXISTS evil")
    mariadb.query("CREATE DATABASE evil")
    mariadb.query("DROP USER IF EXISTS 'mallory'@'localhost'")
    mariadb.query("CREATE USER 'mallory'@'localhost'")
    mariadb.query("GRANT CREATE, INSERT, SELECT ON evil.* TO 'mallory'@'localhost'")
    assert mariadb.socket is not None
    conn = pymysql.connect(
        unix_socket=str(mariadb.socket), user="mallory", autocommit=True, charset="utf8mb4"
    )
    with conn, conn.cursor() as cur:  # what any SQL user with CREATE may do
        cur.execute(
            f"CREATE TABLE evil.{q(TABLE)} (id INT PRIMARY KEY, "
            f"{q(COL)} VARCHAR(100) CHARACTER SET utf8mb4, KEY {q(IDX)} ({q(COL)})) ENGINE=InnoDB"
        )
        cur.executemany(
            f"INSERT INTO evil.{q(TABLE)} VALUES (%s, %s)", [(i, VALUE) for i in range(1, 200)]
        )
    with mariadb.connect() as c, c.cursor() as cur:  # the pages on disk, as a checkpoint leaves
        cur.execute(f"FLUSH TABLES evil.{q(TABLE)} FOR EXPORT")
        cur.execute("UNLOCK TABLES")
    names = [
        r[0]
        for r in mariadb.query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema='evil'"
        )
    ]
    assert names == [TABLE]  # the server stored the name as given
    return mariadb


def table_file(srv: ThrowawayServer) -> Path:
    """The table's file as the server named it (its filename encoding: ``@001b`` for ESC)."""
    (ibd,) = (srv.file_path("evil", "x").parent).glob("*.ibd")
    return ibd


@pytest.mark.xdist_group("mariadb")
@pytest.mark.parametrize(
    "args",
    [
        ("server", "tables"),
        ("server", "tables", "--wide"),
        ("server", "status"),
        ("migrate", "-B", "evil", "--to", "page:zlib"),
    ],
    ids=["tables", "tables-wide", "status", "migrate-plan"],
)
def test_server_names_from_an_sql_user_reach_root_escaped(
    evil_table: ThrowawayServer, args: tuple[str, ...]
) -> None:
    r = ibdtool(*args, *conn_args(evil_table))
    assert "Traceback" not in r.stderr, r.stderr
    assert_clean(r.stdout)
    assert_clean(r.stderr)
    if args[1] == "tables" or args[0] == "migrate":
        assert shown(TABLE) in r.stdout + r.stderr, r.stdout


@pytest.mark.xdist_group("mariadb")
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_records_values_and_columns_from_an_sql_user(evil_table: ThrowawayServer, fmt: str) -> None:
    path = table_file(evil_table)
    extra = ["--json"] if fmt == "json" else []
    r = ibdtool("records", str(path), *extra, *conn_args(evil_table))
    assert r.returncode == 0, r.stderr
    assert_clean(r.stdout)
    assert_clean(r.stderr)
    if fmt == "json":
        rows = [json.loads(line) for line in r.stdout.splitlines()]
        assert len(rows) == 199
        assert all(VALUE in strings(row) for row in rows)  # the exact value
    else:
        assert r.stdout.count(shown(COL) + "=") == 199
        assert shown(VALUE[: VALUE.index("\x1b")]) in r.stdout


@pytest.mark.xdist_group("mariadb")
def test_report_and_inspect_of_the_sql_users_table(evil_table: ThrowawayServer) -> None:
    path = table_file(evil_table)
    for args in (("report", str(path.parent)), ("inspect", str(path)), ("checksum", str(path))):
        r = ibdtool(*args)
        assert "Traceback" not in r.stderr
        assert_clean(r.stdout)
        assert_clean(r.stderr)


# --- the TUI -------------------------------------------------------------------------------------


def widget_text(app: Any) -> str:
    """Everything the screen's compositor would draw (what reaches the terminal)."""
    return "\n".join(
        "".join(s.text for s in strip) for strip in app.screen._compositor.render_strips()
    )


@pytest.mark.asyncio
async def test_tui_shows_hostile_names_escaped(hostile_dir: Path) -> None:
    app = create_app(hostile_dir)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        seen = widget_text(app)
        assert_clean(seen)
        rows = table_rows(app.screen.query_one(DataTable))
        assert any(shown(HOSTILE) in r[0] for r in rows), rows
        table = app.screen.query_one(DataTable)
        target = table.get_row_index(str(hostile_dir / "db" / f"{HOSTILE}.ibd"))
        while table.cursor_row < target:
            await pilot.press("down")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TablespaceScreen)
        assert_clean(widget_text(app))
        assert shown(HOSTILE) in app.screen.sub_title
        await pilot.press("enter")  # the page under the cursor
        await settle(pilot)
        assert_clean(widget_text(app))


@pytest.mark.asyncio
async def test_tui_error_naming_a_hostile_file(hostile_dir: Path) -> None:
    path = hostile_dir / "db" / f"{HOSTILE}-short.ibd"
    app = create_app(path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.pause(0.3)
        seen = widget_text(app)
        assert_clean(seen)
        assert "\\x1b" in seen or "\\x1b" in static_text(app.screen.query_one("#summary-text"))
