"""What the filesystem really stores for a file: allocation, holes and extents.

An InnoDB tablespace's pages say what *should* be there; this module asks the kernel what
*is* there, without looking at a single byte of content:

* ``st_blocks`` (via ``fstat``) gives the bytes the filesystem charges for the file;
* ``lseek(SEEK_DATA / SEEK_HOLE)`` gives the byte ranges that hold data (everything else
  is a hole, e.g. left by InnoDB page compression's punch-hole);
* the ``FS_IOC_FIEMAP`` ioctl gives the kernel's extent list (count, unwritten extents).

Linux only. The inspected file is only ever opened read-only (and with ``O_NOATIME`` when we
may), FIEMAP is called without ``FIEMAP_FLAG_SYNC`` so that inspecting never triggers
writeback, and an fd handed in by the caller gets its file offset back.

Note (ext4, and iomap filesystems in general): an *unwritten* extent — space reserved by
``fallocate`` but never written — is reported as a **hole** by ``SEEK_DATA``, yet it is
counted in ``st_blocks`` and shows in FIEMAP with ``FIEMAP_EXTENT_UNWRITTEN``. So
``allocated`` may exceed :attr:`Allocation.data_bytes`; :attr:`Allocation.unwritten_bytes`
accounts for that difference. Dirty page-cache data over an unwritten extent is reported as
data by ``SEEK_DATA`` even before writeback.
"""

# No ``from __future__ import annotations`` here: a NamedTuple's string annotations are each
# compiled by typing when the class is made, ~0.9 ms of every start over the records of
# inspect's path (issue 24, item 4; tests/test_startup.py checks them)

import errno
import fcntl
import os
import stat
import struct
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from itertools import compress, repeat
from operator import add, ne, sub
from typing import NamedTuple

from ibdtool.fs.opening import open_nonblocking
from ibdtool.fs.ranges import PackedRanges

__all__ = [
    "FIEMAP_EXTENT_DELALLOC",
    "FIEMAP_EXTENT_LAST",
    "FIEMAP_EXTENT_UNKNOWN",
    "FIEMAP_EXTENT_UNWRITTEN",
    "FS_IOC_FIEMAP",
    "Allocation",
    "AllocationTotals",
    "Extent",
    "PackedRanges",
    "WindowCounts",
    "allocation_stat",
    "contiguous_runs",
    "data_ranges",
    "fiemap",
    "fiemap_tuples",
    "iter_fiemap",
    "join_windows",
    "ranges_from_extents",
    "read_allocation",
    "read_window",
    "scan_ranges",
]

# --- kernel ABI (include/uapi/linux/fiemap.h, include/uapi/linux/fs.h) ---------------------

FS_IOC_FIEMAP = 0xC020660B  # _IOWR('f', 11, struct fiemap)

FIEMAP_MAX_OFFSET = 0xFFFF_FFFF_FFFF_FFFF  # ~0ULL: "map to the end"
FIEMAP_FLAG_SYNC = 0x0001  # deliberately never used: it would force writeback

FIEMAP_EXTENT_LAST = 0x0001
FIEMAP_EXTENT_UNKNOWN = 0x0002
FIEMAP_EXTENT_DELALLOC = 0x0004
FIEMAP_EXTENT_UNWRITTEN = 0x0800
FIEMAP_EXTENT_SHARED = 0x2000

# struct fiemap: fm_start u64, fm_length u64, fm_flags u32, fm_mapped_extents u32,
#                fm_extent_count u32, fm_reserved u32  -> 32 bytes, native byte order
_FIEMAP_HEADER = struct.Struct("=QQIIII")
# struct fiemap_extent: fe_logical u64, fe_physical u64, fe_length u64, fe_reserved64[2],
#                       fe_flags u32, fe_reserved[3]  -> 56 bytes
_FIEMAP_EXTENT = struct.Struct("=QQQ16xI12x")
assert _FIEMAP_HEADER.size == 32 and _FIEMAP_EXTENT.size == 56

#: Extents asked for per FIEMAP call (32 + 512 * 56 bytes = 28 KiB buffer).
FIEMAP_BATCH = 512
#: … by the allocation snapshot, which reads them all (a 448 KiB buffer, 11 calls for 89k)
FIEMAP_BIG_BATCH = 8192

