"""``inspect``'s inline path: the common pages tallied straight from their stored bytes.

A scan of a large file spends its time on a few kinds of page: all-zero ones, plain pages with
a good crc32 or full_crc32 checksum, and full_crc32 page-compressed images with a good CRC-32C
(§3.2, §6.6). Those are tallied here from one chunk read at a time (into one reused buffer),
without a :class:`~parsers.page.PageInfo` per page: the plain ones a chunk at a time, their
headers unpacked together and their CRCs mapped over memoryviews (:mod:`parsers.pagecolumns`),
the compressed ones page by page, each giving up only the header of the
page inside (:data:`parsers.page.HEADER_PREFIX` bytes through the codec registry). Every other
page — damaged, encrypted, MySQL or MariaDB classic compressed, zip, innodb-checksummed, a
page number that does not match, a doublewrite copy — goes through
:func:`parsers.page.decode_page` as before, so the tally is exactly the decoder's (the tests
compare both on every sample and corpus file, damaged copies too). Holes are counted by
:mod:`ibdtool.inspect` without reading them; this takes the runs that hold data.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import compress
from operator import and_, not_
from typing import TYPE_CHECKING

from ibdtool.tablespace import Tablespace
from parsers._structs_gen import FIL_HEADER_FAST, INDEX_HEADER_FAST, PAGE_HEADER, IndexHeaderTuple
from parsers.checksum import ChecksumAlgo
from parsers.codecs import CodecError, codec_for
from parsers.constants import (
    FIL_PAGE_COMPRESS_FCRC32_MARKER,
    Algorithm,
    index_types,
    page_type_name,
)
from parsers.crc32c_fast import crc32c
from parsers.envelope import MARIADB_FCRC32_PAYLOAD, fcrc32_payload_end, fcrc32_stored_size
from parsers.page import HEADER_PREFIX, index_fill, index_fills
from parsers.pagecolumns import INDEX_FIELDS, columns, plain_verified, verdict_fields
from parsers.sdi import SDI_INDEX_ID

if TYPE_CHECKING:
    from ibdtool.inspect import PageTally

# where the index page header's fields sit in its unpacked tuple
_N_HEAP, _HEAP_TOP, _GARBAGE, _LEVEL, _INDEX_ID = (
    IndexHeaderTuple._fields.index(f)
    for f in ("n_heap", "heap_top", "garbage", "level", "index_id")
)

_COMPACT = 0x8000  # PAGE_N_HEAP bit 15: the page is in compact format (§5.1)


def tally_run(
    ts: Tablespace,
    first: int,
    end: int,
    tally: PageTally,
    per_page: Sequence[int],
    free: bytearray,
) -> None:
    """Tally pages [first, end) of ``ts`` into ``tally``; ``per_page[k]`` and ``free[k]`` are
    the allocated bytes and the free flag of page ``first + k``. Pages the inline path leaves
    to the decoder go to :meth:`PageTally.add`."""
    fmt = ts.format
    psize = ts.physical_size
    logical = ts.logical_size
    block = ts.allocation.fs_block_size
    fcrc32 = fmt.full_crc32
    crc32_plain = not fcrc32 and not fmt.zip
    vendor = fmt.vendor
    idx_types = index_types(vendor)
    algorithm = fmt.fcrc32_algorithm if fcrc32 else None
    partial: Callable[..., bytes] | None = None
    if algorithm is not None and algorithm is not Algorithm.NONE:
        partial = codec_for(algorithm).prefix_reader(HEADER_PREFIX, logical)
    algo_name = algorithm.value if algorithm is not None else ""
    dblwr = ts.doublewrite_pages
    zero = bytes(psize)
    names: dict[int, str] = {}
    head = FIL_HEADER_FAST.unpack_from
    index_head = INDEX_HEADER_FAST.unpack_from
    types, comp, chk = tally.types, tally.comp, tally.chk
    stored_types, index_pages = tally.stored_types, tally.index_pages
    index_levels = tally.index_levels
    none_name = Algorithm.NONE.value
    ok_name = ChecksumAlgo.FULL_CRC32.value if fcrc32 else ChecksumAlgo.CRC32.value
    fill_sum, fill_n = 0.0, 0
    n_plain = n_empty = n_comp = 0
    fields = (*verdict_fields(fcrc32), *INDEX_FIELDS)
    for n, mv in ts.read_chunks(first, end):
        count = len(mv) // psize
        rest: Iterable[int] = range(count)
        if fcrc32 or crc32_plain:
            # the plain pages of the chunk at once (parsers.pagecolumns), the rest page by page
            cols = columns(mv, psize, fcrc32, fields)
            good = plain_verified(mv, psize, n, fcrc32, cols)
            if dblwr:
                good = [g and n + k not in dblwr for k, g in enumerate(good)]
            passed = good.count(True)
            if passed:
                n_plain += passed
                fill_sum += _tally_plain(
                    tally, cols, good, n - first, per_page, free, idx_types, logical
                )
                for stype, c in Counter(compress(cols["page_type"], good)).items():
                    name = names.get(stype)
                    if name is None:
                        name = names[stype] = page_type_name(stype, vendor)
                    types[name] = types.get(name, 0) + c
                    stored_types.add(stype)
            if passed == count:
                continue
            rest = compress(range(count), map(not_, good))
        for i in rest:
            page_no = n + i
            off = i * psize
            end_at = off + psize
            allocated = per_page[page_no - first]
            is_free = free[page_no - first]
            chk_word, stored_no, _p, _n, _lsn, ptype, _f, _s = head(mv, off)
            page: bytes | memoryview | None = None
            size = psize
            if stored_no != page_no or (dblwr and page_no in dblwr):
                if not stored_no and not chk_word and mv[off:end_at].tobytes() == zero:
                    n_empty += 1
                    if is_free:
                        tally.free_pages += 1
                        tally.free_allocated += allocated
                    continue
            elif fcrc32 and not chk_word and partial is not None:
                got = compressed_header(mv, off, psize, ptype, partial, algorithm)  # type: ignore[arg-type]
                if got is not None:
                    page, size, _end = got
            if page is None:
                info = ts._decode(mv[off:end_at], page_no, None, True)
                tally.add(info, allocated, block, bool(is_free))
                continue
            real_type = int.from_bytes(page[24:26], "big")
            name = names.get(real_type)
            if name is None:
                name = names[real_type] = page_type_name(real_type, vendor)
            types[name] = types.get(name, 0) + 1
            stored_types.add(ptype)
            if is_free:
                tally.free_pages += 1
                tally.free_with_data += 1
                tally.free_allocated += allocated
            # only a full_crc32 compressed image comes this far (plain pages went above)
            n_comp += 1
            tally.compressed_bytes += size
            ideal = -(-size // block) * block
            if allocated > ideal:
                tally.unpunched_pages += 1
                tally.unpunched_bytes += allocated - ideal
            if real_type in idx_types:
                h = index_head(page, PAGE_HEADER)
                index_id = h[_INDEX_ID]
                index_pages[index_id] = index_pages.get(index_id, 0) + 1
                index_levels[index_id, h[_LEVEL]] += 1
                if index_id != SDI_INDEX_ID:
                    if h[_N_HEAP] & 0x8000:  # the compact bit (§5.1)
                        tally.compact_pages += 1
                    else:
                        tally.redundant_pages += 1
                if h[_LEVEL] == 0:
                    fill_sum += index_fill(h[_N_HEAP], h[_HEAP_TOP], h[_GARBAGE], logical)[1]
                    fill_n += 1
    tally.fill_sum += fill_sum
    tally.fill_n += fill_n
    if n_empty:
        types["ALLOCATED"] = types.get("ALLOCATED", 0) + n_empty
        comp[none_name] = comp.get(none_name, 0) + n_empty
        chk[ChecksumAlgo.EMPTY.value] = chk.get(ChecksumAlgo.EMPTY.value, 0) + n_empty
        stored_types.add(0)
    if n_plain:
        comp[none_name] = comp.get(none_name, 0) + n_plain
    if n_comp:
        comp[algo_name] = comp.get(algo_name, 0) + n_comp
    if n_plain or n_comp:
        chk[ok_name] = chk.get(ok_name, 0) + n_plain + n_comp


def compressed_header(
    mv: memoryview,
    off: int,
    psize: int,
    ptype: int,
    read_header: Callable[[memoryview], bytes],
    algorithm: Algorithm,
) -> tuple[bytes, int, int] | None:
    """For the full_crc32 page-compressed image at ``off`` of ``mv`` (stored type ``ptype``)
    whose CRC-32C verifies: the first bytes of the page inside (``read_header``: the codec's
    :meth:`~parsers.codecs.Codec.prefix_reader` for :data:`~parsers.page.HEADER_PREFIX`), the
    image's stored size and the end of its payload (§3.2, §6.6); None for the decoder to say
    what else it is."""
    if not ptype & FIL_PAGE_COMPRESS_FCRC32_MARKER:
        return None
    size = fcrc32_stored_size(ptype, psize)
    if size is None:
        return None
    stored = int.from_bytes(mv[off + size - 4 : off + size], "big")
    if not stored or stored != crc32c(mv[off : off + size - 4]):
        return None
    image = mv[off : off + psize]
    stop_at = fcrc32_payload_end(image, size, algorithm)
    try:
        return read_header(image[MARIADB_FCRC32_PAYLOAD:stop_at]), size, stop_at
    except CodecError:
        return None


def _tally_plain(
    tally: PageTally,
    cols: dict[str, tuple[int, ...]],
    good: list[bool],
    at: int,
    per_page: Sequence[int],
    free: bytearray,
    idx_types: frozenset[int],
    logical: int,
) -> float:
    """Add the verified plain pages of one chunk (``good``; ``at``: the chunk's first page
    within the run) to ``tally``, all but their type counts; returns the sum of the leaf
    pages' fill (the caller sums it as the page loop sums the others)."""
    count = len(good)
    free_good = list(map(and_, good, free[at : at + count]))
    n_free = free_good.count(True)
    if n_free:
        tally.free_pages += n_free
        tally.free_with_data += n_free
        tally.free_allocated += sum(compress(per_page[at : at + count], free_good))
    index_mask = list(map(and_, good, map(idx_types.__contains__, cols["page_type"])))
    if not any(index_mask):
        return 0.0
    ids = list(compress(cols["index_id"], index_mask))
    levels = list(compress(cols["level"], index_mask))
    n_heap = list(compress(cols["n_heap"], index_mask))
    tally.index_pages.update(ids)
    tally.index_levels.update(zip(ids, levels, strict=True))
    compact = sum(map(_COMPACT.__and__, n_heap)) // _COMPACT  # the compact bit (§5.1)
    redundant = len(n_heap) - compact
    if SDI_INDEX_ID in ids:  # the SDI index counts in neither
        for index_id, nh in zip(ids, n_heap, strict=True):
            if index_id == SDI_INDEX_ID:
                compact -= bool(nh & _COMPACT)
                redundant -= not nh & _COMPACT
    tally.compact_pages += compact
    tally.redundant_pages += redundant
    leaf = list(map(not_, levels))
    tally.fill_n += leaf.count(True)
    heap_top = list(compress(compress(cols["heap_top"], index_mask), leaf))
    garbage = list(compress(compress(cols["garbage"], index_mask), leaf))
    return sum(index_fills(list(compress(n_heap, leaf)), heap_top, garbage, logical))
