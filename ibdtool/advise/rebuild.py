"""The file a table rebuild writes, modelled from the file as it is.

A conversion (MariaDB ``ALTER TABLE … PAGE_COMPRESSED=1`` or ``FORCE``, MySQL ``ALTER …
COMPRESSION`` + ``OPTIMIZE``) does not compress the pages of a table as they are: it rebuilds
the table, and the pages it writes differ from the old ones in what a compressor sees. Seen on
MariaDB 10.11.19 and MySQL 8.0.33 (a table loaded in random key order over twenty
transactions, a fifth of its rows deleted, a seventh updated; 960 pages before, 256/576 after):

- every index is bulk loaded in key order (``btr0bulk.cc``): each page takes records until
  the free space left after the next one would be less than the reserve: 1/16 of a page on
  a clustered index at the default ``innodb_fill_factor`` of 100, ``(100 - fill) %`` of a
  page otherwise (always at least two records). The clustered leaves held 15,210 bytes of
  records at most, the secondary ones 15,892; delete-marked records and the free-list garbage
  are gone, free space is zeros, records lie in the heap in key order, and a directory slot
  owns every fourth record;
- MariaDB resets DB_TRX_ID to 0 and DB_ROLL_PTR to the insert flag alone in every clustered
  record (all 6,400 rows); MySQL's OPTIMIZE keeps both as they were;
- segments take their first 32 pages one at a time, then whole extents, so the file is the
  fragment extent(s) and each big segment's extents (MariaDB: 256 pages, exactly);
- a ROW_FORMAT=COMPRESSED source becomes uncompressed pages of the logical size.

:func:`plan_rebuild` reads every index page once (the records' sizes, in key order, are all
the packing needs) and returns a :class:`RebuiltImage`, whose :meth:`RebuiltImage.page`
synthesises any page of the rebuilt file on demand: the records the bulk load would put there,
with their headers, the page header, the directory and zeroed free space. Records are found
without the table's definition (:func:`ibdtool.parsers.compact_rec.record_spans`). Non-leaf levels
are packed from the old node pointers; BLOB and SDI pages are taken as they are. The simulation
compresses these images as it does real pages (:mod:`ibdtool.advise.simulate`).

A file of more than :data:`SAMPLE_ABOVE_PAGES` index pages is planned from a sample, so that the
plan costs what the sample costs, not what the file does: the pages are classified by a header
scan (:func:`ibdtool.tablespace.header_pages`), and of each index with more leaves than its
share of :data:`SAMPLE_LEAVES` a random sample of leaves is read. Its rebuilt leaf count is the
leaves' estimated live record bytes (with their directory share) over what a packed page holds
(the sampled leaves' records packed back to back by the bulk-load rule), with a 95% interval
from the spread of both; the indexes' intervals combine in quadrature, and more leaves are
read until the whole is within :data:`PLAN_TARGET`. The rebuilt leaves are synthesised from
those packed pages.
"""

from __future__ import annotations

import itertools
import math
import os
import random
import zlib
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ibdtool.advise.estimate import Estimate
from ibdtool.errors import InputError
from ibdtool.parsers.compact_rec import (
    REC_INFO_DELETED_FLAG,
    REC_INFO_MIN_REC_FLAG,
    RecordError,
    RecordSpan,
    record_spans,
)
from ibdtool.parsers.constants import (
    FIL_NULL,
    FIL_PAGE_INDEX,
    FIL_PAGE_SDI,
    FIL_PAGE_TYPE_ALLOCATED,
    FIL_PAGE_TYPE_INSTANT,
)
from ibdtool.parsers.page import logical_image
from ibdtool.parsers.vendor import Vendor
from ibdtool.tablespace import Tablespace, scan_page_headers

if TYPE_CHECKING:
    from ibdtool.parsers.keyring import Keyring

#: index pages above which the plan samples leaves (at most, every page is read: exact): about
#: 1 s of reading on a quiet machine, 3 s on a loaded one
SAMPLE_ABOVE_PAGES = 4096
#: leaf pages a sampled plan reads first, shared among the indexes by their leaves
SAMPLE_LEAVES = 2048
#: the relative half width (95%) a sampled plan's count of pages written is read to: more
#: leaves are read while it is wider (the codecs' sampling takes the rest of the ±1%,
#: combined in quadrature: 0.6² + 0.8² = 1)
PLAN_TARGET = 0.006
#: the most leaf pages a sampled plan reads, whatever its target (about 4 s of reading on a
#: loaded machine)
MAX_SAMPLE_LEAVES = 12288
#: the least a sampled index reads, and the node pages read for their mean size
MIN_INDEX_SAMPLE = 64
Z95 = 1.959963984540054
#: innodb_fill_factor's default on both servers
DEFAULT_FILL_FACTOR = 100
EXTENT_BYTES = 1 << 20  # an extent is 1 MiB of pages at 4K..16K pages (64 at 16K)
FRAGMENT_PAGES = 32  # a segment's first pages are single pages of fragment extents
PAGE_HEADER = 38  # FIL header; the index page header follows
PAGE_DATA = 120  # PAGE_NEW_SUPREMUM_END: where user records begin
PAGE_DIR = 8  # the FIL trailer below the directory
SLOT_OWNS = 4  # the bulk load's directory: a slot every (PAGE_DIR_SLOT_MAX_N_OWNED + 1) / 2
DATA_TRX_ROLL = 13  # DB_TRX_ID (6) + DB_ROLL_PTR (7)
RESET_TRX_ROLL = bytes(6) + b"\x80" + bytes(6)  # MariaDB: trx 0, roll ptr: the insert flag


