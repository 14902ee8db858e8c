"""``ibdtool records`` against the rows the servers themselves return.

Oracles: throwaway MariaDB 10.11, MySQL 8.0.15 and 5.7.22 servers hold a table with every column
type ibdtool decodes (NULLs, negative numbers, DECIMAL with a scale, DATETIME(6), utf8mb4 CHAR,
TEXT/BLOB long enough to be stored off-page, JSON on MySQL) in each row format; some rows are
deleted while a consistent snapshot keeps them from purge. With ``FLUSH TABLES … FOR EXPORT``
held, ``SELECT … ORDER BY id`` in the server's own text rendering must equal, value by value,
the rows ``records --json`` reads from the file, and the delete-marked records must be exactly
the deleted rows with the values they had. The corpus: every MySQL 8 file with an SDI decodes
without an error, with as many records as its clustered index's leaf pages count in their
headers (and the 1,000 rows CATALOG.md gives for the files made here).
"""

from __future__ import annotations

import contextlib
import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymysql
import pymysql.converters
import pytest

from ibdtool.tablespace.reader import Tablespace
from samples.servers import ThrowawayServer
from tests.catalog import load_catalog
from tests.conftest import corpus_file
from tests.server_fixtures import (
    conn_args,
    ibdtool,
    json_lines,
    server_param,
)

SCHEMA = "rec"
N_ROWS = 240
DELETED = {7, 8, 9, 50, 51, 120, 200}
LONG = 20_000  # bytes: off-page in every row format

COLUMNS = """
  id INT NOT NULL,
  ti TINYINT, si SMALLINT UNSIGNED, mi MEDIUMINT, bi BIGINT,
  dc DECIMAL(12,4), dw DECIMAL(30,10),
  f FLOAT, d DOUBLE,
  dt DATE, dtm DATETIME, dtm6 DATETIME(6), ts TIMESTAMP(3) NULL DEFAULT NULL, tm TIME(2),
  yr YEAR,
  c CHAR(10) CHARACTER SET utf8mb4, cl CHAR(5) CHARACTER SET latin1, bn BINARY(4),
  vc VARCHAR(300) CHARACTER SET utf8mb4, vb VARBINARY(50),
  tx TEXT CHARACTER SET utf8mb4, lt LONGTEXT CHARACTER SET utf8mb4, bl BLOB,
  e ENUM('red','green','blue'), st SET('a','b','c','d'), b BIT(10),
  {json}
  PRIMARY KEY (id), KEY k_vc (vc(20)), KEY k_dt (dt, dc)
"""
NAMES = [
    "id", "ti", "si", "mi", "bi", "dc", "dw", "f", "d", "dt", "dtm", "dtm6", "ts", "tm", "yr",
    "c", "cl", "bn", "vc", "vb", "tx", "lt", "bl", "e", "st", "b",
]  # fmt: skip
BINARY = {"bn", "vb", "bl"}
WORDS = ["alpha", "βeta", "gämma", "δέλτα", "😀", "naïve", "中文", "x", "end"]


def _maybe(rng: random.Random, value: Any, p: float = 0.15) -> Any:
    return None if rng.random() < p else value


def _text(rng: random.Random, n: int) -> str:
    out: list[str] = []
    size = 0
    while size < n:
        w = rng.choice(WORDS)
        out.append(w)
        size += len(w.encode()) + 1
    return " ".join(out)


def _date(rng: random.Random, lo: int = 1000, hi: int = 9999) -> str:
    return f"{rng.randint(lo, hi)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _clock(rng: random.Random, hours: int = 23) -> str:
    return f"{rng.randint(0, hours):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"


def _bytes(rng: random.Random, n: int) -> bytes:
    return bytes(rng.randrange(256) for _ in range(n))


