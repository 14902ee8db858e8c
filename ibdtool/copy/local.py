"""Local sparse copies and in-place re-punching: the engine of ``ibdtool copy`` on one host.

A copy writes only a *plan*: the source's data ranges (``SEEK_DATA``/``SEEK_HOLE``, from
:mod:`ibdtool.fs.allocation`) minus, for a tablespace, the needless zero bytes
:mod:`ibdtool.copy.repunch` finds (so a densified ``.ibd`` regains the holes its server made) and,
with ``dig_holes``, every all-zero filesystem block (as ``cp --sparse=always`` does). Data moves
with ``os.copy_file_range`` (in the kernel; a reflink where the filesystem can), falling back
to ``pread``/``pwrite``. Everything outside the plan is punched with ``fallocate`` at the end.
The file lives under a temporary name in the destination directory until it is fsynced,
verified and renamed (:class:`ibdtool.copy.agent.Destination`, shared with the remote end).

The plan of a densified compressed tablespace has one range a page (64M for 1 TiB of 16 KiB
pages), so a local copy and ``--in-place`` never keep it as ranges: the page headers are
scanned once into what each page keeps (:func:`ibdtool.copy.repunch.page_keeps`, 2 bytes a
page), and :func:`plan_stream` makes the plan from that as it is consumed: a first pass only
sums it (bytes, CRC, where each MiB of it starts), and each window is made again from its
mark when it is copied (:class:`StreamedPlan`); in place, the aligned needless ranges are
punched straight from it. Memory is then the page array and a few windows' pieces. The
remote copy keeps the plan whole (:func:`build_plan`: it sends it to the other end), packed,
~2.5 bytes a range, and cuts its windows when they are read (:class:`ibdtool.copy.agent.Windows`).

Verification, per window of the plan: after ``fdatasync`` the window is read back and its
CRC-32 compared with the source's (``verify="data"``); for a tablespace ``verify="full"`` also
checks every page checksum of the copy before the rename, from the same read-back
(:mod:`ibdtool.copy.readback`; a resumed copy, whose kept windows were read back before, in a
pass of its own after the copy: :func:`check_pages`). The read-back comes from the page
cache: it proves the file holds the source's bytes, not that the disk kept them.

The engine reports through a ``progress(CopyProgress)`` callback; the CLI draws it.
"""

from __future__ import annotations

import errno
import math
import os
import stat
import struct
import threading
import time
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast, overload

from ibdtool.copy import agent
from ibdtool.copy.repunch import (
    Needless,
    candidate_runs,
    iter_needless,
    kept_pieces,
    needless_of,
    page_keeps,
)
from ibdtool.errors import ExitCode, IbdtoolError, InputError
from ibdtool.fs import Allocation, PackedRanges, lock_exclusive, read_allocation, users_of
from ibdtool.parsers.layout import align_up
from ibdtool.tablespace import Tablespace

if TYPE_CHECKING:  # checksum and readback load the page decoder: only for a page check
    from ibdtool.copy.readback import WindowPages
    from ibdtool.tablespace import CheckResult, ChecksumTally

Ranges = list[tuple[int, int]]

VERIFY_MODES = ("full", "data", "none")
#: pieces copied between two looks at the rate limit and the progress: at most this many,
#: and about BATCH_BYTES (a piece is 1 MiB at most, one page's image on a page-compressed file)
BATCH_PIECES = 64
BATCH_BYTES = 4 << 20
ZERO_SCAN_CHUNK = 8 << 20


class CopyFailed(IbdtoolError):
    """The copy could not be made; nothing is left under the final name."""


class VerifyFailed(IbdtoolError):
    """The copy does not read back as the source (exit 1, like a failed checksum)."""

    exit_code = ExitCode.FOUND


class CopyInterrupted(IbdtoolError):
    """Stopped part way; the verified part is kept for ``--resume``."""

    exit_code = ExitCode.INTERRUPTED


@dataclass(frozen=True)
class CopyOptions:
    force: bool = False
    resume: bool = False
    repunch: bool | None = None  # None: for files named *.ibd
    dig_holes: bool = False
    verify: str = "full"
    compress: str = "auto"
    bwlimit: int = 0


@dataclass(frozen=True)
class CopyProgress:
    """One progress event: ``phase`` is ``scan`` (pages), ``copy`` (bytes) or ``check``."""

    phase: str
    done: int
    total: int
    read: int = 0
    sent: int = 0
    dest_allocated: int = 0


ProgressFn = Callable[[CopyProgress], None]