#: an extent as FIEMAP gives it: (logical, physical, length, flags)
Extent4 = tuple[int, int, int, int]

_FIEMAP_UNSUPPORTED = frozenset({errno.ENOTTY, errno.EOPNOTSUPP, errno.ENOTSUP})


class Extent(NamedTuple):
    """One extent as FS_IOC_FIEMAP reports it (bytes; ``physical`` is on the device)."""

    logical: int
    physical: int
    length: int
    flags: int

    @property
    def end(self) -> int:
        """Logical end offset (exclusive)."""
        return self.logical + self.length

    @property
    def unwritten(self) -> bool:
        """Space is allocated but reads as zeros (``fallocate`` without a later write)."""
        return bool(self.flags & FIEMAP_EXTENT_UNWRITTEN)

    @property
    def last(self) -> bool:
        """The kernel marked this the file's last extent."""
        return bool(self.flags & FIEMAP_EXTENT_LAST)

    @property
    def delalloc(self) -> bool:
        """Delayed allocation: data is in the page cache, no physical location yet."""
        return bool(self.flags & FIEMAP_EXTENT_DELALLOC)

    @property
    def unknown_location(self) -> bool:
        """``physical`` is meaningless (delalloc, or data not on a local device)."""
        return bool(self.flags & FIEMAP_EXTENT_UNKNOWN)


def data_ranges(fd: int, size: int, start: int = 0, stop: int | None = None) -> PackedRanges:
    """Byte ranges ``[start, end)`` holding data, found with ``lseek(SEEK_DATA/SEEK_HOLE)``.

    Ranges are clipped to ``size`` (normally ``st_size``), merged and in file order. If the
    filesystem or kernel does not support ``SEEK_DATA`` (``EINVAL``), the whole file is one
    data range. The fd's file offset is restored afterwards. ``start``/``stop``: only the
    ranges that meet ``[start, stop)``, the first cut at ``start`` (the last one whole).
    """
    ranges = PackedRanges()
    limit = size if stop is None else min(size, stop)
    if limit <= start:
        return ranges
    saved = os.lseek(fd, 0, os.SEEK_CUR)
    try:
        pos = start
        while pos < limit:
            try:
                data = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # no data at or after pos
                    break
                if exc.errno == errno.EINVAL and not ranges and pos == start:
                    return PackedRanges([(start, size)])  # SEEK_DATA unsupported: all data
                raise
            if data >= limit:
                break
            try:
                end = os.lseek(fd, data, os.SEEK_HOLE)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # file shrank under us: nothing more
                    break
                raise
            end = min(end, size)
            if end <= data:  # defensive: never loop in place
                end = data + 1
            ranges.add(data, end)
            pos = end
    finally:
        os.lseek(fd, saved, os.SEEK_SET)
    return ranges


#: extent flags under which FIEMAP and SEEK_DATA may disagree on what is data: unwritten
#: extents read as holes (or as data where dirty pages lie over them), delayed allocation and
#: unknown locations are dirty page cache the ioctl sees before writeback
_FIEMAP_NOT_PLAIN = FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_UNKNOWN


def ranges_from_extents(
    extents: Iterable[tuple[int, int, int, int]], size: int
) -> PackedRanges | None:
    """:func:`data_ranges` from :func:`fiemap_tuples`' extents (clipped to ``size``, touching
    ones merged), or None where an extent is unwritten, delayed or of unknown location: there
    only ``SEEK_DATA`` says what reads as data. A page-compressed file has a hole in every
    page; FIEMAP lists its 89,000 extents in 11 calls where ``SEEK_DATA``/``SEEK_HOLE`` take
    178,000 (0.24 s of a 1 s scan, and in the parent, before any fork)."""
    ranges = PackedRanges()
    for logical, _physical, length, flags in extents:
        if flags & _FIEMAP_NOT_PLAIN:
            return None
        ranges.add(logical, min(logical + length, size))
    return ranges


