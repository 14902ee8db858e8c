"""The predicted DROP TABLE time against a real DROP TABLE on a throwaway MariaDB 10.11.

``ibdtool calibrate`` measures the datadir's filesystem; a page-compressed table (a FIEMAP
extent per page) is flushed to disk; ``inspect --json`` and ``server tables --json`` print the
prediction; then the table is dropped and the statement is timed by the client. The expected
extent count is ``filefrag -v``'s, the time the client's clock: nothing from ibdtool.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from samples import servers
from tests.server_fixtures import FAST, _need, clean_env, conn_args, ibdtool, make_table
from tests.test_drop_cost import filefrag_extents

pytestmark = pytest.mark.xdist_group("mariadb_drop")


@pytest.fixture(scope="module")
def srv() -> Iterator[servers.ThrowawayServer]:
    _need("mariadb")
    run = [*FAST, "--innodb-doublewrite=0", "--innodb-use-native-aio=0"]
    with servers.mariadb_server(run_options=run) as s:
        yield s


def test_drop_table_lies_in_the_printed_range(srv: servers.ThrowawayServer, tmp_path: Path) -> None:
    assert srv.datadir is not None
    env = clean_env(XDG_STATE_HOME=str(tmp_path / "state"))
    cal = ibdtool("calibrate", str(srv.datadir), "--extents", "1024", "-r", "3", env=env)
    assert cal.returncode == 0, cal.stderr
    make_table(srv, "cost", "pc", rows=20000, options="PAGE_COMPRESSED=1", doublings=2)
    path = srv.datadir / "cost" / "pc.ibd"
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute("FLUSH TABLES cost.pc FOR EXPORT")  # every page written, holes punched
        n = filefrag_extents(path)
        cur.execute("UNLOCK TABLES")
    assert n > 2000, "a page-compressed table has about an extent per page"
    doc = json.loads(ibdtool("inspect", "--json", str(path), env=env).stdout)
    cost = doc["drop_cost"]
    assert cost["extents"] == n and cost["source"] == "calibration"
    tables = ibdtool("server", "tables", "cost", "--json", *conn_args(srv), env=env)
    assert tables.returncode == 0, tables.stderr
    (row,) = json.loads(tables.stdout)
    assert row["drop_cost"]["extents"] == n
    with srv.connect() as conn, conn.cursor() as cur:
        t0 = time.monotonic()
        cur.execute("DROP TABLE cost.pc")
        took = time.monotonic() - t0
    assert not path.exists()
    assert cost["low"] <= took <= cost["high"], (took, cost)


def test_drop_after_drop_prepare_leaves_the_extents_to_free(
    srv: servers.ThrowawayServer, tmp_path: Path
) -> None:
    """The DROP removes only a name: every extent is still there, then ``free`` frees them."""
    assert srv.datadir is not None
    make_table(srv, "cost", "kept", rows=20000, options="PAGE_COMPRESSED=1")
    path = srv.datadir / "cost" / "kept.ibd"
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute("FLUSH TABLES cost.kept FOR EXPORT")
        n = filefrag_extents(path)
        cur.execute("UNLOCK TABLES")
    link = tmp_path / "kept.ibd.ibdtool-drop"
    done = ibdtool("drop-prepare", "--into", str(tmp_path), str(path))
    assert done.returncode == 0, done.stderr
    refused = ibdtool("free", str(link))  # the table still has its file
    assert refused.returncode == 2 and "2 links" in refused.stderr
    srv.query("DROP TABLE cost.kept")
    assert not path.exists() and filefrag_extents(link) == n
    freed = ibdtool("free", "--json", "--pause", "0", str(link))
    assert freed.returncode == 0, freed.stderr
    summary = json.loads(freed.stdout.splitlines()[-1])["summary"]
    assert summary["done"] and summary["extents"] == n and not link.exists()


def test_simulated_extents_after_page_compression_match_the_server(
    srv: servers.ThrowawayServer, tmp_path: Path
) -> None:
    """simulate's extent count for MariaDB zlib on this filesystem's blocks, against
    ``filefrag`` on the file the server writes when the table is made page-compressed."""
    assert srv.datadir is not None
    make_table(srv, "cost", "conv", rows=20000)
    path = srv.datadir / "cost" / "conv.ibd"
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute("FLUSH TABLES cost.conv FOR EXPORT")
        # the kernel may still be writing the file back (delayed allocation turns into
        # extents as it does): the test syncs it, and measures again while the mapping moved
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        for _ in range(3):
            first = filefrag_extents(path)
            sim = ibdtool("simulate", "--json", "--full", "-a", "mariadb:zlib", str(path))
            before = filefrag_extents(path)
            if before == first:
                break
        cur.execute("UNLOCK TABLES")
    assert sim.returncode == 0, sim.stderr
    doc = json.loads(sim.stdout)
    (row,) = [r for r in doc["results"] if r["block_size"] == doc["fs_block_size"]]
    predicted = row["extents_after"]
    assert doc["drop_cost_now"]["extents"] == before
    srv.query("ALTER TABLE cost.conv PAGE_COMPRESSED=1")
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute("FLUSH TABLES cost.conv FOR EXPORT")
        real = filefrag_extents(path)
        cur.execute("UNLOCK TABLES")
    assert real > 500
    assert abs(predicted - real) <= 0.1 * real, (predicted, real)
    after = row["drop_cost_after"]
    assert after["extents"] == predicted and after["low"] <= after["seconds"] <= after["high"]


def test_migrate_plan_prices_the_old_files_unlink_and_a_later_drop(
    srv: servers.ThrowawayServer, tmp_path: Path
) -> None:
    """The plan's DROP figures: the old file's extents (filefrag) and a warning past
    --slow-drop; the new file's after page compression, inside the range simulate gives."""
    assert srv.datadir is not None
    make_table(srv, "cost", "plan", rows=20000)
    path = srv.datadir / "cost" / "plan.ibd"
    args = ["migrate", "cost.plan", "--to", "page:zlib", "--flush-for-export", "--json"]
    quiet = ibdtool(*args, *conn_args(srv))
    assert quiet.returncode == 0, quiet.stderr
    (table,) = json.loads(quiet.stdout)["tables"]
    pred = table["prediction"]
    assert pred["drop_old"]["extents"] == filefrag_extents(path)
    assert pred["drop_new"]["extents"] > 10 * pred["drop_old"]["extents"]
    by_name = {c["check"]: c for c in table["checks"]}
    assert by_name["drop_old"]["severity"] == "info"
    loud = ibdtool(*args, "--slow-drop", "0", *conn_args(srv))
    (table,) = json.loads(loud.stdout)["tables"]
    by_name = {c["check"]: c for c in table["checks"]}
    assert by_name["drop_old"]["severity"] == by_name["drop_new"]["severity"] == "warning"
    assert "drop-prepare" in by_name["drop_new"]["message"]


