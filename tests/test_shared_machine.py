"""The test servers share the machine: they start beside other MariaDB/MySQL servers that use
native AIO, hold no AIO context or io_uring themselves, are shared between modules and put back
as they started, and say in one line, once, why they could not start.

Oracles: the kernel (``[aio]`` rings in ``/proc/PID/maps``, one per ``io_setup``; io_uring
descriptors in ``/proc/PID/fd``; ``/proc/sys/fs/aio-nr``) and the servers themselves
(``@@innodb_use_native_aio``, SHOW DATABASES, ``mysql.user``, SHOW GLOBAL VARIABLES).
"""

from __future__ import annotations

import ast
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from samples import servers
from tests.catalog import REPO
from tests.server_fixtures import POOLED, consumer_enabled, global_var
from tests.server_pool import Baseline, ServerPool, ServerUnavailable

pytestmark = pytest.mark.xdist_group("shared_machine")


def aio_rings(pid: int) -> int:
    """Kernel AIO contexts of *pid*: every ``io_setup`` maps one ``[aio]`` ring."""
    return sum("[aio]" in ln for ln in Path(f"/proc/{pid}/maps").read_text().splitlines())


def io_urings(pid: int) -> int:
    n = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            n += os.readlink(fd) == "anon_inode:[io_uring]"
    return n


def aio_nr() -> int:
    return int(Path("/proc/sys/fs/aio-nr").read_text())


def held(srv: servers.ThrowawayServer) -> tuple[int, int]:
    assert srv.pid is not None
    return aio_rings(srv.pid), io_urings(srv.pid)


@contextlib.contextmanager
def pool_of(**makers: object) -> Iterator[ServerPool]:
    pool = ServerPool(alive=len(makers))
    for name, make in makers.items():
        pool.register(name, make)  # type: ignore[arg-type]
    try:
        yield pool
    finally:
        pool.close()


def test_no_test_module_makes_a_server_fixture_of_its_own() -> None:
    """Importing a server fixture into a test module makes pytest register a second fixture of
    that name for that module, with a server of its own (once one per module and worker): the
    fixtures come from the conftest plugin only."""
    offenders = []
    for path in sorted((REPO / "tests").glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "tests.server_fixtures":
                offenders += [f"{path.name}: {a.name}" for a in node.names if a.name in POOLED]
    assert not offenders


def test_fixture_servers_start_beside_native_aio_servers_and_hold_no_aio() -> None:
    """A MariaDB 10.11 and a MySQL 8.0.15 with native AIO run on the machine (as another
    service would); the fixtures' MariaDB and MySQL start beside them and reserve nothing."""
    for flavor, version in (("mariadb", None), ("mysql", "8.0.15")):
        ok, why = servers.available(flavor, version)  # type: ignore[arg-type]
        if not ok:
            pytest.fail(why)
    other_maria = servers.mariadb_server(native_aio=True)
    other_mysql = servers.mysql_server("8.0.15", native_aio=True)
    with other_maria, other_mysql:
        # they do reserve: libaio contexts (MySQL) or an io_uring (MariaDB 10.6+)
        assert other_maria.variable("innodb_use_native_aio") == "1"
        assert other_mysql.variable("innodb_use_native_aio") == "1"
        assert sum(held(other_maria)) >= 1 and aio_rings(other_mysql.pid or 0) >= 1
        before = aio_nr()
        with pool_of(mariadb=POOLED["mariadb"], mysql80=POOLED["mysql80"]) as pool:
            for name in ("mariadb", "mysql80"):
                srv = pool.acquire(name)
                assert srv.variable("innodb_use_native_aio") in ("0", "OFF")
                assert held(srv) == (0, 0), name
                pool.release(name)
            after = aio_nr()
        print(f"aio-nr {before} before the fixture servers, {after} with them up")


def test_a_module_finds_the_server_as_it_started() -> None:
    """What a module leaves (a schema, a user, global settings, a performance_schema consumer,
    an open connection) is gone when the next module gets the same server process."""
    with pool_of(mariadb=POOLED["mariadb"]) as pool:
        srv = pool.acquire("mariadb")
        pid = srv.pid
        fresh = Baseline.take(srv)
        pct = global_var(srv, "innodb_max_dirty_pages_pct")
        consumer = consumer_enabled(srv)
        left_open = srv.connect()
        srv.query("CREATE DATABASE left_behind")
        srv.query("CREATE TABLE left_behind.t (id INT PRIMARY KEY) ENGINE=InnoDB")
        srv.query("CREATE USER 'left'@'localhost'")
        srv.query("SET GLOBAL innodb_max_dirty_pages_pct = 3")
        srv.query("SET GLOBAL general_log = ON")
        flip = "NO" if consumer == "YES" else "YES"
        srv.query(
            "UPDATE performance_schema.setup_consumers SET ENABLED = %s "
            "WHERE NAME = 'events_stages_current'",
            (flip,),
        )
        assert Baseline.take(srv) != fresh
        pool.release("mariadb")

        again = pool.acquire("mariadb")
        assert again is srv and srv.pid == pid and pool.starts == 1  # the same process
        assert Baseline.take(srv) == fresh
        assert global_var(srv, "innodb_max_dirty_pages_pct") == pct
        assert consumer_enabled(srv) == consumer
        with contextlib.suppress(Exception):
            left_open.close()  # killed by the reset: closing it may find it gone
        pool.release("mariadb")


def test_at_most_alive_servers_run_and_a_stopped_one_comes_back_on_its_files() -> None:
    with pool_of(mariadb=POOLED["mariadb"], bare=POOLED["mariadb_bare"]) as pool:
        pool.alive = 1
        first = pool.acquire("mariadb")
        first.query("CREATE DATABASE kept_across_the_stop")
        datadir = first.datadir
        pool.release("mariadb")  # the reset drops it: the baseline has no such schema
        first.query("CREATE DATABASE made_after_the_reset")
        second = pool.acquire("bare")
        assert second.running and not first.running and len(pool.running()) == 1
        pool.release("bare")
        back = pool.acquire("mariadb")
        assert back is first and back.running and back.datadir == datadir
        assert not second.running
        # restarted on its own files, then reset: what was made after the reset is gone too
        schemas = {r[0] for r in back.query("SHOW DATABASES")}
        assert not schemas & {"kept_across_the_stop", "made_after_the_reset"}
        pool.release("mariadb")


def test_a_server_that_cannot_start_says_why_in_one_line_once() -> None:
    def broken() -> servers.ThrowawayServer:
        # an option the server does not know: it stops at start-up, after the install
        return servers.mariadb_server(run_options=["--no-such-option-here=1"])

    with pool_of(broken=broken) as pool:
        with pytest.raises(ServerUnavailable) as first:
            pool.acquire("broken")
        with pytest.raises(ServerUnavailable) as second:
            pool.acquire("broken")
        assert pool.starts == 0  # the second acquire did not try again
        line = str(first.value)
        assert str(second.value) == line and "\n" not in line
        assert line.startswith("throwaway server broken (mariadb ") and "[ERROR]" in line
        srv = pool._slots["broken"].srv
        assert srv is not None and srv.error_log is not None
        assert line.split("[ERROR]", 1)[1] in srv.error_log.read_text()
