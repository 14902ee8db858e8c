"""Index names and per-index page counts for every version, against the server's own catalogs.

A table is made on MariaDB 10.11, MySQL 5.7.22 and MySQL 8.0.15 and exported with ``FLUSH
TABLES … FOR EXPORT`` (which writes the ``.cfg`` file and flushes every page). Expected values
come from the server: ``INNODB_SYS_INDEXES`` / ``INNODB_INDEXES`` (id, name, root page) and
``INNODB_BUFFER_PAGE`` (the index each cached page belongs to), read while the export lock holds.
"""

from __future__ import annotations

from typing import Any

import pytest

from ibdtool.tablespace.inspect import inspect_path
from ibdtool.tablespace.page_rows import read_page_rows
from samples.servers import ThrowawayServer
from tests.server_fixtures import make_table, space_id


def _check(srv: ThrowawayServer, source: str) -> None:
    make_table(srv, "idxn", "t", rows=3000)
    sid = space_id(srv, "idxn", "t")
    mysql8 = srv.flavor == "mysql" and srv.version.startswith("8.")
    view = "INNODB_INDEXES" if mysql8 else "INNODB_SYS_INDEXES"
    catalog = {
        int(i): (str(n), int(p))
        for i, n, p in srv.query(
            f"SELECT INDEX_ID, NAME, PAGE_NO FROM information_schema.{view} WHERE SPACE = %s",
            (sid,),
        )
    }
    path = srv.file_path("idxn", "t")
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute("FLUSH TABLES idxn.t FOR EXPORT")
        try:
            cur.execute(
                "SELECT PAGE_NUMBER, INDEX_NAME FROM information_schema.INNODB_BUFFER_PAGE "
                "WHERE SPACE = %s AND PAGE_TYPE = 'INDEX'",
                (sid,),
            )
            cached: dict[int, Any] = {int(p): str(n) for p, n in cur.fetchall()}
            r = inspect_path(path, jobs=1)
            rows = {row["page"]: row for row in read_page_rows(str(path))}
        finally:
            cur.execute("UNLOCK TABLES")
    assert r.index_names.source == source
    got = {ix["id"]: (ix["name"], ix["root"]) for ix in r.indexes() if ix["id"] in catalog}
    if source == "sdi":  # the SDI names the indexes but not their root pages
        got = {i: (n, catalog[i][1]) for i, (n, _) in got.items()}
    assert got == catalog
    assert len(catalog) == 3 and sum(ix["pages"] for ix in r.indexes() if ix["name"]) > 10
    assert cached, "no page of the table in the buffer pool"
    for page, name in cached.items():
        assert rows[page]["index"] == name.strip("`"), page


@pytest.mark.xdist_group("mariadb")
def test_mariadb_index_names_from_cfg(mariadb: ThrowawayServer) -> None:
    _check(mariadb, "cfg")


@pytest.mark.xdist_group("mysql57")
def test_mysql57_index_names_from_cfg(mysql57: ThrowawayServer) -> None:
    _check(mysql57, "cfg")


@pytest.mark.xdist_group("mysql80")
def test_mysql80_index_names_from_sdi(mysql80: ThrowawayServer) -> None:
    _check(mysql80, "sdi")
