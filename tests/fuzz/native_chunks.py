"""The compiled chunk loop (:mod:`ibdtool.parsers.fcrc32_native`) against the Python path it
replaces, on any bytes: every answer column by column, and no crash.

:func:`compare_chunk` runs both on one chunk: the loop's zlib header reader against
:func:`ibdtool.tablespace.inspect_tally.compressed_headers` with the compiled loop refused
(``native=False``: the reference), its CRC-32C verdicts alone against
:func:`ibdtool.parsers.pagecolumns.compressed_verified`, and its stored types and marks against
:func:`ibdtool.parsers.pagecolumns.columns`. :func:`compare_bytes` does every chunk of a file's
bytes at the page sizes the loop takes; the fuzz harness runs it on damaged files
(:data:`tests.fuzz.runner.ENTRY_POINTS`, ``native``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from ibdtool.parsers.codecs import codec_for
from ibdtool.parsers.constants import Algorithm
from ibdtool.parsers.fcrc32_native import NativeChunk, chunk_reader
from ibdtool.parsers.pagecolumns import (
    INDEX_FIELDS,
    PREFIX_BYTES,
    columns,
    compressed_verified,
    verdict_fields,
)
from ibdtool.tablespace.inspect_tally import HEADER_FIELDS, compressed_headers

#: the physical page sizes of a full_crc32 tablespace
PAGE_SIZES = (4096, 8192, 16384, 32768, 65536)


@cache
def _python_prefix(logical: int) -> Callable[[memoryview], bytes]:
    return codec_for(Algorithm.ZLIB).prefix_reader(PREFIX_BYTES, logical)


def compare_chunk(mv: memoryview, psize: int, first_page: int) -> NativeChunk | None:
    """Both paths on the chunk ``mv`` (whole pages of ``psize``, the first numbered
    ``first_page``); AssertionError where they differ. The loop's header answer (None without
    the library)."""
    headers = chunk_reader(HEADER_FIELDS, PREFIX_BYTES)
    verdicts = chunk_reader((), 0)
    if headers is None or verdicts is None:
        return None
    count = len(mv) // psize
    if not count:
        return None
    mv = mv[: count * psize]
    got = headers(mv, psize, first_page)
    crc = verdicts(mv, psize, first_page)
    assert got is not None and crc is not None
    cols = columns(mv, psize, True, (*verdict_fields(True), *INDEX_FIELDS))
    ref = compressed_headers(
        mv, psize, first_page, cols, _python_prefix(psize), Algorithm.ZLIB, native=False
    )
    where = f"chunk of {count} pages of {psize} at page {first_page}"
    assert got.ok == ref.ok, f"{where}: ok {got.ok} != {ref.ok}"
    for name in HEADER_FIELDS:
        assert list(got.heads[name]) == list(ref.heads[name]), f"{where}: {name}"
    assert list(got.sizes) == list(ref.sizes), f"{where}: sizes"
    assert list(got.payload) == list(ref.payload), f"{where}: payload"
    assert tuple(got.stored) == cols["page_type"], f"{where}: stored types"
    assert got.marked == sum(t >> 15 for t in cols["page_type"]), f"{where}: marked"
    assert crc.ok == compressed_verified(mv, psize, first_page, cols), f"{where}: CRC verdicts"
    assert crc.marked == got.marked and list(crc.stored) == list(got.stored), where
    return got


def compare_bytes(data: bytes, chunk_pages: int = 64) -> int:
    """:func:`compare_chunk` over all of ``data`` at every page size it holds a page of, in
    chunks of ``chunk_pages`` pages (the last shorter); the pages compared."""
    buf = bytearray(data)  # a scan's chunks are writable views of its read buffer
    whole = memoryview(buf)
    done = 0
    for psize in PAGE_SIZES:
        pages = len(buf) // psize
        for first in range(0, pages, chunk_pages):
            count = min(chunk_pages, pages - first)
            compare_chunk(whole[first * psize : (first + count) * psize], psize, first)
            done += count
    # a read-only view (a remote file's bytes) is read through a copy: the same answers
    if len(data) >= 16384:
        compare_chunk(memoryview(bytes(data[:16384])), 16384, 0)
    return done