def scan_ranges(
    fd: int, size: int, step: int, start: int = 0, stop: int | None = None
) -> PackedRanges:
    """Byte ranges ``[start, end)`` that hold all the data of the file, zeros maybe included:
    ``lseek(SEEK_DATA)`` probed once every ``step`` bytes of data, not twice per hole.

    A scan skips only long holes, so it needs no exact map: a hole that holds a probe point is
    found from there on, so every hole of ``2 * step`` bytes or more is (mostly) skipped, and a
    shorter one may be read as data (zeros, which is what a hole reads as). A page-compressed
    file has a hole in every page: 89,000 pages cost ~1,400 calls here, not 178,000. Falls
    back to the whole file where ``SEEK_DATA`` is not supported. The fd's offset is kept.
    ``start``/``stop``: the data of ``[start, stop)`` alone (a split scan's part).
    """
    ranges = PackedRanges()
    limit = size if stop is None else min(size, stop)
    if limit <= start:
        return ranges
    step = max(1, step)
    saved = os.lseek(fd, 0, os.SEEK_CUR)
    try:
        pos = start
        while pos < limit:
            try:
                data = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # nothing but a hole from pos on
                    break
                if exc.errno == errno.EINVAL and not ranges and pos == start:
                    return PackedRanges([(start, limit)])
                raise
            if data >= limit:
                break
            end = min(limit, data + step)
            ranges.add(data, end)
            pos = end
    finally:
        os.lseek(fd, saved, os.SEEK_SET)
    return ranges


def fiemap(fd: int, batch: int = FIEMAP_BATCH) -> list[Extent] | None:
    """The kernel's extent list for ``fd`` via ``FS_IOC_FIEMAP``, exactly as reported.

    Extents are not merged (``filefrag -v`` prints one row per extent returned here). Calls
    the ioctl in batches of ``batch`` extents until ``FIEMAP_EXTENT_LAST``. Never sets
    ``FIEMAP_FLAG_SYNC``, so delayed-allocation extents may appear as ``delalloc``.
    Returns ``None`` when the filesystem does not support FIEMAP.
    """
    raw = fiemap_tuples(fd, batch)
    return None if raw is None else [Extent(*fields) for fields in raw]


def fiemap_tuples(fd: int, batch: int = FIEMAP_BATCH) -> list[tuple[int, int, int, int]] | None:
    """:func:`fiemap` as ``(logical, physical, length, flags)`` tuples, no object per extent:
    a page-compressed file has an extent per page (89,000 in a 1.4 GB file)."""
    batches = iter_fiemap(fd, batch)
    if batches is None:
        return None
    return [extent for one in batches for extent in one]


def iter_fiemap(
    fd: int, batch: int = FIEMAP_BATCH, start: int = 0
) -> Iterator[Iterator[Extent4]] | None:
    """:func:`fiemap_tuples` a FIEMAP call at a time, None where the filesystem has no FIEMAP.
    Each call's extents are unpacked as they are iterated, from the call's buffer: iterate them
    before asking for the next call (which reuses the buffer). A pass over 6.5 million
    extents then holds one buffer (``batch`` extents, 56 bytes each), never a list of them.
    ``start``: from the extent holding that byte on (the kernel may give that extent whole or
    cut at ``start``: ext4 cuts it)."""
    first = _first_fiemap(fd, batch, start)
    if first is None:
        return None
    buf, mapped = first
    return map(_FIEMAP_EXTENT.iter_unpack, _fiemap_bodies(fd, buf, batch, mapped, start))


def _first_fiemap(fd: int, batch: int, start: int) -> tuple[bytearray, int] | None:
    """A walk's buffer for ``batch`` extents and its first call from ``start`` (extents
    mapped), or None where there is no FIEMAP."""
    if batch <= 0:
        raise ValueError(f"batch must be positive, got {batch}")
    buf = bytearray(_FIEMAP_HEADER.size + batch * _FIEMAP_EXTENT.size)
    mapped = _fiemap_call(fd, buf, start, batch, first=True)
    return None if mapped is None else (buf, mapped)


def _fiemap_call(
    fd: int, buf: bytearray, start: int, batch: int, first: bool = False
) -> int | None:
    """One FIEMAP call from ``start`` into ``buf``: extents mapped, None if not supported
    (known at a walk's ``first`` call)."""
    _FIEMAP_HEADER.pack_into(buf, 0, start, FIEMAP_MAX_OFFSET, 0, 0, batch, 0)
    try:
        fcntl.ioctl(fd, FS_IOC_FIEMAP, buf, True)
    except OSError as exc:
        if exc.errno in _FIEMAP_UNSUPPORTED and first:
            return None
        raise
    return min(int(_FIEMAP_HEADER.unpack_from(buf, 0)[3]), batch)


