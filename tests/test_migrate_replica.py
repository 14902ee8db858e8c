"""``migrate --max-lag`` on real primary/replica pairs started by the test: MariaDB 10.11,
MySQL 8.0.15 (only SHOW SLAVE HOSTS / SHOW SLAVE STATUS) and MySQL 8.0.33 (SHOW REPLICAS /
SHOW REPLICA STATUS, with Replica_*/…_Source columns).

Replication is set up by the test (binary log on the primary, CHANGE MASTER … with a file and
position on the replica); lag is made by the test: a client on the replica holds LOCK TABLES
… WRITE on a table the primary writes to (the SQL thread waits, the seconds behind grow), or
the SQL thread is stopped (lag unknown). The lag the test waits for is read by the test itself
with SHOW SLAVE STATUS, which all three answer. Whether ibdtool's rebuild ran is asked of the
primary (the space id).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from samples import servers
from samples.servers import ThrowawayServer
from tests.cli_runner import ibdtool_command
from tests.server_fixtures import (
    FAST,
    _need,
    clean_env,
    conn_args,
    free_port,
    make_table,
    own_server,
    space_id,
)
from tests.test_migrate_pacing import HOLD, read_events

PACER_PASSWORD = "pacer-pw"
pytestmark = pytest.mark.xdist_group("replica_pair")  # the pairs, one at a time, on one worker


@dataclass
class Pair:
    primary: ThrowawayServer
    replica: ThrowawayServer
    p_port: int
    r_port: int

    @property
    def mysql(self) -> bool:
        return self.primary.flavor == "mysql"

    def as_pacer(self) -> list[str]:
        """ibdtool's connection to the primary over TCP as the pacer user (on both servers)."""
        return ["--no-defaults", "-h", "127.0.0.1", "-P", str(self.p_port), "-u", "pacer"]


def replica_status(replica: ThrowawayServer) -> dict[str, Any]:
    with replica.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW SLAVE STATUS")  # every server here answers it, with the old names
        row = cur.fetchone()
        names = [d[0] for d in cur.description or ()]
    return dict(zip(names, row or (), strict=False))


