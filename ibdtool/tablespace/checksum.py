"""``ibdtool checksum``: verify every page of a file as fast as the hardware allows.

The common pages (plain crc32 pages, plain full_crc32 pages) are verified a chunk at a time
(:mod:`ibdtool.parsers.pagecolumns`: one unpack for every header of the chunk, hardware CRC-32C
calls mapped over memoryviews, no object per page); full_crc32 and MariaDB classic page_compressed
images inline, page by page; anything else (zero, zip, innodb-checksummed, damaged) goes
through the full decoder, so verdicts are exactly those of :func:`ibdtool.parsers.page.decode_page`.
Large files are split into page ranges scanned by worker processes; each reads a few MiB at a
time into one reused buffer, so memory stays flat.
"""

from __future__ import annotations

import os
import struct
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import compress
from operator import not_, or_
from typing import TYPE_CHECKING

from ibdtool.errors import InputError
from ibdtool.parsers._structs_gen import MYSQL_COMPRESSION_META_OFFSET, MYSQL_META_FAST
from ibdtool.parsers.checksum import ChecksumAlgo
from ibdtool.parsers.codecs import MYSQL_ALGORITHMS, CodecError
from ibdtool.parsers.constants import (
    FIL_PAGE_COMPRESS_FCRC32_MARKER,
    FIL_PAGE_DATA,
    FIL_PAGE_PAGE_COMPRESSED,
    Algorithm,
    Vendor,
)
from ibdtool.parsers.crc32c_fast import crc32c
from ibdtool.parsers.envelope import (
    Checksum,
    Envelope,
    Geometry,
    Kind,
    fcrc32_stored_size,
    read_envelope,
)
from ibdtool.parsers.fcrc32_native import NativeChunk, chunk_reader, enabled
from ibdtool.parsers.inflate import inflate
from ibdtool.parsers.pagecolumns import (
    PREFIX_BYTES,
    columns,
    compressed_verified,
    plain_verified,
    verdict_fields,
)
from ibdtool.parsers.space import SpaceFormat
from ibdtool.parsers.syslibs import deflate_zlib_page_view
from ibdtool.tablespace.reader import Tablespace

if TYPE_CHECKING:  # ibdtool.parsers.keyring loads construct and cryptography: only with --keyring
    from ibdtool.parsers.keyring import Keyring

PARALLEL_MIN_PAGES = 8192


@dataclass
class CheckResult:
    path: str
    pages: int
    physical_size: int
    trailing_bytes: int
    by_algorithm: Counter[str] = field(default_factory=Counter)
    invalid_pages: list[int] = field(default_factory=list)
    unverifiable: int = 0

    @property
    def empty(self) -> int:
        return self.by_algorithm.get(ChecksumAlgo.EMPTY.value, 0)

    @property
    def valid(self) -> int:
        skip = {ChecksumAlgo.EMPTY.value, ChecksumAlgo.INVALID.value, ChecksumAlgo.ENCRYPTED.value}
        return sum(n for a, n in self.by_algorithm.items() if a not in skip)


# FIL header fields the fast path needs: checksum/key version, page number, LSN low word, type
_HEAD = struct.Struct(">II12xIH")


#: counts by algorithm, invalid pages, unverifiable pages, pages read and verified
ScanPart = tuple[Counter[str], list[int], int, int]


#: page-compressed images whose checksum is the page's inside (:func:`classic_inner`)
_INNER_KINDS = frozenset({Kind.MARIADB_COMPRESSED, Kind.MYSQL_COMPRESSED})


#: the type word of a MariaDB classic page_compressed image (§3.1)
_CLASSIC_TYPE = FIL_PAGE_PAGE_COMPRESSED.to_bytes(2, "big")


@lru_cache(maxsize=4096)
def classic_envelope(head: bytes, physical: int, logical: int) -> Envelope:
    """:func:`~ibdtool.parsers.envelope.read_envelope` of a MariaDB classic page_compressed
    image (type 34354, in a tablespace not MySQL's nor full_crc32) from its bytes [24, 40):
    the envelope reader reads nothing else of such a page (its type word, algorithm id, space
    id and payload length; it is never encrypted, §3.1), and an envelope is immutable, so one
    read serves every page with the same header (a file's pages have a few thousand: a
    payload length each). Frozen dataclasses cost 3 us to build, a tenth of a page's scan."""
    geometry = Geometry(physical, logical, False, None, Vendor.MARIADB, False)
    return read_envelope(bytes(24) + head, geometry)


