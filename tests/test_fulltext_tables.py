"""A FULLTEXT table is one table: its ``FTS_<table id>_…`` tablespaces belong to it in
``server tables``, ``report`` and ``migrate``'s plan, on real MariaDB 10.11 and MySQL 8.0.33.

Oracles: the server's catalog (INNODB_SYS_TABLES / INNODB_TABLES: the table's id, the names of
its auxiliary tables) and ``os.stat`` of the files in its schema folder.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from samples.servers import ThrowawayServer
from tests.server_fixtures import (
    conn_args,
    ibdtool,
    server_param,
)

SERVERS = [server_param("mariadb", "10.11"), server_param("mysql8033", "8.0.33")]
SCHEMA = "ftshop"


@pytest.fixture
def srv(request: pytest.FixtureRequest) -> ThrowawayServer:
    server: ThrowawayServer = request.getfixturevalue(request.param)
    return server


def _catalog(srv: ThrowawayServer) -> str:
    return "INNODB_TABLES" if srv.flavor == "mysql" else "INNODB_SYS_TABLES"


def _flushed(srv: ThrowawayServer) -> None:
    """Every dirty page written (the tables' files and, for MariaDB, SYS_TABLES in ibdata1)."""
    srv.query(f"FLUSH TABLES {SCHEMA}.docs, {SCHEMA}.plain FOR EXPORT")
    srv.query("UNLOCK TABLES")
    srv.query("SET GLOBAL innodb_max_dirty_pages_pct_lwm = 0.001")
    srv.query("SET GLOBAL innodb_max_dirty_pages_pct = 0")
    for _ in range(120):
        (row,) = srv.query("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'")
        if int(row[1]) == 0:
            return
        time.sleep(0.5)
    pytest.fail("the server kept dirty pages for a minute")


@pytest.fixture
def fts(srv: ThrowawayServer) -> tuple[ThrowawayServer, int, list[str]]:
    """``ftshop.docs`` (FULLTEXT) and ``ftshop.plain``; the docs table's id and the names of its
    auxiliary tables, both from the server's catalog."""
    srv.query(f"DROP DATABASE IF EXISTS {SCHEMA}")
    srv.query(f"CREATE DATABASE {SCHEMA}")
    srv.query(
        f"CREATE TABLE {SCHEMA}.docs (id INT PRIMARY KEY AUTO_INCREMENT, body TEXT, "
        "FULLTEXT KEY ft (body))"
    )
    srv.query(f"CREATE TABLE {SCHEMA}.plain (id INT PRIMARY KEY)")
    srv.query(f"INSERT INTO {SCHEMA}.docs (body) VALUES ('one two'), ('three four five')")
    srv.query(f"INSERT INTO {SCHEMA}.plain VALUES (1), (2)")
    ((table_id,),) = srv.query(
        f"SELECT TABLE_ID FROM information_schema.{_catalog(srv)} WHERE NAME = %s",
        (f"{SCHEMA}/docs",),
    )
    prefix = f"fts_{int(table_id):016x}_"
    aux = [
        str(name).split("/", 1)[1]
        for (name,) in srv.query(
            f"SELECT NAME FROM information_schema.{_catalog(srv)} WHERE NAME LIKE %s",
            (f"{SCHEMA}/%",),
        )
        if str(name).split("/", 1)[1].lower().startswith(prefix)
    ]
    assert len(aux) >= 6  # CONFIG, DELETED… and INDEX_1..6
    _flushed(srv)
    return srv, int(table_id), sorted(aux)


def _folder(srv: ThrowawayServer) -> Path:
    assert srv.datadir is not None
    return srv.datadir / SCHEMA


@pytest.mark.parametrize("srv", SERVERS, indirect=True)
def test_server_tables_counts_the_fulltext_tablespaces_with_their_table(
    fts: tuple[ThrowawayServer, int, list[str]],
) -> None:
    srv, _table_id, aux = fts
    res = ibdtool("server", "tables", SCHEMA, "--all", "--json", *conn_args(srv))
    assert res.returncode == 0, res.stderr
    docs = json.loads(res.stdout)
    assert [d.get("table") for d in docs] == ["docs", "plain"]  # sorted by name, no FTS rows
    ft = docs[0]
    names = sorted(s["name"].split("/", 1)[1] for s in ft["fts_tablespaces"])
    assert names == aux
    folder = _folder(srv)
    own = (folder / "docs.ibd").stat().st_size
    extra = sum((folder / f"{n}.ibd").stat().st_size for n in aux)
    assert ft["file_size"] == own
    assert ft["fts_file_size"] == extra
    assert ft["total_file_size"] == own + extra
    # the table view says both: its own size, and with the FULLTEXT tablespaces
    res = ibdtool("server", "tables", SCHEMA, "--wide", *conn_args(srv))
    line = next(ln for ln in res.stdout.splitlines() if f"{SCHEMA}.docs" in ln)
    assert f"+{len(aux)} FTS tablespaces" in line


@pytest.mark.parametrize("srv", SERVERS, indirect=True)
def test_report_names_fulltext_tablespaces_after_their_table(
    fts: tuple[ThrowawayServer, int, list[str]],
) -> None:
    srv, table_id, aux = fts
    assert srv.datadir is not None
    res = ibdtool("report", str(srv.datadir), "--format", "json")
    assert res.returncode in (0, 1), res.stderr
    doc = json.loads(res.stdout)
    rows = [r for r in doc["tablespaces"] if r["schema"] == SCHEMA]
    fts_rows = [r for r in rows if r.get("fulltext")]
    assert sorted(Path(r["path"]).stem for r in fts_rows) == aux
    assert {r["table"] for r in fts_rows} == {"docs"}
    assert {r["fulltext"]["table_id"] for r in fts_rows} == {f"0x{table_id:x}"}
    # every file of the schema still counts in its totals
    files = sorted(p.name for p in _folder(srv).glob("*.ibd"))
    assert sorted(Path(r["path"]).name for r in rows) == files
    (total,) = [t for t in doc["totals"]["by_schema"] if t["schema"] == SCHEMA]
    assert total["files"] == len(files)
    assert total["logical_size"] == sum(p.stat().st_size for p in _folder(srv).glob("*.ibd"))
    # the table view: the docs table and its FULLTEXT parts, no hex names
    res = ibdtool("report", str(_folder(srv)), "--wide")
    labels = [ln.split()[0] for ln in res.stdout.splitlines() if ln.strip().startswith(SCHEMA)]
    assert labels.count(f"{SCHEMA}.docs") == 1 + len(aux)
    assert not any("fts_" in ln.lower().split()[0] for ln in res.stdout.splitlines() if ln.strip())


@pytest.mark.parametrize("srv", SERVERS, indirect=True)
def test_migrate_plan_says_the_rebuild_rewrites_the_fulltext_tablespaces(
    fts: tuple[ThrowawayServer, int, list[str]],
) -> None:
    srv, _table_id, aux = fts
    args = ("migrate", f"{SCHEMA}.docs", "--to", "page:zlib", "--json", *conn_args(srv))
    refused = json.loads(ibdtool(*args).stdout)["tables"][0]
    assert refused["action"] == "refuse"
    res = ibdtool(*args, "--algorithm", "copy")
    assert res.returncode == 0, res.stdout + res.stderr
    (plan,) = json.loads(res.stdout)["tables"]
    checks = {c["check"]: c["message"] for c in plan["checks"]}
    assert f"rewrites the {len(aux)} FULLTEXT tablespaces" in checks["fulltext_tablespaces"]
    folder = _folder(srv)
    total = sum((folder / f"{n}.ibd").stat().st_size for n in ["docs", *aux])
    assert f"rebuild of {_human(total)}" in checks["free_space"]


def _human(n: int) -> str:
    from ibdtool.present import human_bytes

    return human_bytes(n)


@pytest.mark.asyncio
@pytest.mark.parametrize("srv", [server_param("mariadb", "10.11")], indirect=True)
async def test_tui_offers_the_copy_and_never_runs_a_refused_plan(
    fts: tuple[ThrowawayServer, int, list[str]],
) -> None:
    from textual.widgets import DataTable

    from tests.test_tui_server import convert, server_app, settle
    from tests.tui_helpers import static_text

    srv, _table_id, aux = fts
    app = server_app(srv)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(DataTable)
        note = str(table.get_row(f"{SCHEMA}.docs")[-1])
        assert f"+{len(aux)} FTS tablespaces" in note
        migration = await convert(pilot, f"{SCHEMA}.docs", "page:zlib")
        assert migration.plan is not None and not migration.plan.runnable
        assert migration.check_action("run", ()) is False
        assert migration.check_action("run_flushed", ()) is False
        assert "Run the conversion" not in [c.title for c in migration.commands()]
        await pilot.press("y")  # nothing runs
        await settle(pilot)
        assert migration.migration is None
        assert "ALGORITHM=COPY" in static_text(migration.query_one("#migration-status"))
        await pilot.press("c")
        await settle(pilot)
        plan = migration.plan
        assert plan is not None and plan.runnable
        (tp,) = plan.tables
        assert tp.steps[-1].sql.endswith("FORCE, ALGORITHM=COPY, LOCK=SHARED")
        assert migration.check_action("run", ()) is True
