"""The page check of a local copy, done on the read-back of each window (``copy --verify full``).

:class:`ibdtool.copy.agent.Destination` reads every window back after its ``fdatasync`` to
compare its CRC-32 with the source's. :class:`WindowPages` is that read
(``Destination.read_back``): each piece of the window is read from the part file into a
buffer of whole pages, its CRC-32 taken there, and the pages the buffer completes are verified
(:class:`ibdtool.tablespace.checksum.ChecksumTally`, the engine of ``ibdtool checksum``) from the
same bytes, so no second pass reads the destination after the copy. The bytes outside the pieces are
holes of the part (the flush punched every allocated block of them before the read-back) and stand
as zeros, as a read of a hole returns. A page cut by a window's end waits in the buffer for the
next window; the pages after the last piece are verified by :meth:`WindowPages.finish`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ibdtool.copy import agent
from ibdtool.tablespace import CheckResult, ChecksumTally, Tablespace, check_result

CHUNK_PAGES = 256  # pages verified at a time: 4 MiB of 16K pages, as ``checksum`` reads


class WindowPages:
    """Reads windows back for a :class:`~ibdtool.copy.agent.Destination` and verifies the
    pages of ``ts`` (the source's tablespace: the copy's page 0 is the same bytes) as they
    complete; windows must come in order, from the first (not for a resumed copy)."""

    def __init__(self, ts: Tablespace, path: str) -> None:
        self.path = path
        self.ts = ts
        self.tally = ChecksumTally(ts)
        self.psize = ts.physical_size
        self.n_pages = ts.n_pages
        self.buf = bytearray(CHUNK_PAGES * self.psize)
        self.view = memoryview(self.buf)
        self.base = 0  # the page at buf[0]; every page before it is tallied
        self.used = 0  # pages of buf holding bytes of a piece (the rest: zeros)

    def __call__(self, fd: int, pieces: Sequence[tuple[int, int]]) -> int | None:
        """The CRC-32 of ``pieces`` read from ``fd``; None when the file ends short."""
        psize, view, preadv, crc32 = self.psize, self.view, os.preadv, agent.crc32
        crc = 0
        at = self.base * psize  # the file offset of buf[0]
        limit = at + len(view)
        high = at + self.used * psize  # the end of the bytes read into buf
        for start, end in pieces:
            if end <= limit and start >= at:  # the common case: the piece fits in buf
                mv = view[start - at : end - at]
                if preadv(fd, [mv], start) != end - start:
                    return None
                crc = crc32(mv, crc)
                if end > high:
                    high = end
                continue
            pos = start
            while pos < end:
                if pos >= limit:
                    self.used = -(-high // psize) - self.base
                    self._flush(pos // psize)
                    at = high = self.base * psize
                    limit = at + len(view)
                n = min(end, limit) - pos
                mv = view[pos - at : pos - at + n]
                if preadv(fd, [mv], pos) != n:
                    return None
                crc = crc32(mv, crc)
                pos += n
                high = max(high, pos)
        self.used = -(-high // psize) - self.base
        if pieces:
            self._flush(pieces[-1][1] // psize)  # the page cut by the window's end waits
        return crc

    def _flush(self, upto: int) -> None:
        """Verify the pages before ``upto``; the buffer then starts at page ``upto``,
        keeping the bytes of it already read."""
        psize, tally = self.psize, self.tally
        done = min(max(upto - self.base, 0), self.used)
        last = min(self.base + done, self.n_pages)  # a trailing partial page: never a page
        if last > self.base:
            tally.chunk(self.base, self.view[: (last - self.base) * psize])
        holes = min(upto, self.n_pages) - max(self.base + done, last)
        if holes > 0:
            tally.holes(holes)
        if done < self.used:  # the page cut by a window's end (upto lies within the buffer)
            keep = (self.used - done) * psize
            self.view[:keep] = self.view[done * psize : done * psize + keep]
            self.view[keep : self.used * psize] = bytes(self.used * psize - keep)
            self.used -= done
        else:
            self.view[: self.used * psize] = bytes(self.used * psize)
            self.used = 0
        self.base = max(upto, self.base)

    def finish(self) -> CheckResult:
        """Verify what is left (after the last window, holes punched): every page counted."""
        self._flush(max(self.n_pages, self.base + self.used))
        return check_result(self.path, self.n_pages, self.ts, [self.tally.part()])
