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

from __future__ import annotations

import errno
import fcntl
import os
import stat
import struct
from array import array
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field

from ibdtool.fs.opening import open_nonblocking

__all__ = [
    "FIEMAP_EXTENT_DELALLOC",
    "FIEMAP_EXTENT_LAST",
    "FIEMAP_EXTENT_UNKNOWN",
    "FIEMAP_EXTENT_UNWRITTEN",
    "FS_IOC_FIEMAP",
    "Allocation",
    "Extent",
    "contiguous_runs",
    "data_ranges",
    "fiemap",
    "fiemap_tuples",
    "ranges_from_extents",
    "read_allocation",
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

_FIEMAP_UNSUPPORTED = frozenset({errno.ENOTTY, errno.EOPNOTSUPP, errno.ENOTSUP})


@dataclass(frozen=True, slots=True)
class Extent:
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


def _merge_into(ranges: list[tuple[int, int]], start: int, end: int) -> None:
    """Append ``[start, end)`` to sorted, disjoint ``ranges``, merging touching neighbours."""
    if end <= start:
        return
    if ranges and start <= ranges[-1][1]:
        prev_start, prev_end = ranges[-1]
        ranges[-1] = (prev_start, max(prev_end, end))
    else:
        ranges.append((start, end))


def data_ranges(fd: int, size: int) -> list[tuple[int, int]]:
    """Byte ranges ``[start, end)`` holding data, found with ``lseek(SEEK_DATA/SEEK_HOLE)``.

    Ranges are clipped to ``size`` (normally ``st_size``), merged and in file order. If the
    filesystem or kernel does not support ``SEEK_DATA`` (``EINVAL``), the whole file is one
    data range. The fd's file offset is restored afterwards.
    """
    if size <= 0:
        return []
    saved = os.lseek(fd, 0, os.SEEK_CUR)
    ranges: list[tuple[int, int]] = []
    try:
        pos = 0
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # no data at or after pos
                    break
                if exc.errno == errno.EINVAL and not ranges and pos == 0:
                    return [(0, size)]  # SEEK_DATA unsupported: everything is data
                raise
            if start >= size:
                break
            try:
                end = os.lseek(fd, start, os.SEEK_HOLE)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # file shrank under us: nothing more
                    break
                raise
            end = min(end, size)
            if end <= start:  # defensive: never loop in place
                end = start + 1
            _merge_into(ranges, start, end)
            pos = end
    finally:
        os.lseek(fd, saved, os.SEEK_SET)
    return ranges


#: extent flags under which FIEMAP and SEEK_DATA may disagree on what is data: unwritten
#: extents read as holes (or as data where dirty pages lie over them), delayed allocation and
#: unknown locations are dirty page cache the ioctl sees before writeback
_FIEMAP_NOT_PLAIN = FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_UNKNOWN


def ranges_from_extents(
    extents: list[tuple[int, int, int, int]], size: int
) -> list[tuple[int, int]] | None:
    """:func:`data_ranges` from :func:`fiemap_tuples`' extents (clipped to ``size``, touching
    ones merged), or None where an extent is unwritten, delayed or of unknown location: there
    only ``SEEK_DATA`` says what reads as data. A page-compressed file has a hole in every
    page; FIEMAP lists its 89,000 extents in 11 calls where ``SEEK_DATA``/``SEEK_HOLE`` take
    178,000 (0.24 s of a 1 s scan, and in the parent, before any fork)."""
    ranges: list[tuple[int, int]] = []
    for logical, _physical, length, flags in extents:
        if flags & _FIEMAP_NOT_PLAIN:
            return None
        end = min(logical + length, size)
        if end <= logical:
            continue
        if ranges and logical <= ranges[-1][1]:
            if end > ranges[-1][1]:
                ranges[-1] = (ranges[-1][0], end)
        else:
            ranges.append((logical, end))
    return ranges


def scan_ranges(fd: int, size: int, step: int) -> list[tuple[int, int]]:
    """Byte ranges ``[start, end)`` that hold all the data of the file, zeros maybe included:
    ``lseek(SEEK_DATA)`` probed once every ``step`` bytes of data, not twice per hole.

    A scan skips only long holes, so it needs no exact map: a hole that holds a probe point is
    found from there on, so every hole of ``2 * step`` bytes or more is (mostly) skipped, and a
    shorter one may be read as data (zeros, which is what a hole reads as). A page-compressed
    file has a hole in every page: 89,000 pages cost ~1,400 calls here, not 178,000. Falls
    back to the whole file where ``SEEK_DATA`` is not supported. The fd's offset is kept.
    """
    if size <= 0:
        return []
    step = max(1, step)
    saved = os.lseek(fd, 0, os.SEEK_CUR)
    ranges: list[tuple[int, int]] = []
    try:
        pos = 0
        while pos < size:
            try:
                data = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # nothing but a hole from pos on
                    break
                if exc.errno == errno.EINVAL and not ranges and pos == 0:
                    return [(0, size)]
                raise
            if data >= size:
                break
            end = min(size, data + step)
            _merge_into(ranges, data, end)
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
    if batch <= 0:
        raise ValueError(f"batch must be positive, got {batch}")
    buf = bytearray(_FIEMAP_HEADER.size + batch * _FIEMAP_EXTENT.size)
    extents: list[tuple[int, int, int, int]] = []
    start = 0
    while True:
        _FIEMAP_HEADER.pack_into(buf, 0, start, FIEMAP_MAX_OFFSET, 0, 0, batch, 0)
        try:
            fcntl.ioctl(fd, FS_IOC_FIEMAP, buf, True)
        except OSError as exc:
            if exc.errno in _FIEMAP_UNSUPPORTED:
                return None
            raise
        mapped = _FIEMAP_HEADER.unpack_from(buf, 0)[3]
        if mapped == 0:
            break
        mapped = min(mapped, batch)
        body_end = _FIEMAP_HEADER.size + mapped * _FIEMAP_EXTENT.size
        view = memoryview(buf)[_FIEMAP_HEADER.size : body_end]
        batch_extents = list(_FIEMAP_EXTENT.iter_unpack(view))
        view.release()
        extents.extend(batch_extents)
        logical, _physical, length, flags = batch_extents[-1]
        end = logical + length
        if flags & FIEMAP_EXTENT_LAST or end <= start:  # done, or no progress (defensive)
            break
        start = end
    return extents


def contiguous_runs(
    extents: list[Extent] | tuple[Extent, ...] | list[tuple[int, int, int, int]],
) -> int:
    """Extent count with physically contiguous extents merged, as ``filefrag`` counts them.

    Mirrors e2fsprogs >= 1.45 ``filefrag``'s "N extents found": an extent continues the
    previous run when its physical start equals the previous extent's physical end, or
    keeps the previous extent's logical-to-physical offset (a hole in between, as a
    punched hole leaves behind). The kernel's own count is ``len(extents)``. Takes
    :class:`Extent` objects or :func:`fiemap_tuples`' tuples.
    """
    runs = 0
    prev: tuple[int, int, int] | None = None
    for ext in extents:
        if isinstance(ext, Extent):
            logical, physical, length = ext.logical, ext.physical, ext.length
        else:
            logical, physical, length, _flags = ext
        if prev is None:
            runs = 1
        else:
            p_logical, p_physical, p_length = prev
            if physical != p_physical + p_length and physical != p_physical + (logical - p_logical):
                runs += 1
        prev = logical, physical, length
    return runs


@dataclass(frozen=True)
class Allocation:
    """A snapshot of how the filesystem stores one file.

    ``data_ranges`` holes are from ``SEEK_DATA``/``SEEK_HOLE`` (unwritten extents count as
    holes there), or from FIEMAP's extents where they say the same
    (:func:`ranges_from_extents`); ``allocated`` is ``st_blocks * 512`` and also includes
    unwritten extents, block rounding of the tail and filesystem metadata such as extent-tree
    blocks.
    """

    st_size: int
    allocated: int
    fs_block_size: int
    data_ranges: tuple[tuple[int, int], ...]
    extents: int | None
    unwritten_extents: int | None
    contiguous_runs: int | None = None
    unwritten_bytes: int | None = None
    _starts: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_starts", tuple(start for start, _ in self.data_ranges))

    @property
    def data_bytes(self) -> int:
        """Bytes inside data ranges."""
        return sum(end - start for start, end in self.data_ranges)

    @property
    def holes(self) -> int:
        """Bytes of the logical size that are holes (``st_size - data_bytes``)."""
        return self.st_size - self.data_bytes

    @property
    def hole_ranges(self) -> tuple[tuple[int, int], ...]:
        """The complement of ``data_ranges`` within ``[0, st_size)``."""
        out: list[tuple[int, int]] = []
        pos = 0
        for start, end in self.data_ranges:
            if start > pos:
                out.append((pos, start))
            pos = max(pos, end)
        if pos < self.st_size:
            out.append((pos, self.st_size))
        return tuple(out)

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
        for i in range(max(0, bisect_right(self._starts, pos) - 1), len(ranges)):
            start, end = ranges[i]
            if end > pos:
                yield max(start, pos), end

    def allocated_bytes_in(self, start: int, length: int) -> int:
        """Bytes of data ranges inside ``[start, start + length)``. O(log ranges + hits)."""
        if length <= 0:
            return 0
        stop = start + length
        ranges = self.data_ranges
        # First range that could overlap: the last one starting at or before ``start``.
        i = max(0, bisect_right(self._starts, start) - 1)
        total = 0
        while i < len(ranges):
            r_start, r_end = ranges[i]
            if r_start >= stop:
                break
            lo, hi = max(r_start, start), min(r_end, stop)
            if hi > lo:
                total += hi - lo
            i += 1
        return total

    def per_page_allocated(self, page_size: int, n_pages: int, first: int = 0) -> array[int]:
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
        # by index: a slice ``ranges[i:]`` copies the rest of the list on every call, and the
        # TUI asks for one page at a time of files with a data range per page (quadratic)
        for k in range(max(0, bisect_right(self._starts, base) - 1), len(ranges)):
            r_start, r_end = ranges[k]
            if r_start >= limit:
                break
            r_start, r_end = max(r_start, base) - base, min(r_end, limit) - base
            if r_end <= r_start:
                continue
            first_page, first_off = divmod(r_start, page_size)
            last = (r_end - 1) // page_size
            if first_page == last:
                out[first_page] += r_end - r_start
                continue
            out[first_page] += page_size - first_off
            if last > first_page + 1:
                out[first_page + 1 : last] = full * (last - first_page - 1)
            out[last] += r_end - last * page_size
        return out


def _allocation_of_fd(fd: int, with_extents: bool = True) -> Allocation:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise ValueError("not a regular file")
    try:
        block_size = os.fstatvfs(fd).f_bsize or st.st_blksize
    except OSError:
        block_size = st.st_blksize
    exts = fiemap_tuples(fd, FIEMAP_BIG_BATCH) if with_extents else None
    found = None if exts is None else ranges_from_extents(exts, st.st_size)
    ranges = data_ranges(fd, st.st_size) if found is None else found
    if exts is None:
        n_extents = n_unwritten = runs = unwritten_bytes = None
    else:
        unwritten = [e for e in exts if e[3] & FIEMAP_EXTENT_UNWRITTEN]
        n_extents, n_unwritten = len(exts), len(unwritten)
        runs = contiguous_runs(exts)
        unwritten_bytes = sum(e[2] for e in unwritten)
    return Allocation(
        st_size=st.st_size,
        allocated=st.st_blocks * 512,
        fs_block_size=block_size,
        data_ranges=tuple(ranges),
        extents=n_extents,
        unwritten_extents=n_unwritten,
        contiguous_runs=runs,
        unwritten_bytes=unwritten_bytes,
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