class Ticker:
    """True at most every ``interval`` seconds: progress for 65k pieces, drawn 20 times a second."""

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        self.next = 0.0

    def __call__(self) -> bool:
        now = time.monotonic()
        if now < self.next:
            return False
        self.next = now + self.interval
        return True


@dataclass
class CopyResult:
    source: str
    dest: str
    logical_size: int
    source_allocated: int
    dest_allocated: int = 0
    data_ranges: int = 0
    plan_bytes: int = 0
    bytes_read: int = 0
    bytes_sent: int = 0
    codec: str = "none"
    resumed_bytes: int = 0
    needless: Needless | None = None
    zero_block_bytes: int = 0
    verify: str = "full"
    windows: int = 0
    pages: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    elapsed: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "dest": self.dest,
            "logical_size": self.logical_size,
            "source_allocated": self.source_allocated,
            "dest_allocated": self.dest_allocated,
            "data_ranges": self.data_ranges,
            "plan_bytes": self.plan_bytes,
            "bytes_read": self.bytes_read,
            "bytes_sent": self.bytes_sent,
            "codec": self.codec,
            "resumed_bytes": self.resumed_bytes,
            "repunch": self.needless.to_json() if self.needless else None,
            "zero_block_bytes": self.zero_block_bytes,
            "verify": self.verify,
            "windows": self.windows,
            "pages": self.pages,
            "notes": self.notes,
            "elapsed_s": round(self.elapsed, 3),
        }


# --- range algebra -------------------------------------------------------------------------------


def union(a: Iterable[tuple[int, int]], b: Iterable[tuple[int, int]]) -> Ranges:
    """Sorted, merged union of two range lists."""
    out: Ranges = []
    for start, end in sorted([*a, *b]):
        if end <= start:
            continue
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def subtract(a: Ranges, b: Ranges) -> Ranges:
    """``a`` without ``b``; both sorted and disjoint."""
    return list(iter_subtract(a, b))


def iter_subtract(
    a: Iterable[tuple[int, int]], b: Iterable[tuple[int, int]]
) -> Iterator[tuple[int, int]]:
    """:func:`subtract` of two streams, made as it is consumed (both sorted and disjoint)."""
    rest = iter(b)
    cut = next(rest, None)
    for start, end in a:
        pos = start
        while cut is not None and cut[1] <= pos:
            cut = next(rest, None)
        while cut is not None and cut[0] < end:
            if cut[0] > pos:
                yield pos, cut[0]
            pos = max(pos, cut[1])
            if cut[1] >= end:  # it may cut the next range of ``a`` too
                break
            cut = next(rest, None)
        if pos < end:
            yield pos, end


def align_inward(ranges: Ranges, block: int) -> Ranges:
    """Each range shrunk to whole ``block``s (what a filesystem can actually free)."""
    return list(iter_align_inward(ranges, block))


def iter_align_inward(ranges: Iterable[tuple[int, int]], block: int) -> Iterator[tuple[int, int]]:
    """:func:`align_inward` of a stream."""
    for start, end in ranges:
        s, e = align_up(start, block), end // block * block
        if e > s:
            yield s, e


def iter_complement(ranges: Iterable[tuple[int, int]], size: int) -> Iterator[tuple[int, int]]:
    """The gaps of a sorted, disjoint stream within ``[0, size)`` (:func:`agent.complement`)."""
    pos = 0
    for start, end in ranges:
        if start > pos:
            yield pos, start
        pos = max(pos, end)
    if pos < size:
        yield pos, size


def zero_blocks(
    read: Callable[[int, int], bytes], ranges: Ranges, block: int, progress: Callable[[int], None]
) -> Ranges:
    """All-zero, ``block``-aligned blocks inside ``ranges`` (``cp --sparse=always``'s holes)."""
    return list(iter_zero_blocks(read, ranges, block, progress))


def iter_zero_blocks(
    read: Callable[[int, int], bytes],
    ranges: Iterable[tuple[int, int]],
    block: int,
    progress: Callable[[int], None],
) -> Iterator[tuple[int, int]]:
    """:func:`zero_blocks` of a stream, merged, made as it is consumed."""
    zero = bytes(block)
    held_start = held_end = -1
    for start, end in iter_align_inward(ranges, block):
        pos = start
        while pos < end:
            stop = min(end, pos + ZERO_SCAN_CHUNK)
            view = memoryview(read(pos, stop))
            for off in range(0, len(view), block):
                if view[off : off + block] == zero:
                    at = pos + off
                    if held_end != at:
                        if held_end > held_start:
                            yield held_start, held_end
                        held_start = at
                    held_end = at + block
            pos = stop
            progress(stop - start)
    if held_end > held_start:
        yield held_start, held_end


# --- the plan ------------------------------------------------------------------------------------


