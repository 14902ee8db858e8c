"""``records``' fast path (the compiled page plan, runs of leaf pages split over processes)
against the general reader walking the chain in one process.

The reference is a second computation: :meth:`RecordsRun.events` (the general reader of
:mod:`ibdtool.parsers.records`, one record at a time) formatted a line per event, problems and
misfits handled as the CLI says. The fast path is the CLI's own printer (``_print``, ``_export``)
with runs cut small (:data:`record_blocks.RUN_PAGES` = 2 pages, no minimum) so that even a corpus
file of 1,000 rows is read by several processes. On every SDI and ``.cfg`` corpus file (every
row format MariaDB 10.11 and MySQL 5.7/8.0 write, ROW_FORMAT=COMPRESSED, page compression), on
damaged copies (random bytes in leaf pages, a leaf chain that loops or leaves the file), and on
a real MariaDB 10.11 table of 30,000 rows (its clustered index, a DESC key and a key of
three levels), the text output, the warnings
and the exit must be the reference's byte for byte; the table's CSV and SQL exports, loaded back
into the server, must give its own ``SELECT`` (checksummed by the server).
"""

from __future__ import annotations

import random
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ibdtool.errors import InputError
from ibdtool.tablespace import record_blocks
from ibdtool.tablespace.records import open_records
from samples.servers import ThrowawayServer
from tests.catalog import REPO, load_catalog
from tests.cli_runner import cli_env, ibdtool_command
from tests.conftest import corpus_file

CATALOG = load_catalog()
FILES = [
    e.rel for e in CATALOG
    if e.rel.endswith(".ibd") and e.page_types.get("INDEX", 0) and "ENCRYPTED" not in e.page_types
    and ("SDI" in e.page_types or e.rel.startswith("mariadb-10.11/"))
]  # fmt: skip


def reference(
    path: Path, force: bool = False, as_json: bool = False, **kw: Any
) -> tuple[str, list[str], int, str]:
    """(stdout, warnings, problems, error) of ``records PATH`` by the general reader."""
    from ibdtool.cli.records import _json_line, _text_line

    run = open_records(str(path), force=force, **kw)
    out: list[str] = []
    warns: list[str] = []
    problems = 0
    error = ""
    try:
        for ev in run.events():
            if ev.misfit is not None:
                if not force:
                    error = f"page {ev.page}, record at byte {ev.origin}: {ev.misfit}"
                    break
                problems += 1
                warns.append(f"page {ev.page}, record at byte {ev.origin}: does not fit")
            if ev.problem is not None:
                problems += 1
                warns.append(f"page {ev.page}: {ev.problem}")
                if not as_json:
                    continue
            out.append(_json_line(ev) if as_json else _text_line(ev))
    finally:
        run.ts.close()
    return "".join(out), warns, problems, error


def fast(
    path: Path,
    jobs: int,
    capsys: pytest.CaptureFixture[str],
    force: bool = False,
    as_json: bool = False,
    **kw: Any,
) -> tuple[str, list[str], int, str]:
    """The same by the CLI's printer: the plan, runs of 2 pages on ``jobs`` processes."""
    from ibdtool.cli.records import _print

    capsys.readouterr()
    run = open_records(str(path), force=force, **kw)
    error = ""
    problems = 0
    try:
        problems = _print(run, str(path), as_json, force, jobs)
    except InputError as exc:
        m = re.search(r"(page \d+, record at byte \d+): .*?: (.*) \(--force", exc.message)
        assert m is not None, exc.message
        error = f"{m.group(1)}: {m.group(2)}"
    finally:
        run.ts.close()
    got = capsys.readouterr()
    warns = []
    for line in got.err.splitlines():
        m = re.match(r"ibdtool: warning: .*?: (page \d+.*)$", line)
        if m:
            warns.append(m.group(1).replace(": does not fit: ", ": does not fit\0").split("\0")[0])
    return got.out, warns, problems, error