def classic_inner(
    image: memoryview, fmt: SpaceFormat, logical: int
) -> tuple[bytes, int, int, str] | None:
    """The first :data:`~ibdtool.parsers.pagecolumns.PREFIX_BYTES` bytes of the page inside a
    MariaDB classic compressed image (§3.1) or a MySQL type-14 image (§2.1), the image's stored
    size and its payload's length, when that page verifies by crc32, untorn, and its
    algorithm's name; None sends it to the decoder, which says what else it is (the checksum
    is the inner page's: the image is inflated whole). A MariaDB zlib page is checked where
    libdeflate inflated it (:func:`~ibdtool.parsers.syslibs.deflate_zlib_page_view`, what
    :func:`~ibdtool.parsers.inflate.inflate` gives first), without a copy."""
    if image[24:26] == _CLASSIC_TYPE and fmt.vendor is not Vendor.MYSQL and not fmt.full_crc32:
        env = classic_envelope(bytes(image[24:40]), fmt.physical_size, fmt.logical_size)
    else:
        env = read_envelope(image, fmt)
    if (
        env.kind not in _INNER_KINDS
        or env.checksum is not Checksum.INNER
        or env.problem is not None
        or env.encrypted
        or env.stored_size is None
        or env.payload_length is None
    ):
        return None
    page: bytes | memoryview | None = None
    if env.kind is Kind.MARIADB_COMPRESSED and env.algorithm is Algorithm.ZLIB:
        start, end = env.payload_offset, env.payload_end
        if start is not None and end is not None:
            fast = deflate_zlib_page_view(image[start:end], logical)
            page = fast[0] if fast is not None else None
    if page is None:
        try:
            page, _ = inflate(image, env, logical)
        except CodecError:
            return None
    chk = int.from_bytes(page[0:4], "big")
    if (
        chk != 0
        and page[0:4] == page[logical - 8 : logical - 4]
        and page[20:24] == page[logical - 4 : logical]
        and chk == crc32c(page[4:26]) ^ crc32c(page[38 : logical - 8])
    ):
        return bytes(page[:PREFIX_BYTES]), env.stored_size, env.payload_length, env.algorithm.value
    return None


_MYSQL_ZLIB = next(i for i, a in MYSQL_ALGORITHMS.items() if a is Algorithm.ZLIB)


def mysql_zlib_inner(image: memoryview, logical: int, prefix: int) -> tuple[bytes, int, int] | None:
    """:func:`classic_inner` of the common MySQL type-14 image, straight from its bytes: the
    first ``prefix`` bytes of the page inside, the image's stored size and its payload's
    length, when the metadata says version 1 or 2, zlib and a length within the page, the
    payload inflates to the page through libdeflate (as :func:`ibdtool.parsers.inflate.inflate`
    does it first; checked where libdeflate put it, as :func:`classic_inner` checks a MariaDB
    zlib page) and the page verifies by crc32, untorn. No Envelope and no page joined
    from its header and body: ~5 µs of the ~30 a page. None for anything else, which
    :func:`classic_inner` then judges (None says nothing of the page). The caller checks what
    :func:`~ibdtool.parsers.envelope.read_envelope` would first: a stored type 14 in a classic
    tablespace, not ROW_FORMAT=COMPRESSED, not MariaDB-encrypted."""
    version, algorithm, original_type, original_size, length = MYSQL_META_FAST.unpack_from(
        image, MYSQL_COMPRESSION_META_OFFSET
    )
    body_size = logical - FIL_PAGE_DATA
    if (
        version not in (1, 2)
        or algorithm != _MYSQL_ZLIB
        or original_size != body_size
        or not 0 < length <= len(image) - FIL_PAGE_DATA
    ):
        return None
    # where libdeflate inflated it (a view of this thread's buffer): used here, then left
    got = deflate_zlib_page_view(image[FIL_PAGE_DATA : FIL_PAGE_DATA + length], body_size)
    if got is None:
        return None
    body = got[0]
    head = bytearray(image[:FIL_PAGE_DATA])
    head[24:26] = original_type.to_bytes(2, "big")
    chk = int.from_bytes(head[0:4], "big")
    if (
        chk != 0
        and head[0:4] == body[body_size - 8 : body_size - 4]
        and head[20:24] == body[body_size - 4 :]
        and chk == crc32c(head[4:26]) ^ crc32c(body[: body_size - 8])
    ):
        head += body[: prefix - FIL_PAGE_DATA]
        return bytes(head), FIL_PAGE_DATA + length, length
    return None