def _fiemap_bodies(
    fd: int, buf: bytearray, batch: int, mapped: int, start: int
) -> Iterator[memoryview]:
    """Each call's extents as a view of ``buf``, a call at a time from ``start`` on (the view
    is not released: the buffer is never resized, only refilled by the next call)."""
    while mapped:
        body_end = _FIEMAP_HEADER.size + mapped * _FIEMAP_EXTENT.size
        yield memoryview(buf)[_FIEMAP_HEADER.size : body_end]
        logical, _physical, length, flags = _FIEMAP_EXTENT.unpack_from(buf, body_end - 56)
        end = logical + length
        if flags & FIEMAP_EXTENT_LAST or end <= start:  # done, or no progress (defensive)
            return
        start = end
        got = _fiemap_call(fd, buf, start, batch)
        mapped = got or 0


def contiguous_runs(extents: Iterable[Extent] | Iterable[tuple[int, int, int, int]]) -> int:
    """Extent count with physically contiguous extents merged, as ``filefrag`` counts them.

    Mirrors e2fsprogs >= 1.45 ``filefrag``'s "N extents found": an extent continues the
    previous run when its physical start equals the previous extent's physical end, or
    keeps the previous extent's logical-to-physical offset (a hole in between, as a
    punched hole leaves behind). The kernel's own count is ``len(extents)``. Takes
    :class:`Extent` objects or :func:`fiemap_tuples`' tuples.
    """
    runs = 0
    prev: tuple[int, int, int] | None = None
    for logical, physical, length, _flags in extents:  # an Extent is such a tuple too
        if prev is None:
            runs = 1
        else:
            p_logical, p_physical, p_length = prev
            if physical != p_physical + p_length and physical != p_physical + (logical - p_logical):
                runs += 1
        prev = logical, physical, length
    return runs


class _AllocationFields(NamedTuple):
    st_size: int
    allocated: int
    fs_block_size: int
    data_ranges: PackedRanges
    extents: int | None
    unwritten_extents: int | None
    contiguous_runs: int | None = None
    unwritten_bytes: int | None = None