@dataclass
class Plan:
    ranges: PackedRanges
    data_ranges: int
    needless: Needless | None = None
    zero_block_bytes: int = 0
    is_tablespace: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return agent.plan_bytes(self.ranges)


def wants_repunch(path: str, repunch: bool | None) -> bool:
    return repunch if repunch is not None else path.endswith(".ibd")


def build_plan(
    path: str,
    source: agent.Source,
    alloc: Allocation,
    *,
    repunch: bool | None,
    dig_holes: bool,
    block: int,
    progress: ProgressFn | None = None,
) -> Plan:
    """What to write: the data ranges minus needless zero pages/tails and zero blocks, kept
    whole (a remote copy sends it) but packed: :func:`plan_stream` into :class:`PackedRanges`,
    ~2.5 bytes a range, never a list of the needless ranges beside it; the data map itself
    where nothing is left out (:func:`packed_unless_same`)."""
    notes: list[str] = []
    ts = tablespace_to_repunch(path, repunch, notes)
    totals = PlanTotals()
    try:
        ranges = packed_unless_same(
            plan_stream(
                ts, source, alloc, dig_holes=dig_holes, block=block, totals=totals,
                progress=progress,
            ),
            alloc.data_ranges,
        )  # fmt: skip
    finally:
        if ts is not None:
            ts.close()
    plan = Plan(ranges=ranges, data_ranges=len(alloc.data_ranges), notes=notes)
    plan.needless = totals.needless if ts is not None else None
    plan.zero_block_bytes = totals.zero_block_bytes
    plan.is_tablespace = ts is not None or (
        not wants_repunch(path, repunch) and path.endswith(".ibd") and is_tablespace(path)
    )
    return plan


def packed_unless_same(stream: Iterable[tuple[int, int]], data: PackedRanges) -> PackedRanges:
    """``stream`` (sorted, disjoint, merged) packed, or ``data`` itself when it holds the same
    ranges: the plan of a file that kept its holes (punched by its server, one range a page)
    is its data map, and is then not held twice. A second map is started only at the first
    range that differs, from the ones before it."""
    n = len(data)
    k = 0
    held = iter(data)
    it = iter(stream)
    for pair in it:
        if k < n and next(held) == pair:
            k += 1
            continue
        out = data[:k]
        out.add(*pair)
        for start, end in it:
            out.add(start, end)
        return out
    if k == n:
        return data
    return data[:k]


def scan_progress(progress: ProgressFn | None, ts: Tablespace) -> Callable[[int, int], None] | None:
    """Page counts of a needless-range scan, reported as bytes of the file."""
    if progress is None:
        return None
    psize = ts.physical_size
    return lambda done, total: progress(CopyProgress("scan", done * psize, total * psize))


@dataclass
class PlanTotals:
    """What a streamed plan (:func:`plan_stream`) found, counted as it is consumed."""

    needless: Needless = field(default_factory=Needless)
    zero_block_bytes: int = 0