def _dir_space(n: int) -> int:
    """``page_dir_calc_reserved_space``: directory bytes for ``n`` user records."""
    return (2 * n + 3) // 4


def empty_free_space(page_size: int) -> int:
    """``page_get_free_space_of_empty``: room for records and directory on an empty page."""
    return page_size - PAGE_DATA - PAGE_DIR - 2 * 2


def reserved_space(page_size: int, clustered: bool, fill_factor: int) -> int:
    """What the bulk load leaves free on each page (``PageBulk::init``)."""
    if fill_factor == 100 and clustered:
        return page_size // 16  # dict_index_get_space_reserve: "compatible with 5.6"
    return page_size * (100 - fill_factor) // 100


def pack(sizes: Iterator[int], page_size: int, reserve: int) -> Iterator[int]:
    """The number of records of each page the bulk load fills with records of ``sizes`` in
    key order (``PageBulk::isSpaceAvailable``): a record goes on the page if it and its share
    of the directory fit, and (from the third record on) leave at least ``reserve`` free."""
    free = empty_free_space(page_size)
    n = 0
    for size in sizes:
        need = size + _dir_space(n + 1) - _dir_space(n)
        if n and (need > free or (n >= 2 and free - need < reserve)):
            yield n
            free, n = empty_free_space(page_size), 0
            need = size + _dir_space(1)
        free -= need
        n += 1
    if n:
        yield n


@dataclass
class _Stream:
    """One level of one index in key order: the source pages and their live records' spans,
    read on demand, and where each rebuilt page starts in it."""

    pages: list[int]  # source page numbers in key order
    counts: list[int]  # live records on each
    starts: list[tuple[int, int]] = field(default_factory=list)  # (page index, record) a page
    sizes_total: int = 0
    records: int = 0
    sizes: array[int] = field(default_factory=lambda: array("I"))  # until packed


@dataclass
class IndexPlan:
    index_id: int
    clustered: bool
    leaf: _Stream
    node: _Stream | None  # the source's node pointers (None: the index was one page)
    #: rebuilt pages per level, leaves first; and each non-leaf page's record count
    level_pages: list[int] = field(default_factory=list)
    node_counts: list[int] = field(default_factory=list)
    trx_offset: int | None = None  # where DB_TRX_ID lies after the origin (clustered)
    sample: bytes = b""  # a source leaf page: its FIL and index header fields are copied
    #: a sampled index: the full pages its sampled leaves' records pack into, which the
    #: rebuilt leaves are drawn from (None: every leaf read, each rebuilt page its own)
    synth: int | None = None
    #: a sampled index: its rebuilt pages' 95% interval, all levels (None: exact)
    pages_ci: tuple[int, int] | None = None