class Allocation(_AllocationFields):
    """A snapshot of how the filesystem stores one file.

    ``data_ranges`` holes are from ``SEEK_DATA``/``SEEK_HOLE`` (unwritten extents count as
    holes there), or from FIEMAP's extents where they say the same
    (:func:`ranges_from_extents`); ``allocated`` is ``st_blocks * 512`` and also includes
    unwritten extents, block rounding of the tail and filesystem metadata such as extent-tree
    blocks. The ranges are kept packed (:class:`~ibdtool.fs.ranges.PackedRanges`, ~2.5 bytes
    a range: a page-compressed file has one a page); any sequence of pairs given is packed.

    A read-only record like the other :class:`~typing.NamedTuple`\\ s of the start-up path (a
    frozen dataclass took ~0.8 ms to make at every start: issue 24, item 4).
    """

    __slots__ = ()

    def __new__(
        cls,
        st_size: int,
        allocated: int,
        fs_block_size: int,
        data_ranges: PackedRanges | Iterable[tuple[int, int]],
        extents: int | None,
        unwritten_extents: int | None,
        contiguous_runs: int | None = None,
        unwritten_bytes: int | None = None,
    ) -> "Allocation":
        if not isinstance(data_ranges, PackedRanges):
            data_ranges = PackedRanges(data_ranges)
        return super().__new__(
            cls,
            st_size,
            allocated,
            fs_block_size,
            data_ranges,
            extents,
            unwritten_extents,
            contiguous_runs,
            unwritten_bytes,
        )

    @property
    def data_bytes(self) -> int:
        """Bytes inside data ranges."""
        return self.data_ranges.total()

    def totals(self) -> "AllocationTotals":
        """Its figures without its map (what ``inspect`` and ``report`` print)."""
        return AllocationTotals(
            st_size=self.st_size,
            allocated=self.allocated,
            fs_block_size=self.fs_block_size,
            data_range_count=len(self.data_ranges),
            data_bytes=self.data_bytes,
            extents=self.extents,
            unwritten_extents=self.unwritten_extents,
            contiguous_runs=self.contiguous_runs,
            unwritten_bytes=self.unwritten_bytes,
        )

    @property
    def holes(self) -> int:
        """Bytes of the logical size that are holes (``st_size - data_bytes``)."""
        return self.st_size - self.data_bytes

    def iter_hole_ranges(self) -> Iterator[tuple[int, int]]:
        """The complement of ``data_ranges`` within ``[0, st_size)``, in order."""
        pos = 0
        for start, end in self.data_ranges:
            if start > pos:
                yield pos, start
            pos = max(pos, end)
        if pos < self.st_size:
            yield pos, self.st_size

    @property
    def hole_ranges(self) -> PackedRanges:
        """The complement of ``data_ranges`` within ``[0, st_size)``."""
        return PackedRanges(self.iter_hole_ranges())

    @property
    def is_sparse(self) -> bool:
        """The file has at least one hole."""
        return self.holes > 0

    @property
    def saved_bytes(self) -> int:
        """How much smaller the allocation is than the logical size (0 if not smaller)."""
        return max(0, self.st_size - self.allocated)

    def data_ranges_from(self, pos: int) -> Iterator[tuple[int, int]]:
        """The data ranges from ``pos`` on, the first cut at ``pos``; found by bisection, so
        a window made again from the middle of a file does not walk every range before it."""
        ranges = self.data_ranges
        for start, end in ranges.pairs_from(ranges.index_at(pos)):
            if end > pos:
                yield max(start, pos), end

    def allocated_bytes_in(self, start: int, length: int) -> int:
        """Bytes of data ranges inside ``[start, start + length)``. O(log ranges + hits)."""
        if length <= 0:
            return 0
        stop = start + length
        ranges = self.data_ranges
        total = 0
        # from the first range that could overlap: the last one starting at or before ``start``
        for r_start, r_end in ranges.pairs_from(ranges.index_at(start)):
            if r_start >= stop:
                break
            lo, hi = max(r_start, start), min(r_end, stop)
            if hi > lo:
                total += hi - lo
        return total

    def per_page_allocated(self, page_size: int, n_pages: int, first: int = 0) -> "array[int]":
        """Data bytes within each page ``[n * page_size, (n + 1) * page_size)`` for the
        ``n_pages`` pages from page ``first`` (callers of a huge file take it in windows).

        One sweep over the ranges that meet the window: O(n_pages + ranges). Entries are
        ``0..page_size``; the sum equals the data bytes inside the window.
        """
        if page_size <= 0 or page_size > 0xFFFF_FFFF:
            raise ValueError(f"page_size out of range: {page_size}")
        if n_pages < 0 or first < 0:
            raise ValueError(f"n_pages and first must be >= 0, got {n_pages}, {first}")
        out = array("I", bytes(4 * n_pages))
        base = first * page_size
        limit = base + n_pages * page_size
        full = array("I", [page_size])
        ranges = self.data_ranges
        # from a bisection: the TUI asks for one page at a time of files with a data range
        # per page; the walk stops at the first range starting past the window
        for r_start, r_end in ranges.pairs_from(ranges.index_at(base)):
            if r_start >= limit:
                break
            if r_start < base:
                r_start = base
            if r_end > limit:
                r_end = limit
            if r_end <= r_start:
                continue
            r_start -= base
            r_end -= base
            first_page = r_start // page_size
            last = (r_end - 1) // page_size
            if first_page == last:
                out[first_page] += r_end - r_start
                continue
            out[first_page] += page_size - (r_start - first_page * page_size)
            if last > first_page + 1:
                out[first_page + 1 : last] = full * (last - first_page - 1)
            out[last] += r_end - last * page_size
        return out


#: extents unpacked into columns at once (a constant: ~170 bytes each while held)
_COLUMN_EXTENTS = 512
#: a FIEMAP extent as u64 words (logical, physical, length at 0-2) and u32 words (flags at 10)
_EXTENT_WORDS, _EXTENT_HALVES = _FIEMAP_EXTENT.size // 8, _FIEMAP_EXTENT.size // 4