def wait_for(what: str, check: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def caught_up(replica: ThrowawayServer, primary: ThrowawayServer | None = None) -> bool:
    """The SQL thread runs with no lag and, given the primary, has applied all it logged
    (Seconds_Behind_Master alone reads 0 before an event just received is applied: a test saw
    ``lag.w`` missing on the replica under load)."""
    st = replica_status(replica)
    if st.get("Slave_SQL_Running") != "Yes" or st.get("Seconds_Behind_Master") != 0:
        return False
    if primary is None:
        return True
    ((log_file, log_pos, *_),) = primary.query("SHOW MASTER STATUS")
    applied = (st.get("Relay_Master_Log_File"), st.get("Exec_Master_Log_Pos"))
    return applied == (log_file, int(log_pos))


def _server(kind: str, run_options: list[str]) -> ThrowawayServer:
    if kind == "mariadb":
        return servers.mariadb_server(run_options=run_options)
    return servers.mysql_server(kind, run_options=run_options)


@pytest.fixture(scope="module", params=["mariadb", "8.0.15", "8.0.33"])
def pair(request: pytest.FixtureRequest) -> Iterator[Pair]:
    kind: str = request.param
    if kind == "mariadb":
        _need("mariadb")
    else:
        _need("mysql", kind)
    p_port, r_port = free_port(), free_port()
    net = ["--skip-networking=0", "--bind-address=127.0.0.1", "--innodb-doublewrite=0"]
    primary = _server(
        kind, [*FAST, *net, f"--port={p_port}", "--server-id=1", "--log-bin=primary-bin"]
    )
    replica = _server(
        kind,
        [
            *FAST, *net, f"--port={r_port}", "--server-id=2",
            "--report-host=127.0.0.1", f"--report-port={r_port}",
        ],
    )  # fmt: skip
    with own_server(primary), own_server(replica):
        ((log_file, log_pos, *_),) = primary.query("SHOW MASTER STATUS")
        primary.query("CREATE USER repl@'127.0.0.1' IDENTIFIED BY 'repl-pw'")
        primary.query("GRANT REPLICATION SLAVE ON *.* TO repl@'127.0.0.1'")
        # the user ibdtool connects as, on both servers (created here, replicated there)
        primary.query(f"CREATE USER pacer@'127.0.0.1' IDENTIFIED BY '{PACER_PASSWORD}'")
        primary.query("GRANT ALL ON *.* TO pacer@'127.0.0.1'")
        gtid = ", MASTER_USE_GTID=no" if kind == "mariadb" else ""
        replica.query(
            "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%s, MASTER_USER='repl', "
            f"MASTER_PASSWORD='repl-pw', MASTER_LOG_FILE=%s, MASTER_LOG_POS=%s{gtid}",
            (p_port, log_file, int(log_pos)),
        )
        replica.query("START SLAVE")
        wait_for("replication", lambda: caught_up(replica))
        yield Pair(primary, replica, p_port, r_port)


def start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ibdtool_command(*args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=env or clean_env(), text=True, bufsize=1,
    )  # fmt: skip


def finish(proc: subprocess.Popen[str]) -> list[dict[str, object]]:
    assert proc.stdout is not None
    try:
        rest = read_events(proc.stdout, "batch_done", 180)
        assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
        return rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_max_lag_waits_for_a_lagging_replica_found_on_the_primary(pair: Pair) -> None:
    primary, replica = pair.primary, pair.replica
    make_table(primary, "lag", "t", rows=2000)
    primary.query("CREATE TABLE lag.w (id INT PRIMARY KEY) ENGINE=InnoDB")
    wait_for("the tables on the replica", lambda: caught_up(replica, primary))
    before = space_id(primary, "lag", "t")
    blocker = replica.connect()
    try:
        with blocker.cursor() as cur:
            cur.execute("LOCK TABLES lag.w WRITE")
            primary.query("INSERT INTO lag.w VALUES (1)")
            wait_for(
                "replica lag",
                lambda: (replica_status(replica).get("Seconds_Behind_Master") or 0) >= 2,
            )
            proc = start(
                "migrate", "lag.t", "--to", "page:zlib", "--execute", "--yes", "--json",
                "--max-lag", "1", "--flush-wait", "1", *pair.as_pacer(),
                env=clean_env(MYSQL_PWD=PACER_PASSWORD),
            )  # fmt: skip
            assert proc.stdout is not None
            held = read_events(proc.stdout, "throttled", 60)
            # a number, from the replica the primary listed (its report_host:report_port)
            message = str(held[-1]["message"])
            assert f"127.0.0.1:{pair.r_port} " in message and "behind" in message, message
            time.sleep(HOLD)
            assert proc.poll() is None
            assert space_id(primary, "lag", "t") == before  # waiting, not converting
            cur.execute("UNLOCK TABLES")
    finally:
        blocker.close()
    rest = finish(proc)
    assert [e for e in rest if e["event"] == "table_done"], rest[-3:]
    assert space_id(primary, "lag", "t") != before


def test_max_lag_waits_while_the_named_replica_s_sql_thread_is_stopped(pair: Pair) -> None:
    primary, replica = pair.primary, pair.replica
    if pair.mysql:  # named by address, reached as the pacer over TCP
        named = f"127.0.0.1:{pair.r_port}"
        to_primary, env = pair.as_pacer(), clean_env(MYSQL_PWD=PACER_PASSWORD)
    else:  # named by its socket, reached as root
        named, to_primary, env = str(replica.socket), conn_args(primary), clean_env()
    make_table(primary, "stopped", "t", rows=2000)
    wait_for("the table on the replica", lambda: caught_up(replica, primary))
    before = space_id(primary, "stopped", "t")
    replica.query("STOP SLAVE SQL_THREAD")
    try:
        primary.query("UPDATE stopped.t SET amount = amount + 1 WHERE id < 100")
        proc = start(
            "migrate", "stopped.t", "--to", "page:zlib", "--execute", "--yes", "--json",
            "--max-lag", "5", "--replica", named, "--flush-wait", "1", *to_primary,
            env=env,
        )  # fmt: skip
        assert proc.stdout is not None
        held = read_events(proc.stdout, "throttled", 60)
        assert "SQL thread not running" in str(held[-1]["message"]), held[-1]
        time.sleep(HOLD)
        assert space_id(primary, "stopped", "t") == before
    finally:
        replica.query("START SLAVE SQL_THREAD")
    finish(proc)
    assert space_id(primary, "stopped", "t") != before


def test_max_lag_without_a_replica_is_refused(pair: Pair) -> None:
    replica = pair.replica
    # the replica itself has no replica: nothing to watch, said before anything runs
    make_table(replica, "alone", "t", rows=100)
    res = subprocess.run(
        ibdtool_command("migrate", "alone.t", "--to", "page:zlib", "--max-lag", "5",
                        *conn_args(replica)),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, env=clean_env(), timeout=120,
    )  # fmt: skip
    assert res.returncode == 2 and "no replica" in res.stderr, res.stderr
