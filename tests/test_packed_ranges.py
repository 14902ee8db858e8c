"""The packed data map (:class:`ibdtool.fs.ranges.PackedRanges`: deltas a chunk at a time,
~2.5 bytes a range) reads exactly as the merged list of pairs it replaces, and every walk over
it (an allocation's lookups, a tablespace's page runs, a remote copy's windows and wire form)
gives what the same question asked of that list, worked out here the plain way, gives.

Maps are drawn (hypothesis: a count, a seed and a pattern, then a seeded generator: maps of
thousands of ranges cross many chunks) from the shapes real files have: a range a compressed
page (block-aligned), byte-granular ranges (an unaligned end, a file that is not a
tablespace), huge gaps (a sparse file), touching, overlapping and empty ranges (merged or
dropped as they come). Memory per range is what tracemalloc sees for a page-compressed
file's map of 200,000 ranges built as :func:`ibdtool.fs.read_allocation` builds it.
"""

from __future__ import annotations

import pickle
import random
import struct
import tracemalloc
import zlib
from bisect import bisect_right
from collections.abc import Callable, Sequence
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ibdtool.copy import agent
from ibdtool.fs.allocation import Allocation
from ibdtool.fs.ranges import CHUNK, PackedRanges
from ibdtool.tablespace.reader import MIN_HOLE_PAGES, Tablespace

Pairs = list[tuple[int, int]]
PSIZE = 16384
BLOCK = 4096