def make_rows(with_json: bool) -> list[tuple[Any, ...]]:
    rng = random.Random(20261123)
    rows = []
    for i in range(1, N_ROWS + 1):
        long_row = i % 5 == 0
        m = rng.random
        sign = "-" if i % 2 else ""
        row: list[Any] = [
            i,
            _maybe(rng, rng.randint(-128, 127)),
            _maybe(rng, rng.randint(0, 65535)),
            _maybe(rng, rng.randint(-8388608, 8388607)),
            _maybe(rng, rng.randint(-(2**63), 2**63 - 1)),
            _maybe(rng, f"{rng.randint(-99999999, 99999999)}.{rng.randint(0, 9999):04d}"),
            _maybe(rng, f"{sign}{rng.randint(0, 10**20 - 1)}.{rng.randint(0, 10**10 - 1):010d}"),
            _maybe(rng, round(rng.uniform(-1e6, 1e6), 3)),
            _maybe(rng, rng.uniform(-1e12, 1e12)),
            _maybe(rng, _date(rng)),
            _maybe(rng, f"{_date(rng)} {_clock(rng)}"),
            _maybe(rng, f"{_date(rng)} {_clock(rng)}.{rng.randint(0, 999999):06d}"),
            _maybe(rng, f"{_date(rng, 1971, 2037)} {_clock(rng)}.{rng.randint(0, 999):03d}"),
            _maybe(rng, f"{rng.choice(['-', ''])}{_clock(rng, 838)}.{rng.randint(0, 99):02d}"),
            _maybe(rng, rng.randint(1901, 2155)),
            _maybe(rng, _text(rng, 8)[:10]),
            _maybe(rng, rng.choice(["ab", "çé", "zzzzz", ""])),
            _maybe(rng, _bytes(rng, rng.randint(0, 4))),
            _maybe(rng, _text(rng, rng.randint(0, 600))[:300]),
            _maybe(rng, _bytes(rng, rng.randint(0, 50))),
            _maybe(rng, _text(rng, LONG if long_row else rng.randint(0, 200))),
            _maybe(rng, _text(rng, 3 * LONG if long_row else rng.randint(0, 100))),
            _maybe(rng, _bytes(rng, LONG if long_row else rng.randint(0, 60))),
            _maybe(rng, rng.choice(["red", "green", "blue"])),
            _maybe(rng, ",".join(x for x in "abcd" if m() < 0.5)),
            _maybe(rng, rng.randint(0, 1023)),
        ]
        if with_json:
            doc: Any = {
                "n": rng.randint(-(10**6), 10**6),
                "s": _text(rng, 20),
                "list": [1, 2.5, True, None, "x"],
                "nested": {"k": [m() < 0.5, {"deep": "ok"}]},
            }
            if long_row:
                doc["big"] = _text(rng, LONG)
            row.append(_maybe(rng, json.dumps(doc)))
        rows.append(tuple(row))
    return rows


# --- the oracle: the server's text rendering ---------------------------------------------------


def _select_expr(name: str) -> str:
    if name == "b":
        return "b + 0"
    return f"`{name}`"


def server_rows(cur: Any, table: str, names: list[str]) -> dict[int, dict[str, Any]]:
    cols = ", ".join(_select_expr(n) for n in names)
    cur.execute(f"SELECT {cols} FROM `{SCHEMA}`.`{table}` ORDER BY id")
    out = {}
    for row in cur.fetchall():
        out[int(row[0])] = dict(zip(names, row, strict=True))
    return out


