"""Tables and partitions read the same in every view: ``läden.events partition p2023`` and
``läden.Bestellübersicht`` in report, inspect and the TUI browser, never ``#P#``/``#p#``/``#SP#``
or the filename encoding (``l@0ndden``, ``Bestell@1obersicht``). Real MariaDB 10.11 and MySQL
8.0.33 (which writes ``#p#``/``#sp#``).

Oracles: the server's information_schema (TABLES, PARTITIONS) and the files in the schema's folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from samples.servers import ThrowawayServer
from tests.server_fixtures import (
    conn_args,
    ibdtool,
    server_param,
)

SCHEMA = "läden"
SERVERS = [server_param("mariadb", "10.11"), server_param("mysql8033", "8.0.33")]


@pytest.fixture
def srv(request: pytest.FixtureRequest) -> ThrowawayServer:
    server: ThrowawayServer = request.getfixturevalue(request.param)
    return server


@pytest.fixture
def names(srv: ThrowawayServer) -> tuple[ThrowawayServer, Path, set[str]]:
    """The schema with a non-ASCII table, a partitioned and a sub-partitioned one; the folder,
    and each file's label built from what the server says its tables and partitions are."""
    srv.query(f"DROP DATABASE IF EXISTS `{SCHEMA}`")
    srv.query(f"CREATE DATABASE `{SCHEMA}`")
    srv.query(f"CREATE TABLE `{SCHEMA}`.`Bestellübersicht` (id INT PRIMARY KEY)")
    srv.query(
        f"CREATE TABLE `{SCHEMA}`.events (id INT, y INT, PRIMARY KEY (id, y)) "
        "PARTITION BY RANGE (y) (PARTITION p2023 VALUES LESS THAN (2024), "
        "PARTITION p2024 VALUES LESS THAN MAXVALUE)"
    )
    srv.query(
        f"CREATE TABLE `{SCHEMA}`.sub (id INT, y INT, PRIMARY KEY (id, y)) "
        "PARTITION BY RANGE (y) SUBPARTITION BY HASH (id) SUBPARTITIONS 2 "
        "(PARTITION p0 VALUES LESS THAN (2024), PARTITION p1 VALUES LESS THAN MAXVALUE)"
    )
    tables = [
        str(t)
        for (t,) in srv.query(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s", (SCHEMA,)
        )
    ]
    for t in tables:
        srv.query(
            f"INSERT INTO `{SCHEMA}`.`{t}` VALUES (1{', 2023' if t != 'Bestellübersicht' else ''})"
        )
        srv.query(f"FLUSH TABLES `{SCHEMA}`.`{t}` FOR EXPORT")
        srv.query("UNLOCK TABLES")
    labels: set[str] = set()
    for t, part, sub in srv.query(
        "SELECT TABLE_NAME, PARTITION_NAME, SUBPARTITION_NAME FROM information_schema.PARTITIONS "
        "WHERE TABLE_SCHEMA = %s",
        (SCHEMA,),
    ):
        label = f"{t}" + (f" partition {part}" if part else "") + (f"/{sub}" if sub else "")
        labels.add(label)
    assert srv.datadir is not None
    folders = [p for p in srv.datadir.iterdir() if p.is_dir() and p.name.startswith("l@")]
    assert len(folders) == 1, folders  # the server's own encoding of the name
    return srv, folders[0], labels


@pytest.mark.parametrize("srv", SERVERS, indirect=True)
def test_report_and_inspect_name_tables_and_partitions(
    names: tuple[ThrowawayServer, Path, set[str]],
) -> None:
    _srv, folder, labels = names
    assert len(labels) == 1 + 2 + 4
    res = ibdtool("report", str(folder), "--wide")
    assert res.returncode == 0, res.stderr
    shown = {
        line.strip().split("  ")[0].removeprefix(f"{SCHEMA}.")
        for line in res.stdout.splitlines()
        if line.strip().startswith(f"{SCHEMA}.")
    }
    assert shown == labels
    assert "#p" not in res.stdout.lower() and "@" not in res.stdout
    for path in sorted(folder.glob("*.ibd")):
        res = ibdtool("inspect", str(path))
        assert res.returncode == 0, res.stderr
        (row_format,) = [ln for ln in res.stdout.splitlines() if ln.startswith("Row format")]
        said = row_format.split("   table ", 1)[1].strip()
        said = said.removesuffix("(by its file name)").strip()
        assert said.removeprefix(f"{SCHEMA}.") in labels, row_format


@pytest.mark.asyncio
@pytest.mark.parametrize("srv", SERVERS, indirect=True)
async def test_tui_browser_shows_decoded_names(
    names: tuple[ThrowawayServer, Path, set[str]],
) -> None:
    from textual.widgets import DataTable

    from ibdtool.tui.app import create_app
    from tests.test_tui import settle
    from tests.tui_helpers import table_rows

    _srv, folder, labels = names
    app = create_app(folder.parent)
    async with app.run_test(size=(160, 60)) as pilot:
        await settle(pilot)
        rows = table_rows(app.screen.query_one(DataTable))
        heads = [r[0].split()[1] for r in rows if r[0].lstrip().startswith(("▾", "▸"))]
        assert f"{SCHEMA}/" in heads
        start = next(i for i, r in enumerate(rows) if f"{SCHEMA}/" in r[0])
        mine = []
        for r in rows[start + 1 :]:
            if r[0].lstrip().startswith(("▾", "▸")):
                break
            mine.append(r[0].strip())
        assert set(mine) == labels


@pytest.mark.parametrize("srv", SERVERS, indirect=True)
def test_server_tables_lists_partitions_under_their_table(
    names: tuple[ThrowawayServer, Path, set[str]],
) -> None:
    srv, _folder, labels = names
    res = ibdtool("server", "tables", SCHEMA, "--wide", *conn_args(srv))
    assert res.returncode == 0, res.stderr
    lines = [ln.strip() for ln in res.stdout.splitlines() if ln.strip()]
    for table in ("events", "sub"):
        parts = sorted(lb.split(" partition ", 1)[1] for lb in labels if lb.startswith(table + " "))
        at = next(i for i, ln in enumerate(lines) if ln.startswith(f"{SCHEMA}.{table} ("))
        under = [ln.split()[1] for ln in lines[at + 1 : at + 1 + len(parts)]]
        assert lines[at + 1].startswith("partition ") and sorted(under) == parts
    assert "#p" not in res.stdout.lower() and "@" not in res.stdout
