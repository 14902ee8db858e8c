"""``pages --json`` at scan speed: JSON lines written from the stored bytes, split over cores.

The rows are those of :func:`ibdtool.tablespace.page_rows.page_rows` encoded by
``json.JSONEncoder``, byte for byte (the tests compare both on every sample and corpus file).
The pages a large file is made of — plain pages with a good crc32 or full_crc32 checksum,
full_crc32 page-compressed images with a good CRC-32C, MariaDB classic page_compressed
images and MySQL type-14 images whose inner page verifies, all-zero pages — are written from a
template, their fields taken from the columns of a whole chunk
(:mod:`ibdtool.parsers.pagecolumns`) or, for a compressed image, from the header of the page
inside (a chunk at a time: :func:`ibdtool.tablespace.inspect_tally.compressed_headers`,
:func:`ibdtool.tablespace.inspect_tally.classic_pages`); every other page (and every page of a
tablespace opened with a key) goes through the decoder and
:func:`~ibdtool.tablespace.page_rows.page_row`, as before.

The file is cut into blocks of :data:`BLOCK_PAGES` pages; with several cores, forked workers
take every n-th block and the blocks come back in page order (:func:`ibdtool.tablespace.parallel.
ordered_map`), so the output is the one a single process writes, streamed a block at a time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from ibdtool.errors import InputError
from ibdtool.parsers.checksum import ChecksumAlgo
from ibdtool.parsers.codecs import codec_for
from ibdtool.parsers.constants import SDI_INDEX_ID, Algorithm, index_types, page_type_name
from ibdtool.parsers.index_fill import index_fill
from ibdtool.parsers.page import HEADER_PREFIX
from ibdtool.parsers.pagecolumns import INDEX_FIELDS, columns, plain_verified, verdict_fields
from ibdtool.tablespace.inspect import index_names_of
from ibdtool.tablespace.inspect_tally import CompressedHeaders, classic_pages, compressed_headers
from ibdtool.tablespace.page_rows import page_row, parse_type_filter
from ibdtool.tablespace.parallel import ordered_map
from ibdtool.tablespace.reader import Tablespace

if TYPE_CHECKING:  # ibdtool.parsers.keyring loads construct and cryptography: only with --keyring
    from ibdtool.parsers.keyring import Keyring
    from ibdtool.parsers.tabledef import TableDef

#: pages per block: one worker's unit of work, and what the parent holds at most per worker
BLOCK_PAGES = 4096
#: files with fewer pages stay in one process (a fork costs more than they take)
PARALLEL_MIN_PAGES = 8192

_encode = json.JSONEncoder().encode
# page_row's keys in its order, with the values a verified page leaves to the template
_ROW = (
    '{"page": %d, "type": %s, "stored_type": %d, "compression": %s, "compressed_size": %s, '
    '"stored_size": %s, "allocated": %d, "checksum": %s, "valid": true, "lsn": %d, '
    '"space_id": %d, %s, "zip_stream": null, "problem": null}'
)
_PAGE_MARK = -7_020_304_050_607  # stands for the page number and the allocated bytes in a template
_NO_INDEX = '"index_id": null, "index": null, "level": null, "n_recs": null, "fill": null'
_INDEX = '"index_id": %s, "index": %s, "level": %d, "n_recs": %d, "fill": %s'


@dataclass
class _Context:
    """What every block needs, decoded once before any fork."""

    ts: Tablespace
    names: dict[int, str]
    type_names: set[str]
    type_numbers: set[int]

    def wanted(self, type_name: str, real_type: int, stored_type: int) -> bool:
        if not self.type_names and not self.type_numbers:
            return True
        return (
            type_name in self.type_names
            or real_type in self.type_numbers
            or stored_type in self.type_numbers
        )


def json_lines(
    path: str,
    *,
    types: Sequence[str] = (),
    start: int = 0,
    stop: int | None = None,
    keyring: Keyring | None = None,
    jobs: int | None = None,
    schema: TableDef | None = None,
) -> Iterator[str]:
    """The JSON lines of ``pages --json`` for pages [start, stop) of ``path``, a block of
    lines (each ending in a newline) at a time, in page order (``schema``: ``--schema``'s
    definition of the table, for index names)."""
    type_names, type_numbers = parse_type_filter(types)
    with Tablespace(path, keyring) as ts:
        n = ts.n_pages
        if start >= n:
            raise InputError(f"{path}: --from {start} is past the last page ({n - 1})")
        stop = n if stop is None else min(stop, n)
        ctx = _Context(ts, index_names_of(ts, schema=schema).names, type_names, type_numbers)
        blocks = [(b, min(stop, b + BLOCK_PAGES)) for b in range(start, stop, BLOCK_PAGES)]
        jobs = jobs or os.cpu_count() or 1
        if stop - start < PARALLEL_MIN_PAGES:
            jobs = 1
        # split over processes, each block reads the map of its own pages: none is read whole
        # before the fork (a page-compressed file has an extent a page)
        windows = jobs > 1 and ts.is_local and "allocation" not in ts.__dict__
        if windows:
            ts.allocation_stat  # noqa: B018  (sizes once, before any fork)
        else:
            ts.data_map  # noqa: B018  (the data ranges once, before any fork)
        yield from ordered_map(ts, partial(_block, ctx=ctx, windows=windows), blocks, jobs)


def _block(ts: Tablespace, first: int, end: int, *, ctx: _Context, windows: bool = False) -> str:
    """The JSON lines of pages [first, end); ``windows``: the allocation map of those pages
    alone read here (:meth:`Tablespace.window_allocation`)."""
    out: list[str] = []
    psize = ts.physical_size
    # a FIEMAP call for the block's extents (a page-compressed page has one) and a few more
    alloc = ts.window_allocation(first, end, batch=end - first + 16)[0] if windows else ts.data_map
    per_page = alloc.per_page_allocated(psize, end - first, first)
    for run_first, run_end, has_data in ts.page_runs(first, end, ranges=alloc.data_ranges):
        if has_data:
            _data_run(ctx, run_first, run_end, per_page[run_first - first :], out)
        else:
            _zero_run(ctx, run_first, run_end, per_page[run_first - first :], out)
    ts.check_not_shrunk()
    return "".join(out)


def _zero_run(ctx: _Context, first: int, end: int, per_page: Sequence[int], out: list[str]) -> None:
    """Pages in a hole: all zeros, each the decoder's row for a zero page at its number."""
    ts = ctx.ts
    info = ts._decode(bytes(ts.physical_size), first, None, True)
    if not (info.empty and info.problem is None and info.index is None):
        for n in range(first, end):  # never for a zero page; kept exact whatever the decoder says
            row = page_row(ts._decode(bytes(ts.physical_size), n, None, True), per_page[n - first])
            out.append(_encode(row) + "\n")
        return
    if not ctx.wanted(info.type_name, info.real_type, info.stored_type):
        return
    row = page_row(info, _PAGE_MARK, ctx.names)
    text = _encode({**row, "page": _PAGE_MARK}).replace("%", "%%")
    template = text.replace(str(_PAGE_MARK), "%d", 2) + "\n"
    out.extend(template % (n, per_page[n - first]) for n in range(first, end))


