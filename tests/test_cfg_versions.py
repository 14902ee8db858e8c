"""``.cfg`` files as each server writes them, read by ``ibdtool.parsers.cfg``, against the server's
catalog.

Oracles: throwaway MariaDB 10.11, MySQL 5.7.22, 8.0.15 and 8.0.33 servers. One table with most
column types and three indexes is exported with ``FLUSH TABLES … FOR EXPORT``; on MySQL 8 it also
went through instant ADD COLUMN, and on 8.0.33 through instant DROP COLUMN (of an ENUM and a
VARBINARY: the V7 file keeps what the dictionary knew of them). The whole file must parse to its
last byte; its columns (names in order, NULL-ability, sign, charset, type) must be what
``information_schema.COLUMNS`` lists, its indexes (name, id, root page) what
``INNODB_SYS_INDEXES`` / ``INNODB_INDEXES`` list, and on 8.0.33 the row version and the instant
column counts what ``INNODB_TABLES`` says; the rows read with the 8.0.33 ``.cfg`` as the only
definition (dropped columns, physical order) must be the rows ``SELECT`` returns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from construct import Struct, Terminated

from ibdtool.parsers.cfg import CfgError, CfgFile, parse_cfg, read_cfg
from ibdtool.parsers.tabledef import Kind
from ibdtool.tablespace.records import RecordsRun, open_records
from samples import servers
from tests.server_fixtures import ibdtool

SCHEMA = "cfgv"
WHOLE = Struct("cfg" / CfgFile, Terminated)  # every byte of the file accounted for

KINDS = {
    "int": Kind.INT, "bigint": Kind.INT, "smallint": Kind.INT, "tinyint": Kind.INT,
    "varchar": Kind.VARCHAR, "varbinary": Kind.VARCHAR, "char": Kind.CHAR, "binary": Kind.CHAR,
    "text": Kind.BLOB, "blob": Kind.BLOB, "longtext": Kind.BLOB, "datetime": Kind.DATETIME,
    "date": Kind.DATE, "time": Kind.TIME, "timestamp": Kind.TIMESTAMP, "double": Kind.DOUBLE,
    "float": Kind.FLOAT, "decimal": Kind.RAW, "enum": Kind.ENUM, "json": Kind.JSON,
    "year": Kind.YEAR,
}  # fmt: skip
VERSIONS = {"mariadb": 1, "5.7.22": 1, "8.0.15": 3, "8.0.33": 7}


def _export(srv: servers.ThrowawayServer, tmp: Path) -> dict[str, Any]:
    mysql8 = srv.flavor == "mysql" and srv.version.startswith("8.")
    json_col = ", j JSON" if srv.flavor == "mysql" else ""
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
        cur.execute(f"DROP TABLE IF EXISTS {SCHEMA}.t")
        cur.execute(
            f"CREATE TABLE {SCHEMA}.t (id INT UNSIGNED NOT NULL, a VARCHAR(30) CHARACTER SET "
            "utf8mb4, n BIGINT NOT NULL, c CHAR(4) CHARACTER SET latin1, tx TEXT CHARACTER SET "
            "utf8mb4, bl BLOB, dt DATETIME(6), d DATE, tm TIME(2), ts TIMESTAMP NULL, "
            "dbl DOUBLE, dc DECIMAL(10,2), e ENUM('x','y'), y YEAR, vb VARBINARY(8)"
            f"{json_col}, PRIMARY KEY (id), UNIQUE KEY ua (a), KEY kn (n, c)) ENGINE=InnoDB"
        )
        cur.executemany(
            f"INSERT INTO {SCHEMA}.t (id, a, n, c, e) VALUES (%s, %s, %s, %s, %s)",
            [(i, f"a{i}", -i, "cc", "y") for i in range(1, 101)],
        )
        if mysql8:
            cur.execute(f"ALTER TABLE {SCHEMA}.t ADD COLUMN z INT DEFAULT 9, ALGORITHM=INSTANT")
        if srv.version == "8.0.33":
            cur.execute(
                f"ALTER TABLE {SCHEMA}.t ADD COLUMN w ENUM('p','q','r') DEFAULT 'r' FIRST, "
                "ALGORITHM=INSTANT"
            )
            cur.execute(f"INSERT INTO {SCHEMA}.t (id, a, n, w) VALUES (500, 'mid', 5, 'p')")
            cur.execute(f"ALTER TABLE {SCHEMA}.t DROP COLUMN e, DROP COLUMN vb, ALGORITHM=INSTANT")
            cur.execute(f"INSERT INTO {SCHEMA}.t (id, n, z) VALUES (600, 6, 66)")
        cur.execute(
            "SELECT COLUMN_NAME, IS_NULLABLE, COLUMN_TYPE, DATA_TYPE, CHARACTER_SET_NAME "
            "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 't' "
            "ORDER BY ORDINAL_POSITION",
            (SCHEMA,),
        )
        columns = list(cur.fetchall())
        if mysql8:
            cur.execute(
                "SELECT i.INDEX_ID, i.NAME, i.PAGE_NO FROM information_schema.INNODB_INDEXES i "
                "JOIN information_schema.INNODB_TABLES t ON t.TABLE_ID = i.TABLE_ID "
                "WHERE t.NAME = %s",
                (f"{SCHEMA}/t",),
            )
        else:
            cur.execute(
                "SELECT i.INDEX_ID, i.NAME, i.PAGE_NO FROM information_schema.INNODB_SYS_INDEXES i "
                "JOIN information_schema.INNODB_SYS_TABLES t ON t.TABLE_ID = i.TABLE_ID "
                "WHERE t.NAME = %s",
                (f"{SCHEMA}/t",),
            )
        indexes = {str(n): (int(i), int(p)) for i, n, p in cur.fetchall()}
        instant = None
        if srv.version == "8.0.33":
            cur.execute(
                "SELECT TOTAL_ROW_VERSIONS, INSTANT_COLS FROM information_schema.INNODB_TABLES "
                "WHERE NAME = %s",
                (f"{SCHEMA}/t",),
            )
            instant = cur.fetchall()[0]
        cur.execute(f"FLUSH TABLES {SCHEMA}.t FOR EXPORT")
        try:
            src = srv.file_path(SCHEMA, "t")
            cfg = src.with_suffix(".cfg").read_bytes()
            ibd = tmp / "t.ibd"
            ibd.write_bytes(src.read_bytes())
            cur.execute(f"SELECT id, n, z FROM {SCHEMA}.t ORDER BY id" if mysql8 else "SELECT 1")
            rows = list(cur.fetchall())
        finally:
            cur.execute("UNLOCK TABLES")
    (tmp / "t.cfg").write_bytes(cfg)
    return {"cfg": cfg, "columns": columns, "indexes": indexes, "instant": instant,
            "ibd": ibd, "rows": rows}  # fmt: skip


def _check(srv: servers.ThrowawayServer, tmp: Path) -> dict[str, Any]:
    made = _export(srv, tmp)
    data = made["cfg"]
    whole: Any = WHOLE.parse(data)
    key = "mariadb" if srv.flavor == "mariadb" else srv.version
    assert whole.cfg.version == VERSIONS[key]
    table = parse_cfg(data)
    assert [c.name for c in table.columns] == [str(r[0]) for r in made["columns"]]
    for col, (name, nullable, ctype, dtype, charset) in zip(
        table.columns, made["columns"], strict=True
    ):
        assert col.nullable == (nullable == "YES"), name
        if col.kind is Kind.INT:  # the flag is also set on other types, where it means nothing
            assert col.unsigned == ("unsigned" in str(ctype)), name
        assert col.kind is KINDS[str(dtype)], (name, col.kind, dtype)
        if charset is not None and col.kind in (Kind.CHAR, Kind.VARCHAR):
            assert col.charset is not None and col.charset.name == charset, name
        if str(dtype) == "datetime":
            assert col.fsp == 6
    got = {ix.name: (ix.index_id, ix.root) for ix in table.indexes}
    assert got == made["indexes"]
    return made


@pytest.mark.xdist_group("mariadb")
def test_mariadb_cfg(mariadb: servers.ThrowawayServer, tmp_path: Path) -> None:
    _check(mariadb, tmp_path)


@pytest.mark.xdist_group("mysql57")
def test_mysql57_cfg(mysql57: servers.ThrowawayServer, tmp_path: Path) -> None:
    _check(mysql57, tmp_path)


@pytest.mark.xdist_group("mysql80")
def test_mysql8015_cfg(mysql80: servers.ThrowawayServer, tmp_path: Path) -> None:
    made = _check(mysql80, tmp_path)
    cols = {c.name: c for c in parse_cfg(made["cfg"]).columns}
    assert cols["z"].instant and cols["z"].default == (0x80000009).to_bytes(4, "big")


@pytest.mark.xdist_group("mysql8033")
def test_mysql8033_cfg_v7_with_dropped_columns(
    mysql8033: servers.ThrowawayServer, tmp_path: Path
) -> None:
    made = _check(mysql8033, tmp_path)
    cfg: Any = read_cfg(made["cfg"])
    total_versions, instant_cols = made["instant"]
    assert cfg.instant.row_version == int(total_versions) == 3
    assert instant_cols == 0  # INSTANT_COLS counts the pre-8.0.29 kind only
    dropped = [c for c in cfg.columns if c.instant.version_dropped != 0xFF]
    assert len(dropped) == cfg.instant.n_dropped == 2
    by_type = {c.instant.dropped.dd_type: c.instant.dropped for c in dropped}
    assert [s.rstrip("\x00") for s in by_type[22].elements] == ["x", "y"]  # the ENUM's members
    assert by_type[16].char_length == 8  # VARBINARY(8)
    # rows from the .cfg alone: dropped columns laid out where they are stored
    table = parse_cfg(made["cfg"])
    assert table.versioned
    run = open_records(str(made["ibd"]))  # the SDI chooses the index's pages
    try:
        run = RecordsRun(run.ts, table, table.clustered, run.pages)
        events = list(run.events())
    finally:
        run.ts.close()
    assert not [e for e in events if e.problem or e.errors]
    got = [(e.fields["id"], e.fields["n"], e.fields["z"]) for e in events if e.fields]
    assert got == [tuple(r) for r in made["rows"]]


def test_unknown_versions_are_refused_in_one_line(tmp_path: Path) -> None:
    for version in (0, 9, 99, 0xFFFFFFFF):
        with pytest.raises(CfgError, match=f"version {version} is not supported"):
            parse_cfg(version.to_bytes(4, "big") + bytes(60))
    from tests.conftest import corpus_file

    maria = corpus_file("mariadb-10.11/p16k-plain-1000rows.ibd")
    copy = tmp_path / "t.ibd"
    copy.write_bytes(maria.read_bytes())
    cfg = bytearray(maria.with_suffix(".cfg").read_bytes())
    cfg[:4] = (9).to_bytes(4, "big")
    (tmp_path / "t.cfg").write_bytes(bytes(cfg))
    res = ibdtool("records", str(copy))
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "version 9 is not supported (1–8 are)" in lines[0], lines
