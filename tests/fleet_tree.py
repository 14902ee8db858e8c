"""Many-file data directories for the fleet-scale report tests and ``bench/bench_report.py``.

:func:`build_fleet_tree` lays ``schemas`` schema folders of ``per_schema`` files each under a
new folder: one real sample tablespace copied (sparse) into each schema folder, and every
other file of that schema a hard link to it. Hard links are distinct paths (``report``
lists and reports each one), cost no disk space and make 100,000 files in seconds.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: the real files the schemas take in turn (several formats and algorithms, each small)
SOURCES = (
    "mariadb/p16k-pc_zlib.ibd",
    "mysql80/plain.ibd",
    "mariadb/p16k-crc32_pc_lz4.ibd",
    "mysql80/zlib.ibd",
    "mariadb/p16k-rc_kbs8.ibd",
    "mysql57/zlib.ibd",
    "mariadb/p16k-plain.ibd",
    "mysql80/kbs8.ibd",
)


def build_fleet_tree(root: Path, schemas: int, per_schema: int) -> Path:
    """``root`` made anew (it must not exist) with ``schemas × per_schema`` tablespaces."""
    root.mkdir(parents=True)
    (root / "auto.cnf").write_text("[auto]\n")  # a data directory, as a server leaves it
    for s in range(schemas):
        folder = root / f"db{s:03d}"
        folder.mkdir()
        first = folder / "t00000.ibd"
        shutil.copyfile(REPO / "samples" / SOURCES[s % len(SOURCES)], first)
        for i in range(1, per_schema):
            os.link(first, folder / f"t{i:05d}.ibd")
    return root
