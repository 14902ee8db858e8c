"""``Tablespace.pages(header_only=True)`` at scan speed, for scans that want every page's record.

The TUI's page map (``inspect`` with ``on_page``) needs a :class:`~ibdtool.parsers.page.PageInfo`
per page. :func:`header_pages` yields the very records the decoder gives — the tests compare both,
field by field, on every sample and corpus file — but builds those of the common pages from
the stored bytes: plain pages whose crc32 or full_crc32 checksum verifies from the columns of
a whole chunk (:mod:`ibdtool.parsers.pagecolumns`), full_crc32 page-compressed images whose CRC-32C
verifies from the header of the page inside, a chunk's at once
(:func:`ibdtool.tablespace.inspect_tally.compressed_headers`). Every other page (zero, damaged,
encrypted, classic compressed, zip, a doublewrite copy) and every page of a tablespace opened with a
key goes through :func:`ibdtool.parsers.page.decode_page`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from ibdtool.parsers.checksum import ChecksumAlgo
from ibdtool.parsers.codecs import codec_for
from ibdtool.parsers.constants import Algorithm, index_types, page_type_name
from ibdtool.parsers.page import HEADER_PREFIX, IndexStats, PageInfo, index_fill
from ibdtool.parsers.pagecolumns import INDEX_FIELDS, columns, plain_verified, verdict_fields
from ibdtool.tablespace.inspect_tally import CompressedHeaders, compressed_headers
from ibdtool.tablespace.reader import Tablespace

if TYPE_CHECKING:
    from ibdtool.fs import PackedRanges

_FIELDS = ("prev", "next", "space_id")


def header_pages(
    ts: Tablespace, start: int = 0, stop: int | None = None, ranges: PackedRanges | None = None
) -> Iterator[PageInfo]:
    """The records of pages [start, stop), as ``ts.pages(start, stop, header_only=True)``;
    ``ranges``: the data map of a window that holds them (else the file's)."""
    fmt = ts.format
    if ts.decryptor is not None or not (fmt.full_crc32 or not fmt.zip):
        yield from ts.pages(start, stop, header_only=True, ranges=ranges)
        return
    stop = ts.n_pages if stop is None else min(stop, ts.n_pages)
    zero = memoryview(bytes(ts.physical_size))
    for first, end, has_data in ts.page_runs(start, stop, ranges=ranges):
        if not has_data:
            for n in range(first, end):
                yield ts._decode(zero, n, None, True)
            continue
        yield from _data_run(ts, first, end)
    ts.check_not_shrunk()


#: the name the package offers it under (``ibdtool.tablespace.header_pages`` is this module)
scan_page_headers = header_pages


def _index_of(cols: Mapping[str, Sequence[int]], k: int, logical: int) -> IndexStats:
    """The index page header of page ``k`` of a chunk's columns, as :func:`index_stats`
    reads it from the page."""
    n_heap, heap_top, garbage = cols["n_heap"][k], cols["heap_top"][k], cols["garbage"][k]
    data_size, fill = index_fill(n_heap, heap_top, garbage, logical)
    return IndexStats(
        index_id=cols["index_id"][k],
        level=cols["level"][k],
        n_recs=cols["n_recs"][k],
        compact=bool(n_heap & 0x8000),
        heap_top=heap_top,
        garbage=garbage,
        data_size=data_size,
        fill=fill,
    )


def _data_run(ts: Tablespace, first: int, end: int) -> Iterator[PageInfo]:
    fmt = ts.format
    psize = ts.physical_size
    logical = ts.logical_size
    fcrc32 = fmt.full_crc32
    vendor = fmt.vendor
    idx_types = index_types(vendor)
    dblwr = ts.doublewrite_pages
    algorithm = fmt.fcrc32_algorithm if fcrc32 else None
    read_header: Callable[[memoryview], bytes] | None = None
    read_all: Callable[[Sequence[bytes | memoryview]], list[bytes]] | None = None
    if algorithm is not None and algorithm is not Algorithm.NONE:
        read_header = codec_for(algorithm).prefix_reader(HEADER_PREFIX, logical)
        read_all = codec_for(algorithm).prefix_batch(HEADER_PREFIX, logical)
    ok_algo = ChecksumAlgo.FULL_CRC32 if fcrc32 else ChecksumAlgo.CRC32
    none = Algorithm.NONE
    names: dict[int, str] = {}
    fields = (*verdict_fields(fcrc32), *_FIELDS, *INDEX_FIELDS)
    for n, mv in ts.read_chunks(first, end):
        count = len(mv) // psize
        cols = columns(mv, psize, fcrc32, fields)
        good = plain_verified(mv, psize, n, fcrc32, cols)
        # the chunk's full_crc32 compressed images at once: CRCs, then their headers inflated
        # (inspect_tally.compressed_headers; doublewrite copies are left to the decoder)
        comp: CompressedHeaders | None = None
        if read_header is not None and algorithm is not None and not all(good):
            comp = compressed_headers(mv, psize, n, cols, read_header, algorithm, dblwr, read_all)
        for k in range(count):
            page_no = n + k
            if dblwr and page_no in dblwr:
                yield ts._decode(mv[k * psize : (k + 1) * psize], page_no, None, True)
                continue
            if good[k]:
                ptype = cols["page_type"][k]
                name = names.get(ptype)
                if name is None:
                    name = names[ptype] = page_type_name(ptype, vendor)
                yield PageInfo(
                    page_no=page_no,
                    stored_page_no=page_no,
                    stored_type=ptype,
                    real_type=ptype,
                    type_name=name,
                    compression=none,
                    compressed_size=None,
                    stored_size=None,
                    checksum_valid=True,
                    checksum_algo=ok_algo,
                    lsn=cols["lsn"][k],
                    space_id=cols["space_id"][k],
                    prev=cols["prev"][k],
                    next=cols["next"][k],
                    index=_index_of(cols, k, logical) if ptype in idx_types else None,
                )
                continue
            if comp is None or not comp.ok[k]:
                yield ts._decode(mv[k * psize : (k + 1) * psize], page_no, None, True)
                continue
            real_type = comp.heads["page_type"][k]
            name = names.get(real_type)
            if name is None:
                name = names[real_type] = page_type_name(real_type, vendor)
            yield PageInfo(
                page_no=page_no,
                stored_page_no=page_no,
                stored_type=cols["page_type"][k],
                real_type=real_type,
                type_name=name,
                compression=algorithm,  # type: ignore[arg-type]
                compressed_size=comp.payload[k],
                stored_size=comp.sizes[k],
                checksum_valid=True,
                checksum_algo=ok_algo,
                lsn=cols["lsn"][k],
                space_id=cols["space_id"][k],
                prev=cols["prev"][k],
                next=cols["next"][k],
                index=_index_of(comp.heads, k, logical) if real_type in idx_types else None,
            )
