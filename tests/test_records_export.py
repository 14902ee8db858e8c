"""``records --format sql|csv|tsv``: the rows of a tablespace, loaded back into a real server.

Oracle: throwaway MariaDB 10.11, MySQL 5.7.22 and 8.0.33 servers. A table with every column
type ``records`` decodes (the table of ``test_records``: NULLs, negative numbers, DECIMAL,
fractional temporals, utf8mb4 and latin1 text, binary strings, off-page TEXT/BLOB, ENUM, SET,
BIT, JSON on MySQL) is filled, a few rows are deleted while a read view keeps them
delete-marked, and the file is exported with ``FLUSH TABLES … FOR EXPORT`` held. Each export is
loaded into an empty table of the same definition — the SQL by running it, CSV and TSV by the
``LOAD DATA`` statement ``records`` prints — and ``SELECT … ORDER BY id`` of every column must
equal, row for row, the original's (and a CRC of every row, the server's own).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from samples.servers import ThrowawayServer
from tests.catalog import REPO
from tests.cli_runner import cli_env, ibdtool_command
from tests.server_fixtures import (
    server_param,
)
from tests.test_records import COLUMNS, NAMES, _text_conn, has_json, make_rows

SCHEMA = "exp"
SERVERS = [
    pytest.param("mariadb", marks=pytest.mark.xdist_group("mariadb"), id="mariadb-10.11"),
    pytest.param("mysql57", marks=pytest.mark.xdist_group("mysql57"), id="mysql-5.7.22"),
    server_param("mysql8033", "mysql-8.0.33"),
]
DELETED = (3, 4, 77, 150)


def _select(cur: Any, table: str, names: list[str]) -> list[tuple[Any, ...]]:
    cols = ", ".join("`b` + 0" if n == "b" else f"`{n}`" for n in names)
    cur.execute(f"SELECT {cols} FROM `{SCHEMA}`.`{table}` ORDER BY id")
    return [tuple(r) for r in cur.fetchall()]


def _crc(cur: Any, table: str, names: list[str]) -> tuple[int, int]:
    cols = ", ".join(f"IFNULL(HEX(`{n}`), 'N')" for n in names)
    cur.execute(f"SELECT COUNT(*), SUM(CRC32(CONCAT_WS('|', {cols}))) FROM `{SCHEMA}`.`{table}`")
    n, crc = cur.fetchone()
    return int(n), int(crc or 0)


@pytest.mark.parametrize("flavor", SERVERS)
def test_export_loads_back_into_the_server(
    flavor: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    srv: ThrowawayServer = request.getfixturevalue(flavor)
    with_json = has_json(srv)
    names = NAMES + (["j"] if with_json else [])
    body = COLUMNS.format(json="j JSON," if with_json else "")
    conn, holder = _text_conn(srv), _text_conn(srv)
    tmp_path.chmod(0o755)  # the server reads the CSV/TSV files
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE IF NOT EXISTS `{SCHEMA}`")
            for t in ("src", "from_sql", "from_csv", "from_tsv"):
                cur.execute(f"DROP TABLE IF EXISTS `{SCHEMA}`.`{t}`")
                cur.execute(f"CREATE TABLE `{SCHEMA}`.`{t}` ({body}) ENGINE=InnoDB")
            marks = ", ".join(["%s"] * len(names))
            cur.executemany(
                f"INSERT INTO `{SCHEMA}`.src ({', '.join(names)}) VALUES ({marks})",
                make_rows(with_json),
            )
            with holder.cursor() as hcur:  # the deleted rows stay delete-marked in the file
                hcur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            cur.execute(f"DELETE FROM `{SCHEMA}`.src WHERE id IN {DELETED}")
            cur.execute(f"SHOW CREATE TABLE `{SCHEMA}`.src")
            create = cur.fetchall()[0][1]
            want = _select(cur, "src", names)
            want_crc = _crc(cur, "src", names)
            cur.execute(f"FLUSH TABLES `{SCHEMA}`.src FOR EXPORT")
            try:
                path = srv.file_path(SCHEMA, "src")
                defn = [] if srv.version.startswith("8.") else ["--schema", create]
                out = {}
                for fmt in ("sql", "csv", "tsv"):
                    res = subprocess.run(
                        ibdtool_command("records", path, "--format", fmt, *defn),
                        capture_output=True, env=cli_env(), cwd=REPO, check=False,
                    )  # fmt: skip
                    assert res.returncode == 0, (fmt, res.stderr[-2000:])
                    out[fmt] = (res.stdout, res.stderr.decode())
            finally:
                cur.execute("UNLOCK TABLES")
            holder.close()
            cur.execute(f"USE `{SCHEMA}`")
            for fmt, (data, err) in out.items():
                table = f"from_{fmt}"
                if fmt == "sql":
                    text = data.decode().replace("INSERT INTO `src`", f"INSERT INTO `{table}`")
                    for stmt in re.split(r";\n", text):
                        if stmt.strip():
                            cur.execute(stmt)
                    continue
                f = tmp_path / f"rows.{fmt}"
                f.write_bytes(data)
                f.chmod(0o644)
                (load,) = [ln[len("# load with: ") :] for ln in err.splitlines()
                           if ln.startswith("# load with: ")]  # fmt: skip
                load = load.replace("'FILE'", f"'{f}'").replace("`src`", f"`{SCHEMA}`.`{table}`")
                cur.execute(load)
                cur.execute("SHOW WARNINGS")
                assert not cur.fetchall(), fmt
            for fmt in ("sql", "csv", "tsv"):
                got = _select(cur, f"from_{fmt}", names)
                assert len(got) == len(want) == 240 - len(DELETED), fmt
                for a, b in zip(got, want, strict=True):
                    assert a == b, (
                        fmt,
                        [(n, x, y) for n, x, y in zip(names, a, b, strict=True) if x != y],
                    )
                assert _crc(cur, f"from_{fmt}", names) == want_crc, fmt
    finally:
        conn.close()