def _no_frac_zeros(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


def same(name: str, ours: Any, theirs: Any, frac_digits_known: bool = True) -> bool:
    """One value from the file against the server's text of it.

    ``frac_digits_known`` False: the definition gives a temporal column's fractional bytes, not
    its digits (a .cfg file: TIME(3) and TIME(4) both take 2), so trailing zeros may differ.
    """
    if theirs is None or ours is None:
        return ours is None and theirs is None
    if isinstance(theirs, bytes) and name not in BINARY and name != "b":
        theirs = theirs.decode("utf-8")
    if name in BINARY:
        return ours == "0x" + bytes(theirs).hex()
    if name == "f":
        return math.isclose(float(ours), float(theirs), rel_tol=1e-5, abs_tol=1e-6)
    if name == "d":
        return float(ours) == float(theirs)
    if name in ("id", "ti", "si", "mi", "bi", "yr", "b"):
        return int(ours) == int(theirs)
    if name == "j":
        return json.loads(ours) == json.loads(theirs)
    if not frac_digits_known and name in ("dtm6", "ts", "tm"):
        return _no_frac_zeros(str(ours)) == _no_frac_zeros(str(theirs))
    return str(ours) == str(theirs)


def _text_conn(srv: ThrowawayServer) -> Any:
    """A connection that returns the server's text (no conversion), time zone UTC."""
    conn = pymysql.connect(
        unix_socket=str(srv.socket), user="root", password="", autocommit=True,
        charset="utf8mb4", conv=dict(pymysql.converters.encoders),
    )  # fmt: skip
    with conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
    return conn


# --- building the tables ------------------------------------------------------------------------


@dataclass
class Variant:
    name: str
    options: str


def variants(srv: ThrowawayServer) -> list[Variant]:
    out = [
        Variant("t_dynamic", "ROW_FORMAT=DYNAMIC"),
        Variant("t_compact", "ROW_FORMAT=COMPACT"),
        Variant("t_redundant", "ROW_FORMAT=REDUNDANT"),
        Variant("t_zip8", "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8"),
    ]
    if srv.flavor == "mariadb":
        out.append(Variant("t_pagecomp", "PAGE_COMPRESSED=1"))
    elif srv.version.startswith("8."):
        out.append(Variant("t_zlib", "COMPRESSION='zlib'"))
    return out


def has_json(srv: ThrowawayServer) -> bool:
    return srv.flavor == "mysql"


@dataclass
class Snapshot:
    """What one table looked like with FLUSH TABLES … FOR EXPORT held."""

    table: str
    names: list[str]
    live: dict[int, dict[str, Any]]  # SELECT … ORDER BY id
    before: dict[int, dict[str, Any]]  # the rows before the DELETE
    records: list[dict[str, Any]]  # records --json (definition as the server flavor allows)
    records_cfg: list[dict[str, Any]] | None  # records --json with the .cfg file only
    records_server: list[dict[str, Any]] | None  # records --json -S … (SHOW CREATE TABLE)
    records_short: list[dict[str, Any]]  # --max-extern 1000
    secondary: list[dict[str, Any]]  # --index k_dt
    secondary_live: list[tuple[Any, ...]]  # SELECT dt, dc, id … ORDER BY dt, dc, id
    create: str
    page_types: dict[str, int]  # inspect --json: where the long values were stored


def build(srv: ThrowawayServer, variant: Variant, extra_args: list[str]) -> Snapshot:
    with_json = has_json(srv)
    names = NAMES + (["j"] if with_json else [])
    rows = make_rows(with_json)
    table = variant.name
    conn = _text_conn(srv)
    holder = _text_conn(srv)
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE IF NOT EXISTS `{SCHEMA}`")
            cur.execute(f"DROP TABLE IF EXISTS `{SCHEMA}`.`{table}`")
            body = COLUMNS.format(json="j JSON," if with_json else "")
            cur.execute(
                f"CREATE TABLE `{SCHEMA}`.`{table}` ({body}) ENGINE=InnoDB {variant.options}"
            )
            marks = ", ".join(["%s"] * len(names))
            cur.executemany(
                f"INSERT INTO `{SCHEMA}`.`{table}` ({', '.join(names)}) VALUES ({marks})", rows
            )
            before = server_rows(cur, table, names)
            with holder.cursor() as hcur:  # a read view: the deleted rows stay delete-marked
                hcur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            ids = ", ".join(str(i) for i in sorted(DELETED))
            cur.execute(f"DELETE FROM `{SCHEMA}`.`{table}` WHERE id IN ({ids})")
            cur.execute(f"SHOW CREATE TABLE `{SCHEMA}`.`{table}`")
            create = cur.fetchall()[0][1]
            cur.execute(f"FLUSH TABLES `{SCHEMA}`.`{table}` FOR EXPORT")
            try:
                live = server_rows(cur, table, names)
                path = str(srv.file_path(SCHEMA, table))
                if srv.flavor == "mysql" and srv.version.startswith("8."):
                    res = ibdtool("records", path, "--json", *extra_args)  # the SDI alone
                else:
                    res = ibdtool("records", path, "--json", "--schema", create, *extra_args)
                assert res.returncode == 0, res.stderr[-3000:]
                records = json_lines(res.stdout)
                defn = [] if srv.version.startswith("8.") else ["--schema", create]
                cfg = on_server = None
                if not srv.version.startswith("8."):
                    rc = ibdtool("records", path, "--json")
                    assert rc.returncode == 0, rc.stderr[-3000:]
                    cfg = json_lines(rc.stdout)
                    rs = ibdtool("records", path, "--json", *conn_args(srv))
                    assert rs.returncode == 0, rs.stderr[-3000:]
                    on_server = json_lines(rs.stdout)
                short = ibdtool("records", path, "--json", "--max-extern", "1000", *defn)
                assert short.returncode == 0, short.stderr[-3000:]
                sec = ibdtool("records", path, "--json", "--index", "k_dt", *defn)
                assert sec.returncode == 0, sec.stderr[-3000:]
                cur.execute(f"SELECT dt, dc, id FROM `{SCHEMA}`.`{table}` ORDER BY dt, dc, id")
                sec_live = [tuple(r) for r in cur.fetchall()]
                ins = ibdtool("inspect", "--json", path)
                assert ins.returncode == 0, ins.stderr
                page_types = json.loads(ins.stdout)["page_types"]
            finally:
                cur.execute("UNLOCK TABLES")
        return Snapshot(
            table, names, live, before, records, cfg, on_server, json_lines(short.stdout),
            json_lines(sec.stdout), sec_live, create, page_types,
        )  # fmt: skip
    finally:
        holder.close()
        conn.close()


SERVERS = [
    pytest.param("mariadb", marks=pytest.mark.xdist_group("mariadb"), id="mariadb-10.11"),
    pytest.param("mysql80", marks=pytest.mark.xdist_group("mysql80"), id="mysql-8.0.15"),
    pytest.param("mysql57", marks=pytest.mark.xdist_group("mysql57"), id="mysql-5.7.22"),
    server_param("mysql8033", "mysql-8.0.33"),
    server_param("mariadb114", "mariadb-11.4"),
]


def _check(snap: Snapshot, docs: list[dict[str, Any]], names: list[str], cfg: bool = False) -> None:
    problems = [d for d in docs if "problem" in d or "errors" in d]
    assert not problems, problems[:3]
    live = [d for d in docs if not d["deleted"]]
    dead = [d for d in docs if d["deleted"]]
    assert [d["fields"]["id"] for d in live] == sorted(snap.live)
    for d in live:
        want = snap.live[d["fields"]["id"]]
        for n in names:
            assert same(n, d["fields"][n], want[n], not cfg), (
                snap.table,
                d["fields"]["id"],
                n,
                d["fields"][n],
                want[n],
            )
    # the read view kept every deleted row: delete-marked, with the values it had
    assert sorted(d["fields"]["id"] for d in dead) == sorted(DELETED)
    for d in dead:
        want = snap.before[d["fields"]["id"]]
        for n in names:
            assert same(n, d["fields"][n], want[n], not cfg), (
                snap.table,
                "deleted",
                d["fields"]["id"],
                n,
            )
    assert all(d["index"] == "PRIMARY" for d in docs)
    pages = {d["page"] for d in docs}
    assert len(pages) > 1  # several leaf pages walked


@pytest.mark.parametrize("flavor", SERVERS)
def test_records_match_the_server_in_every_row_format(
    flavor: str, request: pytest.FixtureRequest
) -> None:
    srv: ThrowawayServer = request.getfixturevalue(flavor)
    seen = []
    for variant in variants(srv):
        snap = build(srv, variant, [])
        _check(snap, snap.records, snap.names)
        if snap.records_cfg is not None:
            # the .cfg file with the .frm beside it: DECIMAL scale and ENUM/SET names too
            cfg_names = snap.names
            _check(snap, snap.records_cfg, cfg_names, cfg=True)
        if snap.records_server is not None:
            _check(snap, snap.records_server, snap.names)
        _check_short(snap)
        _check_secondary(snap)
        _check_extern_pages(snap)
        seen.append(variant.name)
    assert len(seen) >= 4


#: the pages a row format keeps long values on: compressed BLOB pages (ZBLOB/ZBLOB2, MySQL 8's
#: ZLOB_*) for ROW_FORMAT=COMPRESSED, so the values above were inflated from them
EXTERN_TYPES = {
    "zip": {"ZBLOB", "ZBLOB2", "ZLOB_FIRST", "ZLOB_DATA", "ZLOB_FRAG"},
    "plain": {"BLOB", "LOB_FIRST", "LOB_DATA"},
}


def _check_extern_pages(snap: Snapshot) -> None:
    kinds = EXTERN_TYPES["zip" if snap.table.startswith("t_zip") else "plain"]
    found = {t for t, n in snap.page_types.items() if n and t in kinds}
    assert found, (snap.table, snap.page_types)
    longest = max(len(str(d["fields"]["lt"] or "")) for d in snap.records)
    assert longest >= 3 * LONG // 2  # a value of several compressed pages, read whole


def _check_short(snap: Snapshot) -> None:
    """--max-extern 1000: long values cut to a prefix of the whole and marked truncated."""
    full = {d["fields"]["id"]: d for d in snap.records}
    cut = 0
    for d in snap.records_short:
        whole = full[d["fields"]["id"]]
        for n in d.get("truncated", []):
            cut += 1
            got, want = d["fields"][n], whole["fields"][n]
            if n == "j":  # a cut JSON document has no text: its first bytes in hex
                assert got.startswith("0x") and len(got) == 2 + 2 * 1000
                continue
            assert len(got) < len(want)
            assert want.startswith(got.rstrip("\ufffd")), (snap.table, n)
        others = {n: v for n, v in d["fields"].items() if n not in d.get("truncated", [])}
        assert others == {n: v for n, v in whole["fields"].items() if n in others}
    assert cut >= N_ROWS // 5  # every long row has a long value


def _check_secondary(snap: Snapshot) -> None:
    """--index k_dt: (dt, dc, id) in the index's order, delete-marked entries flagged."""
    live = [d for d in snap.secondary if not d["deleted"]]
    assert all(d["index"] == "k_dt" for d in snap.secondary)
    assert [list(d["fields"]) for d in live[:1]] == [["dt", "dc", "id"]]
    got = [(d["fields"]["dt"], d["fields"]["dc"], str(d["fields"]["id"])) for d in live]
    want = [(r[0], r[1], str(r[2])) for r in snap.secondary_live]
    assert got == want
    dead = sorted(d["fields"]["id"] for d in snap.secondary if d["deleted"])
    assert dead == sorted(DELETED)


# --- instant ADD COLUMN -------------------------------------------------------------------------

INSTANT_SERVERS = [p for p in SERVERS if p.id != "mysql-5.7.22"]


@pytest.mark.parametrize("flavor", INSTANT_SERVERS)
def test_records_after_instant_add_column(flavor: str, request: pytest.FixtureRequest) -> None:
    """Rows written before an instant ADD COLUMN take the column's default; later rows, and old
    rows updated since, store it. MariaDB: its metadata record is not a row."""
    srv: ThrowawayServer = request.getfixturevalue(flavor)
    table = "t_instant"
    names = ["id", "a", "b", "c", "d", "e"]
    conn = _text_conn(srv)
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE IF NOT EXISTS `{SCHEMA}`")
            cur.execute(f"DROP TABLE IF EXISTS `{SCHEMA}`.`{table}`")
            cur.execute(
                f"CREATE TABLE `{SCHEMA}`.`{table}` (id INT PRIMARY KEY, a VARCHAR(20), b INT) "
                "ENGINE=InnoDB ROW_FORMAT=DYNAMIC DEFAULT CHARSET=utf8mb4"
            )
            cur.executemany(
                f"INSERT INTO `{SCHEMA}`.`{table}` (id, a, b) VALUES (%s, %s, %s)",
                [(i, f"old {i}" if i % 7 else None, -i) for i in range(1, 401)],
            )
            cur.execute(
                f"ALTER TABLE `{SCHEMA}`.`{table}` ADD COLUMN c VARCHAR(30) NOT NULL DEFAULT "
                "'dflt ü', ADD COLUMN d INT NULL, ADD COLUMN e DATETIME(6) DEFAULT "
                "'2001-02-03 04:05:06.789', ALGORITHM=INSTANT"
            )
            cur.executemany(
                f"INSERT INTO `{SCHEMA}`.`{table}` VALUES (%s, %s, %s, %s, %s, %s)",
                [
                    (i, f"new {i}", i, f"c {i}", i * 3 if i % 2 else None, None)
                    for i in range(401, 501)
                ],
            )
            cur.execute(f"UPDATE `{SCHEMA}`.`{table}` SET c = 'changed', d = 5 WHERE id % 50 = 0")
            cur.execute(f"SHOW CREATE TABLE `{SCHEMA}`.`{table}`")
            create = cur.fetchall()[0][1]
            cur.execute(f"FLUSH TABLES `{SCHEMA}`.`{table}` FOR EXPORT")
            try:
                live = server_rows(cur, table, names)
                path = srv.file_path(SCHEMA, table)
                runs = [["--json"]]
                if srv.flavor == "mariadb":
                    runs = [["--json", "--schema", create], ["--json"]]  # CREATE TABLE, .cfg
                    page3 = path.read_bytes()[3 * 16384 : 4 * 16384]
                    assert int.from_bytes(page3[24:26], "big") == 18  # FIL_PAGE_TYPE_INSTANT
                outputs = []
                for args in runs:
                    res = ibdtool("records", str(path), *args)
                    assert res.returncode == 0, res.stderr[-3000:]
                    outputs.append(json_lines(res.stdout))
            finally:
                cur.execute("UNLOCK TABLES")
    finally:
        conn.close()
    for docs in outputs:
        assert not [d for d in docs if "errors" in d or "problem" in d]
        assert [d["fields"]["id"] for d in docs] == sorted(live)
        assert not any(d["deleted"] for d in docs)
        for d in docs:
            want = live[d["fields"]["id"]]
            for n in names:
                theirs = want[n]
                ours = d["fields"][n]
                if n == "e" and ours is not None and theirs is not None:
                    assert _no_frac_zeros(ours) == _no_frac_zeros(theirs), (d["fields"]["id"], n)
                else:
                    assert same(n if n != "b" else "bi", ours, theirs), (
                        d["fields"]["id"],
                        n,
                        ours,
                        theirs,
                    )


# --- the corpus ---------------------------------------------------------------------------------

CATALOG = load_catalog()
SDI_FILES = [
    e for e in CATALOG
    if e.rel.endswith(".ibd") and "SDI" in e.page_types and e.page_types.get("INDEX", 0)
    and "ENCRYPTED" not in e.page_types
]  # fmt: skip


def _leaf_records(path: Path, index_id: int) -> int:
    """PAGE_N_RECS summed over the index's leaf pages in use, from the page headers alone."""
    total = 0
    with Tablespace(path) as ts:
        free = ts.free_window(0, ts.n_pages)
        for info in ts.pages():
            if free[info.page_no]:
                continue
            if info.index is not None and info.index.index_id == index_id and info.index.level == 0:
                total += info.index.n_recs
    return total


def _primary_id(path: Path) -> int:
    res = ibdtool("sdi", str(path))
    assert res.returncode == 0, res.stderr
    for entry in json.loads(res.stdout)[1:]:
        obj = entry["object"]["dd_object"]
        if "indexes" in obj:
            priv = dict(p.split("=") for p in obj["indexes"][0]["se_private_data"].split(";") if p)
            return int(priv["id"])
    raise AssertionError("no table in the SDI")


def _run(path: Path, *args: str) -> list[dict[str, Any]]:
    res = ibdtool("records", str(path), "--json", *args)
    assert res.returncode == 0, res.stderr[-2000:]
    return json_lines(res.stdout)


@pytest.mark.parametrize("entry", SDI_FILES, ids=[e.rel for e in SDI_FILES])
def test_corpus_sdi_files_decode(entry: Any) -> None:
    path = corpus_file(entry.rel)
    docs = _run(path)
    assert not [d for d in docs if "problem" in d or "errors" in d], docs[:2]
    assert len(docs) == _leaf_records(path, _primary_id(path))
    if entry.rel.startswith("mysql-made/"):
        assert len(docs) == 1000  # "Same table and rows as mariadb-10.11 (1,000 rows)"


CFG_FILES = [e for e in CATALOG if e.rel.startswith("mariadb-10.11/") and e.rel.endswith(".ibd")]


@pytest.mark.parametrize("entry", CFG_FILES, ids=[e.rel for e in CFG_FILES])
def test_corpus_cfg_files_decode(entry: Any) -> None:
    """The MariaDB files made here carry their .cfg: 1,000 rows each, ids 1..1000."""
    docs = _run(corpus_file(entry.rel))
    assert not [d for d in docs if "problem" in d or "errors" in d], docs[:2]
    assert [d["fields"]["id"] for d in docs] == list(range(1, 1001))


# --- bad input ----------------------------------------------------------------------------------


def _one_line_error(res: Any, needle: str) -> None:
    assert res.returncode == 2, (res.returncode, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ibdtool: error: ") and needle in lines[0], lines


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    plain = corpus_file("mysql-made/mysql8015-t_plain_1k.ibd")
    maria = corpus_file("mariadb-10.11/p16k-plain-1000rows.ibd")
    _one_line_error(ibdtool("records", str(tmp_path / "none.ibd")), "no such file")
    junk = tmp_path / "junk.ibd"
    junk.write_bytes(b"\x01" * 100)
    _one_line_error(ibdtool("records", str(junk)), str(junk))
    _one_line_error(ibdtool("records", str(plain), "--index", "nope"), "no index 'nope'")
    _one_line_error(
        ibdtool("records", str(maria), "--schema", "CREATE TABLE t (a FOO)"), "--schema"
    )
    _one_line_error(ibdtool("records", str(maria), "--schema", "SELECT 1"), "--schema")
    bad_cfg = tmp_path / "t.cfg"
    bad_cfg.write_bytes((maria.with_suffix(".cfg")).read_bytes()[:200])
    copy = tmp_path / "t.ibd"
    copy.write_bytes(maria.read_bytes())
    _one_line_error(ibdtool("records", str(copy)), "t.cfg")
    res = ibdtool("records", str(plain), "--max-extern", "lots")
    assert res.returncode == 2 and "Traceback" not in res.stderr


def test_damaged_leaf_pages_are_reported_not_raised(tmp_path: Path) -> None:
    """Random bytes over the leaf pages: every problem is an event (exit 1), never a crash."""
    from ibdtool.tablespace.records import open_records

    src = corpus_file("mysql-made/mysql8015-t_plain_1k.ibd").read_bytes()
    rng = random.Random(7)
    for trial in range(12):
        data = bytearray(src)
        for _ in range(40):
            page = rng.randrange(4, len(data) // 16384)
            off = rng.randrange(38, 16384 - 8)
            data[page * 16384 + off] = rng.randrange(256)
        path = tmp_path / f"d{trial}.ibd"
        path.write_bytes(bytes(data))
        run = open_records(str(path))
        try:
            events = list(run.events())
        finally:
            run.ts.close()
        assert events  # rows up to the damage, then the problem


def test_schema_text_is_checked_not_trusted() -> None:
    """Malformed CREATE TABLE statements: DdlError (one line), never another exception."""
    from ibdtool.parsers.ddl import DdlError, parse_create_table

    good = "CREATE TABLE t (id INT NOT NULL, v VARCHAR(10), PRIMARY KEY (id), KEY k (v(3)))"
    assert parse_create_table(good).index("k") is not None
    rng = random.Random(3)
    for _ in range(300):
        cut = list(good)
        for _ in range(rng.randint(1, 4)):
            cut[rng.randrange(len(cut))] = rng.choice("(),`'0 x")
        with contextlib.suppress(DdlError):
            parse_create_table("".join(cut))


def test_text_output_has_a_line_per_record() -> None:
    path = corpus_file("mariadb-10.11/p16k-rc_kbs8-1000rows.ibd")
    res = ibdtool("records", str(path))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == 1000 and lines[0].startswith("[") and " id=1 " in lines[0]
    assert "columns from cfg" in res.stderr
