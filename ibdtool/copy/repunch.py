"""InnoDB-aware re-punching: which bytes of a tablespace are needless, and who holds the file.

A tablespace that lost its holes (copied with scp, cat, or a tool that expands sparse files)
still holds, in every compressed page slot, the zero bytes beyond the stored image, and whole
all-zero pages. The server never reads them: MySQL type-14 pages end at ``38 + compressed size``,
MariaDB page_compressed images at their stored size, and the server punches the rest when it
writes. :func:`needless_ranges` finds them so a copy can leave them out, as the server would
have.

Only each page's stored size is needed, and the header holds it (the full_crc32 type word,
the type-14 metadata, the classic length field): :func:`ibdtool.parsers.envelope.read_envelope`
reads it, for the pages whose type word says compressed; nothing is decompressed and no per-page
object is made. The file is read in big chunks (only its fully allocated page slots: a slot
the server punched has nothing left to find) and adjacent ranges are merged as they are found.

One rule keeps this safe: a range is needless only if its bytes are zero now, so the punched
file reads back byte for byte the same whatever the header says, and a stale tail left by a
server that could not punch is kept. A damaged header can therefore cost a hole, never a byte;
an impossible size (:attr:`Envelope.problem`) is not used at all.
Punching ``[image end, slot end)`` frees the whole filesystem blocks in it whatever the block
size, i.e. down to ``align_up(image, block)`` as the server does.

:func:`ibdtool.fs.users.users_of` tells ``--in-place`` whether a server may be using the file.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from operator import or_
from typing import TYPE_CHECKING

from ibdtool.fs import Allocation
from ibdtool.parsers.envelope import (
    fcrc32_stored_size,
    may_have_stored_size,
    read_envelope,
    sized_pages,
)
from ibdtool.tablespace import CHUNK_BYTES, Tablespace, map_ranges

if TYPE_CHECKING:  # the page check loads the page decoder: only when one is asked for
    from ibdtool.tablespace import ChecksumTally


@dataclass
class Needless:
    """Zero byte ranges a tablespace does not need, and what they came from."""

    ranges: list[tuple[int, int]] = field(default_factory=list)
    compressed_slots: int = 0  # compressed pages with a zero tail beyond their image
    zero_pages: int = 0  # all-zero pages
    stale_tails: int = 0  # compressed pages with non-zero bytes beyond their image (kept)
    pages_scanned: int = 0
    bytes: int = 0  # counted as found: a streamed scan (:func:`iter_needless`) keeps no ranges

    def to_json(self) -> dict[str, int]:
        return {
            "bytes": self.bytes,
            "compressed_slots": self.compressed_slots,
            "zero_pages": self.zero_pages,
            "stale_tails": self.stale_tails,
            "pages_scanned": self.pages_scanned,
        }


def candidate_runs(
    alloc: Allocation | None, page_size: int, n_pages: int, first_page: int = 0
) -> list[range]:
    """Runs of pages worth reading: every page, or (given the file's allocation) only the
    pages whose whole slot is allocated; a partly allocated slot was punched by the server.
    Worked out from the data ranges (one run each at most), not page by page; none before
    ``first_page``."""
    if alloc is None:
        return [range(first_page, n_pages)] if n_pages > first_page else []
    runs: list[range] = []
    for start, end in alloc.data_ranges_from(first_page * page_size):
        first, stop = -(-start // page_size), min(n_pages, end // page_size)
        if stop <= first:
            continue
        if runs and runs[-1].stop == first:
            runs[-1] = range(runs[-1].start, stop)
        else:
            runs.append(range(first, stop))
    return runs


_ZEROS = bytearray()


def _zeros(n: int) -> memoryview:
    global _ZEROS
    if len(_ZEROS) < n:
        _ZEROS = bytearray(max(n, 65536))
    return memoryview(_ZEROS)[:n]


PARALLEL_MIN_PAGES = 8192
#: windows of a split scan a process (:func:`ibdtool.tablespace.map_ranges`)
WINDOWS_A_JOB = 4


def needless_ranges(
    ts: Tablespace,
    alloc: Allocation | None = None,
    progress: Callable[[int, int], None] | None = None,
    jobs: int | None = None,
) -> Needless:
    """The needless zero ranges of ``ts`` (see module doc), sorted and merged.

    With ``alloc`` (the file's :class:`Allocation`) only fully allocated page slots are
    read: on a file that kept its holes that is a handful of pages. Many pages are split
    over ``jobs`` forked processes (default: all cores).
    ``progress(pages_done, pages_total)`` is called now and then.
    """
    runs = candidate_runs(alloc, ts.physical_size, ts.n_pages)
    total = sum(len(r) for r in runs)
    jobs = jobs or os.cpu_count() or 1
    if jobs == 1 or total < PARALLEL_MIN_PAGES:
        return _scan(ts, runs, progress, total)
    # windows of as many candidate pages each, handed out as the processes free up
    parts = _balanced(runs, WINDOWS_A_JOB * jobs)
    here = os.getpid()
    done_here = 0  # this process's pages over its windows: its share of the progress

    def scan(t: Tablespace, a: int, b: int) -> Needless:
        nonlocal done_here
        if progress is None or os.getpid() != here:
            return _scan(t, _clip(runs, a, b), None, total)
        base = done_here

        def scaled(done: int, _total: int) -> None:
            progress(min(total, (base + done) * jobs), total)

        part = _scan(t, _clip(runs, a, b), scaled, total)
        done_here += part.pages_scanned
        return part

    results = map_ranges(ts, scan, parts, jobs)
    out = Needless()
    for part in results:
        for start, end in part.ranges:
            _append(out.ranges, start, end)
        out.compressed_slots += part.compressed_slots
        out.zero_pages += part.zero_pages
        out.stale_tails += part.stale_tails
        out.pages_scanned += part.pages_scanned
        out.bytes += part.bytes
    if progress is not None:
        progress(total, total)
    return out


def _balanced(runs: list[range], jobs: int) -> list[tuple[int, int]]:
    """Page ranges covering ``runs`` with about the same number of candidate pages each."""
    total = sum(len(r) for r in runs)
    share = -(-total // jobs)
    cuts: list[tuple[int, int]] = []
    start, held = runs[0].start, 0
    for run in runs:
        pos = run.start
        while run.stop - pos > share - held:
            pos += share - held
            cuts.append((start, pos))
            start, held = pos, 0
        held += run.stop - pos
    cuts.append((start, runs[-1].stop))
    return [c for c in cuts if c[1] > c[0]]


def _clip(runs: list[range], start: int, stop: int) -> list[range]:
    out = []
    for run in runs:
        lo, hi = max(run.start, start), min(run.stop, stop)
        if hi > lo:
            out.append(range(lo, hi))
    return out


def _scan(
    ts: Tablespace,
    runs: list[range],
    progress: Callable[[int, int], None] | None,
    total: int,
) -> Needless:
    """:func:`_iter_scan`, its ranges kept in a list."""
    out = Needless()
    out.ranges = list(_iter_scan(ts, runs, progress, total, out))
    return out


def iter_needless(
    ts: Tablespace,
    alloc: Allocation | None,
    counts: Needless,
    progress: Callable[[int, int], None] | None = None,
    first_page: int = 0,
) -> Iterator[tuple[int, int]]:
    """The ranges of :func:`needless_ranges`, sorted and merged, made as they are consumed:
    memory does not grow with the page count (``counts`` gets the totals, not the ranges).
    One process; call again to scan again (a file's headers are cheap to re-read). From
    ``first_page`` on, a range reaching back before it is cut at its start."""
    runs = candidate_runs(alloc, ts.physical_size, ts.n_pages, first_page)
    return _iter_scan(ts, runs, progress, sum(len(r) for r in runs), counts)


def _iter_scan(
    ts: Tablespace,
    runs: list[range],
    progress: Callable[[int, int], None] | None,
    total: int,
    out: Needless,
) -> Iterator[tuple[int, int]]:
    """Chunk by chunk: a page whose type word is 0 may be all zeros (the whole slot goes); a
    page whose type word says compressed has its stored size read from its header and the
    zeros after it go. Every other page is one comparison of two bytes. Adjacent ranges are
    merged before they are yielded; ``out`` counts what was found."""
    fmt = ts.format
    psize = ts.physical_size
    zero = _zeros(psize)
    fcrc32 = fmt.full_crc32
    per_chunk = max(1, CHUNK_BYTES // psize)
    done = 0
    held_start = held_end = -1  # the range being merged, not yet yielded
    for run in runs:
        for first, chunk in ts.read_pages(run.start, run.stop, per_chunk):
            mv = memoryview(chunk)
            base = first * psize
            for off in range(0, len(chunk), psize):
                word = chunk[off + 24 : off + 26]
                # zero tests are bytes.startswith (memcmp): comparing memoryviews goes byte
                # by byte, ~500 times slower
                if word == b"\0\0":
                    if not chunk.startswith(zero, off):
                        continue
                    out.zero_pages += 1
                    start = off
                elif may_have_stored_size(word, fcrc32):
                    # full_crc32: the stored size is the type word's own (§3.2), as
                    # read_envelope gives it, without the envelope (half the scan's time)
                    image = (
                        fcrc32_stored_size(int.from_bytes(word, "big"), psize)
                        if fcrc32
                        else read_envelope(mv[off : off + psize], fmt).stored_size
                    )
                    if not image or image >= psize:
                        continue
                    if chunk.startswith(zero[: psize - image], off + image):
                        out.compressed_slots += 1
                        start = off + image
                    else:
                        kept = len(chunk[off + image : off + psize].rstrip(b"\0"))
                        out.stale_tails += 1
                        if image + kept >= psize:
                            continue
                        start = off + image + kept
                else:
                    continue
                out.bytes += off + psize - start
                at = base + start
                if held_end != at:
                    if held_end > held_start:
                        yield held_start, held_end
                    held_start = at
                held_end = base + off + psize
            done += len(chunk) // psize
            out.pages_scanned = done
            if progress is not None:
                progress(done, total)
    if held_end > held_start:
        yield held_start, held_end


def page_keeps(
    ts: Tablespace,
    alloc: Allocation | None,
    counts: Needless,
    progress: Callable[[int, int], None] | None = None,
    tally: ChecksumTally | None = None,
) -> array[int]:
    """:func:`iter_needless` of the whole file, kept as what it leaves of each page: per page,
    the bytes from its slot's start that are not needless (the page size: all of them), 2
    bytes a page (4 for 64 KiB pages), where the ranges would take 16 or more. The array ends
    after the last page with needless bytes (the pages past it keep all theirs): a file that
    kept its holes (a page-compressed table as its server punched it) has none to keep, and
    its copy holds no array at all. One scan gives it; :func:`needless_of` and
    :func:`kept_pieces` then make the plan from it as often as asked, without reading a header
    again (a copy cuts its windows from it).

    The scan is :func:`_iter_scan`'s rules page for page (the tests compare the two on real
    and fragmented files), made chunk by chunk without a Python frame a page: the type words
    of a chunk's pages are two strided slices, only the pages whose word is zero or says
    compressed are looked at, and each chunk is read into one buffer reused for the next
    (:meth:`Tablespace.read_chunks`: no fresh 4 MiB a chunk to fault in). With ``tally``, the
    pages scanned are also verified from the same bytes (``checksum``'s engine), the pages
    outside the candidate runs (:func:`candidate_runs`) left to the caller."""
    psize = ts.physical_size
    keeps = array("H" if psize <= 0xFFFF else "I")
    whole = array(keeps.typecode, [psize])
    runs = candidate_runs(alloc, psize, ts.n_pages)
    total = sum(len(r) for r in runs)
    done = 0
    for run in runs:
        for first, view in ts.read_chunks(run.start, run.stop, CHUNK_BYTES):
            n = len(view) // psize
            for page, keep in _chunk_keeps(view, n, ts, counts):
                at = first + page
                if len(keeps) <= at:
                    keeps.extend(whole * (at + 1 - len(keeps)))
                keeps[at] = keep
            if tally is not None:
                tally.chunk(first, view[: n * psize])
            done += n
            counts.pages_scanned = done
            if progress is not None:
                progress(done, total)
    return keeps


_TAILS: dict[int, memoryview] = {}


def _zero_tail(n: int) -> memoryview:
    """``n`` zero bytes to compare a page's tail with (one view a length, kept)."""
    tail = _TAILS.get(n)
    if tail is None:
        tail = _TAILS[n] = memoryview(bytes(n))
    return tail


def _chunk_keeps(
    view: memoryview, n: int, ts: Tablespace, counts: Needless
) -> list[tuple[int, int]]:
    """``(page in the chunk, bytes it keeps)`` for each of the ``n`` whole pages of ``view``
    that has needless bytes (see :func:`_iter_scan`, whose rules these are), ``counts``
    added to. Pages whose type word is neither zero nor a compressed one are never visited:
    the words of the chunk come as two strided slices, and the candidates are found in them
    by C loops (``translate``, ``find``)."""
    fmt = ts.format
    psize = ts.physical_size
    fcrc32 = fmt.full_crc32
    end = n * psize
    # the bytes methods (startswith, find, rstrip: memcmp and C loops) need the object itself:
    # read_chunks' views start at their buffer's first byte
    buf = view.obj
    if not isinstance(buf, (bytes, bytearray)) or len(buf) < end:
        buf = bytes(view[:end])
    hi = bytes(buf[24:end:psize])
    lo = bytes(buf[25:end:psize])
    out: list[tuple[int, int]] = []
    zero_page = _zero_tail(psize)
    startswith = buf.startswith
    # all-zero pages: only those whose type word is zero (``hi | lo`` has a zero byte there)
    either = bytes(map(or_, hi, lo)) if hi.count(0) else b"\1"
    zero_pages = 0
    at = either.find(0)
    while at >= 0:
        if startswith(zero_page, at * psize):
            out.append((at, 0))
            zero_pages += 1
        at = either.find(0, at + 1)
    slots = stale = needless = 0
    for page in sized_pages(view[:end], psize, fcrc32):
        off = page * psize
        if fcrc32:
            image = fcrc32_stored_size(hi[page] << 8 | lo[page], psize)
        else:
            image = read_envelope(view[off : off + psize], fmt).stored_size
        if not image or image >= psize:
            continue
        if startswith(_zero_tail(psize - image), off + image):
            slots += 1
            keep = image
        else:
            stale += 1
            keep = image + len(buf[off + image : off + psize].rstrip(b"\0"))
            if keep >= psize:
                continue
        needless += psize - keep
        out.append((page, keep))
    counts.zero_pages += zero_pages
    counts.compressed_slots += slots
    counts.stale_tails += stale
    counts.bytes += needless + zero_pages * psize
    return out


def needless_of(keeps: array[int], psize: int, first_page: int = 0) -> Iterator[tuple[int, int]]:
    """The ranges :func:`iter_needless` found, sorted and merged, made again from
    :func:`page_keeps`, from ``first_page`` on (a range reaching back before it is cut at
    its start, as there)."""
    held_start = held_end = -1
    for page in range(first_page, len(keeps)):
        keep = keeps[page]
        if keep == psize:
            continue
        base = page * psize
        if held_end != base + keep:
            if held_end > held_start:
                yield held_start, held_end
            held_start = base + keep
        held_end = base + psize
    if held_end > held_start:
        yield held_start, held_end


def kept_pieces(
    keeps: array[int], psize: int, block: int, data: Iterable[tuple[int, int]]
) -> Iterator[tuple[int, int]]:
    """The ``data`` ranges less the needless bytes of :func:`page_keeps` each shrunk to whole
    ``block``s, merged: what ``iter_subtract(data, iter_align_inward(needless_of(keeps),
    block))`` gives, one step a page instead of a generator stage a range. Only for a
    ``psize`` that is a multiple of ``block`` (each page's needless tail then ends on a
    block boundary and is freed from ``align_up(keep, block)``, merged or not)."""
    if psize % block:
        raise ValueError("kept_pieces needs whole blocks a page")
    n = len(keeps)
    held_start = held_end = -1
    for start, end in data:
        pos = start
        page = start // psize
        while pos < end:
            slot = page * psize
            if page >= n:  # past the pages (a file cut short of a whole page): all kept
                stop = slot = end
            else:
                keep = keeps[page]
                stop = slot + (keep if keep == psize else -(-keep // block) * block)
                if stop > end:
                    stop = end
            if stop > pos:
                if held_end != pos:
                    if held_end > held_start:
                        yield held_start, held_end
                    held_start = pos
                held_end = stop
            pos = slot + psize
            page += 1
    if held_end > held_start:
        yield held_start, held_end


def _append(ranges: list[tuple[int, int]], start: int, end: int) -> None:
    if ranges and ranges[-1][1] == start:
        ranges[-1] = (ranges[-1][0], end)
    elif end > start:
        ranges.append((start, end))


# --- who uses the file ---------------------------------------------------------------------------
