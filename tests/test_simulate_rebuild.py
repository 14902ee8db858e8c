"""``simulate`` predicts the file a conversion's rebuild writes, on real servers.

Each test gives a table a history as production tables have one (rows inserted in random key
order over twelve transactions, a fifth deleted, a seventh updated, some shortened), predicts
the conversion with ``ibdtool simulate`` on the file as the server flushed it, converts it
for real, and compares the prediction with the new file's allocation (``st_blocks``, read
while ``FLUSH TABLES … FOR EXPORT`` holds the pages on disk): the server is the independent
source. The prediction must hold the real allocation inside its 95% interval and lie within
3% of it. Each table is also predicted with the rebuild planned from a sample of its leaves
(the path a large file takes; forced here with a threshold of 0): the real allocation must lie
inside that interval too.
"""

from __future__ import annotations

import json
import os
import random
from typing import Any

import pytest

from samples.make_samples import SQL_CREATE, SQL_LOAD
from samples.servers import ThrowawayServer
from tests.server_fixtures import (
    conn_args,
    ibdtool,
    measured,
    rows_file,
    server_param,
    wait_for_purge,
)

ROWS = 3000  # ~6 MiB before the rebuild, ~2 MiB after: a conversion of a second or two
TRANSACTIONS = 12
MARIADB_CODECS = ["zlib", "lz4", "lzo", "lzma", "bzip2", "snappy"]


@pytest.fixture
def srv(request: pytest.FixtureRequest) -> ThrowawayServer:
    server: ThrowawayServer = request.getfixturevalue(request.param)
    return server


