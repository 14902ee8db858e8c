"""The samples against what the servers that made them and innochecksum said (MANIFEST.json)."""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from ibdtool.tablespace.checksum import check_file
from ibdtool.tablespace.inspect import inspect_path
from ibdtool.tablespace.reader import Tablespace
from tests.conftest import sparse_copy
from tests.samples_manifest import SAMPLES, manifest, sample

TABLES = sorted(p for p, s in manifest().items() if s.get("kind") == "table")
SYSTEM = sorted(p for p, s in manifest().items() if s.get("kind") == "system")

# innochecksum -S labels -> ibdtool's stored-type names (MariaDB 10.11's innochecksum)
_INNO_LABELS = {
    "Index page": "INDEX",
    "Undo log page": "UNDO_LOG",
    "Inode page": "INODE",
    "Freshly allocated page": "ALLOCATED",
    "Insert buffer bitmap": "IBUF_BITMAP",
    "System page": "SYS",
    "Transaction system page": "TRX_SYS",
    "File Space Header": "FSP_HDR",
    "Extent descriptor page": "XDES",
    "BLOB page": "BLOB",
}


def _innochecksum(rel: str) -> tuple[int, dict[str, int], dict[int, tuple[int, int]]]:
    """(exit code, page-type summary, index_id -> (#pages, #leaf_pages)) from the manifest."""
    inno = manifest()[rel]["innochecksum"]
    out = inno["stdout"]
    summary = {label: int(n) for n, label in re.findall(r"^\s*(\d+)\t(.+)$", out, re.M) if label}
    per_index = {
        int(i): (int(p), int(leaf))
        for i, p, leaf in re.findall(r"^(\d+)\t\t(\d+)\t\t(\d+)\t", out, re.M)
    }
    return inno["exit_code"], summary, per_index


@pytest.mark.parametrize("rel", TABLES)
def test_table_sample_facts_match_the_server(rel: str) -> None:
    s = manifest()[rel]
    r = inspect_path(sample(rel))
    info = s["information_schema"]
    assert r.fmt.space_id == info["SPACE"]
    # MariaDB's FLAG carries memory-only bits above the on-disk flags (samples/README.md)
    on_disk_mask = 0xFFFF if r.vendor.value == "mysql" else 0x1FFFF
    assert r.fmt.flags.raw == info["FLAG"] & on_disk_mask
    assert r.logical_size == s["live"]["st_size"] == info.get("FILE_SIZE", r.logical_size)
    assert r.fmt.logical_size == s["server"]["settings_at_start"]["innodb_page_size"]
    assert r.invalid_pages == [] and r.problems == []
    declared = s.get("compression_at_create")
    if "pc_" in rel:
        assert set(r.compression) - {"none"} == {declared}


@pytest.mark.parametrize("rel", TABLES)
def test_clustered_leaf_records_equal_the_rows_loaded(rel: str) -> None:
    s = manifest()[rel]
    with Tablespace(sample(rel)) as ts:
        leaves = [p.index for p in ts.pages() if p.index is not None and p.type_name == "INDEX"]
    clustered = min(i.index_id for i in leaves)  # the PRIMARY key is created first
    rows = sum(i.n_recs for i in leaves if i.index_id == clustered and i.level == 0)
    assert rows == s["rows"]


PLAIN_INNO = [
    rel
    for rel in TABLES
    if _innochecksum(rel)[0] == 0 and _innochecksum(rel)[1].get("Other type of page", 0) == 0
]


@pytest.mark.parametrize("rel", PLAIN_INNO)
def test_page_types_and_indexes_match_innochecksum(rel: str) -> None:
    _, summary, per_index = _innochecksum(rel)
    with Tablespace(sample(rel)) as ts:
        infos = list(ts.pages())
    stored = Counter(
        "ALLOCATED" if i.empty else i.type_name
        for i in infos
        if not i.is_compressed and i.stored_type != 34354
    )
    for label, name in _INNO_LABELS.items():
        assert stored.get(name, 0) == summary.get(label, 0), label
    assert sum(1 for i in infos if i.stored_type == 34354) == summary.get("Page compressed page", 0)
    ours: dict[int, list[int]] = {}
    for i in infos:
        if i.index is not None and i.stored_type != 34354:
            slot = ours.setdefault(i.index.index_id, [0, 0])
            slot[0] += 1
            slot[1] += i.index.level == 0
    assert {k: tuple(v) for k, v in ours.items()} == per_index


@pytest.mark.parametrize("rel", TABLES)
def test_sparse_copy_allocation_is_the_filesystems(rel: str, tmp_path: Path) -> None:
    """allocated_size == st_blocks*512 of a sparse copy, equal to what the samples script
    measured on its own sparse copy; per-page allocated bytes sum to it within the blocks
    ext4 spends on the extent tree."""
    copy = sparse_copy(sample(rel), tmp_path / Path(rel).name)
    # ext4 allocates (and adds extent-tree blocks) at writeback: settle the file first
    fd = os.open(copy, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    st = copy.stat()
    r = inspect_path(copy)
    assert r.allocation.allocated == st.st_blocks * 512
    extents = r.allocation.extents or 0
    tree_blocks = 4096 * (1 + extents // 300) if extents > 4 else 0
    measured = manifest()[rel]["copy"]["allocated_size_after_sparse_cp"]  # before writeback
    assert measured <= r.allocation.allocated <= measured + tree_blocks
    with Tablespace(copy) as ts:
        per_page = ts.allocation.per_page_allocated(ts.physical_size, ts.n_pages)
    overhead = r.allocation.allocated - sum(per_page)
    assert 0 <= overhead <= tree_blocks


@pytest.mark.parametrize("rel", SYSTEM)
def test_system_undo_and_dictionary_tablespaces_read_cleanly(rel: str, tmp_path: Path) -> None:
    s = manifest()[rel]
    target = tmp_path / Path(rel).name.removesuffix(".gz")
    with gzip.open(SAMPLES / rel, "rb") as src, target.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    assert hashlib.sha256(target.read_bytes()).hexdigest() == s["uncompressed_sha256"]
    r = inspect_path(target)
    assert r.problems == [] and r.invalid_pages == []
    assert r.logical_size == s["uncompressed_size"]
    result = check_file(str(target))
    assert result.invalid_pages == []
    assert s["innochecksum"]["exit_code"] == 0  # the server-side tool agrees: all valid
    if "ibdata1" in rel:
        assert r.fmt.space_id == 0
        assert r.page_types.get("TRX_SYS") == 1
        # the doublewrite buffer's pages are copies, never counted as this space's index pages
        with Tablespace(target) as ts:
            dblwr = ts.doublewrite_pages
            assert len(dblwr) == 2 * ts.format.extent_pages
            assert all(p.index is None for p in ts.pages() if p.page_no in dblwr)
    else:
        assert r.page_types.get("UNDO_LOG", 0) > 0
