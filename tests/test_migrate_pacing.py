"""``ibdtool migrate`` pacing on a real MariaDB 10.11: a pause file, SIGUSR1/SIGUSR2, a critical
load. Whether a statement ran is asked of the server (the table's space id: a rebuild makes a
new one), not of ibdtool."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import time
from pathlib import Path
from typing import IO

import pytest

from samples.servers import ThrowawayServer
from tests.cli_runner import ibdtool_command
from tests.server_fixtures import (
    clean_env,
    conn_args,
    ibdtool,
    make_table,
    space_id,
)

HOLD = 3.0  # seconds a pause is held while the test watches the table stay as it was


def read_events(stream: IO[str], until: str, timeout: float) -> list[dict[str, object]]:
    """JSON lines from ``stream`` up to and including the first event ``until``."""
    sel = selectors.DefaultSelector()
    sel.register(stream, selectors.EVENT_READ)
    out: list[dict[str, object]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not sel.select(max(0.0, deadline - time.monotonic())):
            break
        line = stream.readline()
        if not line:
            break
        if line.startswith("{"):
            ev = json.loads(line)
            out.append(ev)
            if ev["event"] == until:
                return out
    raise AssertionError(f"no {until} event within {timeout}s: {out[-5:]}")


@pytest.mark.xdist_group("mariadb")
def test_pause_file_and_signals_hold_the_next_statement(
    mariadb: ThrowawayServer,
    tmp_path: Path,
) -> None:
    make_table(mariadb, "pace", "t", rows=2000)
    before = space_id(mariadb, "pace", "t")
    pause = tmp_path / "pause"
    pause.touch()
    cmd = ibdtool_command(
        "migrate", "pace.t", "--to", "page:zlib", "--execute", "--yes", "--json",
        "--pause-file", str(pause), "--flush-wait", "1", *conn_args(mariadb),
    )  # fmt: skip
    proc = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=clean_env(), text=True, bufsize=1,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        events = read_events(proc.stdout, "throttled", 60)
        assert str(pause) in str(events[-1]["message"])
        time.sleep(HOLD)
        assert space_id(mariadb, "pace", "t") == before  # held by the file
        proc.send_signal(signal.SIGUSR1)
        time.sleep(0.5)
        pause.unlink()
        time.sleep(HOLD)
        assert proc.poll() is None
        assert space_id(mariadb, "pace", "t") == before  # held by SIGUSR1, file gone
        proc.send_signal(signal.SIGUSR2)
        rest = read_events(proc.stdout, "batch_done", 120)
        assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert any("SIGUSR1" in str(e.get("message")) for e in rest), rest
    assert space_id(mariadb, "pace", "t") != before  # and then it ran
    done = [e for e in rest if e["event"] == "table_done"]
    assert len(done) == 1, rest[-3:]
    assert os.path.exists(tmp_path)  # the pause file was the test's, ibdtool made nothing


@pytest.mark.xdist_group("mariadb")
def test_critical_load_stops_before_the_table(mariadb: ThrowawayServer) -> None:
    make_table(mariadb, "crit", "t", rows=2000)
    before = space_id(mariadb, "crit", "t")
    # ibdtool's own connection counts: Threads_connected is at least 1 while it asks
    res = ibdtool(
        "migrate", "crit.t", "--to", "page:zlib", "--execute", "--yes", "--json",
        "--critical-load", "Threads_connected=1", *conn_args(mariadb),
    )  # fmt: skip
    assert res.returncode == 1, res.stderr
    events = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    stopped = [e for e in events if e["event"] == "batch_stopped"]
    assert stopped and "Threads_connected=" in str(stopped[0]["message"]), events
    assert not any(e["event"] == "statement_start" for e in events)
    assert space_id(mariadb, "crit", "t") == before
    bad = ibdtool("migrate", "crit.t", "--to", "page:zlib", "--max-load", "Threads_running",
                  *conn_args(mariadb))  # fmt: skip
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
    assert "--max-load" in bad.stderr
