"""``migrate``'s prediction on real servers: every figure with its interval, and stale inputs
named or refused, never turned into a 0 B lower bound or a "100% of the table".

Expected values come from the server (information_schema, the buffer pool) and ``os.stat``.
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any

import pytest

from samples.servers import ThrowawayServer
from tests.server_fixtures import (
    conn_args,
    ibdtool,
    make_table,
    server_param,
)
from tests.test_migrate_load import dirty_in_pool


@pytest.fixture
def srv(request: pytest.FixtureRequest) -> ThrowawayServer:
    server: ThrowawayServer = request.getfixturevalue(request.param)
    return server


@pytest.mark.parametrize(
    "srv", [server_param("mysql8033", "8.0.33"), server_param("mariadb", "10.11")], indirect=True
)
def test_stale_catalog_statistics_are_not_the_table_size(srv: ThrowawayServer) -> None:
    """Statistics taken at 2,000 rows (cached by information_schema), then the table grown
    eightfold: the plan sizes the table by its file, says so, and its interval has a real
    lower bound."""
    make_table(srv, "stale", "t", rows=2000)
    with srv.connect() as conn, conn.cursor() as cur:
        for _ in range(3):
            cur.execute("SELECT MAX(id) FROM stale.t")
            top = cur.fetchone()[0]  # type: ignore[index]
            cur.execute(
                f"INSERT INTO stale.t SELECT id + {top}, created, updated, customer, email, city, "
                "amount, notes FROM stale.t"
            )
    ((data, index),) = srv.query(
        "SELECT DATA_LENGTH, INDEX_LENGTH FROM information_schema.TABLES "
        "WHERE TABLE_SCHEMA = 'stale' AND TABLE_NAME = 't'"
    )
    size = os.stat(srv.file_path("stale", "t")).st_size
    if (data or 0) + (index or 0) >= size / 2:
        pytest.skip(f"the catalog caught up ({data}+{index} of {size} bytes): nothing stale")
    dirty = dirty_in_pool(srv, "stale", "t")
    res = ibdtool("migrate", "stale.t", "--to", "page:zlib", "--json", *conn_args(srv))
    assert res.returncode == 0, res.stderr
    (tp,) = json.loads(res.stdout)["tables"]
    pages = size // 16384
    text = json.dumps(tp)
    assert "100% of the table" not in text, text
    if tp["prediction"] is None:
        check_note(tp, pages, dirty)
        # the pages written by the server's own setting (as a DBA would), the statistics
        # still stale: now a prediction, sized by the file
        (pct,) = srv.query("SELECT @@GLOBAL.innodb_max_dirty_pages_pct")[0]
        srv.query("SET GLOBAL innodb_max_dirty_pages_pct = 0")
        try:
            deadline = time.monotonic() + 180  # the page cleaner is slow under load
            while dirty_in_pool(srv, "stale", "t") and time.monotonic() < deadline:
                time.sleep(0.5)
        finally:
            srv.query("SET GLOBAL innodb_max_dirty_pages_pct = %s", (pct,))
        res = ibdtool("migrate", "stale.t", "--to", "page:zlib", "--json", *conn_args(srv))
        assert res.returncode == 0, res.stderr
        (tp,) = json.loads(res.stdout)["tables"]
        assert tp["prediction"] is not None, tp["prediction_note"]
    p = tp["prediction"]
    low, high = p["ci95"] or (p["predicted_allocated"],) * 2
    assert 0 < low <= p["predicted_allocated"] <= high, p
    if tp["dirty_pages"]:
        assert f"of {pages} pages" in p["how"] and "the file's page count" in p["how"], p
        assert f"the catalog's statistics say {((data or 0) + (index or 0)) // 16384}" in p["how"]
        assert low >= 0.5 * p["predicted_allocated"], p  # at most 25% dirty: not "0 B"


def check_note(tp: dict[str, Any], pages: int, dirty: int) -> None:
    """A plan that makes no prediction for a file lagging its table says why, in pages."""
    note = tp["prediction_note"]
    assert "buffer pool" in note, note
    m = re.match(r"(\d+) of the table's (\d+) pages \((.*?)\) are dirty", note)
    if m:
        n_dirty, n_pages, basis = int(m[1]), int(m[2]), m[3]
        assert n_dirty == tp["dirty_pages"] and dirty > 0, (note, dirty)
        # the table's size: the file's (st_size), or at least its dirty pages, never the
        # stale catalog's alone
        assert n_pages == max(pages, n_dirty) or (
            n_pages == n_dirty and "at least its dirty pages" in basis
        ), (note, pages)
        assert n_dirty > 0.25 * n_pages
