"""Open one tablespace file read-only and yield a :class:`PageInfo` per page, lazily.

Reads with ``pread`` in chunks of a few MiB, so memory stays flat whatever the file size, and
never writes to the file. Pages wholly inside holes (``SEEK_DATA``) are zeros without a read,
and scans walk the file in runs of pages (:meth:`Tablespace.page_runs`) so that a 15 TiB sparse
file costs its data, not a billion pages. Knows the filesystem side too (``allocation``), and
the system tablespace's doublewrite area, whose pages are copies of other pages.

The bytes and the filesystem facts normally come from a local descriptor; a
:class:`FileSource` (``report host:path``: :class:`ibdtool.report.remote.RemoteFile`, which reads
through the ssh agent) supplies both instead, and every reader above this class works unchanged.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ibdtool.errors import InputError
from ibdtool.fs import (
    FIEMAP_BIG_BATCH,
    Allocation,
    PackedRanges,
    WindowCounts,
    allocation_stat,
    open_regular,
    read_allocation,
    read_window,
    scan_ranges,
)
from ibdtool.parsers.checksum import ChecksumAlgo
from ibdtool.parsers.constants import FIL_PAGE_TYPE_XDES
from ibdtool.parsers.space import SpaceFormat, detect_format
from ibdtool.parsers.vendor import Vendor
from ibdtool.parsers.xdes import decode_descriptor_page

if TYPE_CHECKING:  # ibdtool.parsers.keyring loads construct and cryptography: only with --keyring
    from ibdtool.parsers.keyring import Keyring
    from ibdtool.parsers.page import PageInfo
    from ibdtool.parsers.sdi import SdiEntry
    from ibdtool.tablespace.decrypt import PageDecryptor

CHUNK_BYTES = 4 << 20
#: the most pages one run of :meth:`Tablespace.page_runs` spans (per-page arrays stay small)
RUN_PAGES = 1 << 16
#: shorter holes are read like data: reading a few zero pages costs less than a run does
MIN_HOLE_PAGES = 64
TRX_SYS_PAGE = 5
TRX_SYS_DOUBLEWRITE_MAGIC_N = 536853855


class FileSource(Protocol):
    r"""Where a :class:`Tablespace` reads when it is not a local file; failures are
    :class:`InputError`\ s naming the file."""

    size: int

    def read(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes at ``offset`` (fewer only at the end of the file)."""
        ...

    def current_size(self) -> int:
        """The file's size now (a scan checks that it did not shrink)."""
        ...

    def allocation(self, with_extents: bool) -> Allocation: ...

    def read_sibling(self, path: Path, limit: int) -> bytes | None:
        """At most ``limit`` bytes of a small file beside it (a ``.cfg``), None if unreadable."""
        ...

    def close(self) -> None: ...