def _classic_page_ok(image: memoryview, fmt: SpaceFormat, logical: int) -> bool:
    """Does the page inside a MariaDB classic compressed image verify by crc32, untorn?"""
    return classic_inner(image, fmt, logical) is not None


class ChecksumTally:
    """Verdicts of the pages of ``ts`` handed over a chunk at a time (:meth:`chunk`), from a
    file read by :func:`scan_range` or from bytes a caller already holds (the read-back of a
    local copy, :mod:`ibdtool.copy.local`); :meth:`part` is the :data:`ScanPart`."""

    def __init__(self, ts: Tablespace) -> None:
        self.ts = ts
        fmt = ts.format
        self.psize = ts.physical_size
        self.fast_fcrc32 = fmt.full_crc32
        self.fast_crc32 = not fmt.full_crc32 and not fmt.zip
        self.classic_compressed = self.fast_crc32 and fmt.vendor is not Vendor.MYSQL
        self.logical = ts.logical_size
        self.zero = bytes(self.psize)
        self.ok = self.empty = self.done = self.unverifiable = 0
        self.counts: Counter[str] = Counter()
        self.invalid: list[int] = []
        self.dblwr = ts.doublewrite_pages
        # full_crc32 images' CRC-32C verdicts a chunk at a time in compiled code, where it is
        # built and allowed (ibdtool.parsers.fcrc32_native; compressed_verified the reference):
        # looked up at the first image, so a file without one never loads ctypes
        self.native_images = fmt.full_crc32 and enabled()
        self._native: Callable[[memoryview, int, int], NativeChunk | None] | None = None

    def holes(self, count: int) -> None:
        """``count`` pages in a hole: all zeros, empty without a read."""
        self.empty += count
        self.done += count

    def chunk(self, n: int, mv: memoryview) -> None:
        """Verify the whole pages of ``mv``, the first of them page ``n``."""
        psize = self.psize
        fast_fcrc32 = self.fast_fcrc32
        count = len(mv) // psize
        self.done += count
        rest: Iterable[int] = range(count)
        if self.fast_crc32 or fast_fcrc32:
            # the plain pages of the chunk at once (ibdtool.parsers.pagecolumns), the rest below;
            # a chunk that starts with a page_compressed image: its images' verdicts first, in
            # one compiled call, and of a chunk of images alone nothing more
            read_images = self._images_reader() if mv[24] & 0x80 else None
            native = read_images(mv, psize, n) if read_images is not None else None
            if native is not None and native.marked == count:
                good = native.ok
            else:
                cols = columns(mv, psize, fast_fcrc32, verdict_fields(fast_fcrc32))
                good = plain_verified(mv, psize, n, fast_fcrc32, cols)
                if fast_fcrc32 and not all(good):  # page_compressed images, also at once
                    # the compiled loop looked up only for a chunk that holds an image (bit 15
                    # of the type): a plain file's empty pages never load ctypes
                    if (
                        native is None
                        and self.native_images
                        and any(t & FIL_PAGE_COMPRESS_FCRC32_MARKER for t in cols["page_type"])
                    ):
                        read_images = self._images_reader()
                        native = read_images(mv, psize, n) if read_images is not None else None
                    packed = (
                        native.ok if native is not None else compressed_verified(mv, psize, n, cols)
                    )
                    good = list(map(or_, good, packed))
            passed = good.count(True)
            self.ok += passed
            if passed == count:
                return
            rest = compress(range(count), map(not_, good))
        head = _HEAD.unpack_from
        for k in rest:
            page_no = n + k
            off = k * psize
            end = off + psize
            chk, stored_no, _lsn_low, ptype = head(mv, off)
            if stored_no == page_no:
                if (
                    self.classic_compressed
                    and ptype == FIL_PAGE_PAGE_COMPRESSED
                    and _classic_page_ok(mv[off:end], self.ts.format, self.logical)
                ):
                    # MariaDB classic page_compressed: the checksum is the inner page's
                    # (§3.1), so inflate it, then the same two CRC calls as a plain page
                    self.ok += 1
                    continue
                if fast_fcrc32 and not chk and ptype & FIL_PAGE_COMPRESS_FCRC32_MARKER:
                    # page_compressed: only the CRC-32C of the compressed image counts (§3.2,
                    # §6.6), so there is nothing to decompress to give the verdict
                    size = fcrc32_stored_size(ptype, psize)
                    if size is not None:
                        stored = int.from_bytes(mv[off + size - 4 : off + size], "big")
                        if stored and stored == crc32c(mv[off : off + size - 4]):
                            self.ok += 1
                            continue
            elif not stored_no and not chk and mv[off:end].tobytes() == self.zero:
                self.empty += 1
                continue
            info = self.ts._decode(mv[off:end], page_no, None)
            if info.checksum_valid is False:
                self.counts[ChecksumAlgo.INVALID.value] += 1
                self.invalid.append(page_no)
            else:
                self.counts[info.checksum_algo.value] += 1
                if info.checksum_valid is None and page_no not in self.dblwr:
                    self.unverifiable += 1

    def _images_reader(self) -> Callable[[memoryview, int, int], NativeChunk | None] | None:
        """The compiled loop's CRC-32C verdicts of a chunk's full_crc32 images, or None."""
        if self._native is None and self.native_images:
            self._native = chunk_reader((), 0)
            self.native_images = self._native is not None
        return self._native

    def part(self) -> ScanPart:
        counts = Counter(self.counts)
        if self.ok:
            algo = ChecksumAlgo.FULL_CRC32 if self.fast_fcrc32 else ChecksumAlgo.CRC32
            counts[algo.value] += self.ok
        if self.empty:
            counts[ChecksumAlgo.EMPTY.value] += self.empty
        return counts, list(self.invalid), self.unverifiable, self.done


