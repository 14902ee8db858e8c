"""Pure parts of migrate's pacing and lock statements: option parsing and decisions.

Expected values are written from the options' documented meaning (README), not from the code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ibdtool.errors import InputError
from ibdtool.server.connection import ConnectionOptions, Secret
from ibdtool.server.locks import step_locks, verify_locks
from ibdtool.server.pacing import Pacing, parse_load
from ibdtool.server.replicas import Lag, replica_options


def test_parse_load() -> None:
    assert parse_load("Threads_running=25, Threads_connected=800", "--max-load") == {
        "Threads_running": 25,
        "Threads_connected": 800,
    }
    assert parse_load(None, "--max-load") == {}
    for bad in ("Threads_running", "Threads_running=x", "=3", "a=1,,b=2"):
        with pytest.raises(InputError, match="--max-load"):
            parse_load(bad, "--max-load")


def test_verdicts_in_order_critical_pause_load_lag(tmp_path: Path) -> None:
    p = Pacing(
        max_load={"Threads_running": 10},
        critical_load={"Threads_running": 50},
        pause_file=tmp_path / "pause",
        max_lag=5,
    )
    assert p.check({"Threads_running": "9"}, [Lag("r", 5.0)]).action == "go"
    assert p.check({"Threads_running": "10"}).action == "wait"
    assert p.check({"Threads_running": "50"}).action == "stop"
    assert p.check({"Threads_running": "1"}, [Lag("r", 6.0)]).action == "wait"
    assert p.check({"Threads_running": "1"}, [Lag("r", None, "SQL thread")]).action == "wait"
    (tmp_path / "pause").touch()
    assert "exists" in p.check({"Threads_running": "1"}).reason
    (tmp_path / "pause").unlink()
    p.pause()
    assert p.check({"Threads_running": "1"}).action == "wait"
    assert p.check({"Threads_running": "99"}).action == "stop"  # a pause does not hide it
    p.resume()
    assert p.check({"Threads_running": "1"}).action == "go"


def test_replica_addresses_keep_the_credentials() -> None:
    base = ConnectionOptions(host="db1", port=3307, user="u", password=Secret("pw"))
    r = replica_options("db2:3308", base)
    assert (r.host, r.port, r.socket, r.user, r.password) == ("db2", 3308, None, "u", Secret("pw"))
    assert replica_options("db3", base).port == 3306
    s = replica_options("/run/r.sock", base)
    assert s.uses_socket and s.socket == "/run/r.sock"
    for bad in ("db2:x", ":3306", " "):
        with pytest.raises(InputError):
            replica_options(bad, base)


def test_locks_name_what_blocks_writes() -> None:
    inplace = step_locks("rebuild", "ALTER TABLE t FORCE, ALGORITHM=INPLACE, LOCK=NONE;", 60)
    copy = step_locks("rebuild", "ALTER TABLE t FORCE, ALGORITHM=COPY, LOCK=SHARED;", 60)
    optimize = step_locks("rebuild", "OPTIMIZE TABLE t;", 60)
    for locks in (inplace, copy, optimize):
        assert any(lk.what.startswith("metadata lock") for lk in locks)
    assert any("every write" in lk.blocks for lk in copy)
    assert not any("every write" in lk.blocks for lk in inplace + optimize)
    assert step_locks("set_global", "SET GLOBAL x = 1;", 60)[0].what == "none"
    assert "every write" in verify_locks(True)[0].blocks
    assert verify_locks(False)[0].what == "none"