class Tablespace:
    """A read-only view of one ``.ibd`` / ``ibdata`` / undo file."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        keyring: Keyring | None = None,
        *,
        source: FileSource | None = None,
    ) -> None:
        """Open ``path``; with ``keyring``, encrypted pages are decrypted (the key is checked
        first: a wrong or missing key is an :class:`InputError`). With ``source``, ``path``
        only names the file and every byte and filesystem fact comes from ``source``."""
        self.path = Path(path)
        name = str(self.path)
        self._source = source
        fd = -1
        if source is None:
            fd, st = open_regular(self.path)
            size = st.st_size
        else:
            size = source.size
        self._fd = fd
        try:
            self.size = size
            if self.size == 0:
                raise InputError(f"{name}: empty file (0 bytes)")
            try:
                self.format: SpaceFormat = detect_format(self.read, self.size)
            except ValueError as exc:
                raise InputError(f"{name}: {exc}") from None
            if not any(self.read(0, self.format.physical_size)):
                # flags 0 read from zeros would pass for a 16K tablespace of empty pages
                raise InputError(
                    f"{name}: not a tablespace: page 0 is all zeros (never written; a sparse or "
                    "zero-filled file, or a tablespace never flushed)"
                )
        except BaseException:
            self.close()
            raise
        self.physical_size = self.format.physical_size
        self.logical_size = self.format.logical_size
        self.n_pages = self.size // self.physical_size
        self.trailing_bytes = self.size % self.physical_size
        self._descriptor_cache: dict[int, bytes] = {}
        self.sdi_warnings: list[str] = []
        self.decryptor: PageDecryptor | None = None
        try:
            fmt = self.format
            # ibdtool.tablespace.decrypt (ibdtool.parsers.crypt, the key checks) only for a file it
            # may decrypt:
            # MySQL encryption info (the default master key needs no keyring), or MariaDB crypt
            # data that says encrypted and a key file; page_decryptor returns None otherwise
            if fmt.mysql_encryption is not None and keyring is None:
                keyring = self._sibling_cfp()
                if keyring is not None:
                    name = f"{name} (with the .cfp beside it)"
            if fmt.mysql_encryption is not None or (fmt.crypt_encrypted and keyring is not None):
                from ibdtool.tablespace.decrypt import page_decryptor

                self.decryptor = page_decryptor(fmt, keyring, self.raw_page, self.n_pages, name)
        except BaseException:
            self.close()
            raise

    # --- I/O -----------------------------------------------------------------------------------

    def read(self, offset: int, length: int) -> bytes:
        if self._source is not None:
            return self._source.read(offset, length)
        try:
            return os.pread(self._fd, length, offset)
        except OSError as exc:
            if exc.errno == errno.EISDIR:
                raise InputError(f"{self.path}: is a directory") from None
            raise InputError(f"{self.path}: read error at byte {offset}: {exc.strerror}") from None

    def raw_page(self, page_no: int) -> bytes:
        if not 0 <= page_no < self.n_pages:
            raise InputError(f"{self.path}: page {page_no} out of range 0..{self.n_pages - 1}")
        return self.read(page_no * self.physical_size, self.physical_size)

    def stored_page(self, page_no: int) -> bytes:
        """The stored page, decrypted (as the server would store it unencrypted) when a key
        opened the tablespace."""
        raw = self.raw_page(page_no)
        dec = self.decryptor
        plain = dec.decrypt(raw, page_no) if dec is not None else None
        return raw if plain is None else plain

    @property
    def is_local(self) -> bool:
        """The file is on this machine (not read through a remote source)."""
        return self._source is None

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._source is not None:
            self._source.close()
            self._source = None

    def _sibling_cfp(self) -> Keyring | None:
        """The ``.cfp`` FLUSH TABLES … FOR EXPORT wrote beside an encrypted MySQL table (its
        tablespace key and IV), used without ``--keyring`` as the ``.cfg`` beside a file is;
        None when there is none or it is not a .cfp."""
        data = self.read_sibling(self.path.with_suffix(".cfp"), 4096)
        if data is None:
            return None  # ibdtool.parsers.keyring (construct, cryptography) only when there is one
        from ibdtool.parsers.keyring import CFP_FILE, KeyringError, parse_cfp

        if len(data) != CFP_FILE.sizeof():
            return None
        try:
            return parse_cfp(data)
        except KeyringError:
            return None

    def read_sibling(self, path: Path, limit: int) -> bytes | None:
        """At most ``limit`` bytes of a small file beside this one (its ``.cfg``); None when
        there is none or it cannot be read."""
        if self._source is not None:
            return self._source.read_sibling(path, limit)
        try:
            with path.open("rb") as fh:
                return fh.read(limit)
        except OSError:
            return None

    def __enter__(self) -> Tablespace:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- pages ---------------------------------------------------------------------------------

    @cached_property
    def doublewrite_pages(self) -> frozenset[int]:
        """Pages of the system tablespace's doublewrite buffer (from the TRX_SYS page)."""
        if self.format.space_id != 0 or self.n_pages <= TRX_SYS_PAGE or self.format.zip:
            return frozenset()
        page = self.raw_page(TRX_SYS_PAGE)
        base = self.logical_size - 200  # TRX_SYS_DOUBLEWRITE
        magic = int.from_bytes(page[base + 10 : base + 14], "big")
        if magic != TRX_SYS_DOUBLEWRITE_MAGIC_N:
            return frozenset()
        block1 = int.from_bytes(page[base + 14 : base + 18], "big")
        block2 = int.from_bytes(page[base + 18 : base + 22], "big")
        extent = self.format.extent_pages
        return frozenset(range(block1, block1 + extent)) | frozenset(range(block2, block2 + extent))

    @cached_property
    def _decode_page(self) -> Callable[..., PageInfo]:
        """:func:`ibdtool.parsers.page.decode_page`, imported at the first page decoded whole:
        the columnar tallies of ``inspect`` and ``checksum`` need neither the decoder nor its
        record class (issue 24, item 4: start-up)."""
        from ibdtool.parsers.page import decode_page

        return decode_page

    def _decode(
        self,
        buf: memoryview | bytes,
        page_no: int,
        keep: list[bytes] | None,
        header_only: bool = False,
    ) -> PageInfo:
        decode_page = self._decode_page
        dec = self.decryptor
        plain = dec.decrypt(buf, page_no) if dec is not None else None
        if dec is not None and plain is not None:
            from dataclasses import replace  # PageInfo's module loaded it: no start-up cost

            # the plaintext is a stored page again: its own envelope, checksum and decompression
            info = replace(
                decode_page(plain, page_no, self.format, keep_page=keep, header_only=header_only),
                decrypted=True,
                key_version=dec.key_version(buf),
            )
        else:
            info = decode_page(buf, page_no, self.format, keep_page=keep, header_only=header_only)
        if page_no in self.doublewrite_pages and not info.empty:
            # a copy of another page: not an index page of this tablespace, and a stale copy
            # that no longer verifies is not corruption (innochecksum skips these pages too)
            from dataclasses import replace

            from ibdtool.parsers.page import DOUBLEWRITE_NAME

            info = replace(
                info,
                type_name=DOUBLEWRITE_NAME,
                index=None,
                problem=None,
                checksum_valid=True
                if info.checksum_algo not in (ChecksumAlgo.INVALID, ChecksumAlgo.ENCRYPTED)
                else None,
            )
        return info

    def page(self, page_no: int) -> PageInfo:
        return self._decode(self.raw_page(page_no), page_no, None)

    def page_with_data(self, page_no: int) -> tuple[PageInfo, bytes, bytes]:
        """The record, the stored bytes and the decoded logical page (for hex views)."""
        raw = self.raw_page(page_no)
        keep: list[bytes] = []
        info = self._decode(raw, page_no, keep)
        return info, raw, keep[0]

    def _stored_pages(
        self, start: int, stop: int | None, ranges: PackedRanges | None = None
    ) -> Iterator[tuple[int, memoryview]]:
        """(page number, stored bytes) for [start, stop), reading a few MiB at a time; pages in
        holes are zeros without a read. ``ranges``: as :meth:`page_runs` takes it."""
        psize = self.physical_size
        per_chunk = max(1, CHUNK_BYTES // psize)
        zero = memoryview(bytes(psize))
        for first, end, has_data in self.page_runs(start, stop, ranges=ranges):
            if not has_data:
                for n in range(first, end):
                    yield n, zero
                continue
            for n, raw in self.read_pages(first, end, per_chunk):
                chunk = memoryview(raw)
                for i in range(len(chunk) // psize):
                    yield n + i, chunk[i * psize : (i + 1) * psize]
        self.check_not_shrunk()

    def read_pages(self, start: int, stop: int, per_chunk: int) -> Iterator[tuple[int, bytes]]:
        """(first page, bytes of whole pages) for [start, stop), ``per_chunk`` pages a read;
        a short read is the file shrinking under us, never a shorter answer."""
        psize = self.physical_size
        n = start
        while n < stop:
            count = min(per_chunk, stop - n)
            chunk = self.read(n * psize, count * psize)
            if len(chunk) < count * psize:
                raise InputError(
                    f"{self.path}: file shrank while reading (page {n + len(chunk) // psize})"
                )
            yield n, chunk
            n += count

    def read_chunks(
        self, start: int, stop: int, per_chunk: int = CHUNK_BYTES
    ) -> Iterator[tuple[int, memoryview]]:
        """Like :meth:`read_pages` (``per_chunk`` in bytes here), into one buffer reused for
        every chunk: each view is valid only until the next one is asked for, so the caller
        must be done with it (scans that tally and keep nothing). Saves a fresh multi-MiB
        allocation, and its page faults, per chunk. A remote source's chunks come as read, or
        as views of the bytes it holds (its ``view(offset, length)``: a file fetched whole)."""
        psize = self.physical_size
        pages = max(1, per_chunk // psize)
        if self._source is not None:
            view = getattr(self._source, "view", None)
            if view is None:
                for n, chunk in self.read_pages(start, stop, pages):
                    yield n, memoryview(chunk)
                return
            n = start
            while n < stop:
                count = min(pages, stop - n)
                mv: memoryview = view(n * psize, count * psize)
                if len(mv) < count * psize:
                    raise InputError(
                        f"{self.path}: file shrank while reading (page {n + len(mv) // psize})"
                    )
                yield n, mv
                n += count
            return
        buf = bytearray(min(pages, max(0, stop - start)) * psize)
        whole = memoryview(buf)
        n = start
        while n < stop:
            count = min(pages, stop - n)
            view = whole[: count * psize]
            offset = n * psize
            try:
                got = os.preadv(self._fd, [view], offset)
                while got < len(view):  # a short read: once more, then it is the file shrinking
                    more = os.preadv(self._fd, [view[got:]], offset + got)
                    if not more:
                        raise InputError(
                            f"{self.path}: file shrank while reading (page {n + got // psize})"
                        )
                    got += more
            except OSError as exc:
                raise InputError(
                    f"{self.path}: read error at byte {offset}: {exc.strerror}"
                ) from None
            yield n, view
            n += count

    def check_not_shrunk(self) -> None:
        """After a scan that skipped holes: the file still has the size it was opened with."""
        if self._source is not None:
            size = self._source.current_size()
        else:
            try:
                size = os.fstat(self._fd).st_size
            except OSError as exc:
                raise InputError(f"{self.path}: cannot stat: {exc.strerror}") from None
        if size < self.size:
            raise InputError(
                f"{self.path}: file shrank while reading ({self.size} bytes, now {size})"
            )

    @cached_property
    def data_map(self) -> Allocation:
        """The data ranges and sizes, for callers that need no extents: a local file's
        :attr:`allocation` (its FIEMAP call is what makes the exact map cheap,
        :func:`ibdtool.fs.allocation.ranges_from_extents`), a remote source's without extents."""
        if "allocation" in self.__dict__ or self._source is None:
            return self.allocation
        return self._source.allocation(with_extents=False)

    @cached_property
    def data_ranges(self) -> PackedRanges:
        """The byte ranges that hold data (SEEK_DATA/SEEK_HOLE); the rest reads as zeros."""
        return self.data_map.data_ranges

    @contextmanager
    def _reading_allocation(self) -> Iterator[None]:
        """The filesystem's refusal of an allocation call (FIEMAP, SEEK_DATA, fstat) as the
        one line of an :class:`InputError`."""
        try:
            yield
        except OSError as exc:
            raise InputError(f"{self.path}: cannot read allocation: {exc.strerror}") from None

    @cached_property
    def scan_ranges(self) -> PackedRanges:
        """Byte ranges holding all the data, for ``page_runs(coarse=True)``: the exact
        :attr:`data_ranges` when already known, else SEEK_DATA probed every
        :data:`MIN_HOLE_PAGES` pages (:func:`ibdtool.fs.allocation.scan_ranges`) — holes shorter
        than that are read like data anyway, and a page-compressed file has one in every page."""
        return self.scan_window(0, self.n_pages)

    def scan_window(self, start: int, stop: int) -> PackedRanges:
        """:attr:`scan_ranges` of pages [start, stop) alone, read by the part of a split scan
        that reads those pages (none is read whole before the fork): for
        ``page_runs(start, stop, ranges=...)``. The whole file's when already known."""
        if "scan_ranges" in self.__dict__:
            return self.scan_ranges
        if (
            self._source is not None
            or {"data_map", "data_ranges", "allocation"} & self.__dict__.keys()
        ):
            return self.data_ranges
        psize = self.physical_size
        end = None if stop >= self.n_pages else stop * psize
        with self._reading_allocation():
            return scan_ranges(self._fd, self.size, MIN_HOLE_PAGES * psize, start * psize, end)

    def page_runs(
        self,
        start: int = 0,
        stop: int | None = None,
        max_run: int = RUN_PAGES,
        *,
        coarse: bool = False,
        ranges: PackedRanges | None = None,
    ) -> Iterator[tuple[int, int, bool]]:
        """Runs ``(first, end, has_data)`` covering pages [start, stop) in order, none longer
        than ``max_run`` pages; a run without data lies wholly in holes (all-zero pages), so a
        1 TiB sparse file costs a few runs, not 67 million reads. Holes shorter than
        :data:`MIN_HOLE_PAGES` are read with the data around them (fewer, longer runs).
        ``coarse``: from :attr:`scan_ranges` (a data run may then also hold up to
        :data:`MIN_HOLE_PAGES` zero pages at the start of a long hole), for scans that read
        every page anyway and want no exact map. ``ranges``: the data map of a window that holds
        [start, stop) (:meth:`window_allocation`) instead."""
        stop = self.n_pages if stop is None else min(stop, self.n_pages)
        start = max(0, start)
        psize = self.physical_size
        if ranges is None:
            ranges = self.scan_ranges if coarse else self.data_ranges
        # one walk over the packed ranges from a bisection, a range looked at once (a
        # compressed file has a range a page: no lookup by index, no list of them)
        nxt = ranges.index_at(start * psize)  # the index of the range next(pairs) gives
        pairs = ranges.pairs_from(nxt)
        cur = next(pairs, None)
        nxt += 1
        near = MIN_HOLE_PAGES * psize  # ranges closer than this are surely one data run
        chunk = ranges.CHUNK
        n = start
        while n < stop:
            # the next data range that reaches past page n
            while cur is not None and cur[1] <= n * psize:
                cur = next(pairs, None)
                nxt += 1
            if cur is None:
                data_first = data_end = stop
            else:
                data_first = max(n, cur[0] // psize)
                if data_first - n < MIN_HOLE_PAGES:
                    data_first = n
                data_end = -(-cur[1] // psize)
                # ranges with no long hole between them: one data run (up to ``stop``: a
                # compressed file has a range a page, and a scan of a block must not walk
                # every range to the end of the file)
                reach = data_end + MIN_HOLE_PAGES
                while data_end < stop:
                    if nxt % chunk == 0 and cur is not None:
                        # a whole chunk of ranges each closer than ``near`` to the one before
                        # joins the run as its ranges would one by one (a page-compressed
                        # file: a range a page), when it ends before ``stop``
                        last = ranges.close_chunk_end(nxt // chunk, cur[1], near)
                        if last is not None and -(-last // psize) < stop:
                            data_end = max(data_end, -(-last // psize))
                            reach = data_end + MIN_HOLE_PAGES
                            nxt += chunk
                            pairs = ranges.pairs_from(nxt)
                            cur = (last, last)
                            continue
                    cur = next(pairs, None)
                    nxt += 1
                    if cur is None or cur[0] // psize >= reach:
                        break  # ``cur`` is where the next run's walk starts
                    end_page = -(-cur[1] // psize)
                    if end_page > data_end:
                        data_end = end_page
                        reach = data_end + MIN_HOLE_PAGES
            for first, end, has_data in ((n, data_first, False), (data_first, data_end, True)):
                end = min(end, stop)
                while first < end:
                    cut = min(end, first + max_run)
                    yield first, cut, has_data
                    first = cut
            n = max(n, min(data_end, stop))

    def pages(
        self,
        start: int = 0,
        stop: int | None = None,
        *,
        header_only: bool = False,
        ranges: PackedRanges | None = None,
    ) -> Iterator[PageInfo]:
        """Every page in [start, stop), decoded lazily, reading a few MiB at a time;
        ``header_only``: inflate no more of a compressed page than its header where its
        checksum does not need the page (:func:`ibdtool.parsers.page.decode_page`);
        ``ranges``: the data map of a window that holds the pages (:meth:`page_runs`)."""
        for n, stored in self._stored_pages(start, stop, ranges):
            yield self._decode(stored, n, None, header_only)

    def logical_pages(
        self, start: int = 0, stop: int | None = None
    ) -> Iterator[tuple[PageInfo, bytes]]:
        """Like :meth:`pages`, with each page's decoded (decompressed) logical image."""
        for n, stored in self._stored_pages(start, stop):
            keep: list[bytes] = []
            info = self._decode(stored, n, keep)
            yield info, keep[0]

    # --- tablespace-wide -----------------------------------------------------------------------

    def _descriptor_free(self, page_no: int) -> bytes:
        """One byte per page of those the descriptor page ``page_no`` describes: 1 where its
        XDES bitmaps say free; all 0 when it is not a descriptor page or is damaged (the
        cautious answer). The last few are kept: runs of a scan ask for the same ones."""
        cache = self._descriptor_cache
        if page_no not in cache:
            if len(cache) >= 16:
                cache.clear()
            page = self.raw_page(page_no)
            out = bytearray(self.physical_size)
            if not page_no or int.from_bytes(page[24:26], "big") == FIL_PAGE_TYPE_XDES:
                try:
                    extents = decode_descriptor_page(page, page_no, self.format, self.n_pages)
                except Exception:  # a damaged descriptor: its pages stay "used"
                    extents = []
                for extent in extents:
                    base = extent.first_page - page_no
                    out[base : base + len(extent.free)] = bytes(extent.free)
            cache[page_no] = bytes(out)
        return cache[page_no]

    def free_window(self, start: int, stop: int) -> bytearray:
        """One byte per page of [start, stop): 1 where the extent descriptors say the page is
        free (§9.4). Only the descriptor pages that describe the window are read, so a huge
        file is taken a window at a time."""
        out = bytearray()
        psize = self.physical_size
        stop = max(start, stop)
        for d in range(start - start % psize, stop, psize):
            free = self._descriptor_free(d) if d < self.n_pages else bytes(psize)
            out += free[max(start - d, 0) : min(stop - d, psize)]
        limit = min(max(self.format.free_limit, start), stop)
        out[limit - start :] = b"\x01" * (stop - limit)
        return out

    @cached_property
    def allocation(self) -> Allocation:
        if self._source is not None:
            return self._source.allocation(with_extents=True)
        with self._reading_allocation():
            return read_allocation(self._fd)

    @cached_property
    def allocation_stat(self) -> tuple[int, int, int]:
        """``(st_size, allocated, fs_block_size)`` as :attr:`allocation` has them, without
        its map when it is not read yet (a split scan reads a window each,
        :meth:`window_allocation`)."""
        if "allocation" in self.__dict__ or self._source is not None:
            a = self.allocation
            return a.st_size, a.allocated, a.fs_block_size
        with self._reading_allocation():
            return allocation_stat(self._fd)

    @property
    def fs_block_size(self) -> int:
        """The filesystem's block size (:attr:`allocation`'s)."""
        return self.allocation_stat[2]

    def window_allocation(
        self, start: int, stop: int, *, batch: int = FIEMAP_BIG_BATCH
    ) -> tuple[Allocation, WindowCounts]:
        """The allocation of pages [start, stop) read apart from the rest of the file's (the
        last window, ``stop`` at :attr:`n_pages`, to the file's end and past it): an
        :class:`Allocation` whose data ranges are those that meet the window (for
        :meth:`page_runs` and per-page figures there), and what the window adds to the file's
        totals (:func:`ibdtool.fs.join_windows`). Local files only. ``batch``: extents a
        FIEMAP call asks for."""
        size, allocated, block = self.allocation_stat
        psize = self.physical_size
        end = None if stop >= self.n_pages else stop * psize
        with self._reading_allocation():
            ranges, counts = read_window(self._fd, size, start * psize, end, batch=batch)
        alloc = Allocation(size, allocated, block, ranges, None, None)
        return alloc, counts

    def logical_page(self, page_no: int) -> bytes:
        return self.page_with_data(page_no)[2]

    def sdi(self) -> list[SdiEntry]:
        """MySQL 8 SDI records; empty when the tablespace has none.

        Loops the walk stopped at are left in :attr:`sdi_warnings`, one line each.
        """
        self.sdi_warnings = []
        root = self.format.sdi_root
        if root is None or self.format.vendor is not Vendor.MYSQL:
            return []
        if root >= self.n_pages:
            raise InputError(
                f"{self.path}: SDI root page {root} is past the end of the file "
                f"({self.n_pages} whole pages)"
            )
        zip_format = self.format.zip
        if zip_format:
            encrypted = self.page(root).encrypted
        else:  # the root decoded once: its record and the logical page the walk starts on
            info, _, root_page = self.page_with_data(root)
            encrypted = info.encrypted
        if encrypted:
            raise InputError(f"{self.path}: the SDI pages are encrypted (keyring needed)")
        # the SDI reader only for a MySQL file that has one (tests/test_startup.py)
        from ibdtool.parsers.sdi import SdiError, read_sdi, read_zip_sdi

        try:
            warn = self.sdi_warnings.append
            if zip_format:
                return read_zip_sdi(self.stored_page, root, self.physical_size, warn)

            def logical(page_no: int) -> bytes:
                return root_page if page_no == root else self.logical_page(page_no)

            return read_sdi(logical, root, warn)
        except SdiError as exc:
            raise InputError(f"{self.path}: {exc}") from None
        except (IndexError, ValueError) as exc:
            raise InputError(f"{self.path}: SDI is damaged ({exc})") from None
