"""Replication lag of the primary's replicas, for ``--max-lag`` (gh-ost's throttle on lag).

Replicas are named with ``--replica HOST[:PORT]`` or ``--replica /path/to.sock``, or found on
the primary with the statement its dialect names (``SHOW REPLICAS`` on MySQL 8.0.22+, ``SHOW
REPLICA HOSTS`` on MariaDB 10.5.1+, ``SHOW SLAVE HOSTS`` before): those started with
``report_host``/``report_port``. Each is asked, with the primary's credentials, its replication
status in its own dialect (a replica may run another version than its primary): the seconds
behind (``Seconds_Behind_Source`` on MySQL 8.0.22+, ``Seconds_Behind_Master`` elsewhere), or no
number when the SQL thread is not running (the lag is then unknown and counts as too much, as
gh-ost counts a stopped replica).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ibdtool.errors import InputError
from ibdtool.server import sql
from ibdtool.server.connection import ConnectionOptions, Session
from ibdtool.server.dialects import Dialect, parse_flavor
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


def discover(
    session: Session, dialect: Dialect, base: ConnectionOptions
) -> tuple[list[ConnectionOptions], int]:
    """The replicas the primary lists, reached on their reported address, and how many it
    lists without an address (no ``report_host``)."""
    out = []
    anonymous = 0
    for row in session.query(dialect.replica_hosts_query):
        host = str(row.get("Host") or "")
        port = int(row.get("Port") or DEFAULT_PORT)
        if host:
            out.append(replace(base, host=host, port=port, socket=None))
        else:
            anonymous += 1
    return out, anonymous


def resolve_replicas(
    session: Session, dialect: Dialect, base: ConnectionOptions, named: list[str]
) -> list[ConnectionOptions]:
    """The replicas to watch: those named, else those the primary lists; none is an error."""
    if named:
        return [replica_options(n, base) for n in named]
    found, anonymous = discover(session, dialect, base)
    if not found:
        statement = dialect.replica_hosts_query.removeprefix(sql.TAG).strip()
        listed = (
            f"lists {anonymous} replica(s) without an address (set report_host on them)"
            if anonymous
            else "lists no replica (replicas appear there with report_host set)"
        )
        raise InputError(
            f"--max-lag: the server {listed} ({statement}); name them with --replica "
            "HOST[:PORT] or a socket path"
        )
    return found


def label(opts: ConnectionOptions) -> str:
    return opts.socket if opts.uses_socket and opts.socket else f"{opts.host}:{opts.port}"


def read_lag(opts: ConnectionOptions) -> Lag:
    name = label(opts)
    try:
        with Session(opts, role="replica", read_timeout=10) as s:
            ident = s.query_one(sql.SERVER_IDENTITY) or {}
            dialect = parse_flavor(
                str(ident.get("version") or ""), str(ident.get("version_comment") or "")
            )
            row = s.query_one(dialect.replica_status_query)
    except ServerError as exc:
        return Lag(name, None, f"unreachable: {exc.message}")
    statement = dialect.replica_status_query.removeprefix(sql.TAG).strip()
    if row is None:
        return Lag(name, None, f"not a replica ({statement} is empty)")
    running, behind_column = dialect.replica_status_columns
    if str(row.get(running) or "").lower() != "yes":
        return Lag(name, None, "replication SQL thread not running")
    behind = row.get(behind_column)
    if behind is None:
        return Lag(name, None, f"{behind_column} is NULL")
    return Lag(name, float(behind))
