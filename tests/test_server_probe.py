"""``ibdtool server probe`` on real servers (MariaDB 10.11 and MySQL 8.0.33).

The probe's latencies are checked against measurements it does not make: performance_schema's
own timing of the very statements it sent (``events_statements_history_long``, enabled by the
test, read by the test) and sysbench's ``oltp_point_select`` on sysbench's own table. Its
``--max-load`` is checked against a real load (sessions running ``SELECT SLEEP``), and that it
writes nothing against the server: the table's CRC of every row and the redo log's LSN are
unchanged, and performance_schema shows only reads from its connections.

Tolerances (stated once, here): a statement's time on the client's clock includes the round
trip over the unix socket and PyMySQL's work, which the server's does not; on this shared
2-core machine that adds 0.05–0.5 ms to a read of 0.1–0.5 ms, so the probe's p50 must lie
between performance_schema's p50 and that plus ``max(2 ms, 2 × it)``; against sysbench (the C
client, another table of the same shape) the warm point-read p50s agree within a factor of 4,
or 2 ms above when that is more (seen at a load average of 17 on the 2 cores: the probe's
2.2 ms against sysbench's 0.47 ms, a paced Python client waiting for a core after each sleep).
Each latency comparison must hold in one of :data:`RUNS` runs, every run checked whole
otherwise: a load burst can hold one side off the cores for a run, a wrong measure misses in all.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from samples.servers import ThrowawayServer
from tests.cli_runner import start_ibdtool
from tests.server_fixtures import (
    clean_env,
    conn_args,
    ibdtool,
    make_table,
    rows_crc,
    space_id,
)

SERVERS = [
    pytest.param("mariadb", marks=pytest.mark.xdist_group("mariadb"), id="mariadb-10.11"),
    pytest.param("mysql8033", marks=pytest.mark.xdist_group("mysql8033"), id="mysql-8.0.33"),
]
ROWS = 20000
READ_ONLY_EVENTS = {
    "statement/sql/select",
    "statement/sql/show_status",
    "statement/sql/show_variables",
    "statement/sql/set_option",
    "statement/com/Quit",
    "statement/com/Ping",
}


@pytest.fixture
def srv(request: pytest.FixtureRequest) -> ThrowawayServer:
    server: ThrowawayServer = request.getfixturevalue(request.param)
    return server


@pytest.fixture
def table(srv: ThrowawayServer) -> Iterator[str]:
    make_table(srv, "probe", "t", rows=ROWS)
    yield "probe.t"
    srv.query("DROP DATABASE IF EXISTS probe")


def percentile(values: list[float], q: float) -> float:
    """Nearest rank, written again here (the test's own computation)."""
    ordered = sorted(values)
    k = max(1, -(-len(ordered) * int(q) // 100))
    return ordered[k - 1]


def history_on(srv: ThrowawayServer) -> None:
    srv.query(
        "UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' "
        "WHERE NAME LIKE 'events_statements%'"
    )
    srv.query("TRUNCATE TABLE performance_schema.events_statements_history_long")


def probe(srv: ThrowawayServer, name: str, *args: str) -> tuple[int, dict[str, Any], str]:
    done = ibdtool("server", "probe", *conn_args(srv), name, "--json", *args)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


def lsn(srv: ThrowawayServer) -> int:
    ((_, _, status),) = srv.query("SHOW ENGINE INNODB STATUS")
    m = re.search(r"^Log sequence number\s+(\d+)", status, re.M)
    assert m, status
    return int(m.group(1))


def newest_page_change(srv: ThrowawayServer, space: int) -> tuple[int, int]:
    """(pages of the space in the buffer pool, the newest change to any of them: an LSN)."""
    ((n, newest),) = srv.query(
        "SELECT COUNT(*), MAX(NEWEST_MODIFICATION) FROM information_schema.INNODB_BUFFER_PAGE "
        "WHERE SPACE = %s",
        (space,),
    )
    return int(n), int(newest or 0)


def quiet_lsn(srv: ThrowawayServer) -> int:
    """The LSN once background work (purge of the load's history) has stopped moving it."""
    last = lsn(srv)
    for _ in range(60):
        time.sleep(1)
        now = lsn(srv)
        if now == last:
            return now
        last = now
    pytest.fail("the server's LSN kept moving for a minute with nothing running")


#: runs of a latency comparison before it fails: the two sides are measured by different
#: clients (or at different moments) on a shared machine, where a burst of load can hold one
#: client off the cores for a whole run; a wrong measure (units, a pause counted in, another
#: percentile) misses in every run
RUNS = 3


@pytest.mark.parametrize("srv", SERVERS, indirect=True)
def test_latency_agrees_with_performance_schema(srv: ThrowawayServer, table: str) -> None:
    """The probe's p50 lies between performance_schema's p50 of the same statements and that
    plus the stated tolerance, in one of :data:`RUNS` runs (each run checked whole otherwise)."""
    seen: list[tuple[float, float]] = []
    for _ in range(RUNS):
        client_p50, server_p50 = _latency_run(srv, table)
        seen.append((client_p50, server_p50))
        if client_p50 <= server_p50 + max(0.002, 2 * server_p50):
            break
    assert server_p50 <= client_p50 <= server_p50 + max(0.002, 2 * server_p50), seen


def _latency_run(srv: ThrowawayServer, table: str) -> tuple[float, float]:
    """One probe, checked against performance_schema's history of its statements; its p50
    and the server's, in seconds."""
    history_on(srv)
    code, doc, _ = probe(srv, table, "--points", "60", "--ranges", "6", "--rate", "200")
    assert code == 0 and doc["stopped"] is None
    rows = srv.query(
        "SELECT TIMER_WAIT, ROWS_SENT, SQL_TEXT FROM "
        "performance_schema.events_statements_history_long "
        "WHERE SQL_TEXT LIKE '/* ibdtool probe */ SELECT%' AND SQL_TEXT NOT LIKE '%MIN(%'"
    )
    # every statement the probe says it ran, and no other, as the server saw them
    assert len(rows) == doc["statements"] == 60 * 2 + 6
    points = [r[0] / 1e12 for r in rows if "LIMIT" not in r[2] or "LIMIT 1" in r[2]]
    assert len(points) == doc["latency"]["point"]["n"] == 120
    server_p50 = percentile(points, 50)
    client_p50 = doc["latency"]["point"]["p50_ms"] / 1000
    # the probe's own reading of the server's timing is the same statements'
    assert doc["latency"]["point"]["server_n"] == 120
    assert doc["latency"]["point"]["server_p50_ms"] == pytest.approx(1000 * server_p50, rel=1e-3)
    # rows: one per point read, range_rows per range read (the table has more than enough)
    assert sum(r[1] for r in rows) == 120 + 6 * 20
    assert doc["latency"]["range"]["rows"] == 6 * 20
    # its share of the time, by its own clock, stayed under the stated one
    assert doc["share_used"] <= doc["settings"]["share"] + 0.01
    assert server_p50 <= client_p50, (client_p50, server_p50)
    return client_p50, server_p50


@pytest.mark.parametrize("srv", SERVERS, indirect=True)
def test_writes_nothing(srv: ThrowawayServer, table: str) -> None:
    schema, name = table.split(".")
    history_on(srv)
    crc = rows_crc(srv, schema, name)
    space = space_id(srv, schema, name)
    before = quiet_lsn(srv)
    pages = newest_page_change(srv, space)
    code, doc, _ = probe(srv, table, "--points", "40", "--ranges", "4", "--rate", "200")
    assert code == 0 and doc["statements"] == 84
    # no page of the table changed (the newest change of each, by LSN, as the pool has it)
    assert newest_page_change(srv, space) == pages
    assert pages[0] > 0  # the pages are in the pool: the check saw them
    if srv.flavor == "mariadb":
        # nothing anywhere: MariaDB's redo log does not move while it is idle. MySQL 8.0.33's
        # does, on its own (seen: +5,604 bytes 18 s into an idle minute), so there only the
        # table's pages are compared
        assert lsn(srv) == before, "the redo log moved: something was written"
    assert rows_crc(srv, schema, name) == crc
    # the probe's connections are gone: their threads are those whose statements carry its tag
    events = srv.query(
        "SELECT DISTINCT h.EVENT_NAME, h.THREAD_ID FROM "
        "performance_schema.events_statements_history_long h WHERE h.THREAD_ID IN (SELECT "
        "THREAD_ID FROM performance_schema.events_statements_history_long "
        "WHERE SQL_TEXT LIKE '/* ibdtool%%')"
    )
    assert len({e[1] for e in events}) >= 3  # the catalog's, the probe's, the watcher's
    seen = {e[0] for e in events}
    assert "statement/sql/select" in seen
    assert seen <= READ_ONLY_EVENTS, seen - READ_ONLY_EVENTS
    kinds = {lk["lock"] for lk in doc["locks"]}
    assert any("shared read" in k for k in kinds)


def _sleepers(srv: ThrowawayServer, n: int, seconds: int) -> list[threading.Thread]:
    def sleep() -> None:
        with srv.connect() as conn, conn.cursor() as cur:
            cur.execute(f"SELECT SLEEP({seconds})")

    threads = [threading.Thread(target=sleep, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    return threads


def _probe_reads(srv: ThrowawayServer) -> int:
    """The probe's own reads the server has recorded so far (performance_schema history)."""
    ((n,),) = srv.query(
        "SELECT COUNT(*) FROM performance_schema.events_statements_history_long "
        "WHERE SQL_TEXT LIKE '/* ibdtool probe */ SELECT%' AND SQL_TEXT NOT LIKE '%MIN(%'"
    )
    return int(n)


def _running(srv: ThrowawayServer) -> int:
    ((_, value),) = srv.query("SHOW GLOBAL STATUS LIKE 'Threads_running'")
    return int(value)


@pytest.mark.parametrize("srv", SERVERS, indirect=True)
def test_max_load_stops_it(srv: ThrowawayServer, table: str) -> None:
    # idle (the status read itself is 1 running thread): it runs to the end
    code, doc, _ = probe(
        srv, table, "--points", "5", "--ranges", "0", "--max-load", "Threads_running=4"
    )
    assert code == 0 and doc["statements"] == 10 and doc["stopped"] is None
    # a load arrives while it runs: it stops before its next statement, part-way
    cmd = [
        "server",
        "probe",
        *conn_args(srv),
        table,
        "--json",
        "--points",
        "200",
        "--ranges",
        "0",
        "--rate",
        "20",
        "--max-load",
        "Threads_running=4",
    ]
    history_on(srv)
    child = start_ibdtool(*cmd, env=clean_env())
    # the load comes once the probe has run statements of its own, as the server recorded them
    # (a fixed 2 s was not always enough for it to start under load, and a probe that sees the
    # load before its first statement rightly stops at 0)
    deadline = time.monotonic() + 120
    while _probe_reads(srv) < 5:
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "the probe ran no statement in 120 s"
        time.sleep(0.05)
    sleepers = _sleepers(srv, 4, 8)
    deadline = time.monotonic() + 5
    while _running(srv) < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    out, err = child.communicate(timeout=60)
    for t in sleepers:
        t.join(timeout=30)
    assert child.returncode == 0, err
    doc = json.loads(out)
    assert doc["stopped"] and doc["stopped"].startswith("--max-load: Threads_running=")
    value = int(doc["stopped"].split("=")[1].split()[0])
    assert value >= 4
    assert 0 < doc["statements"] < 400


def test_sysbench_agrees(mariadb: ThrowawayServer) -> None:
    """Warm point reads by the probe and by sysbench's oltp_point_select (one thread, paced)
    on sysbench's own table: the two clients' p50 agree within the stated factor (in one of
    :data:`RUNS` pairs of runs)."""
    srv = mariadb
    srv.query("CREATE DATABASE IF NOT EXISTS sbprobe")
    sb = [
        "sysbench",
        "oltp_point_select",
        "--db-driver=mysql",
        f"--mysql-socket={srv.socket}",
        "--mysql-user=root",
        "--mysql-db=sbprobe",
        "--tables=1",
        "--table-size=20000",
    ]
    seen: list[tuple[float, float]] = []
    try:
        subprocess.run([*sb, "prepare"], capture_output=True, check=True, timeout=300)
        srv.query("SELECT COUNT(*), SUM(LENGTH(c)) FROM sbprobe.sbtest1")  # all in the pool
        # the two clients run one after the other: a run where load came to one of them only is
        # measured again (RUNS); they must agree in one
        for _ in range(RUNS):
            code, doc, _ = probe(
                srv,
                "sbprobe.sbtest1",
                "--points",
                "100",
                "--ranges",
                "0",
                "--rate",
                "100",
                "--share",
                "0.2",
            )
            assert code == 0
            ran = subprocess.run(
                [*sb, "--threads=1", "--rate=100", "--time=3", "--percentile=50", "run"],
                capture_output=True,
                text=True,
                check=True,
                timeout=120,
            ).stdout
            m = re.search(r"50th percentile:\s+([\d.]+)", ran)
            assert m, ran
            sysbench_p50 = float(m.group(1))  # ms
            warm = doc["latency"]["repeat"]["p50_ms"]
            seen.append((warm, sysbench_p50))
            if sysbench_p50 / 4 <= warm <= max(sysbench_p50 * 4, sysbench_p50 + 2):
                break
    finally:
        srv.query("DROP DATABASE IF EXISTS sbprobe")
    assert sysbench_p50 / 4 <= warm <= max(sysbench_p50 * 4, sysbench_p50 + 2), seen


@pytest.mark.parametrize("srv", SERVERS, indirect=True)
def test_a_late_history_record_is_its_own_reads(
    srv: ThrowawayServer, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server records a statement's end after it sends the result: under load, later than
    the probe's brief waits. Here every third statement's record is kept from the probe's
    history reads until the next statement's (as a server thread waiting for a core would
    leave it): each read still gets its own statement's timing, the one
    events_statements_history_long holds, in order. (Paired with the next read's instead, the
    record gave that read a wrong time, and the next read's own was lost: CI saw 118 of 120.)"""
    from ibdtool.server import ProbeSettings, probe_table
    from ibdtool.server import probe as probe_module
    from tests.server_fixtures import open_server

    tag = "/* ibdtool probe */ SELECT"
    delivered: list[int] = []  # the probe's records handed to it, by event id
    held: set[int] = set()
    real = probe_module._Window._history

    def late(window: Any) -> list[dict[str, Any]]:
        rows = real(window)
        tagged = [r for r in rows if str(r["sql_text"]).startswith(tag)]
        if tagged:
            newest = int(tagged[-1]["event_id"])
            if (len(delivered) + len(tagged) - 1) % 3 == 1:  # this read's record: not yet
                held.add(newest)
                rows = [r for r in rows if int(r["event_id"]) < newest]
        delivered.extend(int(r["event_id"]) for r in rows if str(r["sql_text"]).startswith(tag))
        return rows

    monkeypatch.setattr(probe_module._Window, "_history", late)
    history_on(srv)
    schema, name = table.split(".")
    result = probe_table(
        open_server(srv), schema, name, ProbeSettings(points=20, ranges=0, rate=200)
    )
    assert result.stopped is None and len(result.reads) == 40
    assert len(held) >= 12  # the late records were there to pair (39 is not one of them)
    rows = srv.query(
        "SELECT TIMER_WAIT FROM performance_schema.events_statements_history_long "
        "WHERE SQL_TEXT LIKE '/* ibdtool probe */ SELECT%' AND SQL_TEXT NOT LIKE '%MIN(%' "
        "ORDER BY EVENT_ID"
    )
    assert [r.server_seconds for r in result.reads] == [int(t) / 1e12 for (t,) in rows]


@pytest.mark.parametrize(
    ("create", "words"),
    [
        ("CREATE TABLE probe.nokey (a INT) ENGINE=InnoDB", "no PRIMARY KEY"),
        ("CREATE TABLE probe.textkey (a VARCHAR(10) PRIMARY KEY) ENGINE=InnoDB", "varchar"),
        ("CREATE TABLE probe.empty (a INT PRIMARY KEY) ENGINE=InnoDB", "empty"),
    ],
)
def test_tables_it_cannot_probe(mariadb: ThrowawayServer, create: str, words: str) -> None:
    srv = mariadb
    srv.query("CREATE DATABASE IF NOT EXISTS probe")
    srv.query(create)
    name = create.split()[2]
    try:
        if "nokey" in name:
            srv.query("INSERT INTO probe.nokey VALUES (1)")
        if "textkey" in name:
            srv.query("INSERT INTO probe.textkey VALUES ('x')")
        done = ibdtool("server", "probe", *conn_args(srv), name)
    finally:
        srv.query("DROP DATABASE IF EXISTS probe")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and words in done.stderr, done.stderr


def _allocated(srv: ThrowawayServer, schema: str, table: str) -> int:
    """The server's own figure for the table's file (its catalog's ALLOCATED_SIZE)."""
    ((size,),) = srv.query(
        "SELECT ALLOCATED_SIZE FROM information_schema.INNODB_SYS_TABLESPACES WHERE NAME = %s",
        (f"{schema}/{table}",),
    )
    return int(size)


def test_migrate_probe_before_and_after(mariadb: ThrowawayServer) -> None:
    """``migrate --probe``: the dry run's plan carries the probe and the options side by side;
    the run probes again after the rebuild, and the sizes beside the latencies are the
    server's own, before and after."""
    srv = mariadb
    make_table(srv, "probe", "m", rows=ROWS)
    try:
        args = [*conn_args(srv), "probe.m", "--to", "page:zlib", "--flush-for-export"]
        args += ["--probe", "--probe-points", "20", "--probe-ranges", "2", "--probe-rate", "200"]
        dry = ibdtool("migrate", *args, "--json")
        assert dry.returncode == 0, dry.stderr
        (tp,) = json.loads(dry.stdout)["tables"]
        assert tp["probe"]["statements"] == 42 and tp["probe"]["when"] == "before"
        assert tp["probe"]["allocated_size"] == _allocated(srv, "probe", "m")
        options = {o["option"]: o for o in tp["prediction"]["options"]}
        # the chosen target beside the server's other codec and ROW_FORMAT=COMPRESSED 8K
        assert [o["option"] for o in tp["prediction"]["options"] if o["chosen"]] == ["page:zlib"]
        assert "page:lz4" in options and "row:8" in options
        chosen = options["page:zlib"]
        assert chosen["predicted_allocated"] == tp["prediction"]["predicted_allocated"]
        assert chosen["drop_after"] == tp["prediction"]["drop_new"]
        for o in options.values():
            assert o["drop_after"]["extents"] == o["extents_after"]
        assert options["page:lz4"]["compress_us_per_page"] is not None
        run = ibdtool("migrate", *args, "--json", "--execute", "--yes")
        assert run.returncode == 0, run.stderr
        (probe_line,) = [json.loads(x) for x in run.stdout.splitlines() if '"event": "probe"' in x]
        before, after = probe_line["before"], probe_line["after"]
        assert before["statements"] == after["statements"] == 42
        assert after["when"] == "after" and after["format"] == "page:zlib"
        assert after["allocated_size"] == _allocated(srv, "probe", "m")
        assert after["allocated_size"] < before["allocated_size"]
        change = probe_line["latency_change"]
        assert change["point_p50"] == pytest.approx(
            after["latency"]["point"]["p50_ms"] / before["latency"]["point"]["p50_ms"], rel=0.01
        )
    finally:
        srv.query("DROP DATABASE IF EXISTS probe")


def test_cold_and_warm(tmp_path: Any) -> None:
    """A server restarted with a small pool and no pool load at startup: the probe's first
    reads of keys find their pages on disk, its repeats in the pool. The server's own counters
    (read by the test around the probe) bound what the probe called cold, and its
    INNODB_BUFFER_PAGE count agrees with the test's."""
    from samples import servers
    from tests.server_fixtures import FAST, own_server

    run = [
        *[o for o in FAST if "buffer-pool-size" not in o],
        "--innodb-buffer-pool-size=32M",
        "--innodb-buffer-pool-load-at-startup=0",
        "--innodb-buffer-pool-dump-at-shutdown=0",
        "--innodb-doublewrite=0",
        "--innodb-use-native-aio=0",
    ]
    with own_server(servers.mariadb_server(run_options=run)) as srv:
        make_table(srv, "probe", "cold", rows=ROWS, doublings=2)  # ~60 MB: twice the pool
        srv.stop()
        srv.start()
        space = space_id(srv, "probe", "cold")

        def disk_reads() -> int:
            ((_, v),) = srv.query("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_reads'")
            return int(v)

        in_pool, _ = newest_page_change(srv, space)
        before = disk_reads()
        code, doc, _ = probe(srv, "probe.cold", "--points", "40", "--ranges", "0", "--rate", "200")
        read_from_disk = disk_reads() - before
    assert code == 0
    lat = doc["latency"]
    # what the probe called cold: reads during which the server read pages from disk, which the
    # server's own count over the whole run bounds
    assert 0 < lat["cold"]["n"] <= read_from_disk
    assert lat["cold"]["n"] + lat["warm"]["n"] == lat["point"]["n"] == 80
    # a key's first read is the cold one; its repeat found the pages in the pool
    assert lat["first"]["n"] == 40 and lat["cold"]["n"] <= 40
    assert lat["repeat"]["p50_ms"] < lat["first"]["p50_ms"]
    pool = doc["window"]["pool"]["table_pages_in_pool"]
    # counted after the key's MIN and MAX were read: two descents to the ends of the index
    assert in_pool <= pool["before"] <= in_pool + 10
    assert pool["after"] > pool["before"]


def test_the_tui_plan_shows_the_options_and_the_probe(mariadb: ThrowawayServer) -> None:
    """The TUI's plan (ibdtool.tui.screens.migration.plan_view, as the screen renders it) sets the
    target beside the alternatives and shows the probe's line, with the figures of the plan's
    own JSON."""
    from rich.console import Console

    from ibdtool.server import PlanSettings, build_plan, list_tables, parse_target, probe_table
    from ibdtool.tui.screens.migration import plan_view
    from tests.server_fixtures import open_server

    srv = mariadb
    make_table(srv, "probe", "v", rows=ROWS)
    try:
        with open_server(srv) as server:
            found, _ = list_tables(server, tables=[("probe", "v")])
            settings = PlanSettings(flush_for_export=True)
            plan = build_plan(server, found, parse_target("page:lz4"), settings)
            (tp,) = plan.tables
            tp.probe = probe_table(server, "probe", "v", None, when="before")
        console = Console(width=200, record=True, color_system=None)
        console.print(plan_view(plan))
        text = console.export_text()
    finally:
        srv.query("DROP DATABASE IF EXISTS probe")
    options = tp.to_json(plan.vendor)["prediction"]["options"]
    chosen = next(o for o in options if o["chosen"])
    assert chosen["option"] == "page:lz4" and {o["option"] for o in options} >= {"row:8"}
    line = next(x for x in text.splitlines() if x.strip().startswith("→ page:lz4"))
    assert f"{chosen['saving_pct']:.0f}%" in line and f"{chosen['extents_after']:,}" in line
    assert "probe (before): point reads p50" in text
