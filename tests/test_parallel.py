"""A scan split over processes a window at a time (``ibdtool.tablespace.parallel``): every
window's result, in window order, whoever scanned it; a child that fails or dies fails the run.

Oracles: the same function over the same windows in one process; for a death, a child really
killed (SIGKILL) while it holds a window.
"""

from __future__ import annotations

import itertools
import os
import select
import signal
from pathlib import Path

import pytest

from ibdtool.errors import InputError
from ibdtool.tablespace import parallel
from ibdtool.tablespace.parallel import MAX_WINDOWS, map_ranges, windows
from ibdtool.tablespace.reader import CHUNK_BYTES, Tablespace
from tests.samples_manifest import sample
from tests.test_workpool import _children


def cut(n_pages: int, count: int) -> list[tuple[int, int]]:
    """``count`` windows of about equal size covering [0, n_pages) (fewer for few pages)."""
    step = max(1, -(-n_pages // count))
    return [(s, min(n_pages, s + step)) for s in range(0, n_pages, step)]


def force_windows(monkeypatch: pytest.MonkeyPatch, count: int | str | list[int]) -> None:
    """Splits of this test cut files into ``count`` windows (``"pages"``: a page each; a
    list: windows with those edges) instead of :func:`windows`' (a small sample is one)."""

    def forced(n_pages: int, jobs: int, page_size: int) -> list[tuple[int, int]]:
        if isinstance(count, list):
            edges = [0, *(e for e in count if 0 < e < n_pages), n_pages]
            return list(itertools.pairwise(edges))
        return cut(n_pages, n_pages if count == "pages" else int(count))

    monkeypatch.setattr(parallel, "windows", forced)


@pytest.mark.parametrize("psize", [1024, 4096, 16384, 65536])
@pytest.mark.parametrize("jobs", [1, 2, 3, 8, 64, 512])
@pytest.mark.parametrize("n", [0, 1, 255, 1024, 89_088, 1_000_000, 6_553_600, 400_000_000])
def test_windows_cover_the_file_in_order(n: int, jobs: int, psize: int) -> None:
    got = windows(n, jobs, psize)
    assert got[0][0] == 0 and got[-1][1] == n
    assert all(a[1] == b[0] for a, b in itertools.pairwise(got))
    assert all(b > a for a, b in got) or n == 0
    assert len(got) <= MAX_WINDOWS
    align = max(1, CHUNK_BYTES // psize)
    assert all(b % align == 0 for _, b in got[:-1])  # whole reads of the scans
    sizes = [b - a for a, b in got]
    assert all(x >= y for x, y in itertools.pairwise(sizes[:-1]))  # big first
    if len(got) > 1 and jobs <= 64:  # the last window a small share of a process's work
        least = max(align, parallel.MIN_WINDOW_BYTES // psize)
        assert sizes[-1] <= max(n / (parallel.GUIDE * jobs), least)


def _where(ts: Tablespace, start: int, stop: int) -> tuple[int, int, int, bytes]:
    """What a window's scan reads, and which process read it."""
    return start, stop, os.getpid(), ts.raw_page(start)[:38] if stop > start else b""


@pytest.mark.parametrize("jobs", [2, 3, 5])
@pytest.mark.parametrize("count", [2, 3, 7, 29, "pages"])
def test_results_come_back_in_window_order(jobs: int, count: int | str) -> None:
    path = sample("mariadb/p16k-pc_zlib.ibd")
    before = _children()
    with Tablespace(path) as ts:
        ranges = cut(ts.n_pages, ts.n_pages if count == "pages" else int(count))
        one = [_where(ts, a, b) for a, b in ranges]
        got = map_ranges(ts, _where, ranges, jobs)
    assert [g[:2] + g[3:] for g in got] == [o[:2] + o[3:] for o in one]
    assert len({g[2] for g in got}) <= jobs  # this process and its children
    assert _children() == before  # every child reaped


def test_a_childs_error_is_the_runs_and_the_earliest_window_wins() -> None:
    """Every window from 5 on fails (as when the file shrinks under the scan): the error is
    the one of window 5, whichever process met it first, and no child is left."""
    here = os.getpid()

    def fails_late(ts: Tablespace, start: int, stop: int) -> int:
        if start >= 5:
            where = "here" if os.getpid() == here else "child"
            raise InputError(f"window {start} failed ({where})")
        return start

    before = _children()
    with Tablespace(sample("mariadb/p16k-pc_zlib.ibd")) as ts:
        for jobs in (2, 3):
            with pytest.raises(InputError, match=r"^window 5 failed"):
                map_ranges(ts, fails_late, [(i, i + 1) for i in range(12)], jobs)
    assert _children() == before


def test_a_child_killed_holding_a_window_fails_the_run(tmp_path: Path) -> None:
    """This process holds its first window until the child has taken one; the child is then
    killed (SIGKILL) in it: the run is an error naming the signal, never a result without
    that window, never a hang, and the child is reaped."""
    here = os.getpid()
    ready_r, ready_w = os.pipe()

    def scan(ts: Tablespace, start: int, stop: int) -> int:
        if os.getpid() != here:
            os.write(ready_w, b"x")  # it holds this window
            os.kill(os.getpid(), signal.SIGKILL)
        elif start == 0:
            assert select.select([ready_r], [], [], 60)[0], "the child never took a window"
        return start

    before = _children()
    try:
        with (
            Tablespace(sample("mariadb/p16k-pc_zlib.ibd")) as ts,
            pytest.raises(InputError, match=r"worker process \d+ killed by signal 9"),
        ):
            map_ranges(ts, scan, [(i, i + 1) for i in range(8)], 2)
    finally:
        os.close(ready_r)
        os.close(ready_w)
    assert _children() == before


def test_the_kill_hook_fails_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """``IBDTOOL_TEST_KILL_WORKER`` (the CLI tests' hook, ``tests/test_workpool.py``): a child
    of a split of a file whose path holds it dies once it holds a window, or finds none."""
    monkeypatch.setenv("IBDTOOL_TEST_KILL_WORKER", "p16k-pc_zlib")
    before = _children()
    with (
        Tablespace(sample("mariadb/p16k-pc_zlib.ibd")) as ts,
        pytest.raises(InputError, match=r"worker process \d+ killed by signal 9"),
    ):
        map_ranges(ts, lambda t, a, b: a, [(i, i + 1) for i in range(6)], 3)
    assert _children() == before