#: a FIEMAP call's extents as columns: logical, physical, length, flags
Columns = tuple[list[int], list[int], list[int], list[int]]


def _fiemap_columns(fd: int, batch: int, start: int = 0) -> Iterator[Columns] | None:
    """:func:`iter_fiemap` as columns of at most :data:`_COLUMN_EXTENTS` extents, read out of
    the call's buffer at C speed (no tuple an extent); None where there is no FIEMAP."""
    first = _first_fiemap(fd, batch, start)
    if first is None:
        return None
    buf, mapped = first
    return _column_batches(fd, buf, batch, mapped, start)


def _column_batches(
    fd: int, buf: bytearray, batch: int, mapped: int, start: int
) -> Iterator[Columns]:
    step = _COLUMN_EXTENTS * _FIEMAP_EXTENT.size
    for body in _fiemap_bodies(fd, buf, batch, mapped, start):
        for at in range(0, len(body), step):
            piece = body[at : at + step]
            words, halves = piece.cast("Q"), piece.cast("I")
            yield (
                words[0::_EXTENT_WORDS].tolist(),
                words[1::_EXTENT_WORDS].tolist(),
                words[2::_EXTENT_WORDS].tolist(),
                halves[10::_EXTENT_HALVES].tolist(),
            )


class AllocationTotals(NamedTuple):
    """An :class:`Allocation`'s figures without its map: what ``inspect`` and ``report`` print
    of a file's allocation (:meth:`Allocation.totals`), or what a scan split over processes
    adds up from the windows each read of its own pages (:func:`join_windows`). A named tuple,
    as the other records of inspect's path."""

    st_size: int
    allocated: int
    fs_block_size: int
    #: data ranges (touching ones merged) and the bytes in them
    data_range_count: int
    data_bytes: int
    extents: int | None
    unwritten_extents: int | None
    contiguous_runs: int | None = None
    unwritten_bytes: int | None = None

    @property
    def holes(self) -> int:
        """Bytes of the logical size that are holes (``st_size - data_bytes``)."""
        return self.st_size - self.data_bytes


class WindowCounts(NamedTuple):
    """What one window ``[start, stop)`` of a file's bytes adds to its :class:`AllocationTotals`
    (``stop`` None: to the end of the file and past it), and what its neighbours need to join
    it: a range or an extent across an edge is seen by both windows (:func:`join_windows`)."""

    start: int
    stop: int | None
    #: data ranges meeting the window, and their bytes inside it
    ranges: int
    data_bytes: int
    #: its first range begins at ``start``; its last reaches ``stop``
    starts_at_start: bool
    ends_at_stop: bool
    #: FIEMAP's extents from the one holding ``start`` to the last starting before ``stop``
    #: (None without FIEMAP), the unwritten ones, their bytes, and runs of them (as
    #: :func:`contiguous_runs`, the first extent a run)
    extents: int | None
    unwritten: int = 0
    unwritten_bytes: int = 0
    runs: int = 0
    #: the first extent as the kernel gave it (ext4 cuts one across ``start`` there), and the
    #: last one's logical start, physical start and length
    first: Extent4 | None = None
    last: tuple[int, int, int] | None = None


