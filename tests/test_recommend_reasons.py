"""``saves_nothing``: "incompressible" only when the data itself does not compress.

A MariaDB PAGE_COMPRESSED zlib file, punched as the server leaves it (a sparse copy), already
allocates about what any codec would: nothing more to save against today's allocation, yet its
data compresses to under half its logical size (``samples/MANIFEST.json``: the server allocated
that for these rows with zlib). The recommendation must say so, not "the data does not
compress".
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.cli_runner import run_ibdtool
from tests.conftest import SAMPLES, sparse_copy


def test_an_already_compressed_file_is_not_called_incompressible(tmp_path: Path) -> None:
    copy = sparse_copy(SAMPLES / "mariadb" / "p16k-pc_zlib.ibd", tmp_path / "pc_zlib.ibd")
    os.sync()  # allocation settles at writeback (ext4 may add an extent-tree block)
    proc = run_ibdtool("simulate", "--json", "-a", "mariadb:zlib", "-a", "mariadb:lz4", copy)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    allocated = doc["allocated_size"]
    assert allocated < doc["logical_size"] * 0.6  # punched: the holes are there
    (rec,) = [r for r in doc["recommendations"] if r["block_size"] == doc["fs_block_size"]]
    best = next(
        r
        for r in doc["results"]
        if (r["server"], r["algorithm"]) == (rec["best"]["server"], rec["best"]["algorithm"])
        and r["block_size"] == doc["fs_block_size"]
    )
    assert best["predicted_allocated"] >= allocated * 0.99  # nothing to gain against today
    assert best["predicted_allocated"] < 0.6 * doc["logical_size"]  # but the data compresses
    assert rec["saves_nothing"] == "already_compressed"
    text = run_ibdtool("simulate", "-a", "mariadb:zlib", copy).stdout
    assert "does not compress" not in text and "already compressed" in text