def _data_run(ctx: _Context, first: int, end: int, per_page: Sequence[int], out: list[str]) -> None:
    """Pages [first, end), read a chunk at a time (``per_page[k]``: page ``first + k``'s
    allocated bytes)."""
    ts = ctx.ts
    fmt = ts.format
    psize = ts.physical_size
    logical = ts.logical_size
    fcrc32 = fmt.full_crc32
    crc32_plain = not fcrc32 and not fmt.zip
    inline = ts.decryptor is None  # with a key, every page through the decoder (decrypted)
    vendor = fmt.vendor
    idx_types = index_types(vendor)
    dblwr = ts.doublewrite_pages
    algorithm = fmt.fcrc32_algorithm if fcrc32 else None
    decompress_head: Callable[..., bytes] | None = None
    read_all: Callable[[Sequence[bytes | memoryview]], list[bytes]] | None = None
    if inline and algorithm is not None and algorithm is not Algorithm.NONE:
        decompress_head = codec_for(algorithm).prefix_reader(HEADER_PREFIX, logical)
        read_all = codec_for(algorithm).prefix_batch(HEADER_PREFIX, logical)
    # MariaDB classic page_compressed images (§3.1) and MySQL type-14 images (§2.1):
    # inflated whole (inspect_tally.classic_pages), each named by its own algorithm
    classic = inline and crc32_plain
    algo_json = _encode(algorithm.value if algorithm is not None else Algorithm.ZLIB.value)
    algo_names: dict[str, str] = {}
    none_json = _encode(Algorithm.NONE.value)
    chk_json = _encode((ChecksumAlgo.FULL_CRC32 if fcrc32 else ChecksumAlgo.CRC32).value)
    names = ctx.names
    type_json: dict[int, tuple[str, str]] = {}
    index_json: dict[int, str] = {}

    def type_of(t: int) -> tuple[str, str]:
        got = type_json.get(t)
        if got is None:
            name = page_type_name(t, vendor)
            got = type_json[t] = (name, _encode(name))
        return got

    def index_part(
        n_heap: int, heap_top: int, garbage: int, n_recs: int, level: int, iid: int
    ) -> str:
        name = index_json.get(iid)
        if name is None:
            name = index_json[iid] = _encode("SDI" if iid == SDI_INDEX_ID else names.get(iid))
        fill = round(index_fill(n_heap, heap_top, garbage, logical)[1], 3)
        # the SDI's B-tree has no index id: its pages carry an all-ones sentinel
        shown = "null" if iid == SDI_INDEX_ID else str(iid)
        return _INDEX % (shown, name, level, n_recs, float.__repr__(fill))

    fields = (*verdict_fields(fcrc32), "space_id", *INDEX_FIELDS)
    zero = bytes(psize)
    for n, mv in ts.read_chunks(first, end):
        count = len(mv) // psize
        good: list[bool] = [False] * count
        cols: dict[str, tuple[int, ...]] = {}
        comp: CompressedHeaders | None = None
        if inline and (fcrc32 or crc32_plain):
            cols = columns(mv, psize, fcrc32, fields)
            good = plain_verified(mv, psize, n, fcrc32, cols)
            if dblwr:
                good = [g and n + k not in dblwr for k, g in enumerate(good)]
            if decompress_head is not None and algorithm is not None and not all(good):
                comp = compressed_headers(
                    mv, psize, n, cols, decompress_head, algorithm, dblwr, read_all
                )
            elif classic and not all(good):
                comp = classic_pages(ts, mv, n, cols, good, dblwr)
        payload: int | str  # the payload and image sizes, "null" for a plain page
        size: int | str
        heads: Mapping[str, Sequence[int]] | None
        for k in range(count):
            page_no = n + k
            allocated = per_page[page_no - first]
            if good[k]:  # a plain page: its header is in the chunk's columns
                heads, algo, payload, size = cols, none_json, "null", "null"
            elif comp is not None and comp.ok[k]:  # a compressed image: the inflated header
                heads, algo = comp.heads, algo_json
                if comp.algorithms is not None:
                    a = comp.algorithms[k]
                    algo = algo_names.get(a) or algo_names.setdefault(a, _encode(a))
                payload, size = comp.payload[k], comp.sizes[k]
            else:
                heads = None
            if heads is not None:
                real_type = heads["page_type"][k]
                ptype = cols["page_type"][k]
                name, name_json = type_of(real_type)
                if not ctx.wanted(name, real_type, ptype):
                    continue
                part = _NO_INDEX
                if real_type in idx_types:
                    part = index_part(
                        heads["n_heap"][k],
                        heads["heap_top"][k],
                        heads["garbage"][k],
                        heads["n_recs"][k],
                        heads["level"][k],
                        heads["index_id"][k],
                    )
                out.append(
                    _ROW
                    % (
                        page_no,
                        name_json,
                        ptype,
                        algo,
                        payload,
                        size,
                        allocated,
                        chk_json,
                        cols["lsn"][k],
                        cols["space_id"][k],
                        part,
                    )
                    + "\n"
                )
                continue
            off = k * psize
            stored = mv[off : off + psize]
            # bytes == bytes is a memcmp; memoryview == bytes compares byte by byte
            if not any(stored[:38]) and stored.tobytes() == zero:
                stored = memoryview(zero)
            info = ts._decode(stored, page_no, None, True)
            if ctx.wanted(info.type_name, info.real_type, info.stored_type):
                out.append(_encode(page_row(info, allocated, names)) + "\n")