class _ExtentCounts:
    """What the allocation snapshot counts of FIEMAP's extents, a column of them at a time (so
    that 6.5 million extents are never held at once), and the data ranges they give; of the
    extents from the one holding ``start`` to the last starting before ``stop`` (None: all).
    A plain class: an accumulator nothing compares or prints (start-up, issue 24 item 4)."""

    def __init__(self, size: int, start: int = 0, stop: int | None = None) -> None:
        self.size = size
        self.start = start
        self.stop = stop
        self.extents = 0
        self.unwritten = 0
        self.unwritten_bytes = 0
        self.runs = 0
        self.ranges: PackedRanges | None = PackedRanges()
        self.first: Extent4 | None = None
        self._prev: tuple[int, int, int] | None = None

    def add(
        self, logical: list[int], physical: list[int], length: list[int], flags: list[int]
    ) -> bool:
        """Count a column of extents (as :func:`contiguous_runs` and
        :func:`ranges_from_extents` do over the whole list): a page-compressed file has an
        extent a page, and a Python step per extent was most of the snapshot's time (issue
        24). False once an extent starting at or past ``stop`` was met (it is not counted)."""
        stop = self.stop
        if stop is not None and logical and logical[-1] >= stop:
            n = bisect_left(logical, stop)
            if n:
                self._add(logical[:n], physical[:n], length[:n], flags[:n])
            return False
        if logical:
            self._add(logical, physical, length, flags)
        return True

    def _add(
        self, logical: list[int], physical: list[int], length: list[int], flags: list[int]
    ) -> None:
        if self.first is None:
            self.first = logical[0], physical[0], length[0], flags[0]
        self.extents += len(logical)
        seen = set(flags)  # a file's extents have a flag or two between them
        if any(f & FIEMAP_EXTENT_UNWRITTEN for f in seen):
            unwritten = [
                n for n, f in zip(length, flags, strict=True) if f & FIEMAP_EXTENT_UNWRITTEN
            ]
            self.unwritten += len(unwritten)
            self.unwritten_bytes += sum(unwritten)
        ranges = self.ranges
        if ranges is not None:
            if any(f & _FIEMAP_NOT_PLAIN for f in seen):
                self.ranges = None
            else:
                ends = list(map(add, logical, length))
                if max(ends) > self.size:
                    ends = list(map(min, ends, repeat(self.size)))
                starts = logical
                if starts[0] < self.start:  # the extent across the window's start, cut there
                    starts = [self.start, *starts[1:]]
                ranges.extend(starts, ends)
        # a new run where the physical start neither follows the previous extent nor keeps
        # its logical-to-physical offset (a punched hole in between: a page-compressed file's
        # extents keep it, a column of them at a time)
        prev = self._prev
        if prev is None:
            self.runs += 1
            lo, ph, ln = logical, physical, length
        else:
            lo, ph, ln = [prev[0], *logical], [prev[1], *physical], [prev[2], *length]
        offsets = list(map(sub, ph, lo))
        if offsets[1:] != offsets[:-1]:  # not all one offset: the extents that change it
            for k in compress(range(1, len(ph)), map(ne, offsets[1:], offsets)):
                self.runs += ph[k] != ph[k - 1] + ln[k - 1]
        self._prev = logical[-1], physical[-1], length[-1]


def _block_size(fd: int, st: os.stat_result) -> int:
    try:
        return os.fstatvfs(fd).f_bsize or st.st_blksize
    except OSError:
        return st.st_blksize


def allocation_stat(fd: int) -> tuple[int, int, int]:
    """``(st_size, allocated, fs_block_size)`` of a regular file: what a scan split over
    processes reads before forking (each process then reads its window, :func:`read_window`)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise ValueError("not a regular file")
    return st.st_size, st.st_blocks * 512, _block_size(fd, st)


def read_window(
    fd: int,
    size: int,
    start: int = 0,
    stop: int | None = None,
    *,
    with_extents: bool = True,
    batch: int = FIEMAP_BIG_BATCH,
) -> tuple[PackedRanges, WindowCounts]:
    """The data ranges of the bytes ``[start, stop)`` of a file of ``size`` bytes (those that
    meet the window, the first cut at ``start``, the last whole: clipped to ``size``) and what
    the window adds to the file's totals (:class:`WindowCounts`): FIEMAP from ``start``, its
    calls ending past ``stop``, or ``SEEK_DATA``/``SEEK_HOLE`` where it has no FIEMAP or its
    extents there are not plain (:func:`ranges_from_extents`). The whole file is the window
    ``[0, None)``; a scan split over processes reads a window each, in parallel. ``batch``:
    extents a FIEMAP call asks for (a small window's extents and no more: the kernel maps
    every one a call asks for, those past ``stop`` too)."""
    batches = _fiemap_columns(fd, batch, start) if with_extents else None
    counts = None
    if batches is not None:
        counts = _ExtentCounts(size, start, stop)
        for columns in batches:
            if not counts.add(*columns):
                break
    found = None if counts is None else counts.ranges
    ranges = data_ranges(fd, size, start, stop) if found is None else found
    return ranges, _window_counts(ranges, counts, start, stop)


def _window_counts(
    ranges: PackedRanges, counts: _ExtentCounts | None, start: int, stop: int | None
) -> WindowCounts:
    """What the window ``[start, stop)`` adds to the file's totals: its ranges (those that meet
    it, the first cut at ``start``) and its extents' counts (None: no FIEMAP)."""
    n = len(ranges)
    first_start = ranges[0][0] if n else None
    last_end = ranges[-1][1] if n else 0
    over = max(0, last_end - stop) if stop is not None else 0
    window = WindowCounts(
        start=start,
        stop=stop,
        ranges=n,
        data_bytes=ranges.total() - over,
        starts_at_start=first_start == start,
        ends_at_stop=stop is not None and n > 0 and last_end >= stop,
        extents=None if counts is None else counts.extents,
        unwritten=0 if counts is None else counts.unwritten,
        unwritten_bytes=0 if counts is None else counts.unwritten_bytes,
        runs=0 if counts is None else counts.runs,
        first=None if counts is None else counts.first,
        last=None if counts is None else counts._prev,
    )
    return window


