"""``records`` as a DBA runs it beside a live MariaDB 10.11: the client option files give the
server (``~/.my.cnf``, nothing on the command line), a non-ASCII table's file is asked for by its
name, and the docs' ``mysql … SHOW CREATE TABLE`` recipe works exactly as printed.

Oracles: the rows SELECT returns (as text) and the real ``mysql`` client.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from samples.servers import ThrowawayServer
from tests.catalog import REPO
from tests.server_fixtures import (
    clean_env,
    ibdtool,
    json_lines,
)

pytestmark = pytest.mark.xdist_group("mariadb")
SCHEMA, TABLE = "kunden", "Bestellübersicht"


def _rows(srv: ThrowawayServer, table: str) -> list[dict[str, object]]:
    rows = srv.query(f"SELECT id, notiz FROM {SCHEMA}.`{table}` ORDER BY id")
    return [{"id": i, "notiz": n} for i, n in rows]


@pytest.fixture
def table(mariadb: ThrowawayServer) -> tuple[ThrowawayServer, Path, list]:
    """``kunden.Bestellübersicht`` and ``kunden.orders``, the same rows."""
    srv = mariadb
    srv.query(f"DROP DATABASE IF EXISTS {SCHEMA}")
    srv.query(f"CREATE DATABASE {SCHEMA}")
    for name in (TABLE, "orders"):
        srv.query(
            f"CREATE TABLE {SCHEMA}.`{name}` (id INT PRIMARY KEY, notiz VARCHAR(40), "
            "KEY k_notiz (notiz))"
        )
        srv.query(
            f"INSERT INTO {SCHEMA}.`{name}` SELECT seq, CONCAT('größe ', seq) "
            f"FROM {SCHEMA}.seq_1_to_300"
        )
        srv.query(f"FLUSH TABLES {SCHEMA}.`{name}` FOR EXPORT")
        srv.query("UNLOCK TABLES")
    assert srv.datadir is not None
    (path,) = (srv.datadir / SCHEMA).glob("Bestell*.ibd")
    assert path.name == "Bestell@1obersicht.ibd"  # the server's own encoding
    return srv, path, _rows(srv, TABLE)


def _home(tmp_path: Path, srv: ThrowawayServer) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".my.cnf").write_text(f"[client]\nsocket={srv.socket}\nuser=root\n")
    (home / ".my.cnf").chmod(0o600)
    return home


def test_records_reads_the_option_files_and_decoded_names(
    table: tuple[ThrowawayServer, Path, list], tmp_path: Path
) -> None:
    srv, path, rows = table
    env = clean_env(HOME=str(_home(tmp_path, srv)))
    res = ibdtool("records", str(path), "--json", env=env)
    assert res.returncode == 0, res.stderr
    assert [d["fields"] for d in json_lines(res.stdout)] == rows
    res = ibdtool("records", str(path), env=env)
    assert "columns from schema" in res.stderr.splitlines()[0]
    # a server the option files name but that is not there: a warning, then the next source
    (tmp_path / "home" / ".my.cnf").write_text("[client]\nsocket=/nonexistent.sock\n")
    res = ibdtool("records", str(path), env=env)
    assert res.returncode == 0
    assert "[Warning]" in res.stderr and "records in hex" in res.stderr


def _recipe(page: str, starts: str) -> str:
    text = (REPO / "docs" / page).read_text()
    (line,) = [ln for ln in text.splitlines() if ln.startswith(starts) and "SHOW CREATE" in ln]
    return line


def test_the_docs_recipe_for_the_definition_works_as_printed(
    table: tuple[ThrowawayServer, Path, list], tmp_path: Path
) -> None:
    """docs/records.md's line, run by a shell with ``ibdtool`` and ``mysql`` on PATH, the
    connection in ``~/.my.cnf``: shop.orders is this schema's table."""
    srv, _path, _rows_of_the_other = table
    if shutil.which("mysql") is None:
        pytest.fail("the mysql client is needed (scripts/setup.sh --test)")
    line = _recipe("records.md", "ibdtool records orders.ibd")
    line = line.replace("shop.orders", f"{SCHEMA}.orders")
    work = tmp_path / "work"
    work.mkdir()
    assert srv.datadir is not None
    shutil.copy(srv.datadir / SCHEMA / "orders.ibd", work / "orders.ibd")
    rows = _rows(srv, "orders")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "ibdtool"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ibdtool.cli "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    env = clean_env(HOME=str(_home(tmp_path, srv)))
    env["PATH"] = f"{bindir}{os.pathsep}{env['PATH']}"
    # no server for ibdtool itself: the definition must come from the recipe's --schema
    res = subprocess.run(
        ["bash", "-c", line + " --json --no-defaults"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert [d["fields"] for d in json_lines(res.stdout)] == rows
    # the same recipe without -r hands ibdtool escaped newlines
    escaped = subprocess.run(
        ["bash", "-c", line.replace("-Nrse", "-Nse") + " --json --no-defaults"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert escaped.returncode != 0 or [d["fields"] for d in json_lines(escaped.stdout)] != rows
    assert re.search(r"-Nrse", _recipe("index-names.md", "ibdtool inspect"))