@pytest.fixture
def small_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(record_blocks, "RUN_PAGES", 2)
    monkeypatch.setattr(record_blocks, "PARALLEL_MIN_PAGES", 0)


@pytest.mark.usefixtures("small_runs")
@pytest.mark.parametrize("rel", FILES)
def test_corpus_files_read_the_same(rel: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file(rel)
    for as_json in (False, True):
        want = reference(path, as_json=as_json)  # some files hold no rows (empty FTS tables)
        for jobs in (1, 2):
            assert fast(path, jobs, capsys, as_json=as_json) == want, (rel, jobs, as_json)


def _damaged(src: bytes, rng: random.Random, leaf_pages: list[int]) -> bytes:
    data = bytearray(src)
    kind = rng.randrange(4)
    page = rng.choice(leaf_pages)
    at = page * 16384
    if kind == 0:  # random bytes in the record area
        for _ in range(rng.randint(1, 30)):
            data[at + rng.randrange(120, 16384 - 8)] = rng.randrange(256)
    elif kind == 1:  # the chain loops back
        data[at + 12 : at + 16] = rng.choice(leaf_pages).to_bytes(4, "big")
    elif kind == 2:  # the chain leaves the file
        data[at + 12 : at + 16] = (len(src) // 16384 + rng.randrange(1, 99)).to_bytes(4, "big")
    else:  # the chain goes to a page of another kind
        data[at + 12 : at + 16] = rng.randrange(0, 4).to_bytes(4, "big")
    return bytes(data)


@pytest.mark.usefixtures("small_runs")
@pytest.mark.parametrize(
    "rel", ["mysql-made/mysql8015-t_plain_1k.ibd", "mariadb-10.11/p16k-plain-1000rows.ibd"]
)
def test_damaged_files_give_the_same_answer(
    rel: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src_path = corpus_file(rel)
    src = src_path.read_bytes()
    run = open_records(str(src_path))
    leaves = record_blocks.leaf_order(run)
    run.ts.close()
    assert len(leaves) > 4
    rng = random.Random(24)
    for trial in range(16):
        path = tmp_path / f"d{trial}.ibd"
        path.write_bytes(_damaged(src, rng, leaves))
        cfg = src_path.with_suffix(".cfg")
        if cfg.exists():
            path.with_suffix(".cfg").write_bytes(cfg.read_bytes())
        for force, as_json in ((False, False), (True, False), (True, True)):
            want = reference(path, force, as_json)
            for jobs in (1, 2):
                got = fast(path, jobs, capsys, force, as_json)
                assert got == want, (trial, force, as_json, jobs)


# --- a real table ---------------------------------------------------------------------------

CREATE = """CREATE TABLE big (
  id INT NOT NULL PRIMARY KEY,
  k BIGINT UNSIGNED NOT NULL,
  name VARCHAR(40) CHARACTER SET utf8mb4,
  code CHAR(12) CHARACTER SET latin1 NOT NULL,
  note VARCHAR(200) CHARACTER SET latin1,
  d DATE,
  ts DATETIME(3),
  dt DATETIME,
  amount DECIMAL(20,6),
  ratio DOUBLE,
  bin VARBINARY(16),
  body TEXT,
  wide CHAR(200) CHARACTER SET latin1 NOT NULL,
  KEY kd (k DESC),
  KEY w (wide)
) ENGINE=InnoDB ROW_FORMAT=DYNAMIC"""

FILL = r"""INSERT INTO big SELECT seq, seq * 7919 % 100003,
  IF(seq % 7 = 0, NULL, CONCAT('naïve ', seq, IF(seq % 11 = 0, ' "q" \\ b', ''))),
  CONCAT('c', seq % 1000),
  IF(seq % 13 = 0, CONCAT('tab\there', CHAR(10), 'nl'), CONCAT('note ', MD5(seq))),
  IF(seq % 5 = 0, NULL, '2001-01-01' + INTERVAL seq DAY),
  '2020-02-29 12:00:00.125' + INTERVAL seq * 37 SECOND,
  '1999-12-31 23:59:59' - INTERVAL seq HOUR,
  (CAST(seq AS SIGNED) - 15000) * 1000.123456,
  IF(seq % 3 = 0, NULL, seq / 7),
  UNHEX(MD5(seq)),
  IF(seq % 17 = 0, REPEAT('long ', 900), IF(seq % 2 = 0, NULL, CONCAT('t', seq))),
  CONCAT(REPEAT('w', 150), LPAD(seq % 5000, 8, '0'))
FROM seq_1_to_30000"""

NAMES = [
    "id", "k", "name", "code", "note", "d", "ts", "dt", "amount", "ratio", "bin", "body", "wide"
]  # fmt: skip


def _crc(cur: Any, table: str) -> tuple[int, int]:
    cols = ", ".join(f"IFNULL(HEX(`{n}`), 'N')" for n in NAMES)
    cur.execute(f"SELECT COUNT(*), SUM(CRC32(CONCAT_WS('|', {cols}))) FROM {table}")
    n, crc = cur.fetchone()
    return int(n), int(crc or 0)


@pytest.mark.xdist_group("mariadb")
def test_server_table_reads_the_same_and_exports_load_back(
    mariadb: ThrowawayServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    srv = mariadb
    conn, holder = srv.connect(), srv.connect()
    tmp_path.chmod(0o755)  # the server reads the CSV file
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE IF NOT EXISTS fastrec")
            cur.execute("USE fastrec")
            for t in ("big", "from_csv", "from_sql"):
                cur.execute(f"DROP TABLE IF EXISTS {t}")
                cur.execute(CREATE.replace("big", t, 1))
            cur.execute(FILL)
            with holder.cursor() as hcur:  # deleted rows stay delete-marked in the file
                hcur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            cur.execute("DELETE FROM big WHERE id % 97 = 0")
            conn.commit()
            want_crc = _crc(cur, "big")
            cur.execute("FLUSH TABLES big FOR EXPORT")
            try:
                path = srv.file_path("fastrec", "big")
                copy = tmp_path / "big.ibd"
                copy.write_bytes(path.read_bytes())
                out = {}
                for fmt in ("csv", "sql"):
                    res = subprocess.run(
                        ibdtool_command("records", copy, "--format", fmt, "-j", "2",
                                        "--schema", CREATE),
                        capture_output=True, env=cli_env(), cwd=REPO, check=False,
                    )  # fmt: skip
                    assert res.returncode == 0, (fmt, res.stderr[-2000:])
                    out[fmt] = (res.stdout, res.stderr.decode())
            finally:
                cur.execute("UNLOCK TABLES")
            holder.close()
            run = open_records(str(copy), schema=CREATE, index="w")
            assert run.pages.root_level >= 2  # a three-level tree
            assert len(record_blocks.leaf_order(run)) > 200
            run.ts.close()
            for index in (None, "kd", "w"):
                want = reference(copy, schema=CREATE, index=index)
                assert want[0].count("\n") >= 30000
                for jobs in (1, 2):
                    got = fast(copy, jobs, capsys, schema=CREATE, index=index)
                    assert got == want, (index, jobs)
            data = out["sql"][0]
            for stmt in data.decode().replace("INTO `big`", "INTO `from_sql`").split(";\n"):
                if stmt.strip():
                    cur.execute(stmt)
            f = tmp_path / "rows.csv"
            f.write_bytes(out["csv"][0])
            f.chmod(0o644)
            (load,) = [ln[len("# load with: ") :] for ln in out["csv"][1].splitlines()
                       if ln.startswith("# load with: ")]  # fmt: skip
            cur.execute(load.replace("'FILE'", f"'{f}'").replace("`big`", "`from_csv`"))
            conn.commit()
            for table in ("from_sql", "from_csv"):
                assert _crc(cur, table) == want_crc, table
    finally:
        conn.close()
        srv.query("DROP DATABASE IF EXISTS fastrec")
