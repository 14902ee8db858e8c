"""``ibdtool migrate`` on real MySQL 8.0.15 and 5.7.22 servers.

MySQL's ``COMPRESSION=`` only tags a table; the plan follows it with ``OPTIMIZE TABLE``. Each
conversion is checked on disk (``os.stat``, the page reader under FLUSH TABLES … FOR EXPORT), by
the server (SHOW CREATE TABLE, space ids) and by a CRC of every row.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from samples.servers import ThrowawayServer
from tests.server_fixtures import (
    BIG_DOUBLINGS,
    assert_format,
    assert_progress,
    conn_args,
    consumer_enabled,
    create_table_sql,
    ibdtool,
    make_table,
    measured,
    migrate_cli,
    on_disk,
    rows_crc,
    run_migration,
    space_id,
)

SERVERS = [
    pytest.param("mysql80", marks=pytest.mark.xdist_group("mysql80"), id="8.0.15"),
    pytest.param("mysql57", marks=pytest.mark.xdist_group("mysql57"), id="5.7.22"),
]


@pytest.fixture
def srv(request: pytest.FixtureRequest) -> ThrowawayServer:
    server: ThrowawayServer = request.getfixturevalue(request.param)
    return server


@pytest.mark.parametrize(
    ("srv", "extra"),
    [
        *(pytest.param(*p.values, (), marks=p.marks, id=p.id) for p in SERVERS),
        # 8.0.33's page cleaner leaves the last pages of the rebuilt table in the buffer pool
        # (ibdtool: awaiting_flush, 5 pages), as MariaDB's does: its pages verified under the lock
        pytest.param(
            "mysql8033", ("--flush-for-export",), marks=pytest.mark.xdist_group("mysql8033"),
            id="8.0.33",
        ),
    ],
    indirect=["srv"],
)  # fmt: skip
def test_conversions_plain_zlib_lz4_row8_none(srv: ThrowawayServer, extra: tuple[str, ...]) -> None:
    make_table(srv, "chain", "t", rows=20000)
    rows = rows_crc(srv, "chain", "t")
    plain = on_disk(srv, "chain", "t")
    assert_format(plain, "none")
    seen = {"none": plain}
    for target, present, absent, statements in (
        ("page:zlib", "COMPRESSION='zlib'", "ROW_FORMAT=COMPRESSED", ["ALTER", "OPTIMIZE"]),
        ("page:lz4", "COMPRESSION='lz4'", "ROW_FORMAT=COMPRESSED", ["ALTER", "OPTIMIZE"]),
        ("row:8", "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8", "COMPRESSION='lz4'", ["ALTER"]),
        # (5.7 and MariaDB keep KEY_BLOCK_SIZE=8 on each index, unused with DYNAMIC)
        ("none", "ROW_FORMAT=DYNAMIC", "ROW_FORMAT=COMPRESSED", ["ALTER"]),
    ):
        before = space_id(srv, "chain", "t")
        events = migrate_cli(srv, "chain.t", target, *extra)
        ran = [e["sql"].split()[0] for e in events if e["event"] == "statement_start"]
        assert [s for s in ran if s != "FLUSH"] == statements
        done = [e for e in events if e["event"] == "table_done"]
        assert len(done) == 1 and done[0]["result"]["verified"] is True, events[-3:]
        state = on_disk(srv, "chain", "t")
        assert_format(state, target)
        assert space_id(srv, "chain", "t") != before
        ddl = create_table_sql(srv, "chain", "t")
        assert present in ddl and absent not in ddl, ddl
        assert rows_crc(srv, "chain", "t") == rows
        seen[target] = state
    for target in ("page:zlib", "page:lz4"):
        # MySQL extends files with posix_fallocate: never-written pages stay allocated, so
        # compare the pages that hold data
        assert seen[target]["allocated"] < 0.85 * seen[target]["size"], seen[target]
        assert seen[target]["allocated"] < plain["allocated"]
    assert seen["row:8"]["size"] < 0.8 * plain["size"]
    assert seen["none"]["allocated"] >= 0.95 * seen["none"]["size"], seen["none"]


@pytest.mark.parametrize("srv", SERVERS, indirect=True)
def test_progress_from_performance_schema(srv: ThrowawayServer) -> None:
    make_table(srv, "big", "t", rows=20000, doublings=BIG_DOUBLINGS)
    assert consumer_enabled(srv) == "NO"
    events, m = run_migration(srv, [("big", "t")], "page:zlib", progress="auto", poll=0.2)
    assert_progress(events, m, "performance_schema")
    statements = [s.sql.split()[0] for s in m.results[0].statements[1:3]]
    assert statements == ["ALTER", "OPTIMIZE"]
    assert consumer_enabled(srv) == "NO"  # put back after the run
    # the fallback when performance_schema is off: the #sql-ib*.ibd file OPTIMIZE writes
    events, m = run_migration(srv, [("big", "t")], "none", progress="file", poll=0.2)
    assert_progress(events, m, "file")


@pytest.mark.xdist_group("mysql80")
def test_cancel_during_optimize_leaves_attribute_only(mysql80: ThrowawayServer) -> None:
    """OPTIMIZE reports a KILL as a result row, not an error: the table keeps its rows, the
    new attribute is set and the pages are not rewritten, and the report says so."""
    make_table(mysql80, "kill", "t", rows=20000, doublings=BIG_DOUBLINGS - 1)
    on_disk(mysql80, "kill", "t")  # flushed now, or dirty pages would be written as lz4 later
    before = (rows_crc(mysql80, "kill", "t"), space_id(mysql80, "kill", "t"))

    def cancel(ev: Any, migration: Any) -> None:
        if ev.kind == "progress" and ev.fraction and 0.05 < ev.fraction < 0.7:
            migration.cancel()

    events, m = run_migration(mysql80, [("kill", "t")], "page:lz4", poll=0.2, on_event=cancel)
    kinds = [e.kind for e in events]
    assert "killing" in kinds and m.interrupted
    result = m.results[0]
    assert result.status == "interrupted"
    assert "options now say page:lz4" in result.message
    assert "pages not rewritten: run again to finish" in result.message
    assert (rows_crc(mysql80, "kill", "t"), space_id(mysql80, "kill", "t")) == before
    assert "COMPRESSION='lz4'" in create_table_sql(mysql80, "kill", "t")
    state = on_disk(mysql80, "kill", "t")
    assert state["algorithms"].get("lz4", 0) <= 1  # only the SDI page, rewritten by the ALTER
    assert consumer_enabled(mysql80) == "NO"


@pytest.mark.xdist_group("mysql57")
def test_dry_run_refuses_what_cannot_be_converted(mysql57: ThrowawayServer) -> None:
    """A whole schema: MyISAM, a general tablespace, the system tablespace, FULLTEXT."""
    make_table(mysql57, "refuse", "ok", rows=500)
    measured(mysql57, "refuse", "ok")  # its pages written: a file that lags gets no prediction
    make_table(mysql57, "refuse", "myisam", rows=10)
    mysql57.query("ALTER TABLE refuse.myisam ENGINE=MyISAM")
    mysql57.query("CREATE TABLESPACE ts_refuse ADD DATAFILE 'ts_refuse.ibd'")
    mysql57.query("CREATE TABLE refuse.general (a INT PRIMARY KEY) TABLESPACE ts_refuse")
    mysql57.query("CREATE TABLE refuse.sys (a INT PRIMARY KEY) TABLESPACE innodb_system")
    mysql57.query("CREATE TABLE refuse.ft (a INT PRIMARY KEY, b TEXT, FULLTEXT KEY fb (b))")
    ids = {t: space_id(mysql57, "refuse", t) for t in ("ok", "ft")}
    res = ibdtool("migrate", "-B", "refuse", "--to", "page:zlib", "--json", *conn_args(mysql57))
    assert res.returncode == 1, res.stderr  # something was refused
    plan = {t["table"]: t for t in json.loads(res.stdout)["tables"]}
    assert plan["refuse.ok"]["action"] == "convert"
    assert [s["sql"].split()[0] for s in plan["refuse.ok"]["statements"]] == [
        "SET", "ALTER", "OPTIMIZE",
    ]  # fmt: skip
    assert plan["refuse.ok"]["prediction"]["predicted_allocated"] > 0
    why = {name: " ".join(c["message"] for c in t["checks"] if c["severity"] == "error")
           for name, t in plan.items()}  # fmt: skip
    assert "ENGINE=MyISAM" in why["refuse.myisam"]
    assert "shared tablespace ts_refuse" in why["refuse.general"]
    assert "shared tablespace innodb_system" in why["refuse.sys"]
    assert "FULLTEXT index fb" in why["refuse.ft"] and "ALGORITHM=COPY" in why["refuse.ft"]
    assert {t: space_id(mysql57, "refuse", t) for t in ids} == ids  # a dry run changes nothing
    # accepting the copy lifts the FULLTEXT refusal and turns the rebuild into ALTER … COPY
    res = ibdtool(
        "migrate", "refuse.ft", "--to", "page:zlib", "--algorithm", "copy", "--json",
        *conn_args(mysql57),
    )  # fmt: skip
    assert res.returncode == 0, res.stdout
    (ft,) = json.loads(res.stdout)["tables"]
    assert ft["statements"][-1]["sql"].endswith("FORCE, ALGORITHM=COPY, LOCK=SHARED;")
