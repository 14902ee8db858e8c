"""Replication lag of the primary's replicas, for ``--max-lag`` (gh-ost's throttle on lag).

Replicas are named with ``--replica HOST[:PORT]`` or ``--replica /path/to.sock``, or found on
the primary with ``SHOW SLAVE HOSTS`` (those started with ``report_host``/``report_port``). Each
is asked ``SHOW SLAVE STATUS`` with the primary's credentials: ``Seconds_Behind_Master``, or no
number when the SQL thread is not running (the lag is then unknown and counts as too much, as
gh-ost counts a stopped replica).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ibdtool.errors import InputError
from ibdtool.server import sql
from ibdtool.server.connection import ConnectionOptions, Session
from ibdtool.server.errors import ServerError

DEFAULT_PORT = 3306


@dataclass(frozen=True)
class Lag:
    replica: str
    seconds: float | None  # None: unknown (SQL thread stopped, unreachable, not a replica)
    why: str = ""

    @property
    def text(self) -> str:
        if self.seconds is not None:
            return f"{self.replica} {self.seconds:g}s behind"
        return f"{self.replica}: lag unknown ({self.why})"


def replica_options(text: str, base: ConnectionOptions) -> ConnectionOptions:
    """``HOST[:PORT]`` or a socket path, with the primary's user, password and TLS."""
    t = text.strip()
    if not t:
        raise InputError("--replica: empty")
    if t.startswith("/"):
        return replace(base, host="localhost", port=None, socket=t)
    if ":" in t:
        host, _, port = t.rpartition(":")
        if not host or not port.isdigit():
            raise InputError(f"--replica {text}: expected HOST[:PORT] or a socket path")
    else:
        host, port = t, ""
    return replace(base, host=host, port=int(port) if port else DEFAULT_PORT, socket=None)


def discover(session: Session, base: ConnectionOptions) -> list[ConnectionOptions]:
    """The replicas the primary lists (SHOW SLAVE HOSTS), reached on their reported address."""
    out = []
    for row in session.query(sql.SHOW_REPLICA_HOSTS):
        host = str(row.get("Host") or "")
        port = int(row.get("Port") or DEFAULT_PORT)
        if host:
            out.append(replace(base, host=host, port=port, socket=None))
    return out


def resolve(session: Session, base: ConnectionOptions, named: list[str]) -> list[ConnectionOptions]:
    """The replicas to watch: those named, else those the primary lists; none is an error."""
    found = [replica_options(n, base) for n in named] or discover(session, base)
    if not found:
        raise InputError(
            "--max-lag: the server lists no replica (SHOW SLAVE HOSTS: replicas appear there "
            "with report_host set); name them with --replica HOST[:PORT] or a socket path"
        )
    return found


def label(opts: ConnectionOptions) -> str:
    return opts.socket if opts.uses_socket and opts.socket else f"{opts.host}:{opts.port}"


def read_lag(opts: ConnectionOptions) -> Lag:
    name = label(opts)
    try:
        with Session(opts, role="replica", read_timeout=10) as s:
            row = s.query_one(sql.SHOW_REPLICA_STATUS)
    except ServerError as exc:
        return Lag(name, None, f"unreachable: {exc.message}")
    if row is None:
        return Lag(name, None, "not a replica (SHOW SLAVE STATUS is empty)")
    if str(row.get("Slave_SQL_Running") or "").lower() != "yes":
        return Lag(name, None, "replication SQL thread not running")
    behind = row.get("Seconds_Behind_Master")
    if behind is None:
        return Lag(name, None, "Seconds_Behind_Master is NULL")
    return Lag(name, float(behind))
