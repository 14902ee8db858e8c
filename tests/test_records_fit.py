"""``records`` with a definition that does not describe the file: an error, never values.

Oracles: throwaway MariaDB 10.11 and MySQL 5.7.22 servers make two tables with different
columns and export both (``FLUSH TABLES … FOR EXPORT``: the ``.ibd`` and its ``.cfg``). Read with
its own ``SHOW CREATE TABLE`` (or its own ``.cfg``) a file gives exactly the server's rows;
read with the other table's definition, or with its own definition altered the way a DBA gets
it wrong (a column too many or too few, a type of another size, NULL-ability, another key),
``records`` stops at the first record with one ``ibdtool: error:`` line naming the page and the
record, exit 2, and no rows on stdout; ``--force`` reads on and marks each such record.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from samples.servers import ThrowawayServer
from tests.server_fixtures import (
    ibdtool,
    json_lines,
)

SCHEMA = "fit"
TABLE_A = """CREATE TABLE `fit`.`{name}` (
  id INT NOT NULL, name VARCHAR(40) NOT NULL, qty INT, price DECIMAL(10,2),
  made DATETIME, code CHAR(6) CHARACTER SET latin1 NOT NULL, PRIMARY KEY (id)
) ENGINE=InnoDB ROW_FORMAT={row_format} DEFAULT CHARSET=utf8mb4"""
TABLE_B = """CREATE TABLE `fit`.`{name}` (
  id BIGINT NOT NULL, code CHAR(8) CHARACTER SET latin1 NOT NULL, n SMALLINT,
  note TEXT, PRIMARY KEY (id)
) ENGINE=InnoDB ROW_FORMAT={row_format} DEFAULT CHARSET=utf8mb4"""
ROWS = 600

#: the right definition changed as a DBA gets it wrong: (what, old text, new text)
WRONG = [
    ("a column too many", "code CHAR(6)", "extra INT NOT NULL, code CHAR(6)"),
    ("a column too few", ", code CHAR(6) CHARACTER SET latin1 NOT NULL", ""),
    ("a type of another size", "qty INT", "qty BIGINT"),
    ("NOT NULL for a NULL-able column", "qty INT", "qty INT NOT NULL"),
    ("another DECIMAL", "DECIMAL(10,2)", "DECIMAL(20,2)"),
    ("a CHAR for a VARCHAR", "name VARCHAR(40)", "name CHAR(40)"),
    ("another key", "PRIMARY KEY (id)", "PRIMARY KEY (code)"),
]

SERVERS = [
    pytest.param("mariadb", marks=pytest.mark.xdist_group("mariadb"), id="mariadb-10.11"),
    pytest.param("mysql57", marks=pytest.mark.xdist_group("mysql57"), id="mysql-5.7.22"),
]


def _export(srv: ThrowawayServer, tmp: Path, row_format: str) -> dict[str, tuple[Path, str]]:
    """Both tables made, filled and exported: name → (copy of the .ibd with its .cfg, SHOW
    CREATE TABLE)."""
    out = {}
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS `{SCHEMA}`")
        for name, ddl in (("ta", TABLE_A), ("tb", TABLE_B)):
            cur.execute(f"DROP TABLE IF EXISTS `{SCHEMA}`.`{name}`")
            cur.execute(ddl.format(name=name, row_format=row_format))
        cur.executemany(
            "INSERT INTO fit.ta VALUES (%s, %s, %s, %s, %s, %s)",
            [
                (
                    i,
                    f"name {i} " + "é" * (i % 7),
                    None if i % 5 == 0 else i * 37 - 5000,
                    f"{i * 3}.{i % 100:02d}",
                    None if i % 9 == 0 else f"2020-{i % 12 + 1:02d}-{i % 28 + 1:02d} 10:11:12",
                    f"c{i % 1000:03d}",
                )
                for i in range(1, ROWS + 1)
            ],
        )
        cur.executemany(
            "INSERT INTO fit.tb VALUES (%s, %s, %s, %s)",
            [(i * 11, f"k{i:05d}", i % 300, "note " * (i % 20)) for i in range(1, ROWS + 1)],
        )
        for name in ("ta", "tb"):
            cur.execute(f"SHOW CREATE TABLE `{SCHEMA}`.`{name}`")
            create = cur.fetchall()[0][1]
            cur.execute(f"FLUSH TABLES `{SCHEMA}`.`{name}` FOR EXPORT")
            try:
                src = srv.file_path(SCHEMA, name)
                d = tmp / f"{name}-{row_format}"
                d.mkdir()
                shutil.copyfile(src, d / f"{name}.ibd")
                shutil.copyfile(src.with_suffix(".cfg"), d / f"{name}.cfg")
            finally:
                cur.execute("UNLOCK TABLES")
            out[name] = (d / f"{name}.ibd", create)
    return out


def _misfit(res: object, what: str) -> None:
    rc, out, err = res.returncode, res.stdout, res.stderr  # type: ignore[attr-defined]
    assert rc == 2, (what, rc, err[-500:], out[:300])
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("# ")]  # the header
    assert len(lines) == 1 and lines[0].startswith("ibdtool: error: "), (what, lines)
    assert re.search(r"page \d+, record at byte \d+: .*does not fit", lines[0]), (what, lines)
    assert out == "", (what, out[:300])  # no value of the misread record was printed


@pytest.mark.parametrize("flavor", SERVERS)
@pytest.mark.parametrize("row_format", ["DYNAMIC", "REDUNDANT"])
def test_a_definition_that_does_not_fit_is_an_error(
    flavor: str, row_format: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    srv: ThrowawayServer = request.getfixturevalue(flavor)
    files = _export(srv, tmp_path, row_format)
    (ta, create_a), (tb, create_b) = files["ta"], files["tb"]
    want = {int(r[0]): r for r in srv.query("SELECT id, name, qty FROM fit.ta ORDER BY id")}

    # the right definitions, from --schema and from the .cfg: every row, exit 0
    for args in (["--schema", create_a], []):
        res = ibdtool("records", str(ta), "--json", *args)
        assert res.returncode == 0, res.stderr[-1000:]
        docs = json_lines(res.stdout)
        assert [d["fields"]["id"] for d in docs] == sorted(want)
        assert all(d["fields"]["name"] == want[d["fields"]["id"]][1] for d in docs)

    # the other table's definition: its CREATE TABLE, its .cfg
    _misfit(ibdtool("records", str(ta), "--schema", create_b.replace("`tb`", "`ta`")), "tb ddl")
    _misfit(ibdtool("records", str(tb), "--schema", create_a.replace("`ta`", "`tb`")), "ta ddl")
    swapped = tmp_path / "swapped"
    swapped.mkdir()
    shutil.copyfile(ta, swapped / "ta.ibd")
    shutil.copyfile(tb.with_suffix(".cfg"), swapped / "ta.cfg")
    _misfit(ibdtool("records", str(swapped / "ta.ibd")), "tb .cfg")

    # its own definition as written at CREATE, then wrong in one way
    right = TABLE_A.format(name="ta", row_format=row_format)
    assert ibdtool("records", str(ta), "--schema", right).returncode == 0
    for what, old, new in WRONG:
        assert old in right, what
        _misfit(ibdtool("records", str(ta), "--schema", right.replace(old, new)), what)

    # --force: every record, the misfits marked, exit 1
    res = ibdtool("records", str(ta), "--json", "--force", "--schema", create_b)
    assert res.returncode == 1, res.stderr[-500:]
    docs = json_lines(res.stdout)
    marked = [d for d in docs if "misfit" in d]
    assert marked and all(isinstance(d["record"], int) for d in marked)
    assert res.stderr.count("does not fit") == len(marked)
