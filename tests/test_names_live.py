"""Every name the servers can store, as MariaDB 10.11, MySQL 8.0.15 and 5.7.22 write it.

Oracles: the names ``information_schema`` reports (TABLES, PARTITIONS), the files each server
really wrote for them (``os.listdir`` of its datadir), and MariaDB's own ``filename`` character
set (``CONVERT(… USING filename)``) for every character of the Basic Multilingual Plane. Then
``server tables``, ``report`` and ``migrate --execute`` on those tables.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pymysql
import pytest

from ibdtool.parsers import filename
from ibdtool.server.dialects import parse_flavor
from samples.servers import ThrowawayServer
from tests.server_fixtures import (
    NEWER,
    conn_args,
    ibdtool,
    json_lines,
)

SCHEMA = "ünï©ødé b`tick 中文"
TABLES = ("ünï©ødé", "a b", "表格", "Ωmega-ß", "Ⅻ ⓐ Ｆ")
PARTITIONED = "párt"
PARTITION_DDL = (
    "PARTITION BY RANGE (id) SUBPARTITION BY HASH (id) SUBPARTITIONS 2 "
    "(PARTITION `p ü0` VALUES LESS THAN (1000), PARTITION P1 VALUES LESS THAN MAXVALUE)"
)
EMOJI = "t\U0001f600"
ROWS = 3000
#: each server's tests run on the one xdist worker that owns it
SERVERS = [
    *(pytest.param(n, marks=pytest.mark.xdist_group(n)) for n in ("mariadb", "mysql80", "mysql57")),
    *NEWER,
]


def q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _populate(srv: ThrowawayServer) -> None:
    """The schema with its tables, once per server (the fixtures live for the session)."""
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {q(SCHEMA)}")
        cur.execute(f"CREATE DATABASE {q(SCHEMA)}")
        rows = [(i, f"row {i} " + "x" * 80) for i in range(1, ROWS + 1)]
        for t in (*TABLES, PARTITIONED):
            ddl = PARTITION_DDL if t == PARTITIONED else ""
            cur.execute(
                f"CREATE TABLE {q(SCHEMA)}.{q(t)} (id INT PRIMARY KEY, v VARCHAR(100)) "
                f"ENGINE=InnoDB {ddl}"
            )
            cur.executemany(f"INSERT INTO {q(SCHEMA)}.{q(t)} VALUES (%s, %s)", rows)


@pytest.fixture
def named(request: pytest.FixtureRequest) -> ThrowawayServer:
    srv: ThrowawayServer = request.getfixturevalue(request.param)
    if not srv.query("SHOW DATABASES LIKE %s", (SCHEMA,)):
        _populate(srv)
    return srv


def _catalog(srv: ThrowawayServer) -> set[tuple[str, str | None, str | None]]:
    """(table, partition, sub-partition) of every file-per-table tablespace, from I_S."""
    rows = srv.query(
        "SELECT TABLE_NAME, PARTITION_NAME, SUBPARTITION_NAME FROM information_schema.PARTITIONS "
        "WHERE TABLE_SCHEMA = %s",
        (SCHEMA,),
    )
    return {(str(t), p, s) for t, p, s in rows}


def _as_in_files(
    catalog: set[tuple[str, str | None, str | None]], lower: bool
) -> set[tuple[str, str | None, str | None]]:
    """The catalog's names as the files can hold them: MySQL 8.0.17+ lower-cases partitions'."""
    if not lower:
        return catalog
    return {(t, p and p.lower(), s and s.lower()) for t, p, s in catalog}


def _files(srv: ThrowawayServer) -> list[str]:
    assert srv.datadir is not None
    folder = Path(srv.datadir) / filename.encode(SCHEMA)
    return sorted(f.removesuffix(".ibd") for f in os.listdir(folder) if f.endswith(".ibd"))


@pytest.mark.parametrize("named", SERVERS, indirect=True)
def test_the_files_the_servers_wrote_decode_to_the_catalog_names_and_back(
    named: ThrowawayServer,
) -> None:
    assert named.datadir is not None
    folders = os.listdir(named.datadir)
    assert filename.encode(SCHEMA) in folders
    assert filename.decode(filename.encode(SCHEMA), strict=True) == SCHEMA
    catalog = _catalog(named)
    assert {t for t, _, _ in catalog} >= {*TABLES, PARTITIONED}
    assert len([c for c in catalog if c[0] == PARTITIONED]) == 4
    files = _files(named)
    decoded = set()
    for stem in files:
        f = filename.split_table_file(stem)
        decoded.add((f.table, f.partition, f.subpartition))
    lower = any("#p#" in f for f in files)
    assert lower == (parse_flavor(str(named.server_version)).partition_separator == "#p#")
    assert decoded == _as_in_files(catalog, lower)
    encoded = {filename.table_file_stem(t, p, s, lower_separators=lower) for t, p, s in catalog}
    assert encoded == set(files)


@pytest.mark.parametrize("named", SERVERS, indirect=True)
def test_an_emoji_is_refused_or_stored_as_a_question_mark(named: ThrowawayServer) -> None:
    with pytest.raises(filename.FilenameError):
        filename.encode(EMOJI)
    sql = f"CREATE TABLE {q(SCHEMA)}.{q(EMOJI)} (id INT PRIMARY KEY)"
    if named.flavor == "mariadb":
        with pytest.raises(pymysql.err.MySQLError) as exc:
            named.query(sql)
        assert exc.value.args[0] == 1300  # ER_INVALID_CHARACTER_STRING
        return
    # MySQL converts the identifier to utf8mb3 and keeps "?" for what it cannot hold
    if not [r for r in named.query("SHOW TABLES FROM " + q(SCHEMA)) if r[0] == "t?"]:
        named.query(sql)
    assert ("t?", None, None) in _catalog(named)
    assert "t@003f" in _files(named)


@pytest.mark.xdist_group("mariadb")
def test_every_bmp_character_as_mariadb_encodes_it(mariadb: ThrowawayServer) -> None:
    chars = [chr(cp) for cp in range(1, 0x10000) if not 0xD800 <= cp <= 0xDFFF]
    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE DATABASE IF NOT EXISTS charprobe")
        cur.execute("DROP TABLE IF EXISTS charprobe.c")
        cur.execute(
            "CREATE TABLE charprobe.c (cp INT PRIMARY KEY, "
            "c VARCHAR(1) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)"
        )
        for i in range(0, len(chars), 5000):
            cur.executemany(
                "INSERT INTO charprobe.c VALUES (%s, %s)",
                [(ord(c), c) for c in chars[i : i + 5000]],
            )
        cur.execute("SELECT cp, CAST(CONVERT(c USING filename) AS BINARY) FROM charprobe.c")
        server = {int(cp): bytes(b).decode("ascii") for cp, b in cur.fetchall()}
    assert len(server) == len(chars)
    mine = {ord(c): filename.encode(c) for c in chars}
    differ = {cp: (server[cp], mine[cp]) for cp in server if server[cp] != mine[cp]}
    assert not differ, list(differ.items())[:10]
    assert sum(len(v) == 3 for v in server.values()) > 1000  # the two-character codes are there


@pytest.mark.parametrize("named", SERVERS, indirect=True)
def test_server_tables_shows_their_sizes(named: ThrowawayServer) -> None:
    names = ", ".join(f"{q(SCHEMA)}.{q(t)}" for t in (*TABLES, PARTITIONED))
    with named.connect() as conn, conn.cursor() as cur:
        # the files held still while both read them: fresh tables' pages are still being
        # written (seen: st_blocks grew by 96 KiB between the command and the test's stat)
        cur.execute(f"FLUSH TABLES {names} FOR EXPORT")
        try:
            res = ibdtool("server", "tables", "--json", "--schema", SCHEMA, *conn_args(named))
            assert res.returncode == 0, res.stderr
            got = {t["table"]: t for t in json.loads(res.stdout) if "table" in t}
            stats = {
                sp["local_path"]: os.stat(sp["local_path"])
                for t in got.values()
                for sp in t.get("tablespaces") or []
                if sp.get("local_path")
            }
        finally:
            cur.execute("UNLOCK TABLES")
    assert set(TABLES) | {PARTITIONED} <= set(got)
    for name in (*TABLES, PARTITIONED):
        t = got[name]
        assert t["file_size"] and t["allocated_size"] is not None, t
        n_files = 4 if name == PARTITIONED else 1
        assert len(t["tablespaces"]) == n_files
        for sp in t["tablespaces"]:
            # the file's own size (MySQL 8.0.15's catalog says 0 for non-ASCII names)
            st = stats[sp["local_path"]]
            assert (sp["file_size"], sp["allocated_size"]) == (st.st_size, st.st_blocks * 512)
    parts = {sp["partition"] for sp in got[PARTITIONED]["tablespaces"]}
    assert parts == {f"{p}/{s}" for t, p, s in _catalog(named) if t == PARTITIONED}


@pytest.mark.parametrize("named", SERVERS, indirect=True)
def test_report_shows_the_real_names(named: ThrowawayServer) -> None:
    assert named.datadir is not None
    folder = Path(named.datadir) / filename.encode(SCHEMA)
    names = ", ".join(f"{q(SCHEMA)}.{q(t)}" for t in (*TABLES, PARTITIONED))
    with named.connect() as conn, conn.cursor() as cur:
        cur.execute(f"FLUSH TABLES {names} FOR EXPORT")  # fresh tables: pages still in memory
        try:
            res = ibdtool("report", "--format", "json", str(folder))
        finally:
            cur.execute("UNLOCK TABLES")
    assert res.returncode in (0, 1), res.stderr
    rows = json.loads(res.stdout)["tablespaces"]
    assert {r["schema"] for r in rows} == {SCHEMA}
    got = set()
    for r in rows:
        part, _, sub = (r["partition"] or "").partition("/")
        got.add((r["table"], part or None, sub or None))
    # MySQL 8.0.17+ file names hold the partitions lower-cased: the report takes the SDI's case
    assert got == _catalog(named)


@pytest.mark.parametrize("named", SERVERS, indirect=True)
def test_migrate_converts_and_verifies_a_non_ascii_table(named: ThrowawayServer) -> None:
    table = f"{q(SCHEMA)}.{q(TABLES[0])}"
    target = "page:zlib"
    res = ibdtool(
        "migrate", table, "--to", target, "--execute", "--yes", "--json", "--force",
        "--flush-for-export", *conn_args(named),
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    done = [e for e in json_lines(res.stdout) if e.get("event") == "table_done"]
    assert len(done) == 1 and done[0]["result"]["verified"] is True, done
