"""Tests for ibdtool.fs.allocation against real files with real holes (no mocks).

Expected values come from sources independent of the module: the layout each test writes,
``os.stat`` (``st_blocks * 512``) and ``filefrag -v`` (e2fsprogs). Files are built in
``tmp_path`` with writes, ``os.truncate``, punch-hole (libc ``fallocate`` via ctypes) and
``fallocate -l`` (util-linux, unwritten extents). The filesystem must be ext4.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import itertools
import os
import random
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from ibdtool.fs.allocation import (
    FIEMAP_EXTENT_LAST,
    FIEMAP_EXTENT_UNWRITTEN,
    Allocation,
    Extent,
    WindowCounts,
    contiguous_runs,
    data_ranges,
    fiemap,
    fiemap_tuples,
    join_windows,
    ranges_from_extents,
    read_allocation,
    read_window,
    scan_ranges,
)
from ibdtool.fs.ranges import PackedRanges
from ibdtool.tablespace.reader import Tablespace
from tests.catalog import load_catalog
from tests.conftest import SAMPLES

PAGE = 16384  # InnoDB default page size
EXT4_MAGIC = "ef53"
EXT4_INODE_EXTENTS = 4  # extents that fit in the inode itself; more need tree blocks

FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_fallocate = getattr(_libc, "fallocate64", None) or _libc.fallocate
_fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
_fallocate.restype = ctypes.c_int


def punch_hole(fd: int, offset: int, length: int) -> None:
    """Deallocate ``[offset, offset + length)`` keeping the file size (test-side only)."""
    mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
    if _fallocate(fd, mode, offset, length) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"fallocate(PUNCH_HOLE) failed: {os.strerror(err)}")


# --- filefrag -v, the independent extent oracle ---------------------------------------------


@dataclass(frozen=True)
class FilefragReport:
    fs_type: str
    block_size: int
    rows: list[tuple[int, int, int, frozenset[str]]]  # logical, physical, length (blocks)
    extents_found: int  # filefrag's own (merged) count


_ROW = re.compile(
    r"^\s*\d+:\s+(\d+)\.\.\s*(\d+):\s+(\d+)\.\.\s*(\d+):\s+(\d+):\s*(?:\d+:)?\s*(\S*)\s*$"
)


@pytest.fixture(scope="session")
def filefrag_bin() -> str:
    path = shutil.which("filefrag") or shutil.which("filefrag", path="/usr/sbin:/sbin")
    if path is None:
        pytest.fail(
            "filefrag (e2fsprogs) is required as the independent FIEMAP oracle for these "
            "tests; install e2fsprogs (apt-get install e2fsprogs)",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="session")
def fallocate_bin() -> str:
    path = shutil.which("fallocate")
    if path is None:
        pytest.fail("fallocate (util-linux) is required for this test", pytrace=False)
    return path


def run_filefrag(filefrag_bin: str, path: Path) -> FilefragReport:
    # Without -s: filefrag must not sync either, so both see the same state.
    out = subprocess.run(
        [filefrag_bin, "-v", str(path)], check=True, capture_output=True, text=True
    ).stdout
    fs_type = re.search(r"Filesystem type is: (\w+)", out)
    size_line = re.search(r"\((\d+) blocks? of (\d+) bytes\)", out)
    found = re.search(r"(\d+) extents? found", out)
    assert fs_type and size_line and found, f"unexpected filefrag output:\n{out}"
    rows = []
    for line in out.splitlines():
        m = _ROW.match(line)
        if m:
            lo, _lo_end, phys, _phys_end, length, flags = m.groups()
            names = frozenset(f for f in flags.split(",") if f)
            rows.append((int(lo), int(phys), int(length), names))
    return FilefragReport(fs_type.group(1), int(size_line.group(2)), rows, int(found.group(1)))


@pytest.fixture
def ext4_dir(tmp_path: Path, filefrag_bin: str) -> Path:
    probe = tmp_path / "probe"
    probe.write_bytes(b"")
    fs_type = run_filefrag(filefrag_bin, probe).fs_type
    if fs_type != EXT4_MAGIC:
        pytest.fail(
            f"tests need tmp_path on ext4 (magic {EXT4_MAGIC}), got fs type {fs_type}; "
            "run pytest with --basetemp=<dir on ext4>",
            pytrace=False,
        )
    probe.unlink()
    return tmp_path


# --- helpers ----------------------------------------------------------------------------------


def check_against_filefrag(filefrag_bin: str, path: Path, alloc: Allocation) -> list[Extent]:
    """Every FIEMAP extent equals a filefrag -v row; counts agree; returns our extents."""
    report = run_filefrag(filefrag_bin, path)
    fd = os.open(path, os.O_RDONLY)
    try:
        exts = fiemap(fd)
    finally:
        os.close(fd)
    assert exts is not None
    bs = report.block_size
    ours = [(e.logical // bs, e.physical // bs, e.length // bs, e.unwritten, e.last) for e in exts]
    theirs = [(lo, ph, ln, "unwritten" in f, "last" in f) for lo, ph, ln, f in report.rows]
    assert ours == theirs
    assert alloc.extents == len(report.rows)
    assert alloc.unwritten_extents == sum("unwritten" in f for *_, f in report.rows)
    assert alloc.contiguous_runs == report.extents_found
    return exts


def check_stat(path: Path, alloc: Allocation) -> None:
    st = os.stat(path)
    assert alloc.st_size == st.st_size
    assert alloc.allocated == st.st_blocks * 512


def metadata_slack(alloc: Allocation) -> int:
    """Bytes charged beyond block-rounded data and unwritten space (extent-tree blocks)."""
    assert alloc.extents is not None and alloc.unwritten_bytes is not None
    bs = alloc.fs_block_size
    rounded = sum(-(-e // bs) * bs - (s // bs) * bs for s, e in alloc.data_ranges)
    return alloc.allocated - rounded - alloc.unwritten_bytes


def fingerprint(path: Path) -> tuple[str, int, int, int]:
    st = os.stat(path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return digest, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def naive_per_page(ranges: list[tuple[int, int]], page_size: int, n_pages: int) -> list[int]:
    return [
        sum(max(0, min(e, (n + 1) * page_size) - max(s, n * page_size)) for s, e in ranges)
        for n in range(n_pages)
    ]


def write_file(path: Path, size: int) -> bytes:
    data = random.Random(size).randbytes(size)
    with path.open("wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return data


# --- tests on real files ----------------------------------------------------------------------


def test_empty_file(ext4_dir: Path, filefrag_bin: str) -> None:
    path = ext4_dir / "empty.ibd"
    path.write_bytes(b"")
    alloc = read_allocation(path)
    check_stat(path, alloc)
    assert alloc.st_size == 0 and alloc.allocated == 0
    assert alloc.data_ranges == ()
    assert alloc.hole_ranges == ()
    assert alloc.holes == 0 and not alloc.is_sparse
    assert alloc.extents == 0 and alloc.unwritten_extents == 0
    assert len(alloc.per_page_allocated(PAGE, 0)) == 0
    check_against_filefrag(filefrag_bin, path, alloc)


def test_fully_sparse_file(ext4_dir: Path, filefrag_bin: str) -> None:
    path = ext4_dir / "sparse.ibd"
    size = 10 * 1024 * 1024
    path.write_bytes(b"")
    os.truncate(path, size)
    alloc = read_allocation(path)
    check_stat(path, alloc)
    assert alloc.allocated == 0
    assert alloc.data_ranges == ()
    assert alloc.hole_ranges == ((0, size),)
    assert alloc.holes == size and alloc.is_sparse
    assert alloc.extents == 0
    pages = alloc.per_page_allocated(PAGE, size // PAGE)
    assert len(pages) == size // PAGE and sum(pages) == 0
    assert alloc.allocated_bytes_in(0, size) == 0
    check_against_filefrag(filefrag_bin, path, alloc)


def test_tail_shorter_than_a_block(ext4_dir: Path, filefrag_bin: str) -> None:
    path = ext4_dir / "tiny.ibd"
    write_file(path, 100)
    alloc = read_allocation(path)
    check_stat(path, alloc)
    assert alloc.data_ranges == ((0, 100),)  # SEEK_HOLE stops at EOF, not the block end
    assert alloc.allocated == alloc.fs_block_size  # but a whole block is charged
    assert list(alloc.per_page_allocated(PAGE, 1)) == [100]
    assert metadata_slack(alloc) == 0
    check_against_filefrag(filefrag_bin, path, alloc)


def test_punched_holes_match_layout(ext4_dir: Path, filefrag_bin: str) -> None:
    path = ext4_dir / "punched.ibd"
    n_pages = 64
    write_file(path, n_pages * PAGE)
    fd = os.open(path, os.O_RDWR)
    bs = os.fstatvfs(fd).f_bsize
    assert PAGE % bs == 0
    try:
        punch_hole(fd, 3 * PAGE, PAGE)  # one whole page
        punch_hole(fd, 10 * PAGE, 3 * PAGE)  # pages 10..12
        punch_hole(fd, 20 * PAGE + bs, bs)  # one fs block inside page 20
        os.fsync(fd)
    finally:
        os.close(fd)
    expected = [
        (0, 3 * PAGE),
        (4 * PAGE, 10 * PAGE),
        (13 * PAGE, 20 * PAGE + bs),
        (20 * PAGE + 2 * bs, n_pages * PAGE),
    ]
    before = fingerprint(path)

    alloc = read_allocation(path)

    assert fingerprint(path) == before  # inspecting never modifies the file
    check_stat(path, alloc)
    assert list(alloc.data_ranges) == expected
    data = sum(e - s for s, e in expected)
    assert alloc.data_bytes == data
    assert alloc.holes == n_pages * PAGE - data
    assert alloc.hole_ranges == ((3 * PAGE, 4 * PAGE), (10 * PAGE, 13 * PAGE),
                                 (20 * PAGE + bs, 20 * PAGE + 2 * bs))  # fmt: skip
    pages = alloc.per_page_allocated(PAGE, n_pages)
    want = [PAGE] * n_pages
    want[3] = want[10] = want[11] = want[12] = 0
    want[20] = PAGE - bs
    assert list(pages) == want
    assert sum(pages) == data
    assert alloc.allocated_bytes_in(20 * PAGE, PAGE) == PAGE - bs
    # (PAGE - 5) bytes of page 2, the hole of page 3, then 5 bytes of page 4
    assert alloc.allocated_bytes_in(2 * PAGE + 5, 2 * PAGE) == PAGE
    assert alloc.unwritten_extents == 0
    exts = check_against_filefrag(filefrag_bin, path, alloc)
    assert alloc.extents is not None and alloc.extents >= len(expected)
    if len(exts) <= EXT4_INODE_EXTENTS:
        assert alloc.allocated == data  # small file: no extent-tree blocks
    assert metadata_slack(alloc) % bs == 0
    assert 0 <= metadata_slack(alloc) <= 2 * bs


def test_fallocated_space_is_unwritten_and_a_hole_to_seek_data(
    ext4_dir: Path, filefrag_bin: str, fallocate_bin: str
) -> None:
    path = ext4_dir / "prealloc.ibd"
    size = 64 * PAGE
    subprocess.run([fallocate_bin, "-l", str(size), str(path)], check=True)

    alloc = read_allocation(path)
    check_stat(path, alloc)
    assert alloc.allocated == size  # charged in full...
    assert alloc.data_ranges == ()  # ...yet ext4 SEEK_DATA calls unwritten extents holes
    assert alloc.holes == size
    assert alloc.extents is not None and alloc.extents >= 1
    assert alloc.unwritten_extents == alloc.extents
    assert alloc.unwritten_bytes == size
    assert sum(alloc.per_page_allocated(PAGE, 64)) == 0
    exts = check_against_filefrag(filefrag_bin, path, alloc)
    assert all(e.flags & FIEMAP_EXTENT_UNWRITTEN for e in exts)

    # Write two pages into the preallocated space without fsync: dirty page cache over an
    # unwritten extent already counts as data for SEEK_DATA.
    fd = os.open(path, os.O_RDWR)
    try:
        os.pwrite(fd, b"\x5a" * (2 * PAGE), 4 * PAGE)
        assert read_allocation(fd).data_ranges == ((4 * PAGE, 6 * PAGE),)
        os.fsync(fd)
    finally:
        os.close(fd)

    alloc = read_allocation(path)
    check_stat(path, alloc)
    assert alloc.data_ranges == ((4 * PAGE, 6 * PAGE),)
    assert alloc.allocated == size
    assert alloc.unwritten_bytes == size - 2 * PAGE
    assert alloc.extents is not None and alloc.unwritten_extents is not None
    assert alloc.extents - alloc.unwritten_extents >= 1  # the written part
    pages = alloc.per_page_allocated(PAGE, 64)
    assert [n for n, b in enumerate(pages) if b] == [4, 5]
    assert sum(pages) == 2 * PAGE
    check_against_filefrag(filefrag_bin, path, alloc)


def _punched_pages(path: Path, last_hole: tuple[int, int]) -> int:
    """``path`` made 40 pages and 100 bytes long, then punched: its first page, every third
    page's slot after its first block from page 3 to 27 (a page-compressed page's hole), and
    ``last_hole`` (offset, length); flushed. Returns the filesystem's block size."""
    write_file(path, 40 * PAGE + 100)
    fd = os.open(path, os.O_RDWR)
    try:
        bs = os.fstatvfs(fd).f_bsize
        punch_hole(fd, 0, PAGE)
        for n in range(3, 30, 3):
            punch_hole(fd, n * PAGE + bs, PAGE - bs)
        punch_hole(fd, *last_hole)
        os.fsync(fd)
    finally:
        os.close(fd)
    return bs


