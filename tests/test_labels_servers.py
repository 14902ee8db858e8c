"""Labels of every tablespace in a live server's data directory, against what the server says.

The server's own catalogs are the oracle: MySQL 8's ``INNODB_TABLESPACES`` (space id, name,
SPACE_TYPE System/Single/General/Undo), ``INNODB_SESSION_TEMP_TABLESPACES`` (the ``.ibt``
files), ``INNODB_TABLES.ROW_FORMAT`` and ``VERSION()``; MariaDB's ``INNODB_SYS_TABLESPACES`` and
``INNODB_SYS_TABLES``. Files are read while the server runs (page 0 of every file is on disk
from its creation; the tables are flushed with ``FLUSH TABLES … FOR EXPORT``).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ibdtool.tablespace.inspect import inspect_path
from samples.servers import ThrowawayServer
from tests.server_fixtures import server_param

ROW_FORMATS = ("REDUNDANT", "COMPACT", "DYNAMIC")


def _make_tables(srv: ThrowawayServer, schema: str) -> None:
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS {schema}")
        for rf in ROW_FORMATS:
            t = f"{schema}.t_{rf.lower()}"
            cur.execute(f"DROP TABLE IF EXISTS {t}")
            cur.execute(
                f"CREATE TABLE {t} (id INT PRIMARY KEY, a VARCHAR(40), KEY ka(a)) ROW_FORMAT={rf}"
            )
            cur.execute(f"INSERT INTO {t} VALUES (1, 'one'), (2, 'two'), (3, 'three')")
        cur.execute(f"DROP TABLE IF EXISTS {schema}.ft")
        cur.execute(f"CREATE TABLE {schema}.ft (id INT PRIMARY KEY, a TEXT, FULLTEXT KEY fa(a))")
        cur.execute(f"INSERT INTO {schema}.ft VALUES (1, 'hello world')")
        conn.commit()


def _written(path: Path) -> Path:
    """Wait (120 s at most: the page cleaner is slow on a loaded machine) until the server has
    written page 0 (MariaDB writes it through the buffer pool: an FTS auxiliary table's may
    wait for the page cleaner)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with path.open("rb") as fh:
            if any(fh.read(4096)):
                return path
        time.sleep(0.5)
    raise AssertionError(f"{path}: page 0 never written")


def _flushed(srv: ThrowawayServer, schema: str) -> object:
    conn = srv.connect()
    tables = ", ".join(f"{schema}.t_{rf.lower()}" for rf in ROW_FORMATS)
    conn.cursor().execute(f"FLUSH TABLES {tables} FOR EXPORT")
    return conn


@pytest.fixture
def srv(request: pytest.FixtureRequest) -> ThrowawayServer:
    server: ThrowawayServer = request.getfixturevalue(request.param)
    return server


