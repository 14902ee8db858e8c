"""Files of one extent a page (page compression): memory per extent stays small and flat, and
every fast path gives the decoder's answer.

A page-compressed table is a hole in every page: 6.5 million extents for 100 GB. The files
here are made as MariaDB leaves them: a real full_crc32 zlib sample's pages repeated and
renumbered (each with its CRC-32C), only the filesystem blocks that are not all zeros written
(``fallocate --dig-holes`` would leave the same), so each page is a data range of its own.
Memory is what tracemalloc sees at the peak of each command's engine call, on two sizes: the
growth per extent between them is what is bounded (a ``(start, end)`` tuple kept per extent
costs over 100 bytes; two ``array('Q')`` 16; the packed map ~2.5).
"""

from __future__ import annotations

import json
import os
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ibdtool.fs.allocation import fiemap_tuples, ranges_from_extents, read_allocation
from ibdtool.fs.ranges import PackedRanges
from ibdtool.parsers.crc32c_fast import crc32c
from ibdtool.parsers.envelope import fcrc32_stored_size
from ibdtool.tablespace.checksum import check_file
from ibdtool.tablespace.header_pages import header_pages
from ibdtool.tablespace.inspect import inspect_tablespace
from ibdtool.tablespace.pages_json import json_lines
from ibdtool.tablespace.reader import Tablespace
from tests.samples_manifest import sample
from tests.test_checkscan import _decoder_verdicts
from tests.test_copy_remote import seek_data_ranges
from tests.test_copy_repunch import _expected_data, checkpoints_inline
from tests.test_header_scan import _current_by_decoder, _rows_by_decoder

SOURCE = "mariadb/p16k-pc_zlib.ibd"  # full_crc32, page_compressed zlib: MariaDB's own pages
PSIZE = 16384
SMALL, LARGE = 1500, 6000
#: bytes an extent may add to a command's peak: the packed map (~2.5, :mod:`ibdtool.fs.ranges`)
#: and, at these sizes, a run's per-page arrays (allocated bytes and free flags, 5 bytes a page
#: up to ``RUN_PAGES``, a constant past it); the map as two ``array('Q')`` made it 21
PER_EXTENT_BOUND = 12
#: ... over ssh, where this end also holds the map's wire form while it is sent or received
#: (~4 bytes a range compressed) and, at these sizes, a window's holes (a window is an eighth
#: of the file up to 256 MiB); with the map as two ``array('Q')`` it was 24-28
SSH_PER_EXTENT_BOUND = 20


def fragmented(dst: Path, pages: int) -> Path:
    """A tablespace of ``pages`` pages, one data range a compressed page (see module doc)."""
    src = sample(SOURCE).read_bytes()
    slots = [src[i : i + PSIZE] for i in range(0, len(src), PSIZE)]
    body = [p for p in slots[4:] if any(p)]
    block = os.statvfs(dst.parent).f_bsize
    zero = bytes(block)
    with dst.open("wb") as f:
        for n in range(pages):
            page = bytearray(slots[n] if n < 4 else body[(n - 4) % len(body)])
            if n == 0:  # FSP_SIZE: the page count
                page[38 + 8 : 38 + 12] = pages.to_bytes(4, "big")
            page[4:8] = n.to_bytes(4, "big")
            ptype = int.from_bytes(page[24:26], "big")
            size = fcrc32_stored_size(ptype, PSIZE) if ptype & 0x8000 else PSIZE
            assert size is not None
            page[size - 4 : size] = crc32c(bytes(page[: size - 4])).to_bytes(4, "big")
            for off in range(0, PSIZE, block):
                if page[off : off + block] != zero:
                    f.seek(n * PSIZE + off)
                    f.write(page[off : off + block])
        f.truncate(pages * PSIZE)
        os.fsync(f.fileno())  # written back: FIEMAP's extents then say what SEEK_DATA says
    return dst


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    d = tmp_path_factory.mktemp("fragmented")
    return {n: fragmented(d / f"{n}.ibd", n) for n in (SMALL, LARGE)}


