"""``ibdtool copy --in-place`` refuses a tablespace a running server uses, on real servers.

Each server guards its files differently, and each is caught by its own check: MariaDB 10.11
keeps ``.ibd`` files open without a lock (the open-file check), MySQL 5.7.22 holds an fcntl
write lock on every open tablespace (the lock innochecksum also takes), and MySQL 8.0.15 may
have closed the file while still running on its data directory (the data-directory check).
After the server stops, the same command goes through. The servers are the shared fixtures of
``tests/server_fixtures.py``; a test stops one, and the pool starts it again on the same files
for the next module that asks for it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from samples.servers import ThrowawayServer
from tests.test_copy_local import ibdtool
from tests.test_copy_remote import allocated, sha

ROWS = 3000


def _make_table(srv: ThrowawayServer, options: str) -> Path:
    srv.query("CREATE DATABASE d")  # put away with the module's other changes (server_pool)
    srv.query("CREATE TABLE d.t (id INT PRIMARY KEY, note VARCHAR(500)) ENGINE=InnoDB " + options)
    with srv.connect("d") as conn, conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO t VALUES (%s, %s)",
            [(i, f"row {i} of a table that compresses well; " * 8) for i in range(ROWS)],
        )
        conn.commit()
        cur.execute("FLUSH TABLES t FOR EXPORT")
        cur.execute("UNLOCK TABLES")
    return srv.file_path("d", "t")


def _refused_then_allowed(srv: ThrowawayServer, path: Path, *expected: str) -> None:
    before = sha(path)
    res = ibdtool("copy", "--in-place", "--yes", str(path))
    assert res.returncode == 2
    assert res.stderr in [f"ibdtool: error: {path}: {e}\n" for e in expected], res.stderr
    assert sha(path) == before
    srv.stop()
    res = ibdtool("copy", "--in-place", "--yes", "--json", str(path))
    assert res.returncode == 0, res.stderr
    assert sha(path) == before  # punching zeros never changes what the file reads as
    assert allocated(path) <= path.stat().st_size


@pytest.mark.xdist_group("mariadb")
def test_mariadb_keeps_the_file_open(mariadb: ThrowawayServer, tmp_path: Path) -> None:
    srv = mariadb
    path = _make_table(srv, "PAGE_COMPRESSED=1")
    copy = ibdtool("copy", "--no-verify", str(path), str(tmp_path / "copy.ibd"))
    assert copy.returncode == 0, copy.stderr
    assert f"mariadbd (pid {srv.pid}) has it open for writing: the copy may be inconsistent" in (
        copy.stderr
    )
    # a file the server does not know, inside its data directory: the data-directory check
    assert srv.datadir is not None
    stray = srv.datadir / "d" / "stray.ibd"
    stray.write_bytes(path.read_bytes())
    try:
        res = ibdtool("copy", "--in-place", "--yes", str(stray))
    finally:
        stray.unlink()  # DROP DATABASE would stop at a file the server does not know
    assert res.stderr == (
        f"ibdtool: error: {stray}: mariadbd (pid {srv.pid}) runs on the data directory "
        "holding it; stop it before re-punching in place\n"
    )
    _refused_then_allowed(
        srv,
        path,
        f"mariadbd (pid {srv.pid}) has it open for writing; stop it before re-punching in place",
    )


LOCKED = "locked by another process (a running server?); stop it before re-punching in place"


@pytest.mark.xdist_group("mysql57")
def test_mysql57_holds_an_fcntl_lock(mysql57: ThrowawayServer) -> None:
    path = _make_table(mysql57, "COMPRESSION='zlib'")
    _refused_then_allowed(mysql57, path, LOCKED)


@pytest.mark.xdist_group("mysql80")
def test_mysql80_lock_open_file_or_data_directory(mysql80: ThrowawayServer) -> None:
    """8.0 locks open tablespaces but may close idle ones: one of the three checks fires."""
    srv = mysql80
    path = _make_table(srv, "COMPRESSION='zlib'")
    _refused_then_allowed(
        srv,
        path,
        LOCKED,
        f"mysqld (pid {srv.pid}) has it open for writing; stop it before re-punching in place",
        f"mysqld (pid {srv.pid}) runs on the data directory holding it; stop it before "
        "re-punching in place",
    )