def test_fiemap_ranges_are_seek_data_ranges(ext4_dir: Path) -> None:
    """The exact map from FIEMAP's extents (what read_allocation uses when no extent is
    unwritten or delayed) is SEEK_DATA/SEEK_HOLE's, on punched files with a short tail and a
    hole at either end, and on the samples and the corpus (each a real server's file)."""
    path = ext4_dir / "mixed.ibd"
    bs = _punched_pages(path, (39 * PAGE, PAGE))
    files = [path, *sorted(SAMPLES.rglob("*.ibd"))]
    files += [e.path for e in load_catalog() if e.path.is_file()]
    compared = 0
    for name in files:
        fd = os.open(name, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            exts = fiemap_tuples(fd)
            assert exts is not None
            found = ranges_from_extents(exts, size)
            if found is None:
                continue
            assert found == data_ranges(fd, size), name
            assert read_allocation(fd).data_ranges == tuple(found)
            compared += 1
        finally:
            os.close(fd)
    assert compared > 100
    fd = os.open(path, os.O_RDONLY)
    try:
        assert read_allocation(fd).data_ranges == (
            (PAGE, 3 * PAGE + bs),
            *[((n + 1) * PAGE, (n + 3) * PAGE + bs) for n in range(3, 27, 3)],
            (28 * PAGE, 39 * PAGE),
            (40 * PAGE, 40 * PAGE + 100),
        )
    finally:
        os.close(fd)
    sample = SAMPLES / "mariadb" / "p16k-pc_zlib.ibd"  # holes where the server punched them
    with Tablespace(sample) as ts:  # a local file's data map is its allocation, FIEMAP's
        assert ts.data_map is ts.allocation
        fd = os.open(sample, os.O_RDONLY)
        try:
            assert list(ts.data_ranges) == data_ranges(fd, ts.size)
        finally:
            os.close(fd)
        assert len(ts.data_ranges) > 1


def test_unwritten_extents_leave_the_map_to_seek_data(ext4_dir: Path, fallocate_bin: str) -> None:
    """An unwritten extent (fallocate), written to without fsync: FIEMAP still calls it
    unwritten, SEEK_DATA calls the dirty pages data; the map is SEEK_DATA's."""
    path = ext4_dir / "prealloc2.ibd"
    subprocess.run([fallocate_bin, "-l", str(16 * PAGE), str(path)], check=True)
    fd = os.open(path, os.O_RDWR)
    try:
        os.pwrite(fd, b"\x5a" * PAGE, 2 * PAGE)
        exts = fiemap_tuples(fd)
        assert exts is not None
        assert ranges_from_extents(exts, 16 * PAGE) is None
        assert read_allocation(fd).data_ranges == ((2 * PAGE, 3 * PAGE),)
    finally:
        os.close(fd)


def test_thousand_alternating_holes(ext4_dir: Path, filefrag_bin: str) -> None:
    path = ext4_dir / "alternating.ibd"
    n_pages = 2000
    write_file(path, n_pages * PAGE)
    fd = os.open(path, os.O_RDWR)
    try:
        for n in range(1, n_pages, 2):
            punch_hole(fd, n * PAGE, PAGE)
        os.fsync(fd)
    finally:
        os.close(fd)

    # this thread's CPU time (the ioctls' kernel time included), not the wall clock: on a
    # loaded machine a wait for a core is no step of the sweep (~2 ms of CPU here)
    t0 = time.thread_time()
    alloc = read_allocation(path)
    pages = alloc.per_page_allocated(PAGE, n_pages)
    elapsed = time.thread_time() - t0

    assert elapsed < 1.0, f"read_allocation + per_page_allocated took {elapsed:.2f}s of CPU"
    check_stat(path, alloc)
    assert list(alloc.data_ranges) == [(n * PAGE, (n + 1) * PAGE) for n in range(0, n_pages, 2)]
    assert list(pages) == [PAGE, 0] * (n_pages // 2)
    assert sum(pages) == alloc.data_bytes == (n_pages // 2) * PAGE
    # 1000 extents need several FIEMAP batches (512 each) and ext4 extent-tree blocks.
    exts = check_against_filefrag(filefrag_bin, path, alloc)
    assert len(exts) >= n_pages // 2
    assert [e.last for e in exts].count(True) == 1 and exts[-1].flags & FIEMAP_EXTENT_LAST
    assert all(a.end <= b.logical for a, b in itertools.pairwise(exts))
    slack = metadata_slack(alloc)
    assert slack % alloc.fs_block_size == 0
    assert 0 < slack <= 16 * alloc.fs_block_size  # the leaf blocks, nothing more
    fd = os.open(path, os.O_RDONLY)
    try:
        assert fiemap(fd, batch=7) == exts  # batch boundaries do not change the result
    finally:
        os.close(fd)


def test_per_page_is_one_sweep_on_a_sparse_gigabyte(ext4_dir: Path) -> None:
    path = ext4_dir / "big.ibd"
    size = 1 << 30
    step = 1 << 20
    with path.open("wb") as f:
        f.truncate(size)
        for off in range(0, size, step):
            os.pwrite(f.fileno(), b"\x01" * 4096, off + 8192)
    alloc = read_allocation(path)
    assert len(alloc.data_ranges) == size // step
    page_size = 4096
    n_pages = size // page_size
    t0 = time.thread_time()  # CPU, not the wall clock (see test_thousand_alternating_holes)
    pages = alloc.per_page_allocated(page_size, n_pages)
    elapsed = time.thread_time() - t0
    # O(pages * ranges) would be ~2.7e8 steps; one sweep is milliseconds.
    assert elapsed < 0.5, f"per_page_allocated took {elapsed:.2f}s of CPU"
    assert len(pages) == n_pages
    assert sum(pages) == alloc.data_bytes == (size // step) * 4096
    nonzero = [n for n, b in enumerate(pages) if b]
    assert nonzero == [off // page_size + 2 for off in range(0, size, step)]


def test_fd_is_left_open_at_its_offset(ext4_dir: Path) -> None:
    path = ext4_dir / "fd.ibd"
    write_file(path, 8 * PAGE)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.lseek(fd, 12345, os.SEEK_SET)
        by_fd = read_allocation(fd)
        assert os.lseek(fd, 0, os.SEEK_CUR) == 12345
        assert data_ranges(fd, 8 * PAGE) == [(0, 8 * PAGE)]
        assert data_ranges(fd, 3 * PAGE + 1) == [(0, 3 * PAGE + 1)]  # clipped to size
        assert data_ranges(fd, 0) == []
        assert os.lseek(fd, 0, os.SEEK_CUR) == 12345
        assert os.read(fd, 1)  # still open and usable
    finally:
        os.close(fd)
    assert by_fd == read_allocation(path)
    assert by_fd.data_ranges == ((0, 8 * PAGE),)


def test_directory_is_rejected(ext4_dir: Path) -> None:
    with pytest.raises((ValueError, IsADirectoryError)):
        read_allocation(ext4_dir)


# --- pure arithmetic against a naive reference -----------------------------------------------


def _random_ranges(rng: random.Random, size: int) -> list[tuple[int, int]]:
    n_cuts = min(rng.randrange(0, 40), (size - 1) // 2) * 2
    cuts = sorted(rng.sample(range(1, size), n_cuts))
    return [(cuts[i], cuts[i + 1]) for i in range(0, len(cuts), 2)]


@pytest.mark.parametrize("seed", range(200))
def test_per_page_and_window_match_naive(seed: int) -> None:
    rng = random.Random(seed)
    page_size = rng.choice([1, 7, 512, 4096, 16384, 65536])
    size = rng.randrange(2, min(200_000, page_size * 400))  # keep the naive side cheap
    ranges = _random_ranges(rng, size)
    alloc = Allocation(size, 0, 4096, tuple(ranges), None, None)
    # Sometimes fewer pages than the file (tail ignored), sometimes more (beyond EOF).
    n_pages = max(0, -(-size // page_size) + rng.randrange(-3, 4))
    got = alloc.per_page_allocated(page_size, n_pages)
    assert list(got) == naive_per_page(ranges, page_size, n_pages)
    covered = min(size, n_pages * page_size)
    assert sum(got) == alloc.allocated_bytes_in(0, covered)
    if n_pages * page_size >= size:
        assert sum(got) == alloc.data_bytes
    for _ in range(20):
        start = rng.randrange(0, size + 10)
        length = rng.randrange(0, size // 2 + 2)
        want = sum(max(0, min(e, start + length) - max(s, start)) for s, e in ranges)
        assert alloc.allocated_bytes_in(start, length) == want
        # the ranges from ``start`` on (a copy window remade mid-file), by bisection
        assert list(alloc.data_ranges_from(start)) == [
            (max(s, start), e) for s, e in ranges if e > start
        ]
    holes = alloc.hole_ranges
    assert sum(e - s for s, e in holes) == alloc.holes == size - alloc.data_bytes
    tiles = sorted(ranges + list(holes))  # data and holes tile [0, size) exactly
    assert tiles[0][0] == 0 and tiles[-1][1] == size
    assert all(a[1] == b[0] for a, b in itertools.pairwise(tiles))


def _covered(inner: list[tuple[int, int]], outer: list[tuple[int, int]]) -> bool:
    """Does every range of ``inner`` lie inside one of ``outer``?"""
    return all(any(s >= a and e <= b for a, b in outer) for s, e in inner)


def test_scan_ranges_cover_the_data_and_skip_long_holes(ext4_dir: Path) -> None:
    """Probed every 64 pages: every byte of data is inside a scan range (the exact map from
    SEEK_DATA/SEEK_HOLE is the oracle), one-page holes are read through, and long holes are
    skipped but for the stretch before the first probe inside them."""
    path = ext4_dir / "holes.ibd"
    n_pages = 2000
    write_file(path, n_pages * PAGE)
    long_holes = [(300, 500), (1000, 1129), (1900, 2000)]  # pages; the last one runs to the end
    fd = os.open(path, os.O_RDWR)
    try:
        for n in range(1, 300, 2):  # a page-compressed stretch: a hole in every other page
            punch_hole(fd, n * PAGE + PAGE // 2, PAGE // 2)
        for a, b in long_holes:
            punch_hole(fd, a * PAGE, (b - a) * PAGE)
        os.fsync(fd)
        step = 64 * PAGE
        exact = data_ranges(fd, n_pages * PAGE)
        coarse = scan_ranges(fd, n_pages * PAGE, step)
        assert os.lseek(fd, 0, os.SEEK_CUR) == 0
        # a split scan's parts, each its own window's (edges in data, in holes, at a hole)
        for start, stop in ((0, 150), (150, 400), (400, 1000), (1000, 1950), (1950, None)):
            lo, hi = start * PAGE, n_pages * PAGE if stop is None else stop * PAGE
            part = scan_ranges(fd, n_pages * PAGE, step, lo, None if stop is None else hi)
            inside = [(max(s, lo), min(e, hi)) for s, e in exact if e > lo and s < hi]
            assert _covered(inside, list(part)), (start, stop)
            assert all(lo <= s < e <= hi for s, e in part)
    finally:
        os.close(fd)
    assert _covered(exact, coarse)
    assert len(coarse) <= 4 < len(exact)
    skipped = sum(b - a for a, b in long_holes) * PAGE - (
        n_pages * PAGE - sum(e - s for s, e in coarse)
    )
    assert 0 <= skipped <= len(long_holes) * step  # at most one step of each long hole is read


def test_scan_ranges_of_a_file_without_data(ext4_dir: Path) -> None:
    path = ext4_dir / "sparse.ibd"
    with path.open("wb") as f:
        f.truncate(100 * PAGE)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert scan_ranges(fd, 100 * PAGE, 64 * PAGE) == []
        assert scan_ranges(fd, 0, 64 * PAGE) == []
    finally:
        os.close(fd)


def _per_page_by_bytes(ranges: list[tuple[int, int]], psize: int, n: int, first: int) -> list[int]:
    """Each page's data bytes, range by range and page by page (the second computation)."""
    out = []
    for page in range(first, first + n):
        lo, hi = page * psize, (page + 1) * psize
        out.append(sum(max(0, min(e, hi) - max(s, lo)) for s, e in ranges))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_per_page_allocated_is_each_pages_bytes(seed: int) -> None:
    """Ranges inside one page (a page-compressed file), two in one page, ranges over many
    pages and window edges that cut ranges: each page's bytes as counted one by one."""
    rng = random.Random(seed)
    psize = rng.choice([1024, 4096, 16384])
    block = rng.choice([512, 1024])
    pages = rng.randrange(1, 60)
    ranges: list[tuple[int, int]] = []
    pos = rng.randrange(0, 3) * block
    while pos < pages * psize:
        length = rng.choice([block, 2 * block, psize, 3 * psize + block, 7 * block])
        end = min(pos + length, pages * psize)
        ranges.append((pos, end))
        pos = (
            end + rng.choice([block, 2 * block, psize + block, 2 * psize])
            if end < pages * psize
            else end
        )
    alloc = Allocation(pages * psize, 0, block, PackedRanges(ranges), None, None)
    assert list(alloc.data_ranges) == ranges  # disjoint, not touching: kept as given
    for _ in range(10):
        first = rng.randrange(0, pages)
        n = rng.randrange(0, pages - first + 3)
        got = alloc.per_page_allocated(psize, n, first)
        assert list(got) == _per_page_by_bytes(ranges, psize, n, first), (first, n)


# --- windows: a map read a part a process, joined -------------------------------------------


def _windows(fd: int, size: int, edges: list[int]) -> list[tuple[PackedRanges, WindowCounts]]:
    """:func:`read_window` of ``[0, e1), [e1, e2), … [en, None)``."""
    cuts = [0, *edges]
    stops: list[int | None] = [*edges, None]
    return [read_window(fd, size, start, stop) for start, stop in zip(cuts, stops, strict=True)]


def check_windows(path: Path, edge_sets: list[list[int]]) -> int:
    """For each set of edges: every window's ranges are the file's (SEEK_DATA/SEEK_HOLE walked
    whole, :func:`data_ranges`) that meet it, and the windows' counts joined are the totals of
    the file read whole (FIEMAP from its start, the figures ``filefrag`` checks above).
    Returns how many windows had an extent across their start."""
    whole = read_allocation(path)  # twice: ext4 may cut extents on a cold extent cache
    whole = read_allocation(path)
    crossing = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        by_seek = list(data_ranges(fd, size))
        for edges in edge_sets:
            parts = _windows(fd, size, edges)
            for ranges, counts in parts:
                # those that meet the window, the first cut at its start, the last whole
                top = counts.stop if counts.stop is not None else size
                meet = [
                    (max(s, counts.start), e) for s, e in by_seek if e > counts.start and s < top
                ]
                assert list(ranges) == meet, (edges, counts)
                first = counts.first
                crossing += first is not None and first[0] <= counts.start < first[0] + first[2]
            joined = join_windows(
                whole.st_size, whole.allocated, whole.fs_block_size, [counts for _, counts in parts]
            )
            assert joined == whole.totals(), edges
    finally:
        os.close(fd)
    return crossing


def _edge_sets(size: int, step: int, rng: random.Random, n: int = 30) -> list[list[int]]:
    """One edge at every ``step`` (a page or a block) and random sets of up to five."""
    singles = [[e] for e in range(step, size, step)]
    picks = [sorted(rng.sample(range(step, size, step), rng.randint(2, 5))) for _ in range(n)]
    return singles + picks


def test_windows_joined_are_the_whole_file(ext4_dir: Path, filefrag_bin: str) -> None:
    """Window edges in data, on a hole's first byte, inside holes, at extent ends, at every
    block of a punched file (page-compressed pages' holes, a short tail); then a dense file
    whose extents span several windows (the second window sees an extent it must not count
    again, cut at its start on ext4)."""
    path = ext4_dir / "mixed.ibd"
    bs = _punched_pages(path, (33 * PAGE, 4 * PAGE))
    check_against_filefrag(filefrag_bin, path, read_allocation(path))
    rng = random.Random(24)
    crossing = check_windows(path, _edge_sets(40 * PAGE + 100, bs, rng))
    assert crossing > 0
    dense = ext4_dir / "dense.ibd"
    write_file(dense, 64 * PAGE)
    alloc = read_allocation(dense)
    assert alloc.extents is not None and alloc.extents < 8  # long extents: edges cut them
    crossing = check_windows(dense, _edge_sets(64 * PAGE, 4 * PAGE, rng))
    assert crossing > 0


def test_windows_of_unwritten_and_past_the_end(ext4_dir: Path, fallocate_bin: str) -> None:
    """Unwritten extents across edges (their bytes counted once), space allocated past the
    file's end (``fallocate --keep-size``: the last window's, extents but no data), and an
    unwritten extent with dirty pages over it in one window only: that window's map is
    SEEK_DATA's, as the whole file's is."""
    path = ext4_dir / "prealloc.ibd"
    subprocess.run([fallocate_bin, "-l", str(32 * PAGE), str(path)], check=True)
    fd = os.open(path, os.O_RDWR)
    try:
        for n in (3, 4, 10, 20):
            os.pwrite(fd, random.Random(n).randbytes(PAGE), n * PAGE)
        os.fsync(fd)
    finally:
        os.close(fd)
    subprocess.run(
        [fallocate_bin, "-n", "-o", str(32 * PAGE), "-l", str(8 * PAGE), str(path)], check=True
    )
    whole = read_allocation(path)
    assert whole.unwritten_extents and whole.unwritten_bytes and whole.extents
    assert whole.data_ranges == (
        (3 * PAGE, 5 * PAGE),
        (10 * PAGE, 11 * PAGE),
        (20 * PAGE, 21 * PAGE),
    )
    rng = random.Random(7)
    assert check_windows(path, _edge_sets(32 * PAGE, PAGE, rng)) > 0
    fd = os.open(path, os.O_RDWR)
    try:
        os.pwrite(fd, b"\x5a" * PAGE, 25 * PAGE)  # dirty, over an unwritten extent
        size = os.fstat(fd).st_size
        whole = read_allocation(fd)
        assert whole.data_ranges[-1] == (25 * PAGE, 26 * PAGE)
        parts = _windows(fd, size, [8 * PAGE, 16 * PAGE])
        assert parts[-1][0] == [(20 * PAGE, 21 * PAGE), (25 * PAGE, 26 * PAGE)]
        joined = join_windows(size, whole.allocated, whole.fs_block_size, [c for _, c in parts])
        assert joined == whole.totals()
        os.fsync(fd)
    finally:
        os.close(fd)


def test_windows_without_fiemap() -> None:
    """tmpfs has no FIEMAP: each window's map is SEEK_DATA's and the extent figures are None,
    as the whole file's."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm")
    path = shm / f"ibdtool-windows-{os.getpid()}.ibd"
    try:
        path.write_bytes(random.Random(3).randbytes(10 * PAGE))
        whole = read_allocation(path)
        if whole.extents is not None:
            pytest.skip("/dev/shm has FIEMAP here")
        fd = os.open(path, os.O_RDONLY)
        try:
            parts = _windows(fd, 10 * PAGE, [3 * PAGE, 7 * PAGE])
        finally:
            os.close(fd)
        assert [list(r) for r, _ in parts] == [
            [(0, 10 * PAGE)],
            [(3 * PAGE, 10 * PAGE)],
            [(7 * PAGE, 10 * PAGE)],
        ]
        joined = join_windows(
            10 * PAGE, whole.allocated, whole.fs_block_size, [c for _, c in parts]
        )
        assert joined == whole.totals() and joined.extents is None
    finally:
        path.unlink(missing_ok=True)


def _kernel_view(
    extents: list[tuple[int, int, int, int]], start: int, cut: bool
) -> list[tuple[int, int, int, int]]:
    """The extents FIEMAP gives from byte ``start`` on, as a filesystem that cuts the one
    across ``start`` there (ext4) or gives it whole (``cut`` false)."""
    out = []
    for lo, ph, ln, fl in extents:
        if lo + ln <= start:
            continue
        if cut and lo < start:
            lo, ph, ln = start, ph + (start - lo), ln - (start - lo)
        out.append((lo, ph, ln, fl))
    return out


@pytest.mark.parametrize("seed", range(60))
def test_windows_joined_as_either_kernel_gives_the_edges(seed: int) -> None:
    """The second computation, for both ways a kernel may give the extent across a window's
    start (ext4 cuts it, others give it whole; this machine's ext4 shows only the first):
    windows counted from the extent lists each would return, joined, equal the whole list's
    count, unwritten extents and bytes (:class:`~ibdtool.fs.allocation.Extent` by extent),
    runs (:func:`contiguous_runs`) and data ranges (:func:`ranges_from_extents`)."""
    from ibdtool.fs.allocation import _ExtentCounts, _window_counts

    rng = random.Random(seed)
    extents = []
    pos = phys = rng.choice([0, 4096])
    for _ in range(rng.randrange(1, 40)):
        ln = 4096 * rng.choice([1, 2, 3, 16, 300])
        kind = rng.random()
        if kind < 0.3:  # physically after the last one
            ph = phys
        elif kind < 0.6:  # keeps the logical-to-physical offset (a punched hole before it)
            ph = phys + (pos - (extents[-1][0] + extents[-1][2]) if extents else 0)
        else:
            ph = rng.randrange(1 << 20) * 4096
        flags = FIEMAP_EXTENT_UNWRITTEN if rng.random() < 0.2 else 0
        extents.append((pos, ph, ln, flags))
        phys = ph + ln
        pos += ln + 4096 * rng.choice([0, 0, 1, 3])
    size = pos - rng.choice([0, 100])
    ends = extents[-1][0] + extents[-1][2]
    edges = sorted(rng.sample(range(4096, ends, 4096), min(rng.randrange(1, 6), ends // 4096 - 1)))
    plain = [(lo, ph, ln, 0) for lo, ph, ln, _ in extents]
    for cut in (True, False):
        for listed in (extents, plain):
            windows = []
            for start, stop in zip([0, *edges], [*edges, None], strict=True):
                counts = _ExtentCounts(size, start, stop)
                seen = _kernel_view(listed, start, cut)
                for at in range(0, len(seen), 7):  # a FIEMAP call's columns, 7 at a time
                    part = seen[at : at + 7]
                    if not counts.add(*(list(col) for col in zip(*part, strict=True))):
                        break
                ranges = counts.ranges if counts.ranges is not None else PackedRanges()
                windows.append(_window_counts(ranges, counts, start, stop))
            joined = join_windows(size, 0, 4096, windows)
            assert joined.extents == len(listed)
            assert joined.contiguous_runs == contiguous_runs(listed)
            unwritten = [ln for _, _, ln, fl in listed if fl & FIEMAP_EXTENT_UNWRITTEN]
            assert (joined.unwritten_extents, joined.unwritten_bytes) == (
                len(unwritten),
                sum(unwritten),
            )
            whole = ranges_from_extents(listed, size)
            if whole is not None:  # no unwritten extent: the map is FIEMAP's
                assert (joined.data_range_count, joined.data_bytes) == (len(whole), whole.total())