def join_windows(
    st_size: int, allocated: int, fs_block_size: int, windows: Iterable[WindowCounts]
) -> AllocationTotals:
    """The totals of a file from its windows' counts, given in file order and covering it
    (``[0, w1), [w1, w2), … [wn, None)``): what :meth:`Allocation.totals` says of the file
    read whole. A range across an edge is counted once; an extent across one, which both
    windows saw (the second one cut at the edge on ext4, or whole), once, with the first
    window's length; the extent after an edge starts a run only where it does not continue
    the one before it (:func:`contiguous_runs`)."""
    ranges = data = 0
    extents: int | None = 0
    unwritten = unwritten_bytes = runs = 0
    prev_end_at_edge = False
    prev_last: tuple[int, int, int] | None = None
    for w in windows:
        ranges += w.ranges - (prev_end_at_edge and w.starts_at_start)
        data += w.data_bytes
        prev_end_at_edge = w.ends_at_stop
        if w.extents is None or extents is None:
            extents = None
            continue
        extents += w.extents
        unwritten += w.unwritten
        unwritten_bytes += w.unwritten_bytes
        runs += w.runs
        first = w.first
        if first is not None and prev_last is not None:
            lo, ph, ln = prev_last
            if lo + ln > w.start:  # the extent across the edge, seen by both windows
                extents -= 1
                runs -= 1
                if first[3] & FIEMAP_EXTENT_UNWRITTEN:
                    unwritten -= 1
                    unwritten_bytes -= first[2]
            elif first[1] == ph + ln or first[1] == ph + (first[0] - lo):
                runs -= 1  # continues the run before the edge
        if w.last is not None:
            prev_last = w.last
    return AllocationTotals(
        st_size=st_size,
        allocated=allocated,
        fs_block_size=fs_block_size,
        data_range_count=ranges,
        data_bytes=data,
        extents=extents,
        unwritten_extents=None if extents is None else unwritten,
        contiguous_runs=None if extents is None else runs,
        unwritten_bytes=None if extents is None else unwritten_bytes,
    )


def _allocation_of_fd(fd: int, with_extents: bool = True) -> Allocation:
    size, allocated, block_size = allocation_stat(fd)
    ranges, whole = read_window(fd, size, with_extents=with_extents)
    counted = whole.extents is not None
    return Allocation(
        st_size=size,
        allocated=allocated,
        fs_block_size=block_size,
        data_ranges=ranges,
        extents=whole.extents,
        unwritten_extents=whole.unwritten if counted else None,
        contiguous_runs=whole.runs if counted else None,
        unwritten_bytes=whole.unwritten_bytes if counted else None,
    )


def read_allocation(
    path_or_fd: str | os.PathLike[str] | int, *, with_extents: bool = True
) -> Allocation:
    """Allocation snapshot of a regular file given by path (opened read-only) or open fd.

    A caller's fd is not closed and keeps its file offset. ``with_extents=False`` skips
    FIEMAP (the extent counts are then None), for callers that need only the data ranges.
    """
    if isinstance(path_or_fd, int):
        return _allocation_of_fd(path_or_fd, with_extents)
    fd = open_nonblocking(path_or_fd)  # a FIFO must not block: _allocation_of_fd refuses it
    try:
        return _allocation_of_fd(fd, with_extents)
    finally:
        os.close(fd)