def merged(pairs: Pairs) -> Pairs:
    """Sorted pairs with empty ones dropped and touching or overlapping ones joined."""
    out: Pairs = []
    for start, end in pairs:
        if end <= start:
            continue
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def drawn(n: int, seed: int, pattern: int) -> Pairs:
    """``n`` pairs in order of their starts, in one of the shapes a file's map has."""
    rnd = random.Random(seed)
    pairs: Pairs = []
    pos = rnd.choice([0, BLOCK, 7])
    for _ in range(n):
        if pattern == 0:  # a compressed page a slot: data then a hole, in blocks
            start = -(-pos // PSIZE) * PSIZE
            length = BLOCK * rnd.randint(1, PSIZE // BLOCK - 1)
        elif pattern == 1:  # bytes: unaligned starts and ends
            start = pos + rnd.randint(1, 20000)
            length = rnd.randint(1, 20000)
        elif pattern == 2:  # a sparse file: huge gaps and lengths beside small ones
            start = pos + rnd.choice([BLOCK, 1 << 20, rnd.randrange(1 << 44)])
            length = rnd.choice([BLOCK, 1 << 30, rnd.randrange(1, 1 << 36)])
        else:  # touching, overlapping and empty ranges among the others
            start = max(0, pos + rnd.choice([0, -BLOCK, -1, 1, BLOCK, 3 * BLOCK]))
            length = rnd.choice([0, 1, BLOCK, 2 * BLOCK, -5])
        pairs.append((start, start + length))
        pos = max(pos, start + length)
    pairs.sort(key=lambda pair: pair[0])
    return pairs


maps = st.builds(
    drawn,
    st.sampled_from([0, 1, 2, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 7, 2000]),
    st.integers(0, 2**32),
    st.integers(0, 3),
)
quick = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def built_both_ways(pairs: Pairs, seed: int) -> tuple[PackedRanges, PackedRanges]:
    """The map made by :meth:`PackedRanges.add` of each pair, and by :meth:`~PackedRanges.extend`
    of batches of random sizes (FIEMAP's calls: the fast path where a batch is clean)."""
    one = PackedRanges(pairs)
    many = PackedRanges()
    rnd = random.Random(seed)
    i = 0
    while i < len(pairs):
        part = pairs[i : i + rnd.choice([1, 7, CHUNK, 600])]
        many.extend([s for s, _ in part], [e for _, e in part])
        i += len(part)
    return one, many


@quick
@given(maps, st.integers(0, 1000))
def test_packed_ranges_read_as_the_merged_list(pairs: Pairs, seed: int) -> None:
    expected = merged(pairs)
    starts = [s for s, _ in expected]
    rnd = random.Random(seed)
    for packed in built_both_ways(pairs, seed):
        assert list(packed) == expected and packed == expected and len(packed) == len(expected)
        assert packed.total() == sum(e - s for s, e in expected)
        picks = {0, len(expected) - 1, CHUNK - 1, CHUNK, CHUNK + 1}
        picks |= {rnd.randrange(len(expected)) for _ in range(20)} if expected else set()
        for i in sorted(p for p in picks if 0 <= p < len(expected)):
            assert packed[i] == expected[i] and packed[i - len(expected)] == expected[i]
            assert list(packed.pairs_from(i)) == expected[i:]
            assert list(packed[i : i + CHUNK + 3]) == expected[i : i + CHUNK + 3]
        assert list(packed[::7]) == expected[::7]
        probes = {0, 1, *starts[:3], *(s - 1 for s in starts[-3:])}
        probes |= {rnd.randrange(expected[-1][1] + 2) for _ in range(30)} if expected else set()
        probes |= {s + d for s in starts[CHUNK - 1 : CHUNK + 2] for d in (-1, 0, 1)}
        for pos in probes:
            assert packed.index_at(pos) == max(0, bisect_right(starts, pos) - 1), pos
        again = pickle.loads(pickle.dumps(packed))
        assert again == packed and list(again) == expected
    one, many = built_both_ways(pairs, seed)
    assert one == many and hash(one) == hash(many)  # one layout whatever the batches


def test_a_map_refuses_what_it_cannot_hold() -> None:
    with pytest.raises(IndexError):
        PackedRanges([(0, 10)])[1]
    with pytest.raises(ValueError, match="before 0"):
        PackedRanges([(-4096, 0), (-10, 10)])
    with pytest.raises(OverflowError):
        PackedRanges([(0, 1), (2, 3)]).add(2**64, 2**64 + 1)
    with pytest.raises(OverflowError):  # by a merge too
        PackedRanges([(0, 1), (2, 3)]).add(3, 2**64)


@quick
@given(maps, st.integers(0, 1000))
def test_allocation_lookups_are_the_lists(pairs: Pairs, seed: int) -> None:
    """What :class:`Allocation` answers from the packed map, asked of the list instead."""
    expected = merged(pairs)
    size = (expected[-1][1] if expected else 0) + PSIZE
    alloc = Allocation(size, 0, BLOCK, PackedRanges(pairs), None, None)
    holes, pos = [], 0
    for start, end in expected:
        if start > pos:
            holes.append((pos, start))
        pos = end
    if pos < size:
        holes.append((pos, size))
    assert list(alloc.iter_hole_ranges()) == holes and alloc.hole_ranges == holes
    rnd = random.Random(seed)
    for _ in range(25):
        at = rnd.randrange(size)
        assert list(alloc.data_ranges_from(at)) == [(max(s, at), e) for s, e in expected if e > at]
        length = rnd.choice([1, BLOCK, PSIZE * 40, size])
        overlap = sum(max(0, min(e, at + length) - max(s, at)) for s, e in expected)
        assert alloc.allocated_bytes_in(at, length) == overlap
    if size < 64 << 20:  # per page: the list's overlap with each page of a window
        pages = -(-size // PSIZE)
        for first, count in ((0, pages), (pages // 2, 3), (rnd.randrange(pages), 50)):
            got = list(alloc.per_page_allocated(PSIZE, count, first))
            want = [0] * count
            for s, e in expected:  # each range's bytes in each page it meets
                for n in range(max(first, s // PSIZE), min(first + count, -(-e // PSIZE))):
                    want[n - first] += min(e, (n + 1) * PSIZE) - max(s, n * PSIZE)
            assert got == want


def runs_by_flags(
    pairs: Pairs, n_pages: int, start: int, stop: int, max_run: int
) -> list[tuple[int, int, bool]]:
    """:meth:`Tablespace.page_runs` worked out page by page: a page holds data where a range
    meets it; a hole shorter than ``MIN_HOLE_PAGES`` with data after it (before ``stop`` or
    past it) is read as data; runs end at ``stop`` and are cut every ``max_run`` pages."""
    stop = min(stop, n_pages)
    limit = stop + MIN_HOLE_PAGES + 1  # far enough past ``stop`` to tell a short hole
    data = [False] * limit
    for s, e in pairs:
        for n in range(s // PSIZE, min(limit, -(-e // PSIZE))):
            data[n] = True
    segments: list[list[int]] = []  # [first, end, has_data]
    n = start
    while n < limit:
        end = n
        while end < limit and data[end] == data[n]:
            end += 1
        segments.append([n, end, int(data[n])])
        n = end
    joined: list[list[int]] = []
    for i, (first, end, has) in enumerate(segments):
        if not has and end - first < MIN_HOLE_PAGES and i + 1 < len(segments):
            has = 1
        if joined and joined[-1][2] == has:
            joined[-1][1] = end
        else:
            joined.append([first, end, has])
    out = []
    for first, end, has in joined:
        for cut in range(first, min(end, stop), max_run):
            out.append((cut, min(end, stop, cut + max_run), bool(has)))
    return out


@quick
@given(maps, st.integers(0, 1000))
def test_page_runs_are_the_page_by_page_answer(pairs: Pairs, seed: int) -> None:
    """The tablespace's walk of the packed map (a bisection, then one pass), against the
    same runs worked out from each page's data flag; from the start or the middle."""
    expected = merged(pairs)
    n_pages = min(20000, (expected[-1][1] if expected else 0) // PSIZE + 100)
    packed = PackedRanges(pairs)
    view = SimpleNamespace(
        n_pages=n_pages, physical_size=PSIZE, data_ranges=packed, scan_ranges=packed
    )
    rnd = random.Random(seed)
    for start, stop, max_run in (
        (0, n_pages, 1 << 16),
        (0, n_pages + 5, 37),
        (rnd.randrange(n_pages), rnd.randrange(n_pages + 1), rnd.choice([1, 64, 500])),
    ):
        got = list(Tablespace.page_runs(view, start, stop, max_run))  # type: ignore[arg-type]
        assert got == runs_by_flags(expected, n_pages, start, stop, max_run)


@quick
@given(
    st.lists(
        st.one_of(
            st.sampled_from([CHUNK - 1, CHUNK, 2 * CHUNK - 1, 3 * CHUNK - 1, 3 * CHUNK]),
            st.integers(0, 6 * CHUNK),
        ),
        max_size=4,
    ),
    st.sampled_from([BLOCK, 4 * BLOCK, 256, 4096 + 256]),
    st.integers(0, 1000),
)
def test_page_runs_join_whole_chunks_as_range_by_range(
    long_after: list[int], data: int, seed: int
) -> None:
    """A page-compressed file's map (a range a page, each shorter than its page) over many
    chunks, with long holes after some ranges (at chunk edges or inside): the walk that joins
    a chunk of near ranges at once (``PackedRanges.close_chunk_end``) gives the page-by-page
    runs, for windows that start and stop anywhere, inside a chunk or at its edge."""
    pairs: list[tuple[int, int]] = []
    page = 0
    for k in range(6 * CHUNK + 7):
        pairs.append((page * PSIZE, page * PSIZE + data))
        # a long hole after range k: exactly the limit in pages, or far more
        page += 1 + (MIN_HOLE_PAGES + (k % 3) * 40 if k in long_after else 0)
    packed = PackedRanges(pairs)
    n_pages = page + 10
    view = SimpleNamespace(
        n_pages=n_pages, physical_size=PSIZE, data_ranges=packed, scan_ranges=packed
    )
    rnd = random.Random(seed)
    # the pages of the third chunk's first range, of a range inside it, and of its last range
    edge, inside, last = (pairs[k][0] // PSIZE for k in (2 * CHUNK, 2 * CHUNK + 100, 3 * CHUNK - 1))
    for start, stop, max_run in (
        (0, n_pages, 1 << 16),
        (0, edge, 1 << 16),
        (0, inside, 1 << 16),
        (0, last, 1 << 16),
        (0, last + 1, 1 << 16),
        (edge, n_pages, 700),
        (rnd.randrange(n_pages), rnd.randrange(n_pages + 1), rnd.choice([1, 64, 1 << 16])),
        (rnd.randrange(n_pages // 2), n_pages // 2 + rnd.randrange(n_pages // 2), 1 << 16),
    ):
        got = list(Tablespace.page_runs(view, start, stop, max_run))  # type: ignore[arg-type]
        assert got == runs_by_flags(pairs, n_pages, start, stop, max_run), (start, stop)


@quick
@given(maps)
def test_a_remote_copy_reads_the_packed_map_as_the_list(pairs: Pairs) -> None:
    """The wire form, its CRC and bytes, and the windows cut from a packed map are the list's;
    the wire unpacks into a packed map again, checked a chunk at a time."""
    expected = merged(pairs)
    packed = PackedRanges(pairs)
    # a file holds a range a filesystem block at most (the agent refuses more as a lie): the
    # byte-granular shapes put two in 10 bytes, so their file is as long as that many blocks
    size = max((expected[-1][1] if expected else 0) + 1, len(expected) * agent.MIN_BLOCK)
    wire = b"".join(struct.pack(">QQ", s, e) for s, e in expected)
    assert zlib.decompress(agent.pack_ranges(packed)) == wire
    assert agent.plan_crc(packed, size) == zlib.crc32(wire + struct.pack(">Q", size))
    assert agent.plan_bytes(packed) == sum(e - s for s, e in expected)
    back = agent.unpack_ranges(zlib.compress(wire), size, 1, into=PackedRanges())
    assert isinstance(back, PackedRanges) and back == expected
    # the agent's own: the wire form kept compressed, a chunk at a time
    held = agent.unpack_ranges(zlib.compress(wire), size, 1)
    assert isinstance(held, agent.WireRanges) and held == expected and list(held) == expected
    assert zlib.decompress(agent.pack_ranges(held)) == wire
    assert agent.plan_bytes(held) == agent.plan_bytes(packed)
    for i in {0, len(expected) // 2, agent.RANGE_CHUNK, len(expected) - 1, len(expected)}:
        assert list(agent.pairs_from(held, i)) == expected[i:]
    total = agent.plan_bytes(expected)
    if total > 64 << 20:  # a sparse file's terabytes: pieces of a MiB are too many to list
        return
    for window in {agent.PIECE, 3 * BLOCK + 512, max(1, total // 5)}:
        want = [list(w) for w in agent.iter_windows(expected, window)]
        for plan in (packed, held):
            windows = agent.Windows(plan, window)
            assert len(windows) == len(want)
            for index in (len(want) - 1, 0, len(want) // 2):  # in any order
                if 0 <= index < len(want):
                    assert list(windows[index]) == want[index]


def test_a_range_map_out_of_order_across_a_chunk_is_refused() -> None:
    """The wire's ranges are checked as they are unpacked, a chunk at a time: one that goes
    back before the last of the chunk before it is refused as one inside a chunk is."""
    pairs = [(k * 2 * BLOCK, k * 2 * BLOCK + BLOCK) for k in range(agent.RANGE_CHUNK)]
    size = 1 << 40
    for bad in ((0, BLOCK), (pairs[-1][0], pairs[-1][0] + 1)):
        wire = b"".join(struct.pack(">QQ", s, e) for s, e in [*pairs, bad])
        with pytest.raises(agent.ProtocolError, match="not sorted"):
            agent.unpack_ranges(zlib.compress(wire), size, 1, into=PackedRanges())
    fine = b"".join(struct.pack(">QQ", s, e) for s, e in [*pairs, (size - 1, size)])
    assert len(agent.unpack_ranges(zlib.compress(fine), size, 1)) == len(pairs) + 1


# --- memory ----------------------------------------------------------------------------------

MANY = 200_000


def _built_as_an_allocation(pairs_of: Pairs) -> PackedRanges:
    """Made as :func:`ibdtool.fs.read_allocation` makes a map: FIEMAP's extents a column of
    512 at a time (``_ExtentCounts``)."""
    out = PackedRanges()
    for at in range(0, len(pairs_of), 512):
        part = pairs_of[at : at + 512]
        out.extend([s for s, _ in part], [e for _, e in part])
    return out


def _built_by_the_agent(pairs_of: Pairs) -> agent.WireRanges:
    """Made as the agent makes a plan it is sent (:func:`agent.unpack_ranges`)."""
    wire = b"".join(struct.pack(">QQ", s, e) for s, e in pairs_of)
    out = agent.unpack_ranges(zlib.compress(wire), 1 << 60, 1)
    assert isinstance(out, agent.WireRanges)
    return out


@pytest.mark.parametrize(
    ("pattern", "bound", "build"),
    [
        (0, 3.0, _built_as_an_allocation),  # a range a compressed page
        (1, 5.0, _built_as_an_allocation),  # byte-granular: 16-bit deltas
        (0, 5.0, _built_by_the_agent),  # the agent's plan: the wire form, compressed
    ],
)
def test_a_map_costs_a_few_bytes_a_range(
    pattern: int, bound: float, build: Callable[[Pairs], Sequence[tuple[int, int]]]
) -> None:
    """A page-compressed file's map of 200,000 ranges (a range a page, FIEMAP's block-aligned
    extents) holds under 3 bytes a range (the agent's, under 5); byte-granular ranges of up to
    20 KB under 5. A walk over all of it holds one chunk decoded, never the map unpacked."""
    pairs = merged(drawn(MANY, 24, pattern))
    assert len(pairs) > 0.99 * MANY
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        packed = build(pairs)
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        walked = sum(1 for _ in packed) + sum(1 for _ in agent.pairs_from(packed, MANY // 2))
        walk_peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert walked == 2 * len(packed) - MANY // 2
    assert held / len(packed) < bound, f"{held / len(packed):.2f} bytes a range"
    assert walk_peak < 128 << 10, walk_peak  # a chunk or two, where the map unpacked is 3 MB
