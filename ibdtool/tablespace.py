"""Open one tablespace file read-only and yield a :class:`PageInfo` per page, lazily.

Reads with ``pread`` in chunks of a few MiB, so memory stays flat whatever the file size, and
never writes to the file. Knows the filesystem side too (``allocation``), and the system
tablespace's doublewrite area, whose pages are copies of other pages.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from types import TracebackType

from ibdtool.allocation import Allocation, read_allocation
from ibdtool.errors import InputError
from parsers.checksum import ChecksumAlgo
from parsers.constants import FIL_PAGE_TYPE_XDES, Vendor
from parsers.page import DOUBLEWRITE_NAME, PageInfo, decode_page
from parsers.sdi import SdiEntry, SdiError, read_sdi, read_zip_sdi
from parsers.space import SpaceFormat, detect_format
from parsers.xdes import descriptor_pages, free_map

CHUNK_BYTES = 4 << 20
TRX_SYS_PAGE = 5
TRX_SYS_DOUBLEWRITE_MAGIC_N = 536853855


class Tablespace:
    """A read-only view of one ``.ibd`` / ``ibdata`` / undo file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        name = str(self.path)
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            raise InputError(f"{name}: no such file") from None
        except PermissionError:
            raise InputError(f"{name}: permission denied") from None
        except OSError as exc:
            raise InputError(f"{name}: cannot open: {exc.strerror}") from None
        self._fd = fd
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise InputError(f"{name}: is a directory")
            if not stat.S_ISREG(st.st_mode):
                raise InputError(f"{name}: not a regular file")
            self.size = st.st_size
            if self.size == 0:
                raise InputError(f"{name}: empty file (0 bytes)")
            try:
                self.format: SpaceFormat = detect_format(self.read, self.size)
            except ValueError as exc:
                raise InputError(f"{name}: {exc}") from None
        except BaseException:
            os.close(fd)
            self._fd = -1
            raise
        self.physical_size = self.format.physical_size
        self.logical_size = self.format.logical_size
        self.n_pages = self.size // self.physical_size
        self.trailing_bytes = self.size % self.physical_size

    # --- I/O -----------------------------------------------------------------------------------

    def read(self, offset: int, length: int) -> bytes:
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

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Tablespace:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
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

    def _decode(self, buf: memoryview | bytes, page_no: int, keep: list[bytes] | None) -> PageInfo:
        info = decode_page(buf, page_no, self.format, keep_page=keep)
        if page_no in self.doublewrite_pages and not info.empty:
            # a copy of another page: not an index page of this tablespace, and a stale copy
            # that no longer verifies is not corruption (innochecksum skips these pages too)
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

    def _stored_pages(self, start: int, stop: int | None) -> Iterator[tuple[int, memoryview]]:
        """(page number, stored bytes) for [start, stop), reading a few MiB at a time."""
        stop = self.n_pages if stop is None else min(stop, self.n_pages)
        psize = self.physical_size
        per_chunk = max(1, CHUNK_BYTES // psize)
        n = max(0, start)
        while n < stop:
            count = min(per_chunk, stop - n)
            chunk = memoryview(self.read(n * psize, count * psize))
            got = len(chunk) // psize
            for i in range(got):
                yield n + i, chunk[i * psize : (i + 1) * psize]
            if got < count:
                raise InputError(f"{self.path}: file shrank while reading (page {n + got})")
            n += count

    def pages(self, start: int = 0, stop: int | None = None) -> Iterator[PageInfo]:
        """Every page in [start, stop), decoded lazily, reading a few MiB at a time."""
        for n, stored in self._stored_pages(start, stop):
            yield self._decode(stored, n, None)

    def logical_pages(
        self, start: int = 0, stop: int | None = None
    ) -> Iterator[tuple[PageInfo, bytes]]:
        """Like :meth:`pages`, with each page's decoded (decompressed) logical image."""
        for n, stored in self._stored_pages(start, stop):
            keep: list[bytes] = []
            info = self._decode(stored, n, keep)
            yield info, keep[0]

    # --- tablespace-wide -----------------------------------------------------------------------

    @cached_property
    def free_map(self) -> bytearray:
        """One byte per page, 1 where the extent descriptors say the page is free (§9.4)."""
        pages: dict[int, bytes] = {}
        for n in descriptor_pages(self.format, self.n_pages):
            page = self.raw_page(n)
            if n == 0 or int.from_bytes(page[24:26], "big") == FIL_PAGE_TYPE_XDES:
                pages[n] = page
        try:
            return free_map(pages, self.format, self.n_pages)
        except Exception:  # a damaged descriptor: claim nothing is free
            return bytearray(self.n_pages)

    @cached_property
    def allocation(self) -> Allocation:
        try:
            return read_allocation(self._fd)
        except OSError as exc:
            raise InputError(f"{self.path}: cannot read allocation: {exc.strerror}") from None

    def logical_page(self, page_no: int) -> bytes:
        return self.page_with_data(page_no)[2]

    def sdi(self) -> list[SdiEntry]:
        """MySQL 8 SDI records; empty when the tablespace has none."""
        root = self.format.sdi_root
        if root is None or self.format.vendor is not Vendor.MYSQL:
            return []
        if root >= self.n_pages:
            raise InputError(
                f"{self.path}: SDI root page {root} is past the end of the file "
                f"({self.n_pages} whole pages)"
            )
        if self.page(root).encrypted:
            raise InputError(f"{self.path}: the SDI pages are encrypted (keyring needed)")
        try:
            if self.format.zip:
                return read_zip_sdi(self.raw_page, root, self.physical_size)
            return read_sdi(self.logical_page, root)
        except SdiError as exc:
            raise InputError(f"{self.path}: {exc}") from None
        except (IndexError, ValueError) as exc:
            raise InputError(f"{self.path}: SDI is damaged ({exc})") from None
