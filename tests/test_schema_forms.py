"""``--schema`` reads every form of CREATE TABLE a DBA pastes, checked on real servers.

Oracles: throwaway MySQL 5.7.22, MySQL 8.0.33, MariaDB 10.11 and MariaDB 11.4 servers. Each
form below — hand-written the ways people write it (keys on the column itself and at the end,
named constraints, KEY with prefix lengths and DESC, generated and invisible columns, CHECK,
COMMENT, charset and collation clauses, a partitioning clause, comments in the text) — is
created on the server and filled. Then the file is read with three texts of its definition:
the hand-written one, ``SHOW CREATE TABLE``'s and a ``mariadb-dump --no-data`` file's; each
must give the rows ``SELECT`` gives (MySQL 8 files carry their SDI, which ``records`` prefers:
there the record layout each text gives must equal the one the SDI gives).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ibdtool.parsers.ddl import parse_create_table, parse_create_tables
from samples.servers import ThrowawayServer
from tests.server_fixtures import (
    ibdtool,
    json_lines,
    server_param,
)

SCHEMA = "forms"


@dataclass(frozen=True)
class Form:
    name: str
    create: str  # {t}: the table's name
    insert: str  # {t}; rows made with id = 1..N
    servers: tuple[str, ...] = ("mysql", "mariadb")
    min_mysql: int = 0  # e.g. 80023 for INVISIBLE
    partition: str = ""  # read this partition's file


ROWS = 120
FORMS = [
    Form(
        "inline",
        """CREATE TABLE {t} (
          id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY COMMENT 'the id',
          code CHAR(4) CHARACTER SET latin1 COLLATE latin1_bin NOT NULL UNIQUE,
          name VARCHAR(50) CHARSET utf8mb4 COLLATE utf8mb4_bin DEFAULT 'x' COMMENT 'a name',
          price DECIMAL(9,3) DEFAULT '0.000', -- a price
          made DATETIME(3) NULL DEFAULT NULL, /* when */ flag BOOL NOT NULL DEFAULT 0
        ) ENGINE=InnoDB AUTO_INCREMENT=5 DEFAULT CHARSET=latin1 COMMENT='forms'""",
        "INSERT INTO {t} (code, name, price, made, flag) SELECT CONCAT('c', n), "
        "CONCAT('näme ', n), n * 1.25, '2024-01-02 03:04:05.678', n % 2 FROM {seq}",
    ),
    Form(
        "keys_at_end",
        """create table {t} (
          id bigint not null, a varchar(100) not null, b text, c int, d double precision,
          constraint pk primary key (id), index ia (a(10)), key ib (b(20), c desc)
            comment 'prefix', constraint uq unique key (c), constraint chk check (c >= 0)
        ) engine = InnoDB default character set = utf8mb4 collate = utf8mb4_unicode_ci
          row_format = dynamic stats_persistent = 0""",
        "INSERT INTO {t} SELECT n, REPEAT('a', n % 90), REPEAT('bé', n), n * 3, n / 7 FROM {seq}",
    ),
    Form(
        "generated",
        """CREATE TABLE {t} (id INT NOT NULL PRIMARY KEY, a INT NOT NULL,
          v INT AS (a * 2) VIRTUAL, s INT GENERATED ALWAYS AS (a + 1) STORED,
          w VARCHAR(20) AS (CONCAT('w', a)) STORED, z INT, KEY kv (v), KEY ka (a))""",
        "INSERT INTO {t} (id, a, z) SELECT n, n * 5, IF(n % 3, n, NULL) FROM {seq}",
    ),
    Form(
        "invisible",
        """CREATE TABLE {t} (id INT NOT NULL, secret VARCHAR(10) INVISIBLE DEFAULT 'hid',
          v INT, PRIMARY KEY (id)) ENGINE=InnoDB""",
        "INSERT INTO {t} (id, secret, v) SELECT n, CONCAT('s', n), n FROM {seq}",
        min_mysql=80023,
    ),
    Form(
        "partitioned",
        """CREATE TABLE {t} (id INT NOT NULL, d DATE NOT NULL, v VARCHAR(20),
          PRIMARY KEY (id, d)) ENGINE=InnoDB
          PARTITION BY RANGE (YEAR(d)) (PARTITION p0 VALUES LESS THAN (2020) ENGINE = InnoDB,
            PARTITION p1 VALUES LESS THAN MAXVALUE)""",
        "INSERT INTO {t} SELECT n, DATE_ADD('2019-10-01', INTERVAL n DAY), CONCAT('v', n) "
        "FROM {seq}",
        partition="p0",
    ),
    Form(
        "unique_clustered",
        """CREATE TABLE {t} (a INT NOT NULL, b VARCHAR(10), c INT, UNIQUE KEY ua (a),
          KEY (c)) ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8""",
        "INSERT INTO {t} SELECT n, CONCAT('b', n), n % 7 FROM {seq}",
    ),
    Form(
        "no_key",
        "CREATE TABLE {t} (a INT, b CHAR(3) CHARACTER SET utf8mb4, c YEAR, d ENUM('x','y'))",
        "INSERT INTO {t} SELECT n, 'abc', 2000 + n % 50, IF(n % 2, 'x', 'y') FROM {seq}",
    ),
    Form(
        "expression_default",
        """CREATE TABLE {t} (id INT PRIMARY KEY, j VARCHAR(40) DEFAULT (CONCAT('d', 1)),
          t TIMESTAMP(2) NOT NULL DEFAULT CURRENT_TIMESTAMP(2) ON UPDATE CURRENT_TIMESTAMP(2),
          k INT CHECK (k > -1000), KEY ((id + k)))""",
        "INSERT INTO {t} (id, k) SELECT n, n FROM {seq}",
        servers=("mysql",),
        min_mysql=80013,
    ),
]

SERVERS = [
    pytest.param("mysql57", marks=pytest.mark.xdist_group("mysql57"), id="mysql-5.7.22"),
    server_param("mysql8033", "mysql-8.0.33"),
    pytest.param("mariadb", marks=pytest.mark.xdist_group("mariadb"), id="mariadb-10.11"),
    server_param("mariadb114", "mariadb-11.4"),
]


def _version(srv: ThrowawayServer) -> int:
    major, minor, patch = (int(x) for x in srv.version.split(".")[:3])
    return major * 10000 + minor * 100 + patch


def _applies(form: Form, srv: ThrowawayServer) -> bool:
    if srv.flavor not in form.servers:
        return False
    return not (srv.flavor == "mysql" and _version(srv) < form.min_mysql)


def _seq(cur: Any) -> str:
    cur.execute("DROP TABLE IF EXISTS seq")
    cur.execute("CREATE TABLE seq (n INT PRIMARY KEY)")
    cur.executemany("INSERT INTO seq VALUES (%s)", [(i,) for i in range(1, ROWS + 1)])
    return "seq"


def _dump(srv: ThrowawayServer, table: str, out: Path) -> Path:
    res = subprocess.run(
        ["mariadb-dump", "--no-defaults", f"--socket={srv.socket}", "-uroot", "--no-data",
         "--skip-comments", SCHEMA, table],
        capture_output=True, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr.decode()[-500:]
    out.write_bytes(res.stdout)
    return out


def _layout(defn: Any) -> list[tuple[Any, ...]]:
    return [
        (f.column.name, f.fixed_len(True), f.column.nullable, f.prefix, f.column.kind.value)
        for f in defn.clustered.fields
    ]


@pytest.mark.parametrize("flavor", SERVERS)
def test_every_form_of_create_table_reads_the_file(
    flavor: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    srv: ThrowawayServer = request.getfixturevalue(flavor)
    done = []
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS `{SCHEMA}`")
        cur.execute(f"USE `{SCHEMA}`")
        seq = _seq(cur)
        for form in FORMS:
            if not _applies(form, srv):
                continue
            t = form.name
            cur.execute(f"DROP TABLE IF EXISTS `{t}`")
            hand = form.create.format(t=f"`{t}`")
            cur.execute(hand)
            cur.execute(form.insert.format(t=f"`{t}`", seq=seq))
            cur.execute(f"SHOW CREATE TABLE `{t}`")
            shown = cur.fetchall()[0][1]
            dump = _dump(srv, t, tmp_path / f"{t}.sql")
            texts = {"hand": hand, "show": shown, "dump": "@" + str(dump)}
            if srv.flavor == "mysql" and srv.version.startswith("8."):
                _same_layout_as_sdi(srv, t, form, texts)
                done.append(t)
                continue
            part = f" PARTITION ({form.partition})" if form.partition else ""
            cur.execute(f"FLUSH TABLES `{t}` FOR EXPORT")
            try:
                path = _file(srv, t, form.partition)
                outs = {k: ibdtool("records", str(path), "--json", "--schema", v)
                        for k, v in texts.items()}  # fmt: skip
                cols: list[str] = []
                for k, res in outs.items():
                    assert res.returncode == 0, (t, k, res.stderr[-1500:])
                    docs = json_lines(res.stdout)
                    cols = list(docs[0]["fields"])
                    select = ", ".join(f"CAST(`{c}` AS CHAR)" for c in cols)
                    cur.execute(f"SELECT {select} FROM `{t}`{part}")
                    want = sorted((tuple(r) for r in cur.fetchall()), key=_key)
                    got = sorted(
                        (
                            tuple(None if v is None else _text(v) for v in d["fields"].values())
                            for d in docs
                        ),
                        key=_key,
                    )
                    assert got == want, (t, k, got[:2], want[:2])
                    assert len(got) >= ROWS // 4, (t, k)
            finally:
                cur.execute("UNLOCK TABLES")
            done.append(t)
    assert len(done) >= 6, done


def _text(v: Any) -> str:
    """A JSON value as the server's text: a DOUBLE that is whole prints without ".0"."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _key(row: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple("" if v is None else str(v) for v in row)


