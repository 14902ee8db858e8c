"""The throwaway servers of one test process (one xdist worker): started once, shared, reset.

:class:`ServerPool` keeps one :class:`samples.servers.ThrowawayServer` per name (a flavor,
version and option set: ``mariadb``, ``mysql80`` …), started the first time a test module asks
for it and shared by every later module. :meth:`ServerPool.acquire` hands a module its server;
:meth:`ServerPool.release` at the module's end puts the server back as it was right after it
started (:class:`Baseline`): the databases, users and plugins the module created are dropped,
the global variables and performance_schema consumers and instruments it changed are set back
(a restart when a variable will not go back), and connections it left open are killed. So each
module sees a clean server without paying for a new one.

At most ``IBDTOOL_TEST_SERVERS_ALIVE`` (default 3) pooled servers run at once: starting one
more first stops the least recently used one no module holds (its data directory stays; it
restarts on the same files when asked for again). A server that cannot start is not tried
again: its failure is one line, kept, and every later :meth:`acquire` fails with that line.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pymysql

from samples import servers

ALIVE_DEFAULT = 3
#: global variables the server changes by itself (or that only mirror other state)
DRIFTING = re.compile(r"^(gtid_.*|innodb_thread_sleep_delay|timestamp|.*_log_pos)$")
#: users a server makes for itself at install
SYSTEM_USERS = {"mysql.sys", "mysql.session", "mysql.infoschema", "mariadb.sys"}
#: schemas present on every server (never dropped, whatever the baseline says)
SYSTEM_SCHEMAS = {"mysql", "information_schema", "performance_schema", "sys"}


PLUGINS = "SELECT PLUGIN_NAME FROM information_schema.PLUGINS"


class ServerUnavailable(Exception):
    """A pooled server could not start; the message is one line that says why."""


@dataclass
class Baseline:
    """What a freshly started server holds, to put it back to between test modules."""

    schemas: set[str]
    users: set[tuple[str, str]]
    plugins: set[str]
    variables: dict[str, str]
    setup: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def take(cls, srv: servers.ThrowawayServer) -> Baseline:
        with srv.connect() as conn, conn.cursor() as cur:
            return cls(
                schemas={r[0] for r in _rows(cur, "SHOW DATABASES")},
                users={(r[0], r[1]) for r in _rows(cur, "SELECT User, Host FROM mysql.user")},
                plugins={r[0] for r in _rows(cur, PLUGINS)},
                variables=_variables(cur),
                setup=_ps_setup(cur),
            )


def _rows(cur: Any, sql: str) -> list[tuple[Any, ...]]:
    cur.execute(sql)
    return list(cur.fetchall())


def _variables(cur: Any) -> dict[str, str]:
    return {
        str(name).lower(): str(value)
        for name, value in _rows(cur, "SHOW GLOBAL VARIABLES")
        if not DRIFTING.match(str(name).lower())
    }


def _ps_setup(cur: Any) -> dict[tuple[str, str], tuple[str, ...]]:
    """performance_schema's consumers and instruments (empty when it is off)."""
    cur.execute("SELECT @@GLOBAL.performance_schema")
    if str(cur.fetchone()[0]) not in ("1", "ON"):
        return {}
    out: dict[tuple[str, str], tuple[str, ...]] = {}
    for name, enabled in _rows(cur, "SELECT NAME, ENABLED FROM performance_schema.setup_consumers"):
        out[("consumers", str(name))] = (str(enabled),)
    sql = "SELECT NAME, ENABLED, TIMED FROM performance_schema.setup_instruments"
    for name, enabled, timed in _rows(cur, sql):
        out[("instruments", str(name))] = (str(enabled), str(timed))
    return out