def plan_stream(
    ts: Tablespace | None,
    source: agent.Source,
    alloc: Allocation,
    *,
    dig_holes: bool,
    block: int,
    totals: PlanTotals,
    progress: ProgressFn | None = None,
    start: int = 0,
    keeps: array[int] | None = None,
) -> Iterator[tuple[int, int]]:
    """The ranges of :func:`build_plan` (``ts``: the tablespace to re-punch, or None), made
    as they are consumed: memory does not grow with the page count. Each call scans again,
    unless ``keeps`` (:func:`ibdtool.copy.repunch.page_keeps` of ``ts``, 2 bytes a page)
    gives what the scan found: the plan is then made from it, page by page
    (:func:`ibdtool.copy.repunch.kept_pieces` where pages are whole blocks and no zero block
    is dug), with no header read. ``start`` (a multiple of ``block`` and of the page size)
    skips what lies before it."""
    data: Iterable[tuple[int, int]] = alloc.data_ranges_from(start) if start else alloc.data_ranges
    drop: Iterable[tuple[int, int]] = ()
    if ts is not None and keeps is not None:
        psize = ts.physical_size
        if not dig_holes and psize % block == 0:
            return kept_pieces(keeps, psize, block, data)
        drop = iter_align_inward(needless_of(keeps, psize, start // psize), block)
    elif ts is not None:
        scan = iter_needless(
            ts, alloc, totals.needless, scan_progress(progress, ts), start // ts.physical_size
        )
        drop = iter_align_inward(scan, block)
    rest = iter_subtract(data, drop)
    if not dig_holes:
        return rest
    # the zero blocks of the rest (a second scan of it, side by side) come out of it too
    twin = plan_stream(
        ts, source, alloc, dig_holes=False, block=block, totals=PlanTotals(), start=start,
        keeps=keeps,
    )  # fmt: skip
    total = alloc.data_bytes

    def zscan(done: int) -> None:
        if progress is not None:
            progress(CopyProgress("zeros", done, total))

    def counted(ranges: Iterable[tuple[int, int]]) -> Iterator[tuple[int, int]]:
        for start, end in ranges:
            totals.zero_block_bytes += end - start
            yield start, end

    zeros = iter_zero_blocks(source.read, twin, block, _accumulate(zscan))
    return iter_subtract(rest, counted(zeros))


class StreamedPlan:
    """A local copy's plan kept as the means to remake it (:func:`plan_stream`), for
    :meth:`ibdtool.copy.agent.Destination.prepare`: one header scan (kept a page in 2
    bytes: :func:`ibdtool.copy.repunch.page_keeps`), then one summing pass gives its bytes,
    its CRC and where each :data:`agent.PIECE` of it starts; :attr:`windows` then remakes a
    window's pieces from there when asked (the last few are kept), without a header read."""

    KEEP = 3  # the window being copied, the one being flushed, the one before it

    def __init__(
        self,
        ts: Tablespace | None,
        source: agent.Source,
        alloc: Allocation,
        *,
        dig_holes: bool,
        block: int,
        progress: ProgressFn | None,
    ) -> None:
        self.totals = PlanTotals()
        # the one header scan: what it found is kept a page in 2 bytes, and the plan (its
        # sum, then each window) is made from that
        keeps = None
        if ts is not None:
            keeps = page_keeps(ts, alloc, self.totals.needless, scan_progress(progress, ts))
        self._make = lambda start, totals, report: plan_stream(
            ts, source, alloc, dig_holes=dig_holes, block=block, totals=totals,
            progress=report, start=start, keeps=keeps,
        )  # fmt: skip
        self._unit = math.lcm(block, ts.physical_size if ts is not None else 1)
        marks = array("q")  # file offset of every PIECE-th byte of the plan
        crc = held = 0
        for start, end in self._make(0, self.totals, progress):
            crc = zlib.crc32(agent.RANGE.pack(start, end), crc)
            first = -(-held // agent.PIECE) * agent.PIECE
            for at in range(first, held + end - start, agent.PIECE):
                marks.append(start + at - held)
            held += end - start
        self.bytes = held
        self.crc = zlib.crc32(struct.pack(">Q", source.size), crc)
        self.window = agent.choose_window(held)
        step = self.window // agent.PIECE
        self._starts = marks[::step]
        self._lock = threading.Lock()
        self._kept: dict[int, Ranges] = {}
        self.windows = _Windows(self)

    def window_pieces(self, index: int) -> Ranges:
        with self._lock:
            pieces = self._kept.get(index)
            if pieces is None:
                at = self._starts[index]
                ranges = self._make(at // self._unit * self._unit, PlanTotals(), None)
                pieces = _first_window(ranges, at, self.window)
                if len(self._kept) >= self.KEEP:
                    del self._kept[min(self._kept)]
                self._kept[index] = pieces
            return pieces


def _first_window(ranges: Iterable[tuple[int, int]], at: int, window: int) -> Ranges:
    """The first window :func:`agent.iter_windows` cuts from ``ranges`` clipped at ``at``,
    made in one loop (a piece a page on a compressed file: no generator stage a piece)."""
    pieces = agent.Pieces()
    starts, ends = pieces.starts, pieces.ends
    piece = agent.PIECE
    held = 0
    for start, end in ranges:
        if end <= at:
            continue
        pos = max(start, at)
        while pos < end:
            stop = min(end, pos + piece, pos + window - held)
            starts.append(pos)
            ends.append(stop)
            held += stop - pos
            pos = stop
            if held >= window:
                return cast(Ranges, pieces)
    return cast(Ranges, pieces)


class _Windows(Sequence[Ranges]):
    """The windows of a :class:`StreamedPlan`, each made when it is read."""

    def __init__(self, plan: StreamedPlan) -> None:
        self._plan = plan

    def __len__(self) -> int:
        return len(self._plan._starts)

    @overload
    def __getitem__(self, index: int) -> Ranges: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Ranges]: ...
    def __getitem__(self, index: int | slice) -> Ranges | Sequence[Ranges]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._plan.window_pieces(index)


def tablespace_to_repunch(path: str, repunch: bool | None, notes: list[str]) -> Tablespace | None:
    """``path`` opened as a tablespace if it is to be re-punched (see :func:`wants_repunch`);
    None, with a note, if it is not one and ``repunch`` was not asked for explicitly."""
    if not wants_repunch(path, repunch):
        return None
    try:
        return Tablespace(path)
    except InputError as exc:
        if repunch:
            raise
        notes.append(f"not re-punched: {exc.message}")
        return None


def plan_for(
    path: str,
    source: agent.Source,
    alloc: Allocation,
    opts: CopyOptions,
    dest_block: int,
    progress: ProgressFn | None,
) -> Plan:
    """:func:`build_plan` for a copy with ``opts`` to a filesystem of ``dest_block`` blocks."""
    return build_plan(
        path,
        source,
        alloc,
        repunch=opts.repunch,
        dig_holes=opts.dig_holes,
        block=min(alloc.fs_block_size, dest_block),
        progress=progress,
    )


def _accumulate(report: Callable[[int], None]) -> Callable[[int], None]:
    total = 0

    def add(n: int) -> None:
        nonlocal total
        total += n
        report(total)

    return add


def is_tablespace(path: str) -> bool:
    try:
        with Tablespace(path):
            return True
    except InputError:
        return False


# --- page verification ---------------------------------------------------------------------------


def check_pages(path: str, reference: str | None = None) -> dict[str, Any]:
    """Every page checksum of ``path``; pages invalid there but not in ``reference`` fail."""
    from ibdtool.tablespace import check_file

    return pages_verdict(path, check_file(path), reference)


def pages_verdict(path: str, result: CheckResult, reference: str | None) -> dict[str, Any]:
    """:func:`check_pages` of a :class:`~ibdtool.tablespace.checksum.CheckResult` already made."""
    from ibdtool.tablespace import check_file

    pages = {
        "pages": result.pages,
        "valid": result.valid,
        "empty": result.empty,
        "invalid": len(result.invalid_pages),
        "unverifiable": result.unverifiable,
        "invalid_pages": result.invalid_pages[:100],
    }
    if result.invalid_pages and reference is not None:
        before = set(check_file(reference).invalid_pages)
        new = [p for p in result.invalid_pages if p not in before]
        pages["invalid_in_source_too"] = len(result.invalid_pages) - len(new)
        if new:
            shown = ", ".join(map(str, new[:10]))
            raise VerifyFailed(f"{path}: pages {shown} no longer verify after the copy")
    return pages


# --- local copy ----------------------------------------------------------------------------------


def _input_error(exc: agent.AgentError) -> IbdtoolError:
    if isinstance(exc, agent.VerifyError):
        return VerifyFailed(str(exc))
    return CopyFailed(str(exc))


def open_source(path: str) -> agent.Source:
    try:
        return agent.Source(path)
    except agent.AgentError as exc:
        raise InputError(str(exc)) from None


def source_in_use_note(path: str) -> str | None:
    """A warning when a server may be writing the file being copied."""
    try:
        users, _ = users_of(path)
    except OSError:
        return None
    if not users:
        return None
    return (
        f"{path}: {users[0].describe()}: the copy may be inconsistent unless the table is "
        "locked (FLUSH TABLES … FOR EXPORT) or the server is stopped"
    )


def copy_local(
    src: str, final: str, opts: CopyOptions, progress: ProgressFn | None = None
) -> CopyResult:
    """Copy ``src`` to ``final`` (a file path) on this host; see the module doc."""
    t0 = time.monotonic()
    source = open_source(src)
    try:
        alloc = read_allocation(source.fd, with_extents=False)
        result = CopyResult(src, final, source.size, alloc.allocated, verify=opts.verify)
        note = source_in_use_note(src)
        if note:
            result.notes.append(note)
        try:
            dest = agent.Destination(
                final,
                source.meta(),
                force=opts.force,
                resume=opts.resume,
                verify=opts.verify != "none",
                keep_owner=os.geteuid() == 0,
            )
        except agent.AgentError as exc:
            raise CopyFailed(str(exc)) from None
        ts = tablespace_to_repunch(src, opts.repunch, result.notes)
        try:
            plan = StreamedPlan(
                ts,
                source,
                alloc,
                dig_holes=opts.dig_holes,
                block=min(alloc.fs_block_size, dest.fs_block),
                progress=progress,
            )
            result.needless = plan.totals.needless if ts is not None else None
            result.zero_block_bytes = plan.totals.zero_block_bytes
            result.data_ranges, result.plan_bytes = len(alloc.data_ranges), plan.bytes
            checked = ts is not None or (src.endswith(".ibd") and is_tablespace(src))
            _run_local(source, dest, plan, checked, opts, result, progress)
        finally:
            if ts is not None:
                ts.close()
    finally:
        source.close()
    result.elapsed = time.monotonic() - t0
    return result


def _run_local(
    source: agent.Source,
    dest: agent.Destination,
    plan: StreamedPlan,
    pages_too: bool,
    opts: CopyOptions,
    result: CopyResult,
    progress: ProgressFn | None,
) -> None:
    verify = opts.verify != "none"
    done = False
    window_pages: WindowPages | None = None
    try:
        # --resume keeps a window only if the source, read again now, still has its CRC-32
        start = dest.prepare(
            [],
            plan.window,
            streamed=plan,
            source_sums=lambda n: [source.window_crc(dest.windows[i]) for i in range(n)],
        )
        if opts.verify == "full" and pages_too and start == 0:
            # the page check reads the windows back (ibdtool.copy.readback); a resumed copy
            # checks its pages in a pass of their own after it, as it did not read them all
            window_pages = _window_pages(source.path, dest)
        result.notes += dest.notes
        result.windows = len(dest.windows)
        result.resumed_bytes = min(plan.bytes, start * plan.window)
        copied = held = 0
        limit = agent.RateLimit(opts.bwlimit)
        due = Ticker()
        for index in range(start, len(dest.windows)):
            pieces = dest.windows[index]
            crc = 0 if verify else None
            step = max(1, min(BATCH_PIECES, BATCH_BYTES * len(pieces) // plan.window))
            for at in range(0, len(pieces), step):
                batch = pieces[at : at + step]
                crc, n = dest.copy_pieces(source.fd, batch, crc)
                copied += n
                limit.account(n)
                if progress is not None and due():
                    progress(CopyProgress("copy", batch[-1][1], source.size, copied, copied, held))
            dest.checkpoint(index, crc or 0)
            held = dest.allocated()
        if progress is not None:
            progress(CopyProgress("copy", source.size, source.size, copied, copied, held))
        source.check_unchanged()
        result.bytes_read = result.bytes_sent = copied
        result.dest_allocated = dest.seal()
        result.notes += [n for n in dest.notes if n not in result.notes]
        if window_pages is not None:
            result.pages = pages_verdict(dest.part, window_pages.finish(), source.path)
            result.pages["where"] = "destination"
        elif opts.verify == "full" and pages_too:
            if progress is not None:
                progress(CopyProgress("check", source.size, source.size))
            result.pages = check_pages(dest.part, reference=source.path)
            result.pages["where"] = "destination"
        dest.commit()
        done = True
    except KeyboardInterrupt:
        kept = dest.abandon(keep=True)
        raise CopyInterrupted(_interrupted_message(dest, kept)) from None
    except agent.AgentError as exc:
        raise _input_error(exc) from None
    finally:
        if not done and dest.fd >= 0:
            dest.abandon(keep=False)
        if window_pages is not None:
            window_pages.ts.close()


def _window_pages(path: str, dest: agent.Destination) -> WindowPages:
    """The read-back of ``dest`` that also verifies its pages; the source's tablespace opened
    again (the plan's scan reads the other one in this thread meanwhile)."""
    from ibdtool.copy.readback import WindowPages

    pages = WindowPages(Tablespace(path), dest.part)
    dest.read_back = pages
    return pages


def _interrupted_message(dest: agent.Destination, kept: bool) -> str:
    if kept:
        return (
            f"interrupted: {dest.part} holds the verified part; run the same command "
            "with --resume to continue"
        )
    return "interrupted before any data was verified; nothing was kept"


# --- in place ------------------------------------------------------------------------------------


@dataclass
class InPlaceResult:
    path: str
    logical_size: int
    allocated_before: int
    allocated_after: int = 0
    needless: Needless | None = None
    zero_block_bytes: int = 0
    punched_bytes: int = 0
    pages: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    elapsed: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "logical_size": self.logical_size,
            "allocated_before": self.allocated_before,
            "allocated_after": self.allocated_after,
            "repunch": self.needless.to_json() if self.needless else None,
            "zero_block_bytes": self.zero_block_bytes,
            "punched_bytes": self.punched_bytes,
            "pages": self.pages,
            "notes": self.notes,
            "elapsed_s": round(self.elapsed, 3),
        }


def refuse_if_in_use(path: str, fd: int) -> None:
    """Refuse to touch a file a server may be using (see :func:`ibdtool.fs.users.users_of`)."""
    if not lock_exclusive(fd):
        raise CopyFailed(
            f"{path}: locked by another process (a running server?); stop it before "
            "re-punching in place"
        )
    users, complete = users_of(path)
    if users:
        raise CopyFailed(f"{path}: {users[0].describe()}; stop it before re-punching in place")
    if not complete:
        raise CopyFailed(
            f"{path}: cannot see other users' processes to make sure no server has the file "
            "open; run as root"
        )


def repunch_in_place(
    path: str,
    *,
    repunch: bool = True,
    dig_holes: bool = False,
    verify: str = "full",
    confirm: Callable[[InPlaceResult], bool] | None,
    progress: ProgressFn | None = None,
) -> InPlaceResult:
    """Punch the needless zero ranges of ``path`` itself, after :func:`refuse_if_in_use` and
    ``confirm(preview)`` (None: nothing to ask, ``--yes``); the page headers are scanned once
    either way. The file reads back byte for byte the same afterwards."""
    t0 = time.monotonic()
    try:  # never through a link the data directory's owner may have planted
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(f"{path}: a symbolic link; give the file it points to") from None
        raise InputError(agent.describe_oserror(path, exc)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{path}: not a regular file")
        if st.st_nlink != 1:
            raise InputError(f"{path}: has {st.st_nlink} hard links; not changed in place")
        refuse_if_in_use(path, fd)
        alloc = read_allocation(fd, with_extents=False)
        result = InPlaceResult(path, st.st_size, alloc.allocated)
        source = agent.Source(path)
        try:
            ts = tablespace_to_repunch(path, repunch, result.notes)
            try:
                tally = _punch_streamed(
                    path, fd, st, ts, source, alloc, result, dig_holes, verify, confirm, progress
                )
                if tally is not None and ts is not None and result.punched_bytes:
                    if progress is not None:
                        progress(CopyProgress("check", st.st_size, st.st_size))
                    result.pages = _scanned_pages(path, ts, alloc, tally)
            finally:
                if ts is not None:
                    ts.close()
        finally:
            source.close()
        if not result.punched_bytes:
            return result
        if verify == "full" and result.pages is None:
            if progress is not None:
                progress(CopyProgress("check", st.st_size, st.st_size))
            result.pages = check_pages(path)
            result.pages["where"] = "file"
        result.allocated_after = os.fstat(fd).st_blocks * 512
    finally:
        os.close(fd)
    result.elapsed = time.monotonic() - t0
    return result


def _punch_streamed(
    path: str,
    fd: int,
    st: os.stat_result,
    ts: Tablespace | None,
    source: agent.Source,
    alloc: Allocation,
    result: InPlaceResult,
    dig_holes: bool,
    verify: str,
    confirm: Callable[[InPlaceResult], bool] | None,
    progress: ProgressFn | None,
) -> ChecksumTally | None:
    """One scan of the headers (:func:`ibdtool.copy.repunch.page_keeps`, 2 bytes a page),
    then what it found is counted for the preview (``confirm``) and punched, each range read
    back as zeros right after (``verify``). Where pages are whole blocks and no zero block is
    dug, the ranges punched are the needless ranges themselves, block-aligned: each lies in a
    wholly allocated slot, so the plan's complement less the file's holes is exactly them,
    and no range algebra runs (a call a range, as ``fallocate -d`` makes).

    There, with ``verify="full"``, the scan also verifies the pages it reads, and the tally is
    returned for :func:`_scanned_pages` (None: the caller checks the file after)."""
    block = alloc.fs_block_size
    totals = PlanTotals()
    keeps = None
    psize = 0
    direct = ts is not None and not dig_holes and ts.physical_size % block == 0
    tally = None
    if ts is not None:
        psize = ts.physical_size
        if direct and verify == "full":
            from ibdtool.tablespace import ChecksumTally

            tally = ChecksumTally(ts)
        keeps = page_keeps(ts, alloc, totals.needless, scan_progress(progress, ts), tally)

    def punches(counts: PlanTotals, report: ProgressFn | None) -> Iterator[tuple[int, int]]:
        if direct:  # aligned in the punch loop
            assert keeps is not None
            return needless_of(keeps, psize)
        plan = plan_stream(
            ts, source, alloc, dig_holes=dig_holes, block=block, totals=counts,
            progress=report, keeps=keeps,
        )  # fmt: skip
        holes = iter_align_inward(iter_complement(plan, st.st_size), block)
        return iter_subtract(holes, alloc.iter_hole_ranges())

    if confirm is not None:
        preview = punches(totals, progress)
        if direct:  # aligned here as the punch loop aligns them
            preview = iter_align_inward(preview, block)
        result.punched_bytes = sum(end - start for start, end in preview)
        _preview_totals(result, totals, ts)
        if not result.punched_bytes:
            result.allocated_after = alloc.allocated
            result.notes.append("nothing to punch: the file already has its holes")
            return None
        if not confirm(result):
            raise CopyFailed(f"{path}: not changed (not confirmed)")
        totals = PlanTotals(needless=totals.needless)  # the zero blocks are counted again
    _same_file_or_fail(path, st)
    punched = 0
    tick = progress if direct else None
    due = Ticker()
    punch, lseek, check = agent.punch_hole, os.lseek, verify != "none"
    for start, end in punches(totals, None if direct else _as_punching(progress)):
        if direct:
            start = -(-start // block) * block
            if end <= start:
                continue
        if not punch(fd, start, end - start):
            raise CopyFailed(f"{path}: the filesystem cannot punch holes")
        if check:  # _verify_zeros, its first look inlined: a punched range is a hole
            try:
                data = lseek(fd, start, os.SEEK_DATA)
            except OSError:
                data = start
            if data < end:
                _verify_zeros(path, fd, [(start, end)])
        punched += end - start
        if tick is not None and due():
            tick(CopyProgress("punch", end, st.st_size))
    if confirm is None:
        result.punched_bytes = punched
        _preview_totals(result, totals, ts)
        if not punched:
            result.allocated_after = alloc.allocated
            result.notes.append("nothing to punch: the file already has its holes")
            return None
    elif punched != result.punched_bytes:  # cannot happen on a file nothing else writes
        raise VerifyFailed(
            f"{path}: {punched} bytes punched, {result.punched_bytes} expected; the file changed"
        )
    os.fsync(fd)
    return tally


def _scanned_pages(
    path: str, ts: Tablespace, alloc: Allocation, tally: ChecksumTally
) -> dict[str, Any]:
    """The page check of ``--in-place --verify full`` (what :func:`check_pages` gives, read
    again after the punches) from the bytes the scan verified (``tally``) and, read now, the
    pages it did not scan (slots not wholly allocated: never punched). An equal proof: the
    scan read each page once, found every range punched all zeros in those same bytes, and
    each punched range was then found a hole (``SEEK_DATA``, else read back as zeros); nothing
    else of the file is written (the exclusive lock, no user: :func:`refuse_if_in_use`), and
    a punch of whole blocks changes no byte outside its range. So the file now holds the
    bytes verified, and its pages verify as they did, without a second read of the file."""
    from ibdtool.tablespace import check_result, scan_range

    n = ts.n_pages
    parts = [tally.part()]
    pos = 0
    for run in [*candidate_runs(alloc, ts.physical_size, n), range(n, n)]:
        if run.start > pos:
            parts.append(scan_range(ts, pos, run.start))
        pos = max(pos, run.stop)
    pages = pages_verdict(path, check_result(path, n, ts, parts), None)
    pages["where"] = "file"
    return pages


def _preview_totals(result: InPlaceResult, totals: PlanTotals, ts: Tablespace | None) -> None:
    result.needless = totals.needless if ts is not None else None
    result.zero_block_bytes = totals.zero_block_bytes


def _as_punching(progress: ProgressFn | None) -> ProgressFn | None:
    """The second scan's progress, shown as punching."""
    if progress is None:
        return None
    return lambda ev: progress(CopyProgress("punch", ev.done, ev.total))


def _same_file_or_fail(path: str, st: os.stat_result) -> None:
    """The plan was read through ``path``: refuse if it now names another file than ``st``."""
    try:
        now = os.stat(path, follow_symlinks=False)
    except OSError as exc:
        raise CopyFailed(agent.describe_oserror(path, exc)) from None
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
        raise CopyFailed(f"{path}: replaced by another file while being read; not changed")


def _verify_zeros(path: str, fd: int, ranges: Ranges) -> None:
    """Each range reads as zeros. Where ``SEEK_DATA`` says the filesystem holds no data (a
    hole: it reads as zeros by definition) nothing is read; the rest is read and compared.
    Reading a range just punched would only fill the page cache with zero pages: the punch
    loop of ``--in-place`` spent most of its time there (RESULTS.md, h-copy)."""
    for start, end in ranges:
        pos = start
        while pos < end:
            pos = _next_data(fd, pos, end)
            if pos >= end:
                break
            data = os.pread(fd, min(agent.PIECE, end - pos), pos)
            if not data or data.count(0) != len(data):
                raise VerifyFailed(f"{path}: bytes {start}..{end} do not read as zeros")
            pos += len(data)


def _next_data(fd: int, pos: int, end: int) -> int:
    """The first offset at or after ``pos`` that may hold data (``end`` if none before it);
    ``pos`` itself where ``SEEK_DATA`` is not supported."""
    try:
        return min(os.lseek(fd, pos, os.SEEK_DATA), end)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # only a hole up to the end of the file
            return end
        return pos