def test_the_files_have_an_extent_a_compressed_page(files: dict[int, Path]) -> None:
    """The kernel's own extent list (FIEMAP, and SEEK_DATA/SEEK_HOLE) has a range for nearly
    every page: the files are as fragmented as a page-compressed table."""
    for pages, path in files.items():
        fd = os.open(path, os.O_RDONLY)
        try:
            extents = fiemap_tuples(fd)
        finally:
            os.close(fd)
        by_seek = seek_data_ranges(path)
        assert len(by_seek) > 0.9 * pages
        alloc = read_allocation(path)
        assert alloc.data_ranges == by_seek  # packed, and equal to the independent walk
        if extents is not None:
            assert alloc.extents == len(extents)
            assert ranges_from_extents(extents, alloc.st_size) == by_seek


def _peak(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _inspect(path: Path) -> None:
    with Tablespace(path) as ts:
        inspect_tablespace(ts, jobs=1, with_sdi=False).to_json()


def _inspect_split(path: Path) -> None:
    """``inspect`` split over two processes a window at a time: each reads the map of the
    windows it scans, freed with each window's part."""
    import ibdtool.tablespace.inspect as inspect_mod

    with pytest.MonkeyPatch.context() as mp, Tablespace(path) as ts:
        mp.setattr(inspect_mod, "PARALLEL_MIN_PAGES", 1)
        inspect_tablespace(ts, jobs=2, with_sdi=False).to_json()


def _tui_scan(path: Path) -> None:
    with Tablespace(path) as ts:
        for _info in header_pages(ts):
            pass


def _simulate(path: Path) -> None:
    from ibdtool.advise import simulate_path

    simulate_path(path, sample=200, jobs=1, row_compressed=False, costs=False)


def _copy(path: Path) -> None:
    from ibdtool.copy.local import CopyOptions, copy_local

    out = path.with_suffix(".copy")
    copy_local(str(path), str(out), CopyOptions(verify="data"))
    out.unlink()


COMMANDS: dict[str, Callable[[Path], object]] = {
    "allocation": lambda p: read_allocation(p),
    "inspect": _inspect,
    "inspect split": _inspect_split,
    "checksum": lambda p: check_file(str(p), jobs=1),
    "pages --json": lambda p: sum(len(s) for s in json_lines(str(p), jobs=1)),
    "tui scan": _tui_scan,
    "simulate": _simulate,
    "copy": _copy,
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_memory_per_extent_is_small_and_flat(
    name: str, files: dict[int, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What grows between the two sizes is bounded per extent. ``pages --json`` holds a
    block's text (4,096 pages' lines, a constant as large as these files): smaller blocks
    here, so that only what grows with the file is measured."""
    from ibdtool.tablespace import pages_json

    monkeypatch.setattr(pages_json, "BLOCK_PAGES", 256)
    checkpoints_inline(monkeypatch)
    run = COMMANDS[name]
    # the least of three runs: a copy's batches follow the clock (rate and progress are looked
    # at once a batch), so a run on a loaded machine can hold one batch more at its peak
    peaks = [min(_peak(lambda p=files[n]: run(p)) for _ in range(3)) for n in (SMALL, LARGE)]
    extents = [len(read_allocation(files[n]).data_ranges) for n in (SMALL, LARGE)]
    per_extent = (peaks[1] - peaks[0]) / (extents[1] - extents[0])
    assert per_extent < PER_EXTENT_BOUND, f"{name}: peaks {peaks}, {per_extent:.1f} B/extent"


FAKE_SSH = Path(__file__).resolve().parent / "fuzz" / "fake_ssh.py"


def _peak_over_ssh(direction: str, path: Path, out: Path) -> int:
    """The peak of a copy over ssh of ``path`` to ``out`` (the real agent, run by
    :mod:`tests.fuzz.fake_ssh` in its own process: what is measured is this end's, where
    ibdtool runs): ``push`` to ``host:out``, ``pull`` from ``host:path`` to ``out``."""
    from ibdtool.copy.local import CopyOptions
    from ibdtool.copy.remote import AgentSession, Location, SshConfig, pull, push

    session = AgentSession("db-x", SshConfig(command=(sys.executable, str(FAKE_SSH)))).open()
    opts = CopyOptions(verify="data")
    try:
        if direction == "push":
            return _peak(
                lambda: push(session, str(path), Location("db-x", str(out)), opts, want_dir=False)
            )
        return _peak(
            lambda: pull(session, Location("db-x", str(path)), str(out), opts, want_dir=False)
        )
    finally:
        session.close()


@pytest.mark.parametrize("direction", ["push", "pull"])
def test_copy_over_ssh_memory_per_extent_is_small_and_flat(
    direction: str, files: dict[int, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy over ssh keeps its whole plan (it is sent to the other end) and every window's
    place: packed, it grows no more per extent than a local copy; the copy reads back as the
    source, byte for byte, with the same data map (SEEK_DATA/SEEK_HOLE walked here)."""
    checkpoints_inline(monkeypatch)  # a pull writes here: its windows' checkpoints
    peaks = []
    for n in (SMALL, LARGE):
        runs = []
        for _ in range(3):
            out = files[n].with_name(files[n].stem + "-copy.ibd")
            runs.append(_peak_over_ssh(direction, files[n], out))
            assert out.read_bytes() == files[n].read_bytes()
            assert seek_data_ranges(out) == seek_data_ranges(files[n])
            out.unlink()
        peaks.append(min(runs))
    extents = [len(read_allocation(files[n]).data_ranges) for n in (SMALL, LARGE)]
    per_extent = (peaks[1] - peaks[0]) / (extents[1] - extents[0])
    assert per_extent < SSH_PER_EXTENT_BOUND, (
        f"{direction}: peaks {peaks}, {per_extent:.1f} B/extent"
    )


def _repunch(path: Path) -> None:
    from ibdtool.copy.local import repunch_in_place

    repunch_in_place(str(path), verify="data", confirm=lambda _r: True)


def test_in_place_repunch_memory_is_flat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``copy --in-place --repunch`` of the densified file: two streamed scans, no range kept;
    it leaves the holes the headers call for (worked out apart, by test_copy_repunch). The
    header scan's chunks are made small, as there: a 4 MiB chunk, freed before the punching,
    was the peak, and what the punching keeps stayed under it unseen."""
    from ibdtool.copy import repunch

    monkeypatch.setattr(repunch, "CHUNK_BYTES", 64 << 10)

    def peak(n: int) -> int:
        sparse = fragmented(tmp_path / f"{n}.ibd", n)
        dense = tmp_path / f"{n}-dense.ibd"
        data = sparse.read_bytes()
        dense.write_bytes(data)
        sparse.unlink()
        held = _peak(lambda: _repunch(dense))
        assert dense.read_bytes() == data
        block = os.statvfs(dense).f_bsize
        assert seek_data_ranges(dense) == _expected_data(data, PSIZE, block)
        dense.unlink()
        return held

    # the least of three runs of each size, as above: the first run in a process also holds
    # what its first calls import and cache (1.6 MB here, run alone), which made the small
    # file's peak the larger and hid any growth under ~350 B an extent
    peaks = [min(peak(n) for _ in range(3)) for n in (SMALL, LARGE)]
    assert (peaks[1] - peaks[0]) / (LARGE - SMALL) < PER_EXTENT_BOUND, peaks


def _view_scan_peak(path: Path, whole: bool) -> int:
    """The peak of the tablespace view's scan past its page map (made before the count: four
    bytes a page, what the map draws); ``whole``: the map read whole first and the model filled
    from it, as the view did before it read the map a window at a time (the control)."""
    from ibdtool.tui.pagemodel import model_for, scan_into

    with Tablespace(path) as ts:
        model = model_for(ts)
        tracemalloc.start()
        try:
            if whole:
                model.fill_window(0, ts.n_pages, ts.allocation)
                inspect_tablespace(ts, on_page=model.add, jobs=1)
            else:
                scan_into(ts, model)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()


def test_tui_scan_holds_no_map_of_the_whole_file(
    files: dict[int, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The view's scan reads the map a window at a time (windows of 1,024 pages here, 65,536
    in use): past its page map, nothing grows with the extents — under a byte an extent
    between the two files, where the map read whole (the control, so that the measure is
    seen to catch it) costs its packed ranges and a run's per-page arrays, over 2."""
    import ibdtool.tablespace.inspect as inspect_mod

    monkeypatch.setattr(inspect_mod, "WINDOW_PAGES", 1024)
    extents = [len(read_allocation(files[n]).data_ranges) for n in (SMALL, LARGE)]
    grown = {}
    for whole in (False, True):
        peaks = [min(_view_scan_peak(files[n], whole) for _ in range(3)) for n in (SMALL, LARGE)]
        grown[whole] = (peaks[1] - peaks[0]) / (extents[1] - extents[0])
    assert grown[False] < 1.0, grown
    assert grown[True] > 2.0, grown


# --- the fast paths against the decoder, on a fragmented file -----------------------------------


def test_inspect_fast_path_is_the_decoders(files: dict[int, Path]) -> None:
    with Tablespace(files[SMALL]) as ts:
        inline = inspect_tablespace(ts, jobs=1, with_sdi=False).to_json()
        decoded = inspect_tablespace(
            ts, jobs=1, with_sdi=False, on_page=lambda _info: None
        ).to_json()
    assert inline == decoded
    assert isinstance(inline["data_ranges"], int) and inline["data_ranges"] > 0.9 * SMALL


def _punched_at_the_edges(dst: Path) -> Path:
    """A fragmented file of :data:`SMALL` pages with whole pages punched across, up to and
    from the windows' edges of the split tests (:data:`EDGES`: pages 500, 750, 1,000…) and
    over the last page."""
    from tests.test_allocation import punch_hole

    fragmented(dst, SMALL)
    fd = os.open(dst, os.O_RDWR)
    try:
        for first, end in ((495, 505), (740, 760), (990, 1000), (1000, 1010), (1499, 1500)):
            punch_hole(fd, first * PSIZE, (end - first) * PSIZE)
        os.fsync(fd)
    finally:
        os.close(fd)
    return dst


#: window edges of a split: at a punched stretch's edges and inside it, a page apart, and at
#: a page before the end (:func:`_punched_at_the_edges`)
EDGES = [495, 500, 505, 506, 750, 760, 990, 1000, 1005, 1010, 1499]


@pytest.mark.parametrize(
    ("jobs", "windows"), [(2, None), (3, None), (2, EDGES), (3, EDGES), (2, 37), (3, 150)]
)
def test_inspect_split_reads_the_map_a_window_a_process(
    jobs: int,
    windows: int | list[int] | None,
    files: dict[int, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Split over processes a window at a time, each window's allocation map read by the
    process that scans it (none is read whole before the fork): the JSON document is one
    process's byte for byte, extents, data ranges and per-page holes included, on the
    fragmented file and on it with holes across and at the windows' edges; ``windows`` None:
    the split's own windows."""
    import ibdtool.tablespace.inspect as inspect_mod
    from tests.test_parallel import force_windows

    punched = _punched_at_the_edges(tmp_path / "edges.ibd")
    for path in (files[SMALL], punched):
        read_allocation(path)  # ext4 may cut extents on a cold extent cache: warm it
        with Tablespace(path) as ts:
            ts.allocation  # noqa: B018  (the map read whole first: one pass over it)
            one = inspect_tablespace(ts, jobs=1).to_json()
        monkeypatch.setattr(inspect_mod, "PARALLEL_MIN_PAGES", 1)
        if windows is not None:
            force_windows(monkeypatch, windows)
        with Tablespace(path) as ts:
            split = inspect_tablespace(ts, jobs=jobs)
            assert "allocation" not in ts.__dict__  # the whole map was never read
        monkeypatch.undo()
        assert json.dumps(split.to_json()) == json.dumps(one)
        assert one["data_ranges"] > 0.9 * SMALL and one["extents"] >= one["data_ranges"]


@pytest.mark.parametrize("window", [333, 500])
def test_inspect_in_one_process_reads_the_map_a_window_at_a_time(
    window: int, files: dict[int, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One process (``jobs`` 1, a progress bar, the TUI's page map) reads the map a window at
    a time (edges inside and at the punched stretches here): the document is the one of a pass
    over the map read whole, extents, data ranges and per-page holes included."""
    import ibdtool.tablespace.inspect as inspect_mod

    punched = _punched_at_the_edges(tmp_path / "edges.ibd")
    for path in (files[SMALL], punched):
        read_allocation(path)  # ext4 may cut extents on a cold extent cache: warm it
        with Tablespace(path) as ts:
            ts.allocation  # noqa: B018  (the reference: the map read whole first)
            whole = inspect_tablespace(ts, jobs=1).to_json()
        monkeypatch.setattr(inspect_mod, "WINDOW_PAGES", window)
        done: list[int] = []
        for kw in ({}, {"progress": done.append}, {"on_page": lambda _info: None}):
            with Tablespace(path) as ts:
                got = inspect_tablespace(ts, jobs=1, **kw).to_json()  # type: ignore[arg-type]
                assert "allocation" not in ts.__dict__ and "data_ranges" not in ts.__dict__
            assert got == whole, kw
        assert done and done[-1] == SMALL
        monkeypatch.undo()


def test_pages_json_split_reads_the_map_a_block_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pages --json`` over processes: each block reads the allocation map of its own pages
    (its rows' allocated bytes and holes), the decoder's rows byte for byte, with blocks that
    end inside the punched stretches and at their edges."""
    from ibdtool.tablespace import pages_json

    path = _punched_at_the_edges(tmp_path / "edges.ibd")
    expected = _rows_by_decoder(path)
    monkeypatch.setattr(pages_json, "PARALLEL_MIN_PAGES", 1)
    for block in (250, 333):
        monkeypatch.setattr(pages_json, "BLOCK_PAGES", block)
        assert "".join(json_lines(str(path), jobs=3)) == expected


def test_inspect_split_of_a_file_that_grows_or_shrinks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file changes between the open and the workers' reads of their windows: grown, the
    answer is the file as opened (its pages, its data ranges and bytes up to the size it had;
    the extents past it are counted, as space allocated past the end is); shrunk, one
    InputError line (what the CLI prints on stderr, exit 2), never a traceback."""
    import ibdtool.tablespace.inspect as inspect_mod
    from ibdtool.errors import InputError

    path = fragmented(tmp_path / "changing.ibd", SMALL)
    with Tablespace(path) as ts:
        before = inspect_tablespace(ts, jobs=1).to_json()
    monkeypatch.setattr(inspect_mod, "PARALLEL_MIN_PAGES", 1)
    with Tablespace(path) as ts:
        ts.allocation_stat  # noqa: B018  (taken at the open, as before a fork)
        with path.open("r+b") as f:  # 100 more pages, each a block of data and a hole
            for n in range(SMALL, SMALL + 100):
                f.seek(n * PSIZE)
                f.write(os.urandom(4096))
            f.truncate((SMALL + 100) * PSIZE)
            os.fsync(f.fileno())
        grown = inspect_tablespace(ts, jobs=2).to_json()
    moved = {"extents", "layout", "drop_cost"}
    assert {k: v for k, v in grown.items() if k not in moved} == {
        k: v for k, v in before.items() if k not in moved
    }
    assert grown["extents"] == read_allocation(path).extents == before["extents"] + 100
    with Tablespace(path) as ts:
        ts.allocation_stat  # noqa: B018
        os.truncate(path, 700 * PSIZE)
        with pytest.raises(InputError, match="shrank"):
            inspect_tablespace(ts, jobs=2)


@pytest.mark.parametrize(("jobs", "windows"), [(1, None), (2, None), (2, EDGES), (3, 61)])
def test_checksum_fast_path_is_the_decoders(
    jobs: int,
    windows: int | list[int] | None,
    files: dict[int, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Over one process or split a window at a time, on the fragmented file and on it with
    holes at the windows' edges."""
    from tests.test_parallel import force_windows

    if windows is not None:
        force_windows(monkeypatch, windows)
    for path in (files[SMALL], _punched_at_the_edges(tmp_path / "edges.ibd")):
        counts, invalid = _decoder_verdicts(path)
        got = check_file(str(path), jobs=jobs, parallel_min=1)
        assert (dict(got.by_algorithm), got.invalid_pages, got.pages) == (counts, invalid, SMALL)


def test_pages_json_fast_path_is_the_decoders(files: dict[int, Path]) -> None:
    expected = _rows_by_decoder(files[SMALL])
    assert "".join(json_lines(str(files[SMALL]), jobs=1)) == expected
    assert "".join(json_lines(str(files[SMALL]), jobs=2)) == expected


def test_tui_scan_and_simulate_read_pages_like_the_decoder(files: dict[int, Path]) -> None:
    from ibdtool.advise.simulate import _current_state

    with Tablespace(files[SMALL]) as ts:
        assert list(header_pages(ts)) == list(ts.pages(header_only=True))
        assert _current_state(ts) == _current_by_decoder(ts)


def test_packed_ranges_read_like_tuples() -> None:
    pairs = [(0, 10), (10, 20), (30, 40), (35, 50), (60, 60), (70, 80)]
    packed = PackedRanges(pairs)
    merged = [(0, 20), (30, 50), (70, 80)]  # touching and overlapping merged, empty dropped
    assert list(packed) == merged and packed == merged and packed == tuple(merged)
    assert len(packed) == 3 and packed[1] == (30, 50) and packed[-1] == (70, 80)
    assert list(packed[1:]) == merged[1:]
    assert packed.total() == sum(e - s for s, e in merged)
    assert [packed.index_at(x) for x in (0, 29, 30, 69, 100)] == [0, 0, 1, 1, 2]
    import pickle

    assert pickle.loads(pickle.dumps(packed)) == packed


@pytest.mark.parametrize(
    ("held", "pairs"),
    [
        ([], [(0, 10), (20, 30), (40, 50)]),  # the fast path: sorted, apart
        ([(0, 5)], [(8, 10), (20, 30)]),  # the fast path after a range held
        ([], [(0, 10), (10, 30), (40, 50)]),  # touching: merged
        ([], [(0, 10), (5, 30), (40, 40)]),  # overlapping, and an empty one
        ([(0, 5), (25, 30)], [(30, 40)]),  # touching the range held before
    ],
)
def test_packed_ranges_extend_is_add_one_by_one(
    held: list[tuple[int, int]], pairs: list[tuple[int, int]]
) -> None:
    """``PackedRanges.extend`` (FIEMAP's batches, column by column) equals ``add`` of each."""
    one, many = PackedRanges(held), PackedRanges(held)
    for start, end in pairs:
        one.add(start, end)
    many.extend([s for s, _ in pairs], [e for _, e in pairs])
    assert many == one and list(many) == list(one)


def test_packed_plan_and_windows_read_as_the_lists_they_replace(files: dict[int, Path]) -> None:
    """The wire form of a packed plan is the one a pair at a time makes (``RANGE.pack``,
    zlib), it unpacks to the same ranges, and :class:`agent.Windows` cuts the windows
    :func:`agent.iter_windows` cuts, at window sizes that split ranges and pieces."""
    import struct
    import zlib

    from ibdtool.copy import agent

    pairs = seek_data_ranges(files[SMALL])
    size = files[SMALL].stat().st_size
    wire = b"".join(struct.pack(">QQ", a, b) for a, b in pairs)
    packed = agent.unpack_ranges(zlib.compress(wire), size, 4096)
    assert list(packed) == pairs
    assert zlib.decompress(agent.pack_ranges(packed)) == wire
    assert agent.plan_crc(packed, size) == zlib.crc32(wire + struct.pack(">Q", size))
    assert agent.plan_bytes(packed) == sum(b - a for a, b in pairs)
    for window in (4096 * 3 + 512, 1 << 20, agent.choose_window(agent.plan_bytes(pairs))):
        expected = [list(w) for w in agent.iter_windows(pairs, window)]
        windows = agent.Windows(packed, window)
        assert len(windows) == len(expected)
        for index in (len(expected) - 1, 0, len(expected) // 2, 1):  # in any order
            assert list(windows[index]) == expected[index]
        assert [list(w) for w in windows] == expected


@pytest.mark.parametrize("codec", ["none", "zlib", "zstd"])
def test_the_agents_data_frames_are_its_pieces_batched(
    codec: str, files: dict[int, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's ``D`` frames (``fetch``, ``read``), its pieces read side by side into one
    reused buffer, are byte for byte the reference's: each piece read on its own
    (``os.pread``) and the batch made by ``encode_batch``, the frame sent once it holds a
    ``PIECE`` or ``MAX_PIECES`` pieces; on a file of one extent a page (thousands of small
    pieces a frame), one of large runs and holes (pieces of a MiB), and byte windows that cut
    ranges; written through a fetch's gathering writer, here made to keep every frame's
    bytes until the end (a frame sent raw must not be a view of the buffer read again)."""
    import io

    from ibdtool.copy import agent

    monkeypatch.setattr(agent, "GATHER_BYTES", 1 << 40)
    runs = tmp_path / "runs.ibd"
    with runs.open("wb") as f:
        for at in (0, 3 << 20, 5 << 20):
            f.seek(at)
            f.write(os.urandom(1 << 20) + bytes(300_000) + os.urandom(123_457))
    coder = agent.Codec(codec, agent.ZSTD_FAST_LEVEL if codec == "zstd" else None)

    def reference(src: agent.Source, ranges: Any, lo: int, hi: int) -> bytes:
        out = io.BytesIO()
        batch: list[tuple[int, bytes]] = []
        held = 0
        for a, b in ranges:
            a, b = max(a, lo), min(b, hi)
            while a < b:
                data = os.pread(src.fd, min(agent.PIECE, b - a), a)
                batch.append((a, data))
                held += len(data)
                a += len(data)
                if held >= agent.PIECE or len(batch) >= agent.MAX_PIECES:
                    agent.write_frame(out, b"D", agent.encode_batch(batch, coder))
                    batch, held = [], 0
        if batch:
            agent.write_frame(out, b"D", agent.encode_batch(batch, coder))
        agent.write_frame(out, b"E")
        return out.getvalue()

    for path in (files[LARGE], runs):
        src = agent.Source(str(path))
        try:
            ranges = src.data_ranges()
            assert len(ranges) > 2
            size = src.size
            for lo, hi in ((0, size), (1 << 20, size - 5000), (size // 3, size // 3 + 70_001)):
                out = io.BytesIO()
                gathered = agent._Gathered(out)  # as a fetch's reply: frames kept, not copied
                agent._send_data(gathered, src, ranges, lo, hi, coder)
                gathered.flush()
                assert out.getvalue() == reference(src, ranges, lo, hi), (path, lo, hi)
        finally:
            src.close()