def history_table(srv: ThrowawayServer, schema: str, table: str, options: str = "") -> None:
    """``schema.table`` with the samples' definition and a history (module doc)."""
    t = f"`{schema}`.`{table}`"
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS `{schema}`")
        cur.execute(f"DROP TABLE IF EXISTS `{schema}`.stage, {t}")
        cur.execute(SQL_CREATE.format(t=f"`{schema}`.stage", opts=""))
        cur.execute(SQL_LOAD.format(t=f"`{schema}`.stage"), (str(rows_file(ROWS)),))
        cur.execute(SQL_CREATE.format(t=t, opts=options))
        ids = list(range(1, ROWS + 1))
        random.Random(21).shuffle(ids)
        step = -(-len(ids) // TRANSACTIONS)
        for i in range(0, len(ids), step):
            chunk = ",".join(map(str, ids[i : i + step]))
            cur.execute(f"INSERT INTO {t} SELECT * FROM `{schema}`.stage WHERE id IN ({chunk})")
        cur.execute(f"DELETE FROM {t} WHERE id % 5 = 0")
        cur.execute(
            f"UPDATE {t} SET notes = CONCAT(notes, ' Revised later.'), "
            "updated = updated + INTERVAL 1 DAY WHERE id % 7 = 0"
        )
        cur.execute(f"UPDATE {t} SET city = LEFT(city, 3) WHERE id % 11 = 0")
        cur.execute(f"DROP TABLE `{schema}`.stage")


#: the sampled plan forced on these small tables: every table's file, 32 of its leaves (the
#: MySQL tables have fewer than 100)
SAMPLED = ("--plan-sample-above", "0", "--plan-sample-leaves", "32")


def predict(
    srv: ThrowawayServer, schema: str, table: str, algorithm: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``simulate --json -a ALGORITHM`` of the table's file while its pages are on disk: the
    default (these tables are planned exactly) and with the rebuild planned from a sample."""
    path = srv.file_path(schema, table)
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute(f"FLUSH TABLES `{schema}`.`{table}` FOR EXPORT")
        try:
            runs = [
                ibdtool("simulate", "--json", "-a", algorithm, *extra, str(path))
                for extra in ((), SAMPLED)
            ]
        finally:
            cur.execute("UNLOCK TABLES")
    out = []
    for res in runs:
        assert res.returncode == 0, res.stderr
        doc = json.loads(res.stdout)
        assert doc["as_rebuilt"] is True, doc
        (result,) = doc["results"]
        out.append({"doc": doc, **result})
    assert "leaf pages sampled" in " ".join(out[1]["doc"]["notes"]), out[1]["doc"]["notes"]
    return out[0], out[1]


def check(pred: dict[str, Any], real: int, before: int | None, sampled: bool = False) -> None:
    value = pred["predicted_allocated"]
    low, high = pred["ci95"]
    print(
        f"{'sampled plan: ' if sampled else ''}real {real:,} predicted {value:,} "
        f"({low:,}-{high:,}) {100 * (value - real) / real:+.2f}%"
    )
    assert 0 < low <= value <= high, pred
    assert low <= real <= high, (real, value, low, high)
    if not sampled:  # a sample of 32 leaves answers within its interval, not within 3%
        assert abs(value - real) <= 0.03 * real, (real, value)
    # the rebuild alone: what the table's history carried, an interval with a floor
    alone = pred["doc"]["rebuild_alone"]["allocated"]
    assert 0 < alone["low"] <= alone["value"] <= alone["high"]
    if before is not None:  # the history's bloat is gone
        assert alone["value"] < before, (alone, before)


def has_codec(srv: ThrowawayServer, codec: str) -> str | None:
    """None when MariaDB can use ``codec``; else why not."""
    if codec == "zlib":
        return None
    rows = srv.query(
        "SELECT PLUGIN_STATUS FROM information_schema.PLUGINS WHERE PLUGIN_NAME = %s",
        (f"provider_{codec}",),
    )
    if not rows or rows[0][0] != "ACTIVE":
        return f"the provider_{codec} plugin is not loaded on this server"
    return None


@pytest.mark.parametrize("srv", [server_param("mariadb", "10.11")], indirect=True)
@pytest.mark.parametrize("codec", MARIADB_CODECS)
def test_mariadb_conversion_lies_in_the_interval(srv: ThrowawayServer, codec: str) -> None:
    why = has_codec(srv, codec)
    if why:
        pytest.skip(why)
    schema = f"rb_{codec}"
    history_table(srv, schema, "t")
    before = measured(srv, schema, "t")["allocated"]
    pred, sampled = predict(srv, schema, "t", f"mariadb:{codec}")
    old = srv.variable("innodb_compression_algorithm")
    srv.query(f"SET GLOBAL innodb_compression_algorithm = '{codec}'")
    try:
        srv.query(f"ALTER TABLE `{schema}`.t PAGE_COMPRESSED=1")
    finally:
        srv.query(f"SET GLOBAL innodb_compression_algorithm = '{old}'")
    real = measured(srv, schema, "t")["allocated"]
    check(pred, real, before)
    check(sampled, real, before, sampled=True)


@pytest.mark.parametrize("srv", [server_param("mariadb", "10.11")], indirect=True)
def test_key_block_size_source(srv: ThrowawayServer) -> None:
    """A ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8 table becomes page-compressed 16K pages."""
    history_table(srv, "rb_kbs", "t", "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8")
    pred, sampled = predict(srv, "rb_kbs", "t", "mariadb:zlib")
    srv.query("ALTER TABLE rb_kbs.t ROW_FORMAT=DYNAMIC KEY_BLOCK_SIZE=0 PAGE_COMPRESSED=1")
    real = measured(srv, "rb_kbs", "t")["allocated"]
    check(pred, real, None)  # a compressed source can be smaller than its rebuilt plain file
    check(sampled, real, None, sampled=True)


@pytest.mark.parametrize("srv", [server_param("mysql8033", "8.0.33")], indirect=True)
@pytest.mark.parametrize("codec", ["zlib", "lz4"])
def test_mysql_conversion_lies_in_the_interval(srv: ThrowawayServer, codec: str) -> None:
    schema = f"rb_{codec}"
    history_table(srv, schema, "t")
    before = measured(srv, schema, "t")["allocated"]
    pred, sampled = predict(srv, schema, "t", f"mysql:{codec}")
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute(f"ALTER TABLE `{schema}`.t COMPRESSION='{codec}'")
        cur.execute(f"OPTIMIZE TABLE `{schema}`.t")
        cur.fetchall()
    real = measured(srv, schema, "t")["allocated"]
    check(pred, real, before)
    check(sampled, real, before, sampled=True)


def test_as_is_keeps_the_old_simulation(tmp_path: Any) -> None:
    """--as-is simulates the pages as they are: on a file with no history to drop both agree
    on the pages, and the JSON says which was simulated."""
    from tests.catalog import REPO

    sample = next((REPO / "samples" / "mariadb").glob("*.ibd"), None)
    if sample is None:
        pytest.skip("no MariaDB sample file")
    res = ibdtool("simulate", "--json", "--as-is", "-a", "mariadb:zlib", str(sample))
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["as_rebuilt"] is False and doc["rebuild_alone"] is None
    assert doc["pages"] == os.stat(sample).st_size // doc["page_size"]


@pytest.mark.parametrize(
    "srv", [server_param("mariadb", "10.11"), server_param("mysql8033", "8.0.33")], indirect=True
)
def test_migrate_plan_predicts_the_rebuilt_file(srv: ThrowawayServer) -> None:
    """``migrate``'s dry run predicts the file as rebuilt (it says so), with the rebuild
    alone beside; the conversion it plans, run by hand, lands inside the interval."""
    history_table(srv, "rb_plan", "t")
    wait_for_purge(srv)  # the deletes' purge done: else it dirties pages later
    measured(srv, "rb_plan", "t")  # the pages on disk, as the page cleaner would leave them
    res = ibdtool("migrate", "rb_plan.t", "--to", "page:lz4", "--json", *conn_args(srv))
    assert res.returncode == 0, res.stderr
    (tp,) = json.loads(res.stdout)["tables"]
    p = tp["prediction"]
    assert p is not None, tp["prediction_note"]
    assert "as rebuilt" in p["how"], p
    alone = p["rebuild_alone"]
    assert 0 < alone["allocated"]["low"] <= alone["allocated"]["value"]
    assert alone["saving"]["value"] > 0  # the history's free space and garbage
    if srv.flavor == "mariadb":
        srv.query("SET GLOBAL innodb_compression_algorithm = 'lz4'")
        srv.query("ALTER TABLE rb_plan.t PAGE_COMPRESSED=1")
        srv.query("SET GLOBAL innodb_compression_algorithm = 'zlib'")
    else:
        with srv.connect() as conn, conn.cursor() as cur:
            cur.execute("ALTER TABLE rb_plan.t COMPRESSION='lz4'")
            cur.execute("OPTIMIZE TABLE rb_plan.t")
            cur.fetchall()
    real = measured(srv, "rb_plan", "t")["allocated"]
    low, high = p["ci95"]
    assert low <= real <= high, (real, p)
    assert abs(p["predicted_allocated"] - real) <= 0.03 * real, (real, p)
