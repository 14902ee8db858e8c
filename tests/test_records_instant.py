"""``ibdtool records`` after MariaDB 10.4+ instant DROP COLUMN and column reorder.

Oracle: a throwaway MariaDB 10.11. A table gets rows, then ``ALGORITHM=INSTANT`` ALTERs — DROP
COLUMN (a NOT NULL utf8mb4 CHAR, a TEXT partly stored off-page, a NOT NULL INT), ADD COLUMN …
FIRST, ADD COLUMN … AFTER, MODIFY … AFTER — with rows inserted, updated and deleted between
them, so the file holds records of every shape (core records, instant ones of several lengths,
records from before each ALTER). With ``FLUSH TABLES … FOR EXPORT`` held, ``SELECT … ORDER BY
id`` must equal the rows ``records --json`` reads, with the definition from ``SHOW CREATE
TABLE`` (``--schema``, and the live server's) and from the ``.cfg`` file alone, and the
secondary index must list what ``SELECT a, id … ORDER BY a, id`` lists. That the ALTERs were
instant is the server's word (it refuses ``ALGORITHM=INSTANT`` otherwise) and the root page's
(type 18, its infimum and supremum zeroed: the mark of a DROP/reorder). Garbled metadata BLOB
pages are one problem line, not a traceback.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ibdtool.tablespace.reader import Tablespace
from samples.servers import ThrowawayServer
from tests.server_fixtures import conn_args, ibdtool, json_lines
from tests.test_records import _text_conn

pytestmark = pytest.mark.xdist_group("mariadb")

SCHEMA = "rec_instant"
NAMES = ["f", "id", "bi", "a", "g", "d", "e", "en", "w"]  # final table order (k after bi)


@dataclass(frozen=True)
class Shape:
    table: str
    options: str
    key: str  # extra PRIMARY KEY column (a variable-length key) or ""
    primary: bool = True  # False: no key, the clustered index is on DB_ROW_ID

    @property
    def names(self) -> list[str]:
        return [*NAMES[:3], self.key, *NAMES[3:]] if self.key else NAMES


SHAPES = [
    Shape("t_dynamic", "ROW_FORMAT=DYNAMIC", ""),
    Shape("t_compact", "ROW_FORMAT=COMPACT", ""),
    Shape("t_redundant", "ROW_FORMAT=REDUNDANT", ""),
    Shape("t_varkey", "ROW_FORMAT=DYNAMIC", "k"),
    Shape("t_varkey_red", "ROW_FORMAT=REDUNDANT", "k"),
    Shape("t_pagecomp", "PAGE_COMPRESSED=1", ""),
    Shape("t_rowid", "ROW_FORMAT=COMPACT", "", primary=False),
]


def _word(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("abcdefgh äé中") for _ in range(n))


def _without(row: tuple[Any, ...], pos: int) -> tuple[Any, ...]:
    return row[:pos] + row[pos + 1 :]


def _run(cur: Any, sql: str, rows: list[tuple[Any, ...]] | None = None) -> None:
    if rows is None:
        cur.execute(sql)
    else:
        cur.executemany(sql, rows)


def _make(srv: ThrowawayServer, shape: Shape, out_dir: Path) -> tuple[list[dict[str, Any]], ...]:
    rng = random.Random(shape.table)
    t = f"`{SCHEMA}`.`{shape.table}`"
    key = ", k VARCHAR(12) NOT NULL" if shape.key else ""
    pk = "id, k" if shape.key else "id"

    def kval(i: int) -> tuple[str, ...]:
        return (f"k{i % 7}" * (i % 3 + 1),) if shape.key else ()

    kcol = ", k" if shape.key else ""
    kmark = ", %s" if shape.key else ""
    conn = _text_conn(srv)
    try:
        with conn.cursor() as cur:
            _run(cur, f"CREATE DATABASE IF NOT EXISTS `{SCHEMA}`")
            _run(cur, f"DROP TABLE IF EXISTS {t}")
            _run(
                cur,
                f"CREATE TABLE {t} (id INT NOT NULL{key}, a VARCHAR(40), n INT NOT NULL "
                "DEFAULT 0, c CHAR(6) NOT NULL DEFAULT 'cc', tx TEXT, d DATE, "
                "e ENUM('x','y','z'), bi BIGINT, w CHAR(3), "
                f"{f'PRIMARY KEY ({pk}), ' if shape.primary else ''}KEY ka (a)) ENGINE=InnoDB "
                f"{shape.options} "
                "DEFAULT CHARSET=utf8mb4",
            )

            def old_row(i: int) -> tuple[Any, ...]:
                return (
                    i, *kval(i), None if i % 9 == 0 else _word(rng, rng.randint(0, 40)),
                    -i, f"c{i}", _word(rng, 9000) if i % 10 == 0 else _word(rng, 30),
                    None if i % 4 == 0 else f"20{i % 30:02d}-0{i % 9 + 1}-1{i % 9}",
                    rng.choice(["x", "y", "z", None]), rng.randint(-(2**63), 2**63 - 1),
                    None if i % 5 == 0 else f"w{i % 10}",
                )  # fmt: skip

            _run(
                cur,
                f"INSERT INTO {t} (id{kcol}, a, n, c, tx, d, e, bi, w) "
                f"VALUES (%s{kmark}, %s, %s, %s, %s, %s, %s, %s, %s)",
                [old_row(i) for i in range(1, 201)],
            )
            _run(cur, f"ALTER TABLE {t} DROP COLUMN c, ALGORITHM=INSTANT")
            _run(
                cur,
                f"INSERT INTO {t} (id{kcol}, a, n, tx, d, e, bi, w) "
                f"VALUES (%s{kmark}, %s, %s, %s, %s, %s, %s, %s)",
                [_without(old_row(i), 3 + bool(shape.key)) for i in range(201, 261)],
            )
            _run(
                cur,
                f"ALTER TABLE {t} ADD COLUMN f INT DEFAULT 42 FIRST, ADD COLUMN g VARCHAR(20) "
                "NOT NULL DEFAULT 'gee ü' AFTER a, ALGORITHM=INSTANT",
            )
            _run(
                cur,
                f"INSERT INTO {t} (f, id{kcol}, a, g, n, d, e, bi) "
                f"VALUES (%s, %s{kmark}, %s, %s, %s, %s, %s, %s)",
                [(None if i % 3 == 0 else i * 7, i, *kval(i), _word(rng, 12), _word(rng, 5),
                  i, "2020-02-29", "z", -i) for i in range(261, 321)],
            )  # fmt: skip
            _run(
                cur,
                f"ALTER TABLE {t} MODIFY bi BIGINT AFTER id, DROP COLUMN tx, "
                "ADD COLUMN en ENUM('p','q') NOT NULL DEFAULT 'q' AFTER e, ALGORITHM=INSTANT",
            )
            _run(
                cur,
                f"INSERT INTO {t} (id{kcol}, bi, a, g, n, en, w) "
                f"VALUES (%s{kmark}, %s, %s, %s, %s, %s, %s)",
                [(i, *kval(i), i * 1000, None, _word(rng, 3), i, "p", "new")
                 for i in range(321, 381)],
            )  # fmt: skip
            _run(cur, f"UPDATE {t} SET g = 'upd', f = -1 WHERE id % 37 = 0")
            _run(cur, f"UPDATE {t} SET a = CONCAT('u', id) WHERE id % 41 = 0")
            _run(cur, f"DELETE FROM {t} WHERE id IN (3, 150, 230, 300, 350)")
            _run(cur, f"ALTER TABLE {t} DROP COLUMN n, ALGORITHM=INSTANT")
            _run(
                cur,
                f"INSERT INTO {t} (id{kcol}, a, w) VALUES (%s{kmark}, %s, %s)",
                [(i, *kval(i), f"last {i}", "z") for i in range(381, 401)],
            )
            _run(cur, f"SHOW CREATE TABLE {t}")
            create = cur.fetchall()[0][1]
            _run(cur, f"FLUSH TABLES {t} FOR EXPORT")
            try:
                cols = ", ".join(f"`{n}`" for n in shape.names)
                _run(cur, f"SELECT {cols}, e + 0 FROM {t} ORDER BY id, {pk}")
                live = [
                    {k: _value(v) for k, v in zip([*shape.names, "e_num"], r, strict=True)}
                    for r in cur.fetchall()
                ]
                for r in live:
                    r["id"] = int(r["id"])
                _run(cur, f"SELECT a, id FROM {t} ORDER BY a, {pk}")
                by_a = [(_value(r[0]), int(r[1])) for r in cur.fetchall()]
                path = srv.file_path(SCHEMA, shape.table)
                with Tablespace(path) as ts:  # page-compressed: the page as the server reads it
                    root = ts.logical_page(3)
                assert int.from_bytes(root[24:26], "big") == 18  # FIL_PAGE_TYPE_INSTANT
                infimum = 99 if shape.options != "ROW_FORMAT=REDUNDANT" else 101
                assert root[infimum : infimum + 8] == bytes(8)  # zeroed: DROP/reorder
                assert int.from_bytes(root[64:66], "big") >= 1  # metadata on a leaf, not root
                keep = out_dir / f"{shape.table}.ibd"
                keep.write_bytes(path.read_bytes())
                keep.with_suffix(".cfg").write_bytes(path.with_suffix(".cfg").read_bytes())
                outs = []
                runs = (
                    ["--schema", create],
                    [],
                    ["--index", "ka", "--schema", create],
                    conn_args(srv),  # SHOW CREATE TABLE of the table the file's names say
                )
                for args in runs:
                    res = ibdtool("records", str(path), "--json", *args)
                    assert res.returncode == 0, res.stderr[-3000:]
                    outs.append(json_lines(res.stdout))
            finally:
                _run(cur, "UNLOCK TABLES")
    finally:
        conn.close()
    return live, by_a, *outs


def _value(v: Any) -> Any:
    return v.decode() if isinstance(v, bytes) else v


@pytest.mark.parametrize("shape", SHAPES, ids=[s.table for s in SHAPES])
def test_records_after_instant_drop_and_reorder(
    shape: Shape,
    mariadb: ThrowawayServer,
    tmp_path: Path,
) -> None:
    live, by_a, schema_docs, cfg_docs, sec_docs, server_docs = _make(mariadb, shape, tmp_path)
    assert server_docs == schema_docs
    assert len(live) == 395
    for source, docs in (("--schema", schema_docs), (".cfg", cfg_docs)):
        assert not [d for d in docs if "problem" in d or "errors" in d], (source, docs[:3])
        rows = [d for d in docs if not d["deleted"]]
        ids = {r["id"] for r in live}
        assert not [d for d in docs if d["deleted"] and d["fields"]["id"] in ids]
        assert [d["fields"]["id"] for d in rows] == [r["id"] for r in live], source
        for doc, want in zip(rows, live, strict=True):
            got = doc["fields"]
            assert list(got) == shape.names, (source, list(got))  # table order
            for n in shape.names:
                theirs = want[n]  # .cfg: the member names come from the .frm beside it
                ours = got[n]
                assert str(ours) == str(theirs) if theirs is not None else ours is None, (
                    source, want["id"], n, ours, theirs,
                )  # fmt: skip
    sec = [d for d in sec_docs if not d["deleted"]]
    if shape.primary:
        assert [(d["fields"]["a"], d["fields"]["id"]) for d in sec] == by_a
    else:  # (a, DB_ROW_ID): the rows were inserted in id order
        assert [d["fields"]["a"] for d in sec] == [a for a, _ in by_a]
    if shape.table == "t_dynamic":
        _damaged_metadata_is_a_problem(tmp_path / f"{shape.table}.ibd")


def _damaged_metadata_is_a_problem(path: Path) -> None:
    """The BLOB pages garbled: a problem line, then exit 2 at the first record the definition
    no longer fits — never a traceback or wrong rows."""
    data = bytearray(path.read_bytes())
    size = 16384
    blobs = [
        n for n in range(len(data) // size) if data[n * size + 24 : n * size + 26] == b"\0\x0a"
    ]
    assert blobs  # FIL_PAGE_TYPE_BLOB: where the field map lives
    for n in blobs:
        data[n * size + 46 : n * size + 60] = b"\xff" * 14  # the count and the first entries
    bad = path.with_name("bad.ibd")
    bad.write_bytes(bytes(data))
    bad.with_suffix(".cfg").write_bytes(path.with_suffix(".cfg").read_bytes())
    res = ibdtool("records", str(bad), "--json")
    # without the field map the next records do not fit the definition: exit 2 there
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and "instant ALTER metadata" in res.stderr
    assert "does not fit" in res.stderr.splitlines()[-1]
    docs = json_lines(res.stdout)
    assert [d for d in docs if "problem" in d] and not [d for d in docs if "fields" in d]
