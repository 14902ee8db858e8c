"""``inspect``'s inline path: the common pages tallied straight from their stored bytes.

A scan of a large file spends its time on a few kinds of page: all-zero ones, plain pages with
a good crc32 or full_crc32 checksum, and full_crc32 page-compressed images with a good CRC-32C
(§3.2, §6.6). Those are tallied here from one chunk read at a time, without a
:class:`~parsers.page.PageInfo` per page; a compressed image gives up only the header of the
page inside (:data:`parsers.page.HEADER_PREFIX` bytes through the codec registry). Every other
page — damaged, encrypted, MySQL or MariaDB classic compressed, zip, innodb-checksummed, a
page number that does not match, a doublewrite copy — goes through
:func:`parsers.page.decode_page` as before, so the tally is exactly the decoder's (the tests
compare both on every sample and corpus file, damaged copies too). Holes are counted by
:mod:`ibdtool.inspect` without reading them; this takes the runs that hold data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ibdtool.tablespace import CHUNK_BYTES, Tablespace
from parsers.checksum import ChecksumAlgo
from parsers.codecs import CodecError, codec_for
from parsers.constants import (
    FIL_PAGE_COMPRESS_FCRC32_MARKER,
    FIL_PAGE_COMPRESSED,
    FIL_PAGE_COMPRESSED_AND_ENCRYPTED,
    FIL_PAGE_PAGE_COMPRESSED,
    FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED,
    MYSQL_ENCRYPTED_TYPES,
    Algorithm,
    index_types,
    page_type_name,
)
from parsers.crc32c_fast import crc32c
from parsers.envelope import MARIADB_FCRC32_PAYLOAD, fcrc32_payload_end, fcrc32_stored_size
from parsers.page import HEADER_PREFIX, index_fill
from parsers.sdi import SDI_INDEX_ID
from parsers.structs import FIL_HEADER_FAST, INDEX_HEADER_FAST, PAGE_HEADER, IndexHeaderTuple

if TYPE_CHECKING:
    from ibdtool.inspect import PageTally

# where the index page header's fields sit in its unpacked tuple
_N_HEAP, _HEAP_TOP, _GARBAGE, _LEVEL, _INDEX_ID = (
    IndexHeaderTuple._fields.index(f)
    for f in ("n_heap", "heap_top", "garbage", "level", "index_id")
)

# pages whose envelope is not the plain page on a classic (non-full_crc32) tablespace
_SPECIAL_TYPES = frozenset(
    {
        FIL_PAGE_COMPRESSED,
        FIL_PAGE_COMPRESSED_AND_ENCRYPTED,
        FIL_PAGE_PAGE_COMPRESSED,
        FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED,
    }
    | MYSQL_ENCRYPTED_TYPES
)


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
        partial = codec_for(algorithm).partial_decompress
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
    per_chunk = max(1, CHUNK_BYTES // psize)
    for n, raw in ts.read_pages(first, end, per_chunk):
        mv = memoryview(raw)
        for i in range(len(raw) // psize):
            page_no = n + i
            off = i * psize
            end_at = off + psize
            allocated = per_page[page_no - first]
            is_free = free[page_no - first]
            chk_word, stored_no, _p, _n, _lsn, ptype, _f, _s = head(raw, off)
            page: bytes | memoryview | None = None
            size = psize
            if stored_no != page_no or (dblwr and page_no in dblwr):
                if not stored_no and not chk_word and raw.startswith(zero, off):
                    n_empty += 1
                    if is_free:
                        tally.free_pages += 1
                        tally.free_allocated += allocated
                    continue
            elif fcrc32 and not chk_word:
                if not ptype & FIL_PAGE_COMPRESS_FCRC32_MARKER:
                    stored = int.from_bytes(raw[end_at - 4 : end_at], "big")
                    if (
                        raw[off + 20 : off + 24] == raw[end_at - 8 : end_at - 4]
                        and stored
                        and stored == crc32c(mv[off : end_at - 4])
                    ):
                        page = mv[off:end_at]
                elif partial is not None:
                    got_size = fcrc32_stored_size(ptype, psize)
                    if got_size is not None:
                        size = got_size
                        stored = int.from_bytes(raw[off + size - 4 : off + size], "big")
                        if stored and stored == crc32c(mv[off : off + size - 4]):
                            image = mv[off:end_at]
                            stop_at = fcrc32_payload_end(image, size, algorithm)  # type: ignore[arg-type]
                            payload = image[MARIADB_FCRC32_PAYLOAD:stop_at]
                            try:
                                page = partial(payload, HEADER_PREFIX, logical)
                            except CodecError:
                                page = None
            elif (
                crc32_plain
                and chk_word
                and ptype not in _SPECIAL_TYPES
                and chk_word == int.from_bytes(raw[end_at - 8 : end_at - 4], "big")
                and raw[off + 20 : off + 24] == raw[end_at - 4 : end_at]
                and chk_word == crc32c(mv[off + 4 : off + 26]) ^ crc32c(mv[off + 38 : end_at - 8])
            ):
                page = mv[off:end_at]
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
            if size != psize:
                n_comp += 1
                tally.compressed_bytes += size
                ideal = -(-size // block) * block
                if allocated > ideal:
                    tally.unpunched_pages += 1
                    tally.unpunched_bytes += allocated - ideal
            else:
                n_plain += 1
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
