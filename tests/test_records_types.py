"""``records`` shows each value as the server shows it, whichever source gave the definition.

Oracle: throwaway MariaDB 10.11 and 11.4 servers (UUID since 10.7, INET6 since 10.5, INET4
since 10.10) and MySQL 5.7.22 hold a table of the types whose text is not their bytes —
DECIMAL of several precisions and signs, ENUM, SET, and on MariaDB UUID (versions 1, 4, 7 and
non-RFC values, stored swapped or not), INET4 and INET6 (mapped, compatible, compressed forms).
With ``FLUSH TABLES … FOR EXPORT`` held, ``SELECT CAST(col AS CHAR)`` must equal the value
``records --json`` reads with the definition from ``SHOW CREATE TABLE`` (``--schema``), from
the live server (``-S``), and from the ``.cfg`` export file with the ``.frm`` beside it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from samples.servers import ThrowawayServer
from tests.server_fixtures import (
    conn_args,
    ibdtool,
    json_lines,
    server_param,
)

SCHEMA = "types"
COMMON = """id INT NOT NULL PRIMARY KEY,
  d1 DECIMAL(5,2), d2 DECIMAL(20,6) UNSIGNED, d3 DECIMAL(38,0), d4 DECIMAL(30,30),
  e ENUM('red','green','blue','ü-nicode'), s SET('a','b','c','d','e','f','g','h','i')"""
MARIA = """, u UUID, i4 INET4, i6 INET6"""
DECIMALS = [
    ("123.45", "99999999999999.999999", "-12345678901234567890123456789012345678", "0.1"),
    ("-0.01", "0.000001", "0", "-0.999999999999999999999999999999"),
    ("-999.99", "1.5", "9" * 38, "0.000000000000000000000000000001"),
]  # fmt: skip
UUIDS = [
    "f81d4fae-7dec-11d0-a765-00a0c91e6bf6",  # version 1: stored swapped
    "123e4567-e89b-42d3-a456-426614174000",  # version 4
    "01890a5d-ac96-774b-bcce-b302099a8057",  # version 7: stored as is
    "00000000-0000-0000-0000-000000000000",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
    "12345678-9abc-1def-0123-456789abcdef",  # version 1, variant 0: as is
]
INET6 = ["::", "::1", "::ffff:192.0.2.1", "::192.0.2.1", "2001:db8::8a2e:370:7334",
         "fe80:0:0:1::", "1:0:0:2:0:0:0:3", "1:2:3:4:5:6:7:8"]  # fmt: skip
INET4 = ["0.0.0.0", "192.0.2.1", "255.255.255.255", "10.0.0.7"]

SERVERS = [
    pytest.param("mariadb", marks=pytest.mark.xdist_group("mariadb"), id="mariadb-10.11"),
    server_param("mariadb114", "mariadb-11.4"),
    pytest.param("mysql57", marks=pytest.mark.xdist_group("mysql57"), id="mysql-5.7.22"),
]


def _rows(maria: bool) -> list[tuple[Any, ...]]:
    rows = []
    for i in range(1, 301):
        d = DECIMALS[i % len(DECIMALS)]
        row: list[Any] = [
            i, d[0], d[1], d[2], d[3],
            None if i % 11 == 0 else ["red", "green", "blue", "ü-nicode"][i % 4],
            None if i % 13 == 0 else ",".join(x for j, x in enumerate("abcdefghi") if i >> j & 1),
        ]  # fmt: skip
        if maria:
            row += [
                None if i % 7 == 0 else UUIDS[i % len(UUIDS)],
                INET4[i % len(INET4)],
                INET6[i % len(INET6)],
            ]
        rows.append(tuple(row))
    return rows


@pytest.mark.parametrize("flavor", SERVERS)
def test_values_match_select_from_every_definition_source(
    flavor: str, request: pytest.FixtureRequest
) -> None:
    srv: ThrowawayServer = request.getfixturevalue(flavor)
    maria = srv.flavor == "mariadb"
    names = ["id", "d1", "d2", "d3", "d4", "e", "s"] + (["u", "i4", "i6"] if maria else [])
    rows = _rows(maria)
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS `{SCHEMA}`")
        cur.execute(f"DROP TABLE IF EXISTS `{SCHEMA}`.t")
        cur.execute(
            f"CREATE TABLE `{SCHEMA}`.t ({COMMON}{MARIA if maria else ''}) ENGINE=InnoDB "
            "DEFAULT CHARSET=utf8mb4"
        )
        marks = ", ".join(["%s"] * len(names))
        cur.executemany(f"INSERT INTO `{SCHEMA}`.t VALUES ({marks})", rows)
        cur.execute(f"SHOW CREATE TABLE `{SCHEMA}`.t")
        create = cur.fetchall()[0][1]
        cols = ", ".join(f"CAST(`{n}` AS CHAR)" for n in names)
        cur.execute(f"SELECT {cols} FROM `{SCHEMA}`.t ORDER BY id")
        want = {int(r[0]): dict(zip(names, r, strict=True)) for r in cur.fetchall()}
        cur.execute(f"FLUSH TABLES `{SCHEMA}`.t FOR EXPORT")
        try:
            path = srv.file_path(SCHEMA, "t")
            assert path.with_suffix(".cfg").is_file() and path.with_suffix(".frm").is_file()
            runs = {
                "schema": ibdtool("records", str(path), "--json", "--schema", create),
                "cfg+frm": ibdtool("records", str(path), "--json"),
            }
        finally:
            cur.execute("UNLOCK TABLES")
    runs["server"] = ibdtool("records", str(path), "--json", *conn_args(srv))
    assert len(want) == len(rows)
    for source, res in runs.items():
        assert res.returncode == 0, (source, res.stderr[-2000:])
        docs = json_lines(res.stdout)
        assert [d["fields"]["id"] for d in docs] == sorted(want), source
        for d in docs:
            theirs = want[d["fields"]["id"]]
            for n in names[1:]:
                ours = d["fields"][n]
                assert (None if ours is None else str(ours)) == theirs[n], (
                    source, d["fields"]["id"], n, ours, theirs[n],
                )  # fmt: skip


def test_frm_of_a_damaged_file_is_one_line(tmp_path: Path) -> None:
    """A .frm of junk beside a .cfg: one error line naming the .frm, exit 2."""
    from tests.conftest import corpus_file

    src = corpus_file("mariadb-10.11/p16k-plain-1000rows.ibd")
    (tmp_path / "t.ibd").write_bytes(src.read_bytes())
    (tmp_path / "t.cfg").write_bytes(src.with_suffix(".cfg").read_bytes())
    for junk in (b"", b"\xfe\x01" + b"\xff" * 400, b"\xfe\x01\x0a" + bytes(500)):
        (tmp_path / "t.frm").write_bytes(junk)
        res = ibdtool("records", str(tmp_path / "t.ibd"))
        lines = res.stderr.strip().splitlines()
        assert res.returncode == 2 and len(lines) == 1, (junk[:8], res.stderr)
        assert "t.frm" in lines[0] and "Traceback" not in res.stderr
