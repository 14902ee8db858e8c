"""One machine-output convention: ``--json`` is one document, ``--jsonl`` streams.

A single path gives its object; several give a list in the order of the paths, where a file that
could not be read is ``{"path", "error"}`` and the exit status still says so. The oracles: each
file's own single-path document (a separate run), a page we damaged ourselves for ``checksum
--json``, and ``inspect --json``'s count of pages and checksum verdicts.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runner import run_ibdtool
from tests.conftest import SAMPLES

GOOD = SAMPLES / "mysql80" / "zlib.ibd"
PAGE = 16384


def json_of(*args: str | Path, code: int = 0) -> Any:
    proc = run_ibdtool(*args)
    assert proc.returncode == code, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize(
    "command",
    [["inspect", "--json"], ["checksum", "--json"], ["simulate", "--json", "-a", "mysql:lz4"]],
    ids=lambda c: c[0],
)
def test_a_failed_file_is_an_error_object_in_the_list(command: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "missing.ibd"
    alone = json_of(*command, GOOD)
    both = run_ibdtool(*command, GOOD, missing, GOOD)
    assert both.returncode == 2
    assert both.stderr.strip() == f"ibdtool: error: {missing}: no such file"
    docs = json.loads(both.stdout)
    assert isinstance(docs, list) and len(docs) == 3
    assert docs[1] == {"path": str(missing), "error": f"{missing}: no such file"}
    for doc in (docs[0], docs[2]):
        for key in ("path", "pages"):
            assert doc[key] == alone[key]
    assert isinstance(alone, dict)


def test_nothing_on_stdout_when_no_file_could_be_read(tmp_path: Path) -> None:
    proc = run_ibdtool("checksum", "--json", tmp_path / "a.ibd", tmp_path / "b.ibd")
    assert proc.returncode == 2 and proc.stdout == ""


def test_checksum_json_names_the_page_we_damaged(tmp_path: Path) -> None:
    plain = SAMPLES / "mysql80" / "plain.ibd"
    copy = tmp_path / "damaged.ibd"
    shutil.copyfile(plain, copy)
    with copy.open("r+b") as f:  # flip bytes in the middle of page 5's records
        f.seek(5 * PAGE + 200)
        data = f.read(16)
        f.seek(5 * PAGE + 200)
        f.write(bytes(b ^ 0xFF for b in data))
    doc = json_of("checksum", "--json", copy, code=1)
    assert doc["path"] == str(copy)
    assert doc["pages"] == copy.stat().st_size // PAGE
    assert doc["invalid_pages"] == [5] and doc["invalid"] == 1
    assert sum(doc["by_algorithm"].values()) == doc["pages"]
    clean = json_of("inspect", "--json", plain)["checksum"]
    assert doc["valid"] == clean["valid"] - 1
    assert doc["empty"] == clean["empty"]
    assert json_of("checksum", "--json", GOOD)["invalid_pages"] == []


def test_pages_streams_json_lines_under_jsonl_and_json() -> None:
    pages = json_of("inspect", "--json", GOOD)["pages"]
    outputs = []
    for flag in ("--jsonl", "--json"):
        proc = run_ibdtool("pages", flag, GOOD)
        assert proc.returncode == 0, proc.stderr
        rows = [json.loads(line) for line in proc.stdout.splitlines()]
        assert [r["page"] for r in rows] == list(range(pages))
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1]
