"""A damaged page's impossible stored size is damage, never a number that is summed.

Each case copies a real compressed corpus tablespace into ``tmp_path`` and rewrites the
envelope of a few compressed pages so the size it declares cannot be (FORMATS.md): a full_crc32
image of 0x7FFF × 256 bytes or of 0 bytes (§3.2: 0 < size < page size), a MySQL type-14 or
MariaDB 34354/37401 payload longer than the page or of 0 bytes (§2.1, §3.1). Through the real
CLI, ``inspect --json`` must name every such page as a problem and its
``compressed_image_bytes`` must be what the untouched pages add up to in the original file
(``pages --json`` of the original): never more than the file itself.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli_runner import run_ibdtool
from tests.conftest import corpus_file

PAGE = 16384
DAMAGED = (1, 3, 4, 6, 7)  # compressed pages in every file below (checked by the test)


def ibdtool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(HOME="/tmp", NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")
    return run_ibdtool(*args, env=env, timeout=120)


def put(page: bytearray, offset: int, value: int, size: int) -> None:
    page[offset : offset + size] = value.to_bytes(size, "big")


def fcrc32_size_units(units: int) -> Callable[[bytearray], None]:
    """§3.2: bit 15 of FIL_PAGE_TYPE set, the stored size / 256 in the other 15 bits."""
    return lambda page: put(page, 24, 0x8000 | units, 2)


def mysql_comp_size(size: int) -> Callable[[bytearray], None]:
    """§2.1: FIL_PAGE_COMPRESS_SIZE_V1 at 32."""
    return lambda page: put(page, 32, size, 2)


def mysql_encrypted_comp_size(page: bytearray) -> None:
    """§2.2: type 16 keeps the type-14 metadata in plaintext, its size past the page."""
    put(page, 24, 16, 2)
    put(page, 32, 0xFFFF, 2)


def mariadb_comp_size(size: int) -> Callable[[bytearray], None]:
    """§3.1: FIL_PAGE_COMP_SIZE at 38."""
    return lambda page: put(page, 38, size, 2)


def mariadb_encrypted_comp_size(page: bytearray) -> None:
    """§3.1: type 37401, key version at 26, length at 38, algorithm id (zlib) at 40."""
    algorithm = int.from_bytes(page[26:34], "big")
    put(page, 24, 37401, 2)
    put(page, 26, 1, 4)
    put(page, 38, 0xFFFF, 2)
    put(page, 40, algorithm, 2)


FCRC32_LZ4 = "mariadb-10.11/p16k-pc_lz4-1000rows.ibd"
MYSQL57_ZLIB = "mysql-made/mysql5722-t_zlib_1k.ibd"
MYSQL8_LZ4 = "mysql-made/mysql8015-t_lz4_1k.ibd"
CLASSIC_ZLIB = "mariadb-10.11/p16k-crc32_pc_zlib-1000rows.ibd"

CASES: dict[str, tuple[str, Callable[[bytearray], None]]] = {
    "fcrc32-size-past-page": (FCRC32_LZ4, fcrc32_size_units(0x7FFF)),
    "fcrc32-size-page": (FCRC32_LZ4, fcrc32_size_units(PAGE >> 8)),
    "fcrc32-size-zero": (FCRC32_LZ4, fcrc32_size_units(0)),
    "mysql57-type14-past-page": (MYSQL57_ZLIB, mysql_comp_size(0xFFFF)),
    "mysql8-type14-past-page": (MYSQL8_LZ4, mysql_comp_size(PAGE - 37)),
    "mysql8-type14-zero": (MYSQL8_LZ4, mysql_comp_size(0)),
    "mysql8-type16-past-page": (MYSQL8_LZ4, mysql_encrypted_comp_size),
    "classic-34354-past-page": (CLASSIC_ZLIB, mariadb_comp_size(0xFFFF)),
    "classic-34354-zero": (CLASSIC_ZLIB, mariadb_comp_size(0)),
    "classic-37401-past-page": (CLASSIC_ZLIB, mariadb_encrypted_comp_size),
}


def rows_of(path: Path) -> list[dict[str, object]]:
    proc = ibdtool("pages", "--json", path)
    assert proc.returncode == 0, proc
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.mark.parametrize("case", sorted(CASES))
def test_impossible_stored_size_is_a_problem_not_a_number(case: str, tmp_path: Path) -> None:
    rel, damage = CASES[case]
    original = corpus_file(rel)
    before = rows_of(original)
    assert all(before[n]["compression"] != "none" and before[n]["valid"] for n in DAMAGED)
    data = bytearray(original.read_bytes())
    for n in DAMAGED:
        page = bytearray(data[n * PAGE : (n + 1) * PAGE])
        damage(page)
        data[n * PAGE : (n + 1) * PAGE] = page
    path = tmp_path / "damaged.ibd"
    path.write_bytes(bytes(data))

    proc = ibdtool("inspect", "--json", path)
    assert proc.returncode == 0, proc
    doc = json.loads(proc.stdout)
    assert sorted(p["page"] for p in doc["problems"]) == list(DAMAGED), doc["problems"]
    untouched = sum(
        int(r["stored_size"])  # type: ignore[call-overload]
        for r in before
        if r["page"] not in DAMAGED and r["compression"] != "none" and r["stored_size"]
    )
    assert doc["compressed_image_bytes"] == untouched
    assert doc["compressed_image_bytes"] <= path.stat().st_size

    rows = rows_of(path)
    for n in DAMAGED:
        assert rows[n]["valid"] is False and rows[n]["problem"], rows[n]
        size = rows[n]["stored_size"]
        assert size is None or 0 < size < PAGE, rows[n]  # type: ignore[operator]