def _file(srv: ThrowawayServer, table: str, partition: str) -> Path:
    if not partition:
        return srv.file_path(SCHEMA, table)
    found = [
        p for p in srv.file_path(SCHEMA, table).parent.glob(f"{table}#*")
        if p.name.lower().endswith(f"#{partition}.ibd")
    ]  # fmt: skip
    assert len(found) == 1, found
    return found[0]


def _same_layout_as_sdi(
    srv: ThrowawayServer, table: str, form: Form, texts: dict[str, str]
) -> None:
    """MySQL 8: the layout each text gives is the one the server's data dictionary gives."""
    from ibdtool.tablespace import Tablespace, definition_from_sdi

    path = _file(srv, table, form.partition)
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute(f"FLUSH TABLES `{SCHEMA}`.`{table}` FOR EXPORT")
        try:
            with Tablespace(str(path)) as ts:
                sdi = definition_from_sdi(ts)
        finally:
            cur.execute("UNLOCK TABLES")
    assert sdi is not None
    for k, text in texts.items():
        if text.startswith("@"):
            tables, failed = parse_create_tables(Path(text[1:]).read_text())
            assert not failed, (table, failed)
            (defn,) = [d for d in tables if d.name == table]
        else:
            defn = parse_create_table(text)
        assert _layout(defn) == _layout(sdi), (table, k)
        assert [c.name for c in defn.columns] == [c.name for c in sdi.columns], (table, k)
