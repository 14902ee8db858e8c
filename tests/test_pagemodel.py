"""The TUI page map's model (``ibdtool.tui.pagemodel``): what it holds per page, checked against the
file itself, and what that costs in memory.

Expected values come from elsewhere: SEEK_DATA/SEEK_HOLE walked here for the allocation, the
page headers read here (the on-disk rules of ``tests/test_copy_repunch.py``) for stored sizes,
and ``inspect``'s own tallies for the page types.
"""

from __future__ import annotations

import os
import shutil
import struct
import sys
import tracemalloc
from bisect import bisect_right
from collections.abc import Callable
from itertools import takewhile
from pathlib import Path
from typing import Any

import pytest

import ibdtool.tablespace.inspect as inspect_mod
from ibdtool.tablespace.inspect import inspect_tablespace
from ibdtool.tablespace.reader import Tablespace
from ibdtool.tui.pagemodel import (
    FULL,
    HOLE,
    PUNCHED,
    UNKNOWN,
    Mode,
    PageMapModel,
    model_for,
    scan_into,
)
from tests.samples_manifest import sample
from tests.test_copy_remote import seek_data_ranges, synced_sparse_copy

PAGE = 16384


def _model(ts: Tablespace, path: Path) -> PageMapModel:
    alloc = ts.allocation
    return PageMapModel(
        ts.n_pages, ts.physical_size, ts.logical_size, alloc.fs_block_size, alloc, path, ts.format
    )


def _held(ranges: list[tuple[int, int]], page: int) -> int:
    lo, hi = page * PAGE, (page + 1) * PAGE
    first = max(0, bisect_right(ranges, (lo, lo)) - 1)  # sorted, not overlapping
    near = takewhile(lambda r: r[0] < hi, ranges[first:])
    return sum(max(0, min(e, hi) - max(s, lo)) for s, e in near)


def _stored(slot: bytes, n: int) -> int | None:
    ptype = int.from_bytes(slot[24:26], "big")
    if ptype == 14:
        return 38 + struct.unpack_from(">H", slot, 32)[0]
    if ptype == 34354:
        return 40 + struct.unpack_from(">H", slot, 38)[0]
    if ptype & 0x8000 and n > 0:
        return (ptype & 0x7FFF) << 8
    return None


@pytest.mark.parametrize(
    "rel", ["mariadb/p16k-crc32_pc_zlib.ibd", "mariadb/p16k-pc_lz4.ibd", "mysql80/zlib.ibd"]
)
def test_codes_match_the_file(rel: str, tmp_path: Path) -> None:
    """A server-punched copy: allocation codes and bytes per slot as SEEK_DATA says, stored
    sizes as the headers say, page types as inspect counts them."""
    path = synced_sparse_copy(sample(rel), tmp_path / "t.ibd")
    data = path.read_bytes()
    ranges = seek_data_ranges(path)
    with Tablespace(path) as ts:
        model = _model(ts, path)
        result = inspect_tablespace(ts, on_page=model.add, jobs=1)
    _check_codes(model, path, data, ranges)
    types = {cat.label: count for cat, count in model.counts(Mode.TYPE)}
    assert types == result.page_types


