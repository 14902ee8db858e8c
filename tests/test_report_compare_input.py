"""``report --compare OLD`` with a damaged or hand-edited OLD: one line and exit 2, never a crash.

OLD starts as a real ``report --format json`` of ``samples/`` and is then mutated in hundreds of
ways. Which mutations are malformed comes from the README's description of the document
(``report --json``: sizes and counts are whole numbers, names are strings, ``flags`` a list of
names, ``checksum`` an object, rows are objects), written out here, not from ibdtool's schema.
The command runs in this process through click's runner (each run scans one small file), so
an exception that escapes is seen as an exception, not as text.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ibdtool.cli import main
from tests.test_copy_local import ibdtool

REPO = Path(__file__).resolve().parents[1]
NEW = "samples/mysql80/zlib.ibd"

#: README ``report --json``: what each field of a row is (null allowed unless said otherwise)
COUNTS = ["logical_size", "allocated_size", "pages", "extents", "compressed_pages",
          "unpunched_pages", "unpunched_bytes", "key_block_size"]  # fmt: skip
STRINGS = ["name", "schema", "table", "format", "row_format", "page_compression",
           "declared_compression", "error", "host"]  # fmt: skip
REQUIRED = ["path", "name", "schema", "logical_size", "allocated_size", "error", "flags"]
NOT_A_COUNT: list[Any] = ["4096", -1, 1.5, True, [], {}]
NOT_A_STRING: list[Any] = [5, [], {}, True]


@pytest.fixture(scope="module")
def old_doc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    res = ibdtool("report", "--format", "json", "samples/")
    assert res.returncode == 0, res.stderr
    doc: dict[str, Any] = json.loads(res.stdout)
    assert len(doc["tablespaces"]) > 10
    return doc


def _mutations(doc: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(what, text of OLD) for malformed OLD files."""
    text = json.dumps(doc, indent=2)
    rows = doc["tablespaces"]

    def with_doc(what: str, change: Any) -> tuple[str, str]:
        d = copy.deepcopy(doc)
        change(d)
        return what, json.dumps(d)

    for value in [{}, "rows", None, 5, [1, 2]]:
        yield with_doc(f"tablespaces={value!r}", lambda d, v=value: d.update(tablespaces=v))
    for value in ["1", None, 2, True, 1.0]:
        yield with_doc(f"schema_version={value!r}", lambda d, v=value: d.update(schema_version=v))
    for value in [5, [], {}]:
        yield with_doc(f"generated_at={value!r}", lambda d, v=value: d.update(generated_at=v))
    for i in (0, len(rows) // 2, len(rows) - 1):
        for value in [None, 5, "row", [], [rows[i]]]:
            yield with_doc(
                f"row {i}={value!r:.20}", lambda d, i=i, v=value: d["tablespaces"].__setitem__(i, v)
            )
        for key in COUNTS:
            for value in NOT_A_COUNT:
                yield with_doc(f"row {i} {key}={value!r}", _set(i, key, value))
        for key in STRINGS:
            for value in NOT_A_STRING:
                yield with_doc(f"row {i} {key}={value!r}", _set(i, key, value))
        for value in ["error", [1], {}, None, [None]]:
            yield with_doc(f"row {i} flags={value!r}", _set(i, "flags", value))
        for value in ["3", None, -2, [], 1.5]:
            yield with_doc(f"row {i} checksum.invalid={value!r}", _nested(i, "checksum", value))
        for value in ["ok", 7, []]:
            yield with_doc(f"row {i} checksum={value!r}", _set(i, "checksum", value))
        yield with_doc(
            f"row {i} simulation.predicted_allocated='5'",
            _set(i, "simulation", {"predicted_allocated": "5"}),
        )
        for key in REQUIRED:
            yield with_doc(f"row {i} without {key}", _delete(i, key))
        yield with_doc(f"row {i} path=null", _set(i, "path", None))
    for cut in (1, 2, len(text) // 10, len(text) // 2, len(text) - 2, len(text) - 1):
        yield f"truncated at {cut}", text[:cut]
    yield "a JSON list of rows", json.dumps(rows)
    yield "empty", ""
    yield "blank", "\n \n"
    yield "binary", "\x00\x01\x02garbage"
    yield "NaN size", text.replace('"logical_size": ', '"logical_size": NaN, "x": ', 1)
    lines = [json.dumps(r) for r in rows]
    for n in (0, len(lines) // 2, len(lines) - 1):
        broken = list(lines)
        broken[n] = broken[n][: len(broken[n]) // 2]
        yield f"jsonl line {n + 1} truncated", "\n".join(broken)
        for value in ["[]", "5", '"row"', "null", '{"name": "x"}']:
            broken = list(lines)
            broken[n] = value
            yield f"jsonl line {n + 1}={value}", "\n".join(broken)
        row = dict(rows[n], allocated_size="many")
        yield f"jsonl line {n + 1} string size", "\n".join([*lines[:n], json.dumps(row)])
        row = dict(rows[n], change="dropped")
        yield f"jsonl line {n + 1} change string", "\n".join([*lines[:n], json.dumps(row)])


def _set(i: int, key: str, value: Any) -> Any:
    return lambda d: d["tablespaces"][i].__setitem__(key, value)


def _delete(i: int, key: str) -> Any:
    return lambda d: d["tablespaces"][i].pop(key)


def _nested(i: int, key: str, value: Any) -> Any:
    return lambda d: d["tablespaces"][i].__setitem__(key, {"invalid": value})


def _compare(old: Path, *fmt: str) -> Any:
    runner = CliRunner()
    return runner.invoke(
        main, ["report", *fmt, "--jobs", "1", "--compare", str(old), NEW], catch_exceptions=True
    )


def test_every_malformed_old_report_is_one_line_and_exit_2(
    old_doc: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    old = tmp_path / "old.json"
    cases = list(_mutations(old_doc))
    assert len(cases) >= 150
    bad = []
    for what, text in cases:
        old.write_text(text)
        res = _compare(old, "--format", "json")
        lines = res.stderr.splitlines()
        ok = (
            res.exit_code == 2
            and isinstance(res.exception, SystemExit)
            and len(lines) == 1
            and lines[0].startswith(f"ibdtool: error: {old}: ")
        )
        if not ok:
            bad.append(f"{what}: exit {res.exit_code} {res.exception!r} {res.stderr[-200:]!r}")
    assert not bad, f"{len(bad)} of {len(cases)}:\n" + "\n".join(bad)


def test_random_edits_never_crash_any_format(
    old_doc: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any field of any row set to any JSON value: a result (0/1) or one line (2), in every
    output format."""
    monkeypatch.chdir(REPO)
    old = tmp_path / "old.json"
    rng = random.Random(9)
    values: list[Any] = [None, 0, -7, 2**70, 1.5, "", "x", True, [], ["x"], {}, {"invalid": 1}]
    formats = ["json", "jsonl", "csv", "markdown", "html", "table"]
    bad = []
    for n in range(120):
        doc = copy.deepcopy(old_doc)
        row = rng.choice(doc["tablespaces"])
        key = rng.choice(sorted(row))
        row[key] = rng.choice(values)
        old.write_text(json.dumps(doc))
        fmt = formats[n % len(formats)]
        res = _compare(old, "--format", fmt)
        clean = res.exception is None or isinstance(res.exception, SystemExit)
        if clean and res.exit_code in (0, 1):
            continue
        if clean and res.exit_code == 2 and len(res.stderr.splitlines()) == 1:
            continue
        bad.append(f"{key}={row[key]!r} --format {fmt}: exit {res.exit_code} {res.exception!r}")
    assert not bad, "\n".join(bad)


def test_malformed_old_report_from_the_command_line(tmp_path: Path) -> None:
    """The installed command, not the runner: one line, exit 2, no traceback."""
    old = tmp_path / "old.jsonl"
    row = {"path": "a.ibd", "name": "a.ibd", "schema": None, "table": "a", "partition": None,
           "kind": "table", "logical_size": "big", "allocated_size": 0, "saving": 0,
           "error": None, "flags": []}  # fmt: skip
    old.write_text(json.dumps(row) + "\n")
    res = ibdtool("report", "--compare", str(old), NEW)
    assert res.returncode == 2
    assert res.stderr == (
        f"ibdtool: error: {old}: line 1: logical_size: expected a whole number ≥ 0, got a string\n"
    )