@pytest.mark.parametrize(
    "srv", [server_param("mysql80", "8.0.15"), server_param("mysql8033", "8.0.33")], indirect=True
)
def test_mysql8_datadir(srv: ThrowawayServer) -> None:
    datadir = Path(str(srv.datadir))
    _make_tables(srv, "lbl")
    version = str(srv.query("SELECT VERSION()")[0][0]).split("-")[0]
    row_format = {
        int(space): str(rf).upper()
        for space, rf in srv.query("SELECT SPACE, ROW_FORMAT FROM information_schema.INNODB_TABLES")
    }
    spaces = srv.query("SELECT SPACE, NAME, SPACE_TYPE FROM information_schema.INNODB_TABLESPACES")
    with srv.connect() as keep, keep.cursor() as cur:
        cur.execute("CREATE TEMPORARY TABLE lbl.tmp (id INT PRIMARY KEY) ENGINE=InnoDB")
        cur.execute("INSERT INTO lbl.tmp VALUES (1)")
        cur.execute(  # this session's (8.0.33 also lists the pool's unused, never written)
            "SELECT SPACE, PATH FROM information_schema.INNODB_SESSION_TEMP_TABLESPACES "
            "WHERE ID = CONNECTION_ID()"
        )
        temps = cur.fetchall()
        flush = _flushed(srv, "lbl")
        files: list[tuple[Path, int, str]] = []
        for space, name, stype in spaces:
            if name == "innodb_temporary":
                files.append((datadir / "ibtmp1", int(space), "temporary"))
            elif stype == "System":
                files.append((datadir / "ibdata1", int(space), "system"))
            elif stype == "Undo":
                files.append((datadir / str(name).replace("innodb_undo", "undo"), space, "undo"))
            elif name == "mysql":
                files.append((datadir / "mysql.ibd", int(space), "dictionary"))
            elif stype == "Single" and str(name).startswith("lbl/"):
                kind = "fts" if "/fts_" in str(name) else "table"
                files.append((datadir / f"{name}.ibd", int(space), kind))
        files += [(datadir / str(p), int(i), "temporary") for i, p in temps]
        if not any(k == "system" for *_, k in files):  # 8.0.15 does not list innodb_system
            files.append((datadir / "ibdata1", 0, "system"))
        kinds = {k for *_, k in files}
        assert kinds == {"system", "undo", "dictionary", "table", "fts", "temporary"}
        for path, space, kind in files:
            # ibtmp1's page 0 reaches the disk some time after the server starts
            r = inspect_path(_written(path) if kind == "temporary" else path, jobs=1)
            assert (r.fmt.space_id, r.kind) == (space, kind), path
            assert r.vendor.value == "mysql"
            assert r.label.startswith(f"MySQL {version.split('.')[0]} ({version})"), r.label
            if kind == "table":
                assert r.row_format == row_format[space], path
        flush.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "srv", [server_param("mariadb", "10.11"), server_param("mariadb114", "11.4")], indirect=True
)
def test_mariadb_datadir(srv: ThrowawayServer) -> None:
    datadir = Path(str(srv.datadir))
    srv.query("SET GLOBAL innodb_max_dirty_pages_pct = 0")  # FTS tables' page 0 written soon
    srv.query("SET GLOBAL innodb_checksum_algorithm = crc32")
    try:
        _make_tables(srv, "lbl_classic")
    finally:
        srv.query("SET GLOBAL innodb_checksum_algorithm = full_crc32")
    _make_tables(srv, "lbl")
    row_format = {
        str(name): str(rf).upper()
        for name, rf in srv.query(
            "SELECT NAME, ROW_FORMAT FROM information_schema.INNODB_SYS_TABLES"
        )
    }
    spaces = {
        str(name): int(space)
        for space, name in srv.query(
            "SELECT SPACE, NAME FROM information_schema.INNODB_SYS_TABLESPACES"
        )
    }
    conn = _flushed(srv, "lbl")
    conn2 = _flushed(srv, "lbl_classic")
    try:
        for schema, server in (
            ("lbl", "MariaDB 10.4+ full_crc32"),
            ("lbl_classic", "MariaDB classic"),
        ):
            for rf in ROW_FORMATS:
                name = f"{schema}/t_{rf.lower()}"
                r = inspect_path(datadir / f"{name}.ibd", jobs=1)
                assert r.fmt.space_id == spaces[name]
                assert (r.vendor.value, r.label, r.kind) == ("mariadb", server, "table"), name
                assert row_format[name] == rf
                assert r.row_format in (rf, "DYNAMIC or COMPACT" if rf != "REDUNDANT" else rf)
            fts = [n for n in spaces if n.lower().startswith(f"{schema}/fts_")]
            assert fts
            for name in fts:
                r = inspect_path(_written(datadir / f"{name}.ibd"), jobs=1)
                assert r.kind == "fts" and r.label.startswith(server), name
    finally:
        conn.close()  # type: ignore[attr-defined]
        conn2.close()  # type: ignore[attr-defined]
    system = inspect_path(datadir / "ibdata1", jobs=1)
    assert (system.fmt.space_id, system.kind, system.vendor.value) == (0, "system", "mariadb")