def filefrag_layout(path: Path) -> tuple[int, int, int, int]:
    """(extents, data bytes, logically contiguous runs, filefrag's own summary count) from
    ``filefrag -v``'s rows: logical start and length in blocks."""
    out = subprocess.run(
        ["filefrag", "-v", "-b4096", str(path)], capture_output=True, text=True, check=True
    ).stdout
    rows = [
        (int(m.group(1)), int(m.group(2)))
        for m in re.finditer(r"^\s*\d+:\s+(\d+)\.\.\s*\d+:\s+\d+\.\.\s*\d+:\s+(\d+):", out, re.M)
    ]
    runs = sum(1 for i, (start, _n) in enumerate(rows) if i == 0 or start != sum(rows[i - 1]))
    summary = int(re.search(r"(\d+) extents? found", out).group(1))  # type: ignore[union-attr]
    return len(rows), sum(n for _s, n in rows) * 4096, runs, summary


def test_layout_and_costly_saving_flag(srv: servers.ThrowawayServer) -> None:
    assert srv.datadir is not None
    make_table(srv, "lay", "pc", rows=20000, options="PAGE_COMPRESSED=1", doublings=1)
    path = srv.datadir / "lay" / "pc.ibd"
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute("FLUSH TABLES lay.pc FOR EXPORT")
        doc = json.loads(ibdtool("inspect", "--json", str(path)).stdout)
        n, data, runs, summary = filefrag_layout(path)
        flagged = ibdtool("report", "--format", "json", "--costly-saving", "100", str(path))
        quiet = ibdtool("report", "--format", "json", "--costly-saving", "0", str(path))
        cur.execute("UNLOCK TABLES")
    lay = doc["layout"]
    assert lay["extents"] == n and lay["data_runs"] == runs and lay["physical_runs"] == summary
    assert lay["mean_extent_bytes"] == round(data / n)
    assert lay["scan_layout_factor"] > 1
    (row,) = json.loads(flagged.stdout)["tablespaces"]
    assert (
        "costly_saving" in row["flags"] and row["scan_layout_factor"] == lay["scan_layout_factor"]
    )
    (row,) = json.loads(quiet.stdout)["tablespaces"]
    assert "costly_saving" not in row["flags"]
