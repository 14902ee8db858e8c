"""Ctrl-C during ``migrate`` says what it did, and the exit status and the summary agree.

Oracle: a throwaway MariaDB 10.11 server and its own processlist. Two small tables are
converted with a pause between them; SIGINT arrives in the pause, when no statement runs: the
first line ibdtool prints after it says so (not "waiting for the rollback"), the server runs
no ALTER, the first table is converted (its file format is what the server says), the second
is reported "not run" and untouched, and exit status 130 goes with a summary that says
"interrupted" and counts both.
"""

from __future__ import annotations

import signal

import pytest

from samples.servers import ThrowawayServer
from tests.cli_runner import start_ibdtool
from tests.server_fixtures import (
    clean_env,
    conn_args,
    create_table_sql,
    json_lines,
    make_table,
    space_id,
)


@pytest.mark.xdist_group("mariadb")
def test_ctrl_c_between_tables_says_no_statement_was_running(
    mariadb: ThrowawayServer,
) -> None:
    for t in ("a", "b"):
        make_table(mariadb, "cc", t, rows=800)
    before_b = (create_table_sql(mariadb, "cc", "b"), space_id(mariadb, "cc", "b"))
    proc = start_ibdtool(
        "migrate", "cc.a", "cc.b", "--to", "page:zlib", "--pause", "60",
        "--execute", "--yes", "--json", "--no-predict", "--flush-for-export",
        *conn_args(mariadb), env=clean_env(),
    )  # fmt: skip
    assert proc.stdout is not None
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            ev = json_lines(line)[0] if line.startswith("{") else {}
            if ev.get("event") == "pause":  # a.done, the pause before b: nothing runs
                proc.send_signal(signal.SIGINT)
                break
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    events = json_lines("".join(lines) + out)
    assert proc.returncode == 130, err
    said = [ln for ln in err.splitlines() if "interrupted" in ln]
    assert said and "no statement is running" in said[0], err
    assert "rollback" not in err and "KILL QUERY" not in err, err
    done = next(e for e in events if e["event"] == "batch_done")
    status = {r["table"]: r["status"] for r in done["results"]}
    assert status == {"cc.a": "done", "cc.b": "not_run"}, status
    assert done["message"] == "interrupted: 1 done, 1 not run"
    assert "PAGE_COMPRESSED" in create_table_sql(mariadb, "cc", "a").upper()
    assert (create_table_sql(mariadb, "cc", "b"), space_id(mariadb, "cc", "b")) == before_b
    assert not mariadb.query(
        "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE '%%ALTER TABLE%%' "
        "AND ID <> CONNECTION_ID()"
    )