def scan_range(
    ts: Tablespace, start: int, stop: int, progress: Callable[[int], None] | None = None
) -> ScanPart:
    """Verify pages [start, stop) of ``ts`` (see :data:`ScanPart`); pages in holes are all
    zeros, counted as empty without a read. ``progress(pages_done)`` follows each read. A
    file that shrinks under the scan is an :class:`InputError`, never a shorter result."""
    tally = ChecksumTally(ts)
    ranges = ts.scan_window(start, stop)  # where the data is, read by the part that reads it
    for first, run_end, has_data in ts.page_runs(start, stop, ranges=ranges):
        if not has_data:
            tally.holes(run_end - first)
            continue
        for n, mv in ts.read_chunks(first, run_end):
            if progress is not None:
                progress(tally.done + len(mv) // tally.psize)
            tally.chunk(n, mv)
    ts.check_not_shrunk()
    return tally.part()


class _WindowScan:
    """:func:`scan_range` of a window of a split scan, ``progress`` told the pages this
    process has verified over all its windows (each process counts its own, after the fork)."""

    def __init__(self, progress: Callable[[int], None] | None) -> None:
        self.progress = progress
        self.done = 0

    def __call__(self, ts: Tablespace, start: int, stop: int) -> ScanPart:
        if self.progress is None:
            return scan_range(ts, start, stop)
        base, progress = self.done, self.progress
        part = scan_range(ts, start, stop, lambda done: progress(base + done))
        self.done += part[3]
        return part


def check_result(path: str, n: int, ts: Tablespace, parts: Iterable[ScanPart]) -> CheckResult:
    """The :class:`CheckResult` of ``parts`` covering the ``n`` pages of ``ts``; a shortfall
    is an :class:`InputError`, never a result."""
    result = CheckResult(str(path), 0, ts.physical_size, ts.trailing_bytes)
    for counts, invalid, unverifiable, done in parts:
        result.by_algorithm.update(counts)
        result.invalid_pages.extend(invalid)
        result.unverifiable += unverifiable
        result.pages += done
    if result.pages != n:  # a range came back short: never report it as checked
        raise InputError(f"{path}: file shrank while reading ({result.pages} of {n} pages read)")
    result.invalid_pages.sort()
    return result


def check_file(
    path: str,
    jobs: int | None = None,
    parallel_min: int = PARALLEL_MIN_PAGES,
    progress: Callable[[int], None] | None = None,
    keyring: Keyring | None = None,
) -> CheckResult:
    """Verify every page of ``path`` (see module doc); files of ``parallel_min`` pages or more
    are split over ``jobs`` processes. ``progress(pages_done)`` is called by each process for
    its own range. The result counts the pages really verified: all of them, or an error.
    With ``keyring``, encrypted pages are verified after decryption too (the plaintext's own
    checksum)."""
    with Tablespace(path, keyring) as ts:
        n = ts.n_pages
        jobs = jobs or os.cpu_count() or 1
        if jobs == 1 or n < parallel_min:
            parts = [scan_range(ts, 0, n, progress)]
        else:  # tablespace.parallel (pickle, the worker pipes) only for a file worth forking for
            from ibdtool.tablespace.parallel import map_ranges, windows

            parts = map_ranges(ts, _WindowScan(progress), windows(n, jobs, ts.physical_size), jobs)
        return check_result(path, n, ts, parts)