def _check_codes(
    model: PageMapModel, path: Path, data: bytes, ranges: list[tuple[int, int]]
) -> None:
    """Every page's allocation code as SEEK_DATA's ranges and its header's stored size say:
    a compressed slot holding more whole blocks than its image needs is "unpunched"."""
    block = os.statvfs(path).f_bsize
    n_pages = len(data) // PAGE
    assert model.scanned == n_pages
    allocation = model.codes(Mode.ALLOCATION)
    punched = 0
    for n in range(n_pages):
        held = _held(ranges, n)
        assert model.allocated_at(n) == held, n
        want = HOLE if held == 0 else FULL if held == PAGE else PUNCHED
        stored = _stored(data[n * PAGE : (n + 1) * PAGE], n)
        if want != HOLE and stored is not None and held > -(-stored // block) * block:
            want = 3  # unpunched
        assert allocation[n] == want, n
        punched += allocation[n] == PUNCHED
        if stored is not None:
            assert model.stored_size(n) == stored, n
    assert punched > 0  # the server punched these files: the check above saw partial slots


def test_codes_of_a_file_of_an_extent_a_page(tmp_path: Path) -> None:
    """A file with a data range a page (page compression), and some slots left whole: the
    scan's allocation, looked up a window at a time, is still each page's own."""
    from tests.test_fragmented_files import fragmented

    path = fragmented(tmp_path / "f.ibd", 9000)  # past two windows of the scan's lookups
    raw = bytearray(path.read_bytes())
    with path.open("r+b") as f:  # a few compressed slots written whole: not punched
        for n in (5, 4095, 4096, 4097, 8191, 8999):
            f.seek(n * PAGE)
            f.write(raw[n * PAGE : (n + 1) * PAGE])
        os.fsync(f.fileno())
    data = path.read_bytes()
    ranges = seek_data_ranges(path)
    with Tablespace(path) as ts:
        model = _model(ts, path)
        inspect_tablespace(ts, on_page=model.add, jobs=1)
    _check_codes(model, path, data, ranges)
    assert model.codes(Mode.ALLOCATION).count(3) >= 6


def test_map_of_a_large_sparse_file_costs_four_bytes_a_page(tmp_path: Path) -> None:
    """``truncate -s`` to 4 M pages (64 GiB) after a real tablespace's pages: building the map
    and adding the real pages stays within 4 bytes a page (the old model held ~15)."""
    path = tmp_path / "big.ibd"
    shutil.copyfile(sample("mariadb/p16k-crc32_pc_zlib.ibd"), path)
    n_pages = 4 << 20
    os.truncate(path, n_pages * PAGE)
    with Tablespace(path) as ts:
        assert ts.n_pages == n_pages
        alloc = ts.allocation  # read before measuring: it is the engine's, not the map's
        tracemalloc.start()
        try:
            model = PageMapModel(n_pages, PAGE, PAGE, alloc.fs_block_size, alloc, path, ts.format)
            for info in ts.pages(0, 64):
                model.add(info)
            for mode in Mode:  # what drawing and the legend do
                model.counts(mode)
                model.cell(mode, 0, 4096)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    per_page = peak / n_pages
    # four arrays of one byte a page, and one colouring unpacked at a time while counting
    assert per_page < 5.2, per_page
    assert model.codes(Mode.ALLOCATION)[n_pages - 1] == HOLE
    assert model.allocated_at(n_pages - 1) == 0
    assert model.labels(n_pages - 1)[Mode.TYPE] == "not read yet"


def _scan_both(
    path: Path, window_map: Callable[[int, int], Any] | None = None
) -> tuple[PageMapModel, PageMapModel, dict[str, Any], dict[str, Any], set[str]]:
    """The page map and inspect result of the tablespace view's scan (its map read a window at
    a time: ``scan_into``) and of the reference (the map read whole first, the model filled
    from it, inspect's one-process pass over it); and what of the whole map the view's scan
    left on its tablespace (nothing, if it never read it whole)."""
    with Tablespace(path) as ts:
        ref = _model(ts, path)
        want = inspect_tablespace(ts, on_page=ref.add, jobs=1).to_json()
    with Tablespace(path) as ts:
        model = model_for(ts)
        got = scan_into(ts, model, window_map=window_map).to_json()
        whole = {"allocation", "data_map", "data_ranges", "scan_ranges"} & ts.__dict__.keys()
    return ref, model, want, got, whole


def _same_map(ref: PageMapModel, model: PageMapModel, n_pages: int) -> None:
    for mode in Mode:
        assert bytes(model.codes(mode)) == bytes(ref.codes(mode)), mode
        assert model.counts(mode) == ref.counts(mode), mode
    for n in range(n_pages):
        assert model.allocated_at(n) == ref.allocated_at(n), n


@pytest.mark.parametrize(
    "rel", ["mariadb/p16k-crc32_pc_zlib.ibd", "mariadb/p16k-pc_lz4.ibd", "mysql80/zlib.ibd"]
)
def test_window_scan_gives_the_whole_maps_answers(
    rel: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The view's scan with windows of 7 pages (edges everywhere) on server-punched copies:
    every colouring, every slot's bytes and the inspect result as the map read whole gives
    them, the allocation as SEEK_DATA walked here says; the whole map never read."""
    monkeypatch.setattr(inspect_mod, "WINDOW_PAGES", 7)
    path = synced_sparse_copy(sample(rel), tmp_path / "t.ibd")
    ref, model, want, got, whole = _scan_both(path)
    assert got == want
    assert not whole
    _same_map(ref, model, model.n_pages)
    _check_codes(model, path, path.read_bytes(), seek_data_ranges(path))


def test_window_scan_of_an_extent_a_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file with a data range a page, windows of 1,000 pages (edges inside the scan's
    4,096-page lookups) and slots left whole across them: the same answers as the whole map's.
    While a window is read, the pages past it are "not read yet" in the allocation colouring
    and their slots' bytes are read on demand, as SEEK_DATA walked here says."""
    from tests.test_fragmented_files import fragmented

    monkeypatch.setattr(inspect_mod, "WINDOW_PAGES", 1000)
    path = fragmented(tmp_path / "f.ibd", 9000)
    raw = bytearray(path.read_bytes())
    with path.open("r+b") as f:  # compressed slots written whole: unpunched, at window edges
        for n in (5, 999, 1000, 4095, 4096, 4097, 8191, 8999):
            f.seek(n * PAGE)
            f.write(raw[n * PAGE : (n + 1) * PAGE])
        os.fsync(f.fileno())
    ranges = seek_data_ranges(path)
    seen: list[int] = []
    model_of: list[PageMapModel] = []

    def window_map(start: int, stop: int) -> Any:
        if model_of:
            m = model_of[0]
            assert m.allocation_known == start and m.scanned == start
            unknown = m.codes(Mode.ALLOCATION, start)
            assert unknown.count(UNKNOWN) == len(unknown) == m.n_pages - start
            assert m.labels(start)[Mode.ALLOCATION] == "not read yet"
            for n in (start, start + 1, stop - 1, m.n_pages - 1):
                assert m.allocated_at(n) == _held(ranges, n), n
        seen.append(start)
        return ts_of[0].window_allocation(start, stop)

    ts_of: list[Tablespace] = []
    real = model_for

    def capture(ts: Tablespace) -> PageMapModel:
        ts_of.append(ts)
        model_of.append(real(ts))
        return model_of[0]

    monkeypatch.setattr(sys.modules[__name__], "model_for", capture)
    ref, model, want, got, whole = _scan_both(path, window_map)
    assert seen == list(range(0, 9000, 1000))
    assert got == want and not whole
    _same_map(ref, model, 9000)
    _check_codes(model, path, path.read_bytes(), ranges)
    assert model.codes(Mode.ALLOCATION).count(3) >= 8
