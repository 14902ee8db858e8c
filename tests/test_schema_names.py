"""Index names from ``--schema 'CREATE TABLE …'`` (by order), against the server's own catalog.

Oracles: throwaway MariaDB 10.11 and MySQL 5.7.22 servers (no SDI). Four tables — a PRIMARY KEY
with a UNIQUE and two plain keys, a table whose clustered index is a UNIQUE key on NOT NULL
columns, one with no key at all (GEN_CLUST_INDEX), one with FULLTEXT and SPATIAL keys (InnoDB's
hidden FTS_DOC_ID_INDEX comes second) — are exported with ``FLUSH TABLES … FOR
EXPORT`` and their ``.ibd`` copied without the ``.cfg``, so ``SHOW CREATE TABLE`` is the only
source of names. Every index id the pages hold must get the name ``INNODB_SYS_INDEXES`` gives
it, in ``inspect --json`` (and its map legend), ``pages --jsonl``, ``report --format json``
(the schema's ``mariadb-dump --no-data`` file for all four tables, matched by name) and the
TUI's page map, each saying the names are "by order".
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ibdtool.tablespace.schemas import load_schemas
from ibdtool.tui.app import create_app
from ibdtool.tui.screens.tablespace import TablespaceScreen
from samples.servers import ThrowawayServer
from tests.server_fixtures import ibdtool, json_lines

SCHEMA = "byorder"
TABLES = {
    "t_keys": "id INT NOT NULL, a VARCHAR(40), b INT NOT NULL, c CHAR(8), u INT, "
    "PRIMARY KEY (id), KEY kb (b), UNIQUE KEY uu (u), KEY kca (c, a)",
    "t_uniq": "x INT NOT NULL, y VARCHAR(20) NOT NULL, z INT, UNIQUE KEY ux (x), KEY kz (z)",
    "t_none": "p INT, q VARCHAR(30), KEY kq (q)",
    # InnoDB adds FTS_DOC_ID_INDEX (second); the R-tree and the FULLTEXT index have no B-tree
    "t_fts": "id INT NOT NULL, body TEXT, k INT, g GEOMETRY NOT NULL, PRIMARY KEY (id), "
    "KEY kk (k), FULLTEXT KEY ft (body), SPATIAL KEY sp (g), KEY k2 (k, id)",
}
BTREE_TYPES = "(0, 1, 2, 3)"  # INNODB_SYS_INDEXES.TYPE: not 32 (FULLTEXT) nor 64 (SPATIAL)


def _make(srv: ThrowawayServer, out: Path) -> tuple[dict[str, str], dict[str, dict[int, str]]]:
    creates: dict[str, str] = {}
    catalog: dict[str, dict[int, str]] = {}
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
        for t, body in TABLES.items():
            cur.execute(f"DROP TABLE IF EXISTS {SCHEMA}.{t}")
            options = "ROW_FORMAT=REDUNDANT" if t == "t_fts" else ""  # every field counted
            cur.execute(f"CREATE TABLE {SCHEMA}.{t} ({body}) ENGINE=InnoDB {options}")
        cur.executemany(
            f"INSERT INTO {SCHEMA}.t_keys VALUES (%s, %s, %s, %s, %s)",
            [(i, f"a{i:05d}" * 3, i % 97, f"c{i % 13}", i) for i in range(1, 3001)],
        )
        cur.executemany(
            f"INSERT INTO {SCHEMA}.t_uniq VALUES (%s, %s, %s)",
            [(i, f"y{i}", i % 5) for i in range(1, 2001)],
        )
        cur.executemany(
            f"INSERT INTO {SCHEMA}.t_none VALUES (%s, %s)", [(i, f"q{i}") for i in range(1, 2001)]
        )
        cur.executemany(
            f"INSERT INTO {SCHEMA}.t_fts VALUES (%s, %s, %s, ST_GeomFromText(%s))",
            [(i, f"word{i % 50} text", i % 31, f"POINT({i} {i % 7})") for i in range(1, 1501)],
        )
        cur.execute(f"SELECT k, id FROM {SCHEMA}.t_fts ORDER BY k, id")
        by_k = [tuple(r) for r in cur.fetchall()]
        for t in TABLES:
            cur.execute(f"SHOW CREATE TABLE {SCHEMA}.{t}")
            creates[t] = cur.fetchall()[0][1]
            cur.execute(
                "SELECT i.INDEX_ID, i.NAME FROM information_schema.INNODB_SYS_INDEXES i JOIN "
                "information_schema.INNODB_SYS_TABLES t ON t.TABLE_ID = i.TABLE_ID "
                f"WHERE t.NAME = %s AND i.TYPE IN {BTREE_TYPES}",
                (f"{SCHEMA}/{t}",),
            )
            catalog[t] = {int(i): str(n) for i, n in cur.fetchall()}
        cur.execute(f"FLUSH TABLES {', '.join(f'{SCHEMA}.{t}' for t in TABLES)} FOR EXPORT")
        try:
            for t in TABLES:
                (out / f"{t}.ibd").write_bytes(srv.file_path(SCHEMA, t).read_bytes())
        finally:
            cur.execute("UNLOCK TABLES")
    catalog["by_k"] = by_k  # type: ignore[assignment]
    return creates, catalog


def _dump_tool() -> str:
    tool = shutil.which("mariadb-dump") or shutil.which("mysqldump")
    if tool is None:
        pytest.fail("mariadb-dump is needed (scripts/setup.sh --test installs MariaDB's client)")
    return tool


def _named(indexes: list[dict[str, Any]]) -> dict[int, str]:
    return {ix["id"]: ix["name"] for ix in indexes if ix["name"] and ix["pages"]}


def _check(srv: ThrowawayServer, tmp_path: Path) -> None:
    creates, catalog = _make(srv, tmp_path)
    by_k: list[tuple[int, int]] = catalog.pop("by_k")  # type: ignore[assignment]
    assert "FTS_DOC_ID_INDEX" in catalog["t_fts"].values()
    # records takes the index the same way: kk is the third B-tree, not the second
    res = ibdtool(
        "records", str(tmp_path / "t_fts.ibd"), "--json", "--index", "kk", "--schema",
        creates["t_fts"],
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    got = [(d["fields"]["k"], d["fields"]["id"]) for d in json_lines(res.stdout)]
    assert got == [(int(k), int(i)) for k, i in by_k]
    # the clustered records hold InnoDB's hidden FTS_DOC_ID last: read, not shown
    res = ibdtool("records", str(tmp_path / "t_fts.ibd"), "--json", "--schema", creates["t_fts"])
    assert res.returncode == 0, res.stderr
    rows = [d["fields"] for d in json_lines(res.stdout)]
    assert [(r["id"], r["k"]) for r in rows] == sorted((int(i), int(k)) for k, i in by_k)
    assert all(list(r) == ["id", "body", "k", "g"] for r in rows)
    assert len(catalog["t_keys"]) == 4 and "GEN_CLUST_INDEX" in catalog["t_none"].values()
    assert not list(tmp_path.glob("*.cfg"))
    for t, create in creates.items():
        path = str(tmp_path / f"{t}.ibd")
        plain = json.loads(ibdtool("inspect", "--json", path).stdout)
        assert plain["index_names_from"] is None and not _named(plain["indexes"])
        res = ibdtool("inspect", "--json", path, "--schema", create)
        assert res.returncode == 0, res.stderr
        doc = json.loads(res.stdout)
        assert doc["index_names_from"] == "schema"
        assert _named(doc["indexes"]) == catalog[t], t
        text = ibdtool("inspect", path, "--schema", create)
        assert "(from --schema, by order)" in " ".join(text.stdout.split())  # may wrap
        legend = ibdtool("inspect", path, "--schema", create, "--map", "--map-by", "index")
        for iid, name in catalog[t].items():
            assert f"index {iid} ({name})" in legend.stdout, (t, legend.stdout[-600:])
        pages = json_lines(ibdtool("pages", "--jsonl", path, "--schema", create).stdout)
        for row in pages:
            if row["index_id"] in catalog[t] and row["type"] == "INDEX":
                assert row["index"] == catalog[t][row["index_id"]], row
    dump = tmp_path / "dump.sql"
    dumped = subprocess.run(
        [_dump_tool(), "--no-defaults", "-uroot", f"--socket={srv.socket}", "--no-data", SCHEMA],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    assert all(f"CREATE TABLE `{t}`" in dumped.stdout for t in TABLES)
    # an unreadable statement is an error for its own table's file only
    dump.write_text(dumped.stdout + "CREATE TABLE `other` (x NOSUCHTYPE);\n", encoding="utf-8")
    res = ibdtool("report", "--format", "json", str(tmp_path), "--schema", f"@{dump}")
    assert res.returncode == 0, res.stderr
    rows = {Path(r["path"]).stem: r for r in json.loads(res.stdout)["tablespaces"]}
    for t in TABLES:
        assert rows[t]["index_names_from"] == "schema"
        assert _named(rows[t]["indexes"]) == catalog[t], t
    _tui(tmp_path / "t_keys.ibd", creates["t_keys"], catalog["t_keys"])


def _tui(path: Path, create: str, catalog: dict[int, str]) -> None:
    import asyncio

    async def run() -> dict[int, str]:
        app = create_app(path, schemas=load_schemas(create))
        async with app.run_test(size=(120, 40)) as pilot:
            for _ in range(3):
                await pilot.app.workers.wait_for_complete()
                await pilot.pause()
            screen = app.screen
            assert isinstance(screen, TablespaceScreen) and screen.model is not None
            return dict(screen.model.index_names)

    assert asyncio.run(run()) == catalog


@pytest.mark.xdist_group("mariadb")
def test_mariadb_index_names_by_order(mariadb: ThrowawayServer, tmp_path: Path) -> None:
    _check(mariadb, tmp_path)


@pytest.mark.xdist_group("mysql57")
def test_mysql57_index_names_by_order(mysql57: ThrowawayServer, tmp_path: Path) -> None:
    _check(mysql57, tmp_path)


def test_schema_text_problems_are_one_line(tmp_path: Path) -> None:
    from tests.conftest import corpus_file

    path = str(corpus_file("mariadb-10.11/p16k-plain-1000rows.ibd"))
    for args, needle in (
        (["--schema", "SELECT 1"], "no CREATE TABLE"),
        (["--schema", "CREATE TABLE t (a FOO)"], "CREATE TABLE t"),
        (["--schema", f"@{tmp_path / 'none.sql'}"], "none.sql"),
    ):
        for cmd in (["inspect", path], ["pages", path], ["report", path]):
            res = ibdtool(*cmd, *args)
            lines = res.stderr.strip().splitlines()
            assert res.returncode == 2 and len(lines) == 1 and needle in lines[0], (cmd, lines)