@dataclass
class RebuiltImage:
    """The rebuilt file's pages, each synthesised on demand (:meth:`page`)."""

    ts: Tablespace
    vendor: Vendor
    page_size: int
    fill_factor: int
    reset_trx: bool
    kept: list[int]  # source pages copied as they are (header, SDI, BLOB pages)
    indexes: list[IndexPlan]
    #: (index, level, page of the level) of each rebuilt index page, after ``kept``
    order: list[tuple[int, int, int]]
    n_pages: int  # the rebuilt file's pages, the extents' free pages included
    source_pages: int
    notes: list[str] = field(default_factory=list)
    #: a sampled plan: the 95% intervals of the pages written and of the file's pages
    written_ci: tuple[int, int] | None = None
    n_pages_ci: tuple[int, int] | None = None
    #: a sampled plan: the distinct pages its pages are drawn from, and its leaves read of all
    distinct_pages: int | None = None
    leaves_read: tuple[int, int] | None = None
    _cache: dict[int, bytes] = field(default_factory=dict)

    @property
    def extent_pages(self) -> int:
        return max(64, EXTENT_BYTES // self.page_size)

    @property
    def size_error_pages(self) -> int:
        """Pages the file's size may be off by: an extent, or (a file that grows a page at a
        time, under one extent) the spare pages either way."""
        return self.extent_pages if self.n_pages >= self.extent_pages else 2 * SMALL_SPARE[1]

    @property
    def model_pages(self) -> int:
        """Pages the model may be off by: each index's last page (its fill, which the sample
        of full pages does not see) and 0.5% of the index pages (record boundaries found
        without the definition lend a few bytes between records and pages)."""
        return len(self.indexes) + math.ceil(0.005 * len(self.order))

    def uncompressed(self) -> Estimate:
        """What the rebuilt file allocates written uncompressed (the rebuild alone): every
        page of its extents (both servers allocate an uncompressed file whole), an extent
        either way for the extent model's error, never below the pages written."""
        psize = self.page_size
        size = self.n_pages * psize
        err = self.size_error_pages * psize
        lo_n, hi_n = self.n_pages_ci or (self.n_pages, self.n_pages)
        lo_w = self.written_ci[0] if self.written_ci else self.data_pages
        basis = f"rebuild model: {self.data_pages} pages written of {self.n_pages}"
        if self.leaves_read:
            basis += f" (planned from {self.leaves_read[0]} of {self.leaves_read[1]} leaf pages)"
        return Estimate(size, max(lo_w * psize, lo_n * psize - err), hi_n * psize + err, basis)

    @property
    def data_pages(self) -> int:
        """Pages the rebuild writes (the rest of the file is never-written extent space)."""
        return len(self.kept) + len(self.order)

    def page(self, no: int) -> bytes:
        """Page ``no`` of the rebuilt file (all zeros past the pages written)."""
        if no < len(self.kept):
            return _image(self.ts, self.kept[no])
        at = no - len(self.kept)
        if at >= len(self.order):
            return bytes(self.page_size)
        i, level, k = self.order[at]
        plan = self.indexes[i]
        if level == 0:
            return self._leaf(plan, k, no)
        return self._node(plan, level, k, no)

    def _records(self, stream: _Stream, start: tuple[int, int], count: int) -> list[bytes]:
        """``count`` live records' bytes from ``start`` on, each with its origin's offset
        appended as two bytes (cut off by :func:`_assemble`)."""
        out: list[bytes] = []
        pi, ri = start
        while len(out) < count and pi < len(stream.pages):
            spans = self._spans(stream.pages[pi])
            page = _image(self.ts, stream.pages[pi])
            for sp in spans[ri:]:
                out.append(page[sp.start : sp.end] + (sp.origin - sp.start).to_bytes(2, "big"))
                if len(out) == count:
                    break
            pi, ri = pi + 1, 0
        return out

    def _spans(self, no: int) -> list[RecordSpan]:
        return _live(_image(self.ts, no))

    def _leaf(self, plan: IndexPlan, k: int, no: int) -> bytes:
        stream = plan.leaf
        at = k if plan.synth is None else k * plan.synth // plan.level_pages[0]
        start = stream.starts[at]
        end = stream.starts[at + 1] if at + 1 < len(stream.starts) else None
        count = _between(stream, start, end)
        recs = self._records(stream, start, count)
        if self.reset_trx and plan.clustered and plan.trx_offset is not None:
            off = plan.trx_offset
            fixed = []
            for r in recs:
                o = int.from_bytes(r[-2:], "big") + off
                fixed.append(r[:o] + RESET_TRX_ROLL + r[o + DATA_TRX_ROLL :])
            recs = fixed
        n_levels = len(plan.level_pages)
        prev = FIL_NULL if k == 0 else no - 1
        nxt = FIL_NULL if k + 1 >= plan.level_pages[0] else no + 1
        return _assemble(plan, recs, 0, no, prev, nxt, self.page_size, n_levels == 1)

    def _node(self, plan: IndexPlan, level: int, k: int, no: int) -> bytes:
        stream = plan.node
        count = plan.node_counts[sum(plan.level_pages[1:level]) + k]
        recs: list[bytes] = []
        if stream is not None and stream.records:
            # the old node pointers, from a place spread over them: their keys and child
            # numbers are what the new ones look like
            first = (k * 7919 + level * 104729) % stream.records
            recs = self._records(stream, _nth(stream, first), count)
            while len(recs) < count:
                recs += self._records(stream, (0, 0), count - len(recs))
        top = level == len(plan.level_pages) - 1
        prev = FIL_NULL if k == 0 else no - 1
        nxt = FIL_NULL if k + 1 >= plan.level_pages[level] else no + 1
        return _assemble(plan, recs, level, no, prev, nxt, self.page_size, top)


def _between(stream: _Stream, start: tuple[int, int], end: tuple[int, int] | None) -> int:
    if end is None:
        return stream.records  # enough: the stream ends first
    if start[0] == end[0]:
        return end[1] - start[1]
    n = stream.counts[start[0]] - start[1] + end[1]
    return n + sum(stream.counts[start[0] + 1 : end[0]])


def _nth(stream: _Stream, n: int) -> tuple[int, int]:
    for pi, c in enumerate(stream.counts):
        if n < c:
            return pi, n
        n -= c
    return 0, 0


_INFIMUM_SUPREMUM = bytes.fromhex(
    "010002001d" + "696e66696d756d00" + "000b000000" + "73757072656d756d"
)[:26]


def _assemble(
    plan: IndexPlan,
    recs: list[bytes],
    level: int,
    no: int,
    prev: int,
    nxt: int,
    page_size: int,
    root: bool,
) -> bytes:
    """An index page as ``PageBulk`` leaves it: ``recs`` (bytes with their origin offsets)
    back to back from PAGE_DATA with fresh headers, the directory, the rest zeros."""
    page = bytearray(page_size)
    src = plan.sample
    page[4:8] = no.to_bytes(4, "big")
    page[8:12] = prev.to_bytes(4, "big")
    page[12:16] = nxt.to_bytes(4, "big")
    page[16:24] = src[16:24]  # an LSN, as the server writes one
    page[24:26] = FIL_PAGE_INDEX.to_bytes(2, "big")
    page[34:38] = src[34:38]  # the space id
    page[94:120] = src[94:120] if src[94:120].endswith(b"supremum") else _INFIMUM_SUPREMUM
    pos = PAGE_DATA
    origins: list[int] = []
    status = 1 if level else 0
    for i, r in enumerate(recs):
        body, off = r[:-2], int.from_bytes(r[-2:], "big")
        if pos + len(body) > page_size - PAGE_DIR - 2 * (len(recs) // SLOT_OWNS + 2):
            break  # a record the heuristic made too long: the page is full
        if not 5 <= off <= len(body):
            continue  # a damaged page's record: no origin inside its bytes
        page[pos : pos + len(body)] = body
        origin = pos + off
        origins.append(origin)
        info = page[origin - 5] & 0xF0 & ~REC_INFO_DELETED_FLAG & ~REC_INFO_MIN_REC_FLAG
        if level and prev == FIL_NULL and i == 0:
            info |= REC_INFO_MIN_REC_FLAG
        page[origin - 5] = info
        page[origin - 4 : origin - 2] = ((i + 2) << 3 | status).to_bytes(2, "big")
        pos += len(body)
    n = len(origins)
    # next pointers (relative, wrapping): infimum -> records -> supremum
    chain = [99, *origins, 112]
    for a, b in itertools.pairwise(chain):
        page[a - 2 : a] = ((b - a) & 0xFFFF).to_bytes(2, "big")
    page[110:112] = b"\x00\x00"  # the supremum ends the list
    # directory: infimum, every SLOT_OWNS-th record, supremum (owning the rest)
    slots = [99]
    owned = [1]
    count = 0
    for o in origins:
        count += 1
        if count == SLOT_OWNS:
            slots.append(o)
            owned.append(count)
            count = 0
    if len(slots) > 1 and count + 1 + SLOT_OWNS <= 8:
        slots.pop()
        count += owned.pop()
    slots.append(112)
    owned.append(count + 1)
    for s, k in zip(slots, owned, strict=True):
        page[s - 5] = (page[s - 5] & 0xF0) | k
    for i, s in enumerate(slots):
        at = page_size - PAGE_DIR - 2 * (i + 1)
        page[at : at + 2] = s.to_bytes(2, "big")
    h = PAGE_HEADER
    page[h : h + 2] = len(slots).to_bytes(2, "big")
    page[h + 2 : h + 4] = pos.to_bytes(2, "big")
    page[h + 4 : h + 6] = (0x8000 | (n + 2)).to_bytes(2, "big")
    page[h + 10 : h + 12] = (origins[-1] if origins else 0).to_bytes(2, "big")
    page[h + 12 : h + 14] = (2).to_bytes(2, "big")  # PAGE_RIGHT
    page[h + 16 : h + 18] = n.to_bytes(2, "big")
    if not level and not plan.clustered:
        page[h + 18 : h + 26] = src[h + 18 : h + 26]  # PAGE_MAX_TRX_ID
    page[h + 26 : h + 28] = level.to_bytes(2, "big")
    page[h + 28 : h + 36] = plan.index_id.to_bytes(8, "big")
    if root:
        page[h + 36 : h + 56] = src[h + 36 : h + 56] if any(src[h + 36 : h + 56]) else bytes(20)
    # a checksum and the LSN's low half in the trailer: 8 bytes a compressor cannot predict
    crc = zlib.crc32(page).to_bytes(4, "big")
    page[0:4] = crc
    page[page_size - 8 : page_size - 4] = crc
    page[page_size - 4 :] = src[page_size - 4 :] if len(src) == page_size else bytes(4)
    return bytes(page)


_images: dict[int, bytes] = {}
_images_of: list[Tablespace] = []  # the tablespace they are of (an id can be reused)


def _image(ts: Tablespace, no: int) -> bytes:
    """The uncompressed logical image of page ``no`` (decrypted, decompressed, a zip page
    rebuilt at the logical size), the last few hundred kept."""
    if not _images_of or _images_of[0] is not ts:
        _images.clear()
        _images_of[:] = [ts]
    key = no
    got = _images.get(key)
    if got is None:
        page = bytes(logical_image(memoryview(ts.stored_page(no)), ts.format))
        if ts.format.zip:
            from ibdtool.parsers.zip_page import ZipPageError, zip_logical_image

            try:
                page = zip_logical_image(page, ts.logical_size)
            except ZipPageError:
                page = page + bytes(ts.logical_size - len(page))
        if len(_images) > 512:
            _images.clear()
        got = _images[key] = page
    return got


def _live(page: bytes) -> list[RecordSpan]:
    """The records the rebuild copies: not delete-marked, and not MariaDB's instant ALTER
    metadata record (its min-rec flag on a leaf)."""
    level = int.from_bytes(page[64:66], "big")
    try:
        spans = record_spans(page)
    except RecordError:
        return []
    return [
        s
        for s in spans
        if not s.head.info_bits & REC_INFO_DELETED_FLAG
        and not (level == 0 and s.head.info_bits & REC_INFO_MIN_REC_FLAG)
    ]


def _chain(ts: Tablespace, first: int, owned: set[int]) -> list[int]:
    """The pages of one level in key order, from its leftmost page by the next pointers."""
    out: list[int] = []
    seen: set[int] = set()
    no = first
    while no != FIL_NULL and no in owned and no not in seen:
        seen.add(no)
        out.append(no)
        no = int.from_bytes(_image(ts, no)[12:16], "big")
    # pages the chain missed (a damaged link): after it, in page order
    out += sorted(owned - seen)
    return out


def _trx_offset(ts: Tablespace, pages: list[int], max_trx: int, page_size: int) -> int | None:
    """Where DB_TRX_ID lies after a clustered record's origin, without the definition: the
    offset at which nearly every record holds a transaction id below 2**40 followed by a roll
    pointer into a real undo page (or MariaDB's reset pair, 0 and the insert flag alone), the
    smallest such ids if several offsets fit."""
    recs: list[bytes] = []
    for no in pages[:: max(1, len(pages) // 8)][:8]:
        page = _image(ts, no)
        recs += [page[s.origin : s.end] for s in _live(page)[:64]]
    if not recs:
        return None
    limit = min(len(r) for r in recs) - DATA_TRX_ROLL
    best: tuple[float, int, int] | None = None
    for k in range(limit + 1):
        ok = 0
        top = 0
        for r in recs:
            pair = r[k : k + DATA_TRX_ROLL]
            trx = int.from_bytes(pair[:6], "big")
            if pair == RESET_TRX_ROLL:
                ok += 1
                continue
            undo_page = int.from_bytes(pair[7:11], "big")
            offset = int.from_bytes(pair[11:13], "big")
            if 0 < trx <= max_trx and undo_page and offset < page_size:
                ok += 1
                top = max(top, trx)
        score = ok / len(recs)
        # the ids of one table's transactions are close together: of the offsets that fit,
        # the one whose largest id is smallest (an offset into the key reads bigger numbers)
        if score >= 0.9 and (best is None or (top, -score) < (best[2], -best[0])):
            best = (score, k, top)
    return None if best is None else best[1]


def _segment_extents(pages: int, per_extent: int, reserve_factor: float) -> int:
    """Whole extents a segment of ``pages`` holds beyond its :data:`FRAGMENT_PAGES` single
    pages: enough for them, and (MySQL 8.0.26+, ``innodb_segment_reserve_factor``) with that
    share of its reserved pages still free when it took its last one."""
    if pages <= FRAGMENT_PAGES:
        return 0
    e = math.ceil((pages - FRAGMENT_PAGES) / per_extent)
    while (FRAGMENT_PAGES + e * per_extent) * (1 - reserve_factor) < pages:
        e += 1
    return e


def _file_pages(segment_pages: list[int], fixed: int, page_size: int, vendor: Vendor) -> int:
    """The rebuilt file's size in pages: fragment extents for the header pages and each
    segment's first :data:`FRAGMENT_PAGES` pages, then each segment's whole extents (a file
    under one extent whose segments are all fragments: the pages used, :data:`SMALL_SPARE`
    beyond them; 23 and 25 pages seen on MariaDB and MySQL, the same modelled). MariaDB
    10.11's bulk load stops there (256 pages seen, 256 modelled). MySQL 8.0's reserves a free
    extent before each page it takes (``fsp_reserve_free_extents``: more than 2 extents and
    1% of the file free beyond the one asked for, the last counting for none), and segments
    keep 12.5% of their pages free: 448, 576 and 960 pages seen on three tables, the same
    modelled."""
    per_extent = max(64, EXTENT_BYTES // page_size)
    mysql = vendor is Vendor.MYSQL
    factor = MYSQL_SEGMENT_RESERVE if mysql else 0.0
    frag = fixed + sum(min(FRAGMENT_PAGES, p) for p in segment_pages)
    small = frag + SMALL_SPARE[mysql]
    if all(p <= FRAGMENT_PAGES for p in segment_pages) and small < per_extent:
        return small
    used = math.ceil(frag / per_extent)
    used += sum(_segment_extents(p, per_extent, factor) for p in segment_pages)
    if not mysql:
        return used * per_extent
    size = used
    while size - used - 1 <= 2 + size * 2 // 200 + 1:
        step = 1 if size * per_extent < min(32 * per_extent, page_size) else 4
        size += step
    return size * per_extent


#: a file under one extent whose segments need no whole extent grows a page at a time
#: (``fsp_reserve_free_pages``): pages beyond those written, (MariaDB, MySQL): 23 and 25
#: pages seen for 22 and 23 written
SMALL_SPARE = (1, 2)
#: innodb_segment_reserve_factor's default (MySQL 8.0.26+), as a share
MYSQL_SEGMENT_RESERVE = 0.125


def plan_rebuild(
    ts: Tablespace,
    vendor: Vendor | None = None,
    fill_factor: int = DEFAULT_FILL_FACTOR,
    *,
    sample_above: int | None = SAMPLE_ABOVE_PAGES,
    sample_leaves: int = SAMPLE_LEAVES,
    seed: int = 1,
    target: float | None = PLAN_TARGET,
) -> RebuiltImage:
    """Plan the file a rebuild writes (module doc): every index page of ``ts`` read once, or
    (more than ``sample_above`` index pages; None: never) each index's leaves sampled,
    ``sample_leaves`` of them in all, drawn with ``seed``; then, while the count of pages
    written is known to less than ``target`` (relative 95% half width; None: the first sample
    is the plan's), more leaves of the indexes whose count is least sure
    (:func:`_sized_samples`), at most :data:`MAX_SAMPLE_LEAVES` in all.

    ``vendor``: the server that will rebuild (the file's own by default): MariaDB resets the
    transaction ids. Raises :class:`InputError` for a file with no index page."""
    vendor = vendor or (ts.format.vendor if ts.format.vendor is not Vendor.UNKNOWN else None)
    vendor = vendor or Vendor.MARIADB
    psize = ts.logical_size
    found = _classify_by_headers(ts) if sample_above is not None else None
    if found is not None and sum(len(p) for lv in found[1].values() for p in lv.values()) <= (
        sample_above or 0
    ):
        found = None  # small enough to read whole: exact
    if found is None:
        kept, by_index, leftmost, sample = _classify_by_pages(ts)
    else:
        kept, by_index, leftmost = found
        sample = {}
    if not by_index:
        raise InputError(f"{ts.path}: no index page to rebuild")
    clustered_id = min(by_index)  # created first: the lowest id (as simulate assumes)
    plans: list[IndexPlan] = []
    notes: list[str] = []
    segments: list[int] = []
    bounds: list[tuple[list[int], list[int]]] = []  # segments at the low and high bounds
    all_leaves = sum(len(levels.get(0, ())) for levels in by_index.values())
    rng = random.Random(seed)
    leaves_read = 0
    read: dict[int, tuple[int, array[int]]] = {}  # a sampled leaf's live records' sizes
    drawn: dict[int, list[int]] = {}  # a sampled index's leaves in random order
    take: dict[int, int] = {}  # and how many of them the plan reads
    for index_id in sorted(by_index) if found is not None else ():
        leaves = by_index[index_id].get(0, set())
        share = round(sample_leaves * len(leaves) / max(1, all_leaves))
        share = max(min(MIN_INDEX_SAMPLE, sample_leaves), share)
        if len(leaves) > share:
            drawn[index_id] = rng.sample(sorted(leaves), len(leaves))  # every prefix a sample
            take[index_id] = share
    if drawn and target is not None:
        take = _sized_samples(ts, by_index, drawn, take, read, len(kept), clustered_id,
                              fill_factor, target)  # fmt: skip
    for index_id in sorted(by_index):
        levels = by_index[index_id]
        clustered = index_id == clustered_id
        reserve = reserved_space(psize, clustered, fill_factor)
        leaves = levels.get(0, set())
        sampled = index_id in drawn
        if sampled:
            share = take[index_id]
            leaf = _plan_stream(ts, sorted(drawn[index_id][:share]), read)
            leaves_read += share
        else:
            first = leftmost.get((index_id, 0), min(leaves, default=0))
            leaf = _plan_stream(ts, _chain(ts, first, leaves))
            leaves_read += len(leaves)
        node_pages = [
            no
            for lvl in sorted(k for k in levels if k > 0)
            for no in _chain(ts, leftmost.get((index_id, lvl), min(levels[lvl])), levels[lvl])
        ]
        if sampled and len(node_pages) > MIN_INDEX_SAMPLE:
            node_pages = sorted(rng.sample(node_pages, MIN_INDEX_SAMPLE))
        node = _plan_stream(ts, node_pages) if node_pages else None
        plan = IndexPlan(index_id, clustered, leaf, node, sample=sample.get(index_id, b""))
        if not plan.sample:
            plan.sample = _image(ts, min(levels[min(levels)]))
        # the leaves: pack the records' sizes, remembering where each page starts
        sizes = leaf.sizes
        counts = list(pack(iter(sizes), psize, reserve))
        leaf_ci: tuple[int, int] | None = None
        if sampled:
            est, rel, plan.synth = _sampled_leaf_pages(leaf, counts, len(leaves), psize, reserve)
            n_leaves = max(1, math.ceil(est))
            leaf_ci = (max(1, math.floor(est * (1 - rel))), max(1, math.ceil(est * (1 + rel))))
        else:
            n_leaves = max(1, len(counts))
        leaf.sizes = array("I")  # packed: the page starts are all the pages need now
        pos = (0, 0)
        for c in counts:
            leaf.starts.append(pos)
            pos = _advance(leaf, pos, c)
        if not counts:
            leaf.starts.append((0, 0))
        # the levels above: a node pointer for each page below, sized like the old ones
        ptr = _mean_size(ts, node) if node is not None else _node_guess(ts, leaf)
        upper, plan.node_counts = _upper_levels(n_leaves, ptr, psize, reserve)
        plan.level_pages = [n_leaves, *upper]
        if clustered and vendor is Vendor.MARIADB:
            plan.trx_offset = _trx_offset(ts, leaf.pages, 1 << 40, psize)
            if plan.trx_offset is None:
                notes.append(
                    "the clustered records' DB_TRX_ID was not found without the table's "
                    "definition: kept as it is (MariaDB's rebuild resets it)"
                )
        plans.append(plan)
        segments += [plan.level_pages[0], sum(plan.level_pages[1:])]
        lo, hi = leaf_ci or (n_leaves, n_leaves)
        lo_up = sum(_upper_levels(lo, ptr, psize, reserve)[0])
        hi_up = sum(_upper_levels(hi, ptr, psize, reserve)[0])
        bounds.append(([lo, lo_up], [hi, hi_up]))
        if leaf_ci is not None:
            plan.pages_ci = (lo + lo_up, hi + hi_up)
    order: list[tuple[int, int, int]] = []
    for i, plan in enumerate(plans):  # the root first, as the server allocates it
        for level in range(len(plan.level_pages) - 1, -1, -1):
            order += [(i, level, k) for k in range(plan.level_pages[level])]
    fixed = len(kept)
    n_pages = max(_file_pages(segments, fixed, psize, vendor), fixed + len(order))
    image = RebuiltImage(
        ts,
        vendor,
        psize,
        fill_factor,
        vendor is Vendor.MARIADB,
        kept,
        plans,
        order,
        n_pages,
        ts.n_pages,
        notes,
    )
    if any(p.synth is not None for p in plans):
        # the indexes' samples are independent: their errors add in quadrature, not bound to
        # bound; each index's segments are moved by its share of the combined deviation
        low_segs, high_segs = _combined_bounds(segments, bounds)
        image.written_ci = (fixed + sum(low_segs), fixed + sum(high_segs))
        image.n_pages_ci = (
            max(_file_pages(low_segs, fixed, psize, vendor), image.written_ci[0]),
            max(_file_pages(high_segs, fixed, psize, vendor), image.written_ci[1]),
        )
        image.distinct_pages = fixed + sum(
            sum(p.level_pages) if p.synth is None else p.synth + sum(p.level_pages[1:])
            for p in plans
        )
        image.leaves_read = (leaves_read, all_leaves)
    return image


_Found = tuple[list[int], dict[int, dict[int, set[int]]], dict[tuple[int, int], int]]


def _classify_by_pages(ts: Tablespace) -> tuple[
    list[int], dict[int, dict[int, set[int]]], dict[tuple[int, int], int], dict[int, bytes]
]:  # fmt: skip
    """The pages kept as they are, each index's pages by level, each level's leftmost page and
    a leaf page of each index, from every page's image."""
    sdi_root = ts.format.sdi_root
    kept: list[int] = []
    by_index: dict[int, dict[int, set[int]]] = {}  # index -> level -> pages
    leftmost: dict[tuple[int, int], int] = {}
    sample: dict[int, bytes] = {}
    # the pages with data, a run at a time (a sparse file's holes are never read), less those
    # the extent descriptors call free (a freed page keeps its old header)
    for first, end, has_data in ts.page_runs(0, ts.n_pages):
        if not has_data:
            continue
        free = ts.free_window(first, end)
        for no in range(first, end):
            if free[no - first] and no > 2:
                continue
            page = _image(ts, no)
            ptype = int.from_bytes(page[24:26], "big")
            if no <= 2 or ptype == FIL_PAGE_SDI or (sdi_root is not None and no == sdi_root):
                kept.append(no)
                continue
            if ptype not in (FIL_PAGE_INDEX, FIL_PAGE_TYPE_INSTANT):
                if ptype != FIL_PAGE_TYPE_ALLOCATED and any(page):
                    kept.append(no)  # BLOB pages and the like: rewritten much as they are
                continue
            index_id = int.from_bytes(page[66:74], "big")
            level = int.from_bytes(page[64:66], "big")
            by_index.setdefault(index_id, {}).setdefault(level, set()).add(no)
            if int.from_bytes(page[8:12], "big") == FIL_NULL:
                leftmost.setdefault((index_id, level), no)
            if level == 0:
                sample.setdefault(index_id, page)
    return kept, by_index, leftmost, sample


def _classify_by_headers(ts: Tablespace) -> _Found:
    """As :func:`_classify_by_pages` (less the leaf images), from a header scan: a fraction
    of the cost of reading every page's records."""
    sdi_root = ts.format.sdi_root
    kept: list[int] = []
    by_index: dict[int, dict[int, set[int]]] = {}
    leftmost: dict[tuple[int, int], int] = {}
    for first, end, has_data in ts.page_runs(0, ts.n_pages):
        if not has_data:
            continue
        free = ts.free_window(first, end)
        for info in scan_page_headers(ts, first, end):
            no = info.page_no
            if free[no - first] and no > 2:
                continue
            ptype = info.real_type
            if no <= 2 or ptype == FIL_PAGE_SDI or (sdi_root is not None and no == sdi_root):
                kept.append(no)
                continue
            if info.index is None or ptype not in (FIL_PAGE_INDEX, FIL_PAGE_TYPE_INSTANT):
                if ptype != FIL_PAGE_TYPE_ALLOCATED:
                    kept.append(no)  # BLOB pages and the like: rewritten much as they are
                continue
            index_id, level = info.index.index_id, info.index.level
            by_index.setdefault(index_id, {}).setdefault(level, set()).add(no)
            if info.prev == FIL_NULL:
                leftmost.setdefault((index_id, level), no)
    return kept, by_index, leftmost


def _sized_samples(
    ts: Tablespace,
    by_index: dict[int, dict[int, set[int]]],
    drawn: dict[int, list[int]],
    take: dict[int, int],
    read: dict[int, tuple[int, array[int]]],
    fixed: int,
    clustered_id: int,
    fill_factor: int,
    target: float,
) -> dict[int, int]:
    """How many of each sampled index's ``drawn`` leaves to read so that the pages written
    are known within ``target`` (relative 95% half width), from the first ``take``: each
    round reads the sampled leaves, estimates each index's leaf pages and their half width
    (:func:`_sampled_leaf_pages`), combines the indexes' half widths in quadrature, and grows
    every index that adds to it by the square of how far the whole is off (a half width
    falls as one over the root of the leaves read; the rule of three's, as one over them),
    until the target is met, every leaf is read, or :data:`MAX_SAMPLE_LEAVES` are."""
    psize = ts.logical_size
    take = dict(take)
    for _round in range(4):
        halves: dict[int, float] = {}
        pages = float(fixed)
        for index_id, levels in by_index.items():
            if index_id not in drawn:
                pages += len(levels.get(0, ())) + sum(len(p) for lv, p in levels.items() if lv)
                continue
            reserve = reserved_space(psize, index_id == clustered_id, fill_factor)
            leaf = _plan_stream(ts, sorted(drawn[index_id][: take[index_id]]), read)
            counts = list(pack(iter(leaf.sizes), psize, reserve))
            population = len(drawn[index_id])
            est, rel, _synth = _sampled_leaf_pages(leaf, counts, population, psize, reserve)
            halves[index_id] = est * rel
            pages += est + sum(len(p) for lv, p in levels.items() if lv)
        whole = math.sqrt(sum(h * h for h in halves.values())) / max(1.0, pages)
        room = MAX_SAMPLE_LEAVES - sum(take.values())
        if whole <= target or room <= 0:
            break
        grow = min(16.0, (whole / target) ** 2 * 1.1)
        wanted = {
            i: min(len(drawn[i]), math.ceil(take[i] * grow)) - take[i]
            for i, h in halves.items()
            if h * h >= sum(x * x for x in halves.values()) / (4 * len(halves))
        }
        more = sum(wanted.values())
        if more <= 0:
            break
        scale = min(1.0, room / more)
        for i, w in wanted.items():
            take[i] += int(w * scale)
    return take


def _combined_bounds(
    segments: list[int], bounds: list[tuple[list[int], list[int]]]
) -> tuple[list[int], list[int]]:
    """The segments' pages at the low and the high end of the plan's 95% interval: each
    index's own interval (``bounds``: its segments at its low and high ends) is that of an
    independent estimate, so the whole's half width is the root of the sum of their squares;
    each index's segments are moved by their share of it (the same share of their own
    deviation for all)."""
    nominal = segments
    low = [x for b in bounds for x in b[0]]
    high = [x for b in bounds for x in b[1]]
    out: list[list[int]] = []
    for end in (low, high):
        devs = [e - n for e, n in zip(end, nominal, strict=True)]
        per_index = [devs[i] + devs[i + 1] for i in range(0, len(devs), 2)]
        linear = sum(abs(d) for d in per_index)
        combined = math.sqrt(sum(d * d for d in per_index))
        share = combined / linear if linear else 1.0
        out.append([n + round(d * share) for n, d in zip(nominal, devs, strict=True)])
    return out[0], out[1]


def _upper_levels(below: int, ptr: int, psize: int, reserve: int) -> tuple[list[int], list[int]]:
    """The pages of each level above ``below`` leaves (a node pointer for each page below,
    ``ptr`` bytes each), and each of their pages' record counts."""
    levels: list[int] = []
    counts: list[int] = []
    while below > 1:
        per = list(pack(iter([ptr] * below), psize, reserve))
        levels.append(len(per))
        counts += per
        below = len(per)
    return levels, counts


def _sampled_leaf_pages(
    leaf: _Stream, packed: list[int], population: int, psize: int, reserve: int
) -> tuple[float, float, int]:
    """An index's rebuilt leaf pages from ``leaf`` (a random sample of its ``population``
    leaves) whose records pack into ``packed`` pages: the leaves' live bytes (each record
    with its directory share) estimated from the sample, over the mean a full packed page
    holds; with the 95% interval's relative half width (the sample's spread of both, finite
    population corrected) and the full packed pages (the last is partial)."""
    sizes = leaf.sizes
    needs: list[float] = []
    i = 0
    for c in leaf.counts:
        needs.append(sum(sizes[i : i + c]) + c / 2)
        i += c
    full = packed[:-1] if len(packed) > 1 else packed
    held: list[float] = []
    i = 0
    for c in full:
        held.append(sum(sizes[i : i + c]) + c / 2)
        i += c
    k = len(needs)
    mean = sum(needs) / k
    per_page = (
        sum(held) / len(held) if held and sum(held) else float(empty_free_space(psize) - reserve)
    )
    fpc = math.sqrt(max(0, population - k) / max(1, population - 1))
    var = sum((x - mean) ** 2 for x in needs) / (k - 1) if k > 1 else 0.0
    if mean <= 0:
        return 1.0, float(population), max(1, len(full))
    if var > 0:
        rel_bytes = Z95 * math.sqrt(var / k) * fpc / mean
    else:  # every leaf alike: the rule of three, 3 leaves in k as far off as a page allows
        rel_bytes = 3 / k * max(mean, psize - mean) / mean * fpc
    m = len(held)
    if m > 1:
        hm = sum(held) / m
        hvar = sum((x - hm) ** 2 for x in held) / (m - 1)
        rel_page = Z95 * math.sqrt(hvar / m) / hm if hm else 0.0
    else:
        rel_page = 0.5  # a single packed page says little of a page's fill
    est = population * mean / per_page
    return est, math.sqrt(rel_bytes**2 + rel_page**2), max(1, len(full))


def rebuilt_allocation(path: str | os.PathLike[str], keyring: Keyring | None = None) -> Estimate:
    """What ``path`` allocates once rebuilt uncompressed (``ALTER TABLE … FORCE``, a
    conversion back to uncompressed pages): :meth:`RebuiltImage.uncompressed`."""
    with Tablespace(path, keyring) as ts:
        return plan_rebuild(ts).uncompressed()


def _plan_stream(
    ts: Tablespace, pages: list[int], read: dict[int, tuple[int, array[int]]] | None = None
) -> _Stream:
    """The level's live records counted and sized page by page in one read of each page (the
    sizes, in key order, are what :func:`pack` takes); ``read``: pages already sized, and
    where to keep those sized now."""
    counts: list[int] = []
    sizes = array("I")
    for no in pages:
        got = read.get(no) if read is not None else None
        if got is None:
            spans = _live(_image(ts, no))
            got = (len(spans), array("I", (sp.end - sp.start for sp in spans)))
            if read is not None:
                read[no] = got
        counts.append(got[0])
        sizes.extend(got[1])
    stream = _Stream(pages, counts, records=sum(counts))
    stream.sizes = sizes
    stream.sizes_total = sum(sizes)
    return stream


def _advance(stream: _Stream, pos: tuple[int, int], n: int) -> tuple[int, int]:
    pi, ri = pos
    while pi < len(stream.counts):
        left = stream.counts[pi] - ri
        if n < left:
            return pi, ri + n
        n -= left
        pi, ri = pi + 1, 0
    return pi, 0


def _mean_size(ts: Tablespace, stream: _Stream) -> int:
    return max(1, round(stream.sizes_total / stream.records)) if stream.records else 16


def _node_guess(ts: Tablespace, leaf: _Stream) -> int:
    """A node pointer's size when the index had none: the smallest leaf record's, plus the
    child page number (a key is at most the shortest record)."""
    sizes = [sp.end - sp.start for no in leaf.pages[:4] for sp in _live(_image(ts, no))]
    return min(sizes) + 4 if sizes else 16