def _literal(value: str) -> str:
    """A SHOW VARIABLES value as SQL: numbers bare (MySQL refuses a string for an integer)."""
    if re.fullmatch(r"-?\d+(\.\d+)?", value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def reset(srv: servers.ThrowawayServer, base: Baseline) -> list[str]:
    """Put *srv* back to *base*; the global variables that would not go back (then the caller
    restarts the server, which sets every one to its start-up value)."""
    stuck: list[str] = []
    with srv.connect() as conn, conn.cursor() as cur:
        me = _rows(cur, "SELECT CONNECTION_ID()")[0][0]
        for pid, user, command in _rows(
            cur, "SELECT ID, USER, COMMAND FROM information_schema.PROCESSLIST"
        ):
            if pid != me and command not in ("Daemon", "Binlog Dump") and user not in (
                "system user", "event_scheduler"
            ):  # fmt: skip
                with contextlib.suppress(pymysql.err.MySQLError):
                    cur.execute(f"KILL {int(pid)}")
        for (schema,) in _rows(cur, "SHOW DATABASES"):
            if schema not in base.schemas and schema not in SYSTEM_SCHEMAS:
                cur.execute(f"DROP DATABASE `{schema.replace('`', '``')}`")
        for user, host in _rows(cur, "SELECT User, Host FROM mysql.user"):
            if (user, host) not in base.users and user not in SYSTEM_USERS:
                try:
                    cur.execute("DROP USER %s@%s", (user, host))
                except pymysql.err.MySQLError:
                    cur.execute("DROP ROLE %s", (user,))  # a MariaDB role (no host)
        for (plugin,) in _rows(cur, PLUGINS):
            if plugin not in base.plugins:
                with contextlib.suppress(pymysql.err.MySQLError):
                    cur.execute(f"UNINSTALL PLUGIN `{plugin}`")
        for name, value in _variables(cur).items():
            want = base.variables.get(name)
            if want is None or want == value:
                continue
            try:
                cur.execute(f"SET GLOBAL {name} = {_literal(want)}")
            except pymysql.err.MySQLError:
                stuck.append(name)
        if base.setup:
            _reset_ps_setup(cur, base.setup)
    return stuck


def _reset_ps_setup(cur: Any, want: dict[tuple[str, str], tuple[str, ...]]) -> None:
    for (table, name), values in _ps_setup(cur).items():
        before = want.get((table, name))
        if before is None or before == values:
            continue
        if table == "consumers":
            sql = "UPDATE performance_schema.setup_consumers SET ENABLED = %s WHERE NAME = %s"
        else:
            sql = (
                "UPDATE performance_schema.setup_instruments SET ENABLED = %s, TIMED = %s "
                "WHERE NAME = %s"
            )
        cur.execute(sql, (*before, name))


@dataclass
class _Slot:
    make: Callable[[], servers.ThrowawayServer]
    srv: servers.ThrowawayServer | None = None
    base: Baseline | None = None
    held: int = 0
    used: float = 0.0


class ServerPool:
    """Named throwaway servers of this process, each started once (see the module doc)."""

    def __init__(self, alive: int | None = None) -> None:
        self.alive = alive or int(os.environ.get("IBDTOOL_TEST_SERVERS_ALIVE") or ALIVE_DEFAULT)
        self._slots: dict[str, _Slot] = {}
        self._failed: dict[str, str] = {}
        self.starts = 0  # starts and restarts that succeeded
        self.resets = 0
        self.reset_restarts = 0  # resets that took a restart (a variable would not go back)

    def register(self, name: str, make: Callable[[], servers.ThrowawayServer]) -> None:
        self._slots.setdefault(name, _Slot(make))

    def acquire(self, name: str) -> servers.ThrowawayServer:
        """The running server *name*, held until :meth:`release`; :class:`ServerUnavailable`
        (the same one line every time) when it could not start."""
        if name in self._failed:
            raise ServerUnavailable(self._failed[name])
        slot = self._slots[name]
        if slot.srv is None or not slot.srv.running:
            self._make_room(name)
            try:
                self._start(slot)
            except Exception as exc:  # whatever it was, the line names it and is kept
                self._failed[name] = one_line(name, slot.srv, exc)
                if slot.srv is not None:
                    with contextlib.suppress(Exception):
                        slot.srv.stop()
                raise ServerUnavailable(self._failed[name]) from None
        assert slot.srv is not None
        slot.held += 1
        slot.used = time.monotonic()
        return slot.srv

    def release(self, name: str) -> None:
        """The module is done with *name*: put the server back to its baseline."""
        slot = self._slots[name]
        slot.held -= 1
        slot.used = time.monotonic()
        srv = slot.srv
        if srv is None or not srv.running or slot.base is None:
            return
        try:
            stuck = reset(srv, slot.base)
        except pymysql.err.MySQLError:
            stuck = ["(the reset itself failed)"]
        self.resets += 1
        if stuck:
            self.reset_restarts += 1
            srv.restart()
            slot.base = Baseline.take(srv)

    def _start(self, slot: _Slot) -> None:
        """Start (or restart on its files) the slot's server; a restarted one is reset, as a
        module that stopped its server could not put it back at its end."""
        if slot.srv is None:
            slot.srv = slot.make()
        fresh = slot.srv.tmpdir is None
        slot.srv.start()
        self.starts += 1
        if fresh or slot.base is None:
            slot.base = Baseline.take(slot.srv)
        else:
            reset(slot.srv, slot.base)

    def _make_room(self, name: str) -> None:
        running = [
            (slot.used, n)
            for n, slot in self._slots.items()
            if n != name and slot.srv is not None and slot.srv.running and slot.held == 0
        ]
        alive = sum(1 for s in self._slots.values() if s.srv is not None and s.srv.running)
        for _, victim in sorted(running)[: max(0, alive + 1 - self.alive)]:
            srv = self._slots[victim].srv
            assert srv is not None
            srv.stop()

    def running(self) -> list[servers.ThrowawayServer]:
        return [s.srv for s in self._slots.values() if s.srv is not None and s.srv.running]

    def close(self) -> None:
        """Stop every server and remove its files; with ``IBDTOOL_TEST_SERVERS_LOG`` set, append
        a line of counts to that file (``bench/bench_test_servers.py`` reads it)."""
        log = os.environ.get("IBDTOOL_TEST_SERVERS_LOG")
        if log:
            made = sum(1 for s in self._slots.values() if s.srv is not None)
            with open(log, "a") as fh:
                fh.write(
                    json.dumps(
                        {"pid": os.getpid(), "servers": made, "starts": self.starts,
                         "resets": self.resets, "reset_restarts": self.reset_restarts,
                         "failed": sorted(self._failed)}
                    ) + "\n"
                )  # fmt: skip
        for slot in self._slots.values():
            if slot.srv is not None:
                with contextlib.suppress(Exception):
                    slot.srv.stop()
                slot.srv.cleanup()


def one_line(name: str, srv: servers.ThrowawayServer | None, exc: BaseException) -> str:
    """Why server *name* did not start, in one line: the error log's first ``[ERROR]`` line,
    else the first line of the exception."""
    what = f"{srv.flavor} {srv.version}" if srv is not None else name
    key = srv.error_log_key_line() if srv is not None else None
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    why = key or first
    return f"throwaway server {name} ({what}) did not start: {why}"
