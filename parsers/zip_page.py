"""ROW_FORMAT=COMPRESSED index pages rebuilt in full, as ``page_zip_decompress`` does (§7.3).

A zip INDEX page (FIL_PAGE_INDEX, FIL_PAGE_RTREE and MySQL 8's FIL_PAGE_SDI, whose B-tree uses
the same format) of KEY_BLOCK_SIZE bytes becomes the uncompressed page of the space's logical
size that the server keeps in its buffer pool:

1. the FIL header and the index page header (bytes 0..93) are copied; the 8-byte FIL trailer
   stays zero, as in the server's uncompressed frame;
2. the sparse page directory is rebuilt from the "owned" flags of the dense directory at the end
   of the zip page, and must end with PAGE_N_DIR_SLOTS slots;
3. infimum and supremum are written (``infimum_extra``/``supremum_extra_data``);
4. the zlib stream at 94 is inflated, capped at what the page can hold: first the index
   description (:mod:`ibdtool.parsers.compact_rec`), then the records in heap order without their 5
   fixed header bytes, leaving out what the trailer keeps uncompressed — DB_TRX_ID+DB_ROLL_PTR
   of clustered leaf records (13 bytes), BLOB pointers (20 bytes), child page numbers of
   node-pointer records (4 bytes) — then the heap up to PAGE_HEAP_TOP;
5. the modification log that follows the stream is applied (records written or cleared since
   the page was last compressed);
6. the uncompressed columns are put back from the trailer (BLOB pointers only for records that
   are not on the free list);
7. info bits, n_owned and next pointers (key order, then the free list in PAGE_FREE order) are
   set from the dense directory.

Non-index pages of a zip tablespace (FSP_HDR, XDES, INODE, IBUF bitmap, …) are stored as they
are, only KEY_BLOCK_SIZE long. BLOBs of a ROW_FORMAT=COMPRESSED table live in FIL_PAGE_TYPE_ZBLOB
(11, the first page of a column) and ZBLOB2 (12, the next ones) pages: 38-byte FIL header with
the next page number in FIL_PAGE_NEXT, then one zlib stream for the whole column split across
the chain (``btr_copy_zblob_prefix``), no trailer. MySQL 8's new LOB format adds ZLOB_FIRST/
DATA/INDEX/FRAG/FRAG_ENTRY (25–29) and FIL_PAGE_SDI_ZBLOB (19) for compressed SDI BLOBs. None of
these is an index page; this module rebuilds index pages only.

No table definition is needed: the page carries its own index description. Errors raise
:class:`ZipPageError` with what was wrong (the server's ``page_zip_fail`` reasons).
"""

from __future__ import annotations

import contextlib
import zlib
from dataclasses import dataclass
from typing import Any

from ibdtool.parsers._structs_gen import INDEX_HEADER_FAST, PAGE_DATA, PAGE_HEADER, IndexHeaderTuple
from ibdtool.parsers.compact_rec import (
    BTR_EXTERN_FIELD_REF_SIZE,
    DATA_TRX_ROLL_LEN,
    PAGE_NEW_INFIMUM,
    PAGE_NEW_SUPREMUM,
    REC_HEAP_NO_SHIFT,
    REC_INFO_DELETED_FLAG,
    REC_INFO_MIN_REC_FLAG,
    REC_N_NEW_EXTRA_BYTES,
    REC_NODE_PTR_SIZE,
    REC_STATUS_NODE_PTR,
    REC_STATUS_ORDINARY,
    RecordError,
    RecordLayout,
    ZipIndex,
    decode_zip_index,
    iter_records,
    record_fields,
    record_fields_reverse,
)
from ibdtool.parsers.constants import FIL_NULL, FIL_PAGE_INDEX, FIL_PAGE_RTREE, FIL_PAGE_SDI
from ibdtool.parsers.errors import ParseError

# §5.2 / §7.1 constants (page0types.h, page0zip.h)
PAGE_NEW_SUPREMUM_END = 120
PAGE_ZIP_START = PAGE_NEW_SUPREMUM_END  # first byte the stream's records fill
PAGE_DIR = 8  # the sparse directory ends this far before the page end
PAGE_DIR_SLOT_SIZE = 2
PAGE_ZIP_DIR_SLOT_SIZE = 2
PAGE_ZIP_DIR_SLOT_MASK = 0x3FFF
PAGE_ZIP_DIR_SLOT_OWNED = 0x4000
PAGE_ZIP_DIR_SLOT_DEL = 0x8000
PAGE_HEAP_NO_USER_LOW = 2
ZIP_INDEX_TYPES = frozenset({FIL_PAGE_INDEX, FIL_PAGE_RTREE, FIL_PAGE_SDI})

INFIMUM_EXTRA = b"\x01\x00\x02"  # n_owned 1; heap_no 0, status infimum (page0page.h)
INFIMUM_DATA = b"infimum\x00"
SUPREMUM_EXTRA_DATA = b"\x00\x0b\x00\x00supremum"  # heap_no 1, status supremum; next 0
_SYNC_MARK = b"\x00\x00\xff\xff"  # the empty stored block a Z_FULL_FLUSH ends with


class ZipPageError(ParseError):
    """A zip page that ``page_zip_decompress`` would refuse."""


@dataclass(frozen=True, slots=True)
class ZipPage:
    """A rebuilt zip index page and what the compressed image told about it."""

    page: bytes  # the uncompressed page, logical size
    index: ZipIndex
    n_dense: int  # records in the heap (PAGE_N_HEAP − 2), live and free
    n_recs: int
    recs: tuple[int, ...]  # record origins in heap-number order
    m_start: int  # end of the zlib stream on the zip page
    m_end: int  # end of the modification log (its 0 terminator)
    n_blobs: int  # BLOB pointers kept in the trailer
    trailer_len: int  # dense directory + uncompressed columns + BLOB pointers
    physical_size: int

    @property
    def mod_log_nonempty(self) -> bool:
        return self.m_end > self.m_start

    @property
    def physical_used(self) -> int:
        """Bytes of the zip page in use: header, stream, log (and its terminator), trailer."""
        return self.m_end + 1 + self.trailer_len


@dataclass(frozen=True, slots=True)
class ZipFill:
    """How full a zip page really is, on the page the server works on and on disk."""

    used: int  # bytes of the live records (headers included), from walking them
    capacity: int  # free space of an empty logical page (§5.3 free_space_of_empty)
    physical_used: int  # bytes of the KEY_BLOCK_SIZE image in use
    physical_size: int
    records: int = 0  # records walked in key order (user records, delete-marked included)

    @property
    def fill(self) -> float:
        return min(1.0, self.used / self.capacity) if self.capacity > 0 else 0.0

    @property
    def physical_fill(self) -> float:
        return min(1.0, self.physical_used / self.physical_size)


# --- helpers --------------------------------------------------------------------------------


def _u16(buf: bytes | bytearray, off: int) -> int:
    return buf[off] << 8 | buf[off + 1]


def _put16(page: bytearray, off: int, val: int) -> None:
    page[off] = (val >> 8) & 0xFF
    page[off + 1] = val & 0xFF


def _set_next(page: bytearray, rec: int, nxt: int) -> None:
    """``rec_set_next_offs_new``: relative pointer, 0 for the end of a list."""
    _put16(page, rec - 2, 0 if nxt == 0 else (nxt - rec) & 0xFFFF)


def _layout(page: bytearray, rec: int, index: ZipIndex, node_ptr: bool) -> RecordLayout:
    try:
        return record_fields(page, rec, index, node_ptr)
    except RecordError as exc:
        raise ZipPageError(str(exc)) from None


def is_zip_index_page(page_type: int) -> bool:
    """Whether a zip page of this FIL_PAGE_TYPE is in the compressed index format."""
    return page_type in ZIP_INDEX_TYPES


# --- 2. dense → sparse directory ------------------------------------------------------------


def _dir_decode(
    page: bytearray, dense: list[int], n_recs: int, n_slots: int, logical: int
) -> list[int]:
    """``page_zip_dir_decode``: fill the sparse directory, return origins by heap order."""
    if n_recs > len(dense):
        raise ZipPageError(f"PAGE_N_RECS {n_recs} > {len(dense)} records in the heap")
    slot = logical - PAGE_DIR - PAGE_DIR_SLOT_SIZE
    _put16(page, slot, PAGE_NEW_INFIMUM)
    slot -= PAGE_DIR_SLOT_SIZE
    recs: list[int] = []
    low = logical - PAGE_DIR - PAGE_DIR_SLOT_SIZE * n_slots
    top = low  # records lie below the sparse directory
    for i in range(n_recs):
        offs = dense[i]
        if offs & PAGE_ZIP_DIR_SLOT_OWNED:
            if slot <= low:
                raise ZipPageError(f"more owned records than PAGE_N_DIR_SLOTS {n_slots} allows")
            _put16(page, slot, offs & PAGE_ZIP_DIR_SLOT_MASK)
            slot -= PAGE_DIR_SLOT_SIZE
        origin = offs & PAGE_ZIP_DIR_SLOT_MASK
        if not PAGE_ZIP_START + REC_N_NEW_EXTRA_BYTES <= origin < top:
            raise ZipPageError(f"dense directory slot {i} points to {origin}")
        recs.append(origin)
    if slot != low:
        raise ZipPageError(
            f"{(logical - PAGE_DIR - slot) // 2} directory slots, PAGE_N_DIR_SLOTS is {n_slots}"
        )
    _put16(page, slot, PAGE_NEW_SUPREMUM)
    for i in range(n_recs, len(dense)):
        offs = dense[i]
        if (
            offs & ~PAGE_ZIP_DIR_SLOT_MASK
            or not PAGE_ZIP_START + REC_N_NEW_EXTRA_BYTES <= offs < top
        ):
            raise ZipPageError(f"free-list slot {i} of the dense directory is {offs:#x}")
        recs.append(offs)
    if len(set(recs)) != len(recs):
        raise ZipPageError("the dense directory names a record twice")
    recs.sort()
    return recs


# --- 4. the zlib stream ---------------------------------------------------------------------


def _inflate(stream: bytes, cap: int) -> tuple[bytes, int]:
    """Inflate at most ``cap`` bytes; return them and the stream's length in ``stream``."""
    d = zlib.decompressobj()
    try:
        out = d.decompress(stream, cap)
    except zlib.error as exc:
        raise ZipPageError(f"zlib stream: {exc}") from None
    if not d.eof:
        if d.unconsumed_tail:
            raise ZipPageError(f"zlib stream inflates to more than the page holds ({cap} bytes)")
        raise ZipPageError("zlib stream does not end before the trailer")
    return out, len(stream) - len(d.unused_data)


def _index_candidates(stream: bytes, leaf: bool) -> list[tuple[ZipIndex, int]]:
    """Possible (index description, its length) pairs.

    The description is flushed with Z_FULL_FLUSH, so it ends at the first empty stored block,
    the byte-aligned ``00 00 ff ff``. The same bytes could also occur inside its compressed
    block; every prefix ending so that decodes is a candidate, tried in order.
    """
    out: list[tuple[ZipIndex, int]] = []
    pos = stream.find(_SYNC_MARK)
    while pos >= 0 and len(out) < 4:
        d = zlib.decompressobj()
        try:
            info = d.decompress(stream[: pos + 4], 4 * 1024)
        except zlib.error:
            info = b""
        if info:
            with contextlib.suppress(RecordError):  # not the description's end: try the next
                out.append((decode_zip_index(info, leaf), len(info)))
        pos = stream.find(_SYNC_MARK, pos + 1)
    return out


class _Out:
    """The inflated record bytes and where the next one goes on the page (``d_stream``)."""

    def __init__(self, page: bytearray, data: bytes) -> None:
        self.page = page
        self.data = data
        self.pos = 0
        self.q = PAGE_ZIP_START

    @property
    def left(self) -> int:
        return len(self.data) - self.pos

    def fill_to(self, stop: int, what: str) -> None:
        """Copy stream bytes up to page offset ``stop``; the stream must have them all."""
        n = stop - self.q
        if n < 0:
            raise ZipPageError(f"{what}: record at {stop} overlaps the previous one")
        if n > self.left:
            raise ZipPageError(f"{what}: zlib stream ends inside the record")
        self.page[self.q : stop] = self.data[self.pos : self.pos + n]
        self.pos += n
        self.q = stop

    def skip(self, n: int) -> None:
        """Leave ``n`` bytes zero: they come from the trailer later."""
        self.page[self.q : self.q + n] = bytes(n)
        self.q += n


def _records(
    out: _Out, recs: list[int], index: ZipIndex, node_ptr: bool, heap_top: int, logical: int
) -> int:
    """Place the inflated records (``page_zip_decompress_{node_ptrs,sec,clust}``).

    Returns the heap_no/status word for the next record the modification log may create.
    """
    page = out.page
    status = REC_STATUS_NODE_PTR if node_ptr else REC_STATUS_ORDINARY
    heap_status = status | PAGE_HEAP_NO_USER_LOW << REC_HEAP_NO_SHIFT
    for rec in recs:
        need = rec - REC_N_NEW_EXTRA_BYTES - out.q
        if need < 0:
            raise ZipPageError(f"record at {rec} overlaps the previous one")
        if out.left <= need:
            # the stream ends here: this record and the later ones are only in the log
            n = out.left
            page[out.q : out.q + n] = out.data[out.pos :]
            out.pos += n
            out.q += n
            if out.q == rec - REC_N_NEW_EXTRA_BYTES:
                _put16(page, rec - 4, heap_status)
                heap_status += 1 << REC_HEAP_NO_SHIFT
                out.q = rec
            return heap_status
        out.fill_to(rec - REC_N_NEW_EXTRA_BYTES, f"record at {rec}")
        _put16(page, rec - 4, heap_status)
        heap_status += 1 << REC_HEAP_NO_SHIFT
        out.q = rec
        if node_ptr:
            lay = _layout(page, rec, index, True)
            end = lay.fields[-1].end
            out.fill_to(end - REC_NODE_PTR_SIZE, f"node pointer at {rec}")
            out.skip(REC_NODE_PTR_SIZE)
        elif index.trx_id_col is not None:
            lay = _layout(page, rec, index, False)
            for i, f in enumerate(lay.fields):
                if i == index.trx_id_col:
                    if f.extern or f.end - f.start < DATA_TRX_ROLL_LEN:
                        raise ZipPageError(f"record at {rec}: bad DB_TRX_ID field")
                    out.fill_to(f.start, f"record at {rec}")
                    out.skip(DATA_TRX_ROLL_LEN)
                elif f.extern:
                    if f.end - f.start < BTR_EXTERN_FIELD_REF_SIZE:
                        raise ZipPageError(f"record at {rec}: external field under 20 bytes")
                    out.fill_to(f.end - BTR_EXTERN_FIELD_REF_SIZE, f"record at {rec}")
                    out.skip(BTR_EXTERN_FIELD_REF_SIZE)
            out.fill_to(lay.fields[-1].end, f"record at {rec}")
        # secondary leaf: the data goes out with the next record's header bytes
    # the heap's tail, up to PAGE_HEAP_TOP (a record that reused a longer free slot)
    room = heap_top - out.q
    if room < 0 or room > logical - PAGE_ZIP_START - PAGE_DIR:
        raise ZipPageError(f"PAGE_HEAP_TOP {heap_top} is below the last record ({out.q})")
    if out.left > room:
        raise ZipPageError(f"zlib stream runs past PAGE_HEAP_TOP {heap_top}")
    page[out.q : out.q + out.left] = out.data[out.pos :]
    out.q += out.left
    out.pos = len(out.data)
    return heap_status


# --- 5. the modification log ----------------------------------------------------------------


def _copy(page: bytearray, dst: int, log: bytes, pos: int, n: int, what: str) -> int:
    if n < 0 or pos + n >= len(log):
        raise ZipPageError(f"modification log: {what} runs past its end")
    page[dst : dst + n] = log[pos : pos + n]
    return pos + n


def _apply_log(
    page: bytearray,
    log: bytes,
    recs: list[int],
    index: ZipIndex,
    node_ptr: bool,
    heap_status: int,
) -> int:
    """``page_zip_apply_log``: returns the offset of the log's 0 terminator in ``log``."""
    pos = 0
    n_dense = len(recs)
    end = len(log)
    while True:
        if pos >= end:
            raise ZipPageError("modification log has no terminator")
        val = log[pos]
        pos += 1
        if val == 0:
            return pos - 1
        if val & 0x80:
            if pos >= end:
                raise ZipPageError("modification log ends inside an entry")
            val = (val & 0x7F) << 8 | log[pos]
            pos += 1
        if pos >= end:
            raise ZipPageError("modification log ends after an entry header")
        if not 1 <= val >> 1 <= n_dense:
            raise ZipPageError(f"modification log names heap_no {(val >> 1) + 1} of {n_dense}")
        rec = recs[(val >> 1) - 1]
        hs = ((val >> 1) + 1) << REC_HEAP_NO_SHIFT | (heap_status & 7)
        if hs > heap_status:
            raise ZipPageError(f"modification log skips heap numbers ({hs >> 3})")
        if hs == heap_status:
            if val & 1:
                raise ZipPageError("modification log clears a record it never wrote")
            heap_status += 1 << REC_HEAP_NO_SHIFT
        _put16(page, rec - 4, hs)
        if val & 1:  # a record cleared (deleted and purged): zero its data bytes
            lay = _layout(page, rec, index, node_ptr)
            page[rec : rec + lay.data_size] = bytes(lay.data_size)
            continue
        try:
            lay = record_fields_reverse(log, pos, index, node_ptr, rec)
        except RecordError as exc:
            raise ZipPageError(f"modification log: {exc}") from None
        if rec - REC_N_NEW_EXTRA_BYTES - lay.extra_len < PAGE_ZIP_START or (
            lay.fields and lay.fields[-1].end > len(page) - PAGE_DIR
        ):
            raise ZipPageError(f"modification log: record at {rec} does not fit the page")
        for k in range(lay.extra_len):  # header bytes, stored going up = page going down
            page[rec - REC_N_NEW_EXTRA_BYTES - 1 - k] = log[pos + k]
        pos += lay.extra_len
        rec_end = lay.fields[-1].end if lay.fields else rec
        if lay.any_extern:
            if node_ptr:
                raise ZipPageError("modification log: external field on a non-leaf page")
            pos = _apply_log_ext(page, rec, lay, index, log, pos)
        elif node_ptr:
            pos = _copy(page, rec, log, pos, rec_end - REC_NODE_PTR_SIZE - rec, "node pointer")
        elif index.trx_id_col is None:
            pos = _copy(page, rec, log, pos, rec_end - rec, "secondary record")
        else:
            f = lay.fields[index.trx_id_col]
            if f.end - f.start < DATA_TRX_ROLL_LEN:
                raise ZipPageError("modification log: DB_TRX_ID field under 13 bytes")
            pos = _copy(page, rec, log, pos, f.start - rec, "clustered record")
            after = f.start + DATA_TRX_ROLL_LEN
            pos = _copy(page, after, log, pos, rec_end - after, "clustered record")


def _apply_log_ext(
    page: bytearray, rec: int, lay: RecordLayout, index: ZipIndex, log: bytes, pos: int
) -> int:
    """``page_zip_apply_log_ext``: copy around DB_TRX_ID/DB_ROLL_PTR and BLOB pointers."""
    next_out = rec
    for i, f in enumerate(lay.fields):
        if i == index.trx_id_col:
            if f.extern or f.end - f.start < DATA_TRX_ROLL_LEN:
                raise ZipPageError("modification log: bad DB_TRX_ID field")
            pos = _copy(page, next_out, log, pos, f.start - next_out, "record")
            next_out = f.start + DATA_TRX_ROLL_LEN
        elif f.extern:
            if f.end - f.start < BTR_EXTERN_FIELD_REF_SIZE:
                raise ZipPageError("modification log: external field under 20 bytes")
            n = f.end - BTR_EXTERN_FIELD_REF_SIZE - next_out
            pos = _copy(page, next_out, log, pos, n, "record")
            next_out = f.end
    return _copy(page, next_out, log, pos, lay.fields[-1].end - next_out, "record")


# --- 6. uncompressed columns ----------------------------------------------------------------


def _restore_columns(
    page: bytearray,
    zbuf: bytes,
    recs: list[int],
    free: set[int],
    index: ZipIndex,
    node_ptr: bool,
    physical: int,
    m_end: int,
) -> int:
    """Put back child page numbers or DB_TRX_ID+DB_ROLL_PTR and BLOB pointers; n_blobs."""
    storage = physical - len(recs) * PAGE_ZIP_DIR_SLOT_SIZE
    if node_ptr:
        for rec in recs:
            end = _layout(page, rec, index, True).fields[-1].end
            storage -= REC_NODE_PTR_SIZE
            page[end - REC_NODE_PTR_SIZE : end] = zbuf[storage : storage + REC_NODE_PTR_SIZE]
        return 0
    if index.trx_id_col is None:
        return 0
    externs = storage - len(recs) * DATA_TRX_ROLL_LEN
    n_blobs = 0
    for rec in recs:
        lay = _layout(page, rec, index, False)
        dst = lay.fields[index.trx_id_col].start
        storage -= DATA_TRX_ROLL_LEN
        page[dst : dst + DATA_TRX_ROLL_LEN] = zbuf[storage : storage + DATA_TRX_ROLL_LEN]
        for f in lay.fields:
            if not f.extern:
                continue
            if f.end - f.start < BTR_EXTERN_FIELD_REF_SIZE:
                raise ZipPageError(f"record at {rec}: external field under 20 bytes")
            ref = f.end - BTR_EXTERN_FIELD_REF_SIZE
            if rec in free:  # a deleted record: its BLOB pointer is cleared
                page[ref : f.end] = bytes(BTR_EXTERN_FIELD_REF_SIZE)
                continue
            externs -= BTR_EXTERN_FIELD_REF_SIZE
            if externs < m_end:
                raise ZipPageError("BLOB pointers overlap the modification log")
            page[ref : f.end] = zbuf[externs : externs + BTR_EXTERN_FIELD_REF_SIZE]
            n_blobs += 1
    return n_blobs


# --- 7. record headers ----------------------------------------------------------------------


def _set_extra_bytes(page: bytearray, dense: list[int], n_recs: int, info_bits: int) -> None:
    """``page_zip_set_extra_bytes``: info bits, n_owned and next pointers."""
    n_owned = 1
    rec = PAGE_NEW_INFIMUM
    for i in range(n_recs):
        offs = dense[i]
        if offs & PAGE_ZIP_DIR_SLOT_DEL:
            info_bits |= REC_INFO_DELETED_FLAG
        if offs & PAGE_ZIP_DIR_SLOT_OWNED:
            info_bits |= n_owned
            n_owned = 1
        else:
            n_owned += 1
        offs &= PAGE_ZIP_DIR_SLOT_MASK
        _set_next(page, rec, offs)
        rec = offs
        page[rec - REC_N_NEW_EXTRA_BYTES] = info_bits
        info_bits = 0
    _set_next(page, rec, PAGE_NEW_SUPREMUM)
    page[PAGE_NEW_SUPREMUM - REC_N_NEW_EXTRA_BYTES] = n_owned
    free = dense[n_recs:]
    for k, offs in enumerate(free):
        page[offs - REC_N_NEW_EXTRA_BYTES] = 0
        _set_next(page, offs, free[k + 1] if k + 1 < len(free) else 0)


def _check_heap_numbers(page: bytearray, recs: list[int]) -> None:
    seen = sorted(_u16(page, rec - 4) >> REC_HEAP_NO_SHIFT for rec in recs)
    if seen != list(range(PAGE_HEAP_NO_USER_LOW, PAGE_HEAP_NO_USER_LOW + len(recs))):
        raise ZipPageError("records without a heap number: the modification log is incomplete")


# --- the whole page -------------------------------------------------------------------------


def decompress_zip_page(zbuf: bytes | bytearray | memoryview, logical_size: int) -> ZipPage:
    """Rebuild the uncompressed ``logical_size`` page of a zip index page (all of ``zbuf``)."""
    zbuf = bytes(zbuf)
    physical = len(zbuf)
    if physical < 1024 or physical & (physical - 1) or physical > logical_size:
        raise ZipPageError(f"{physical} bytes is not a KEY_BLOCK_SIZE for {logical_size}")
    h: Any = IndexHeaderTuple._make(INDEX_HEADER_FAST.unpack_from(zbuf, PAGE_HEADER))
    if not h.n_heap & 0x8000:
        raise ZipPageError("zip page is not in the compact format (PAGE_N_HEAP bit 15)")
    n_dense = (h.n_heap & 0x7FFF) - PAGE_HEAP_NO_USER_LOW
    if n_dense < 0 or n_dense * PAGE_ZIP_DIR_SLOT_SIZE >= physical - PAGE_DATA:
        raise ZipPageError(f"PAGE_N_HEAP {h.n_heap & 0x7FFF} does not fit a {physical}-byte page")
    if h.n_dir_slots < 2:
        raise ZipPageError(f"PAGE_N_DIR_SLOTS {h.n_dir_slots}")
    leaf = h.level == 0
    dense = [_u16(zbuf, physical - 2 * (i + 1)) for i in range(n_dense)]

    page = bytearray(logical_size)
    page[:PAGE_DATA] = zbuf[:PAGE_DATA]
    recs = _dir_decode(page, dense, h.n_recs, h.n_dir_slots, logical_size)
    page[PAGE_NEW_INFIMUM - 5 : PAGE_NEW_INFIMUM - 2] = INFIMUM_EXTRA
    page[PAGE_NEW_INFIMUM : PAGE_NEW_INFIMUM + 8] = INFIMUM_DATA
    page[PAGE_NEW_SUPREMUM - 4 : PAGE_NEW_SUPREMUM + 8] = SUPREMUM_EXTRA_DATA

    stream_area = zbuf[PAGE_DATA : physical - 1]
    candidates = _index_candidates(stream_area, leaf)
    if not candidates:
        raise ZipPageError("no index description at the start of the zlib stream")
    problem = ""
    for index, info_len in candidates:
        try:
            return _rebuild(zbuf, bytearray(page), h, dense, recs, index, info_len, logical_size)
        except ZipPageError as exc:
            problem = problem or str(exc)
    raise ZipPageError(problem)


def _rebuild(
    zbuf: bytes,
    page: bytearray,
    h: Any,
    dense: list[int],
    recs: list[int],
    index: ZipIndex,
    info_len: int,
    logical: int,
) -> ZipPage:
    physical = len(zbuf)
    n_dense = len(dense)
    node_ptr = not index.leaf
    if node_ptr:
        slot_size = PAGE_ZIP_DIR_SLOT_SIZE + REC_NODE_PTR_SIZE
    elif index.clustered:
        slot_size = PAGE_ZIP_DIR_SLOT_SIZE + DATA_TRX_ROLL_LEN
    else:
        slot_size = PAGE_ZIP_DIR_SLOT_SIZE
    trailer = n_dense * slot_size
    limit = physical - trailer  # the stream and the log end before the trailer
    if limit <= PAGE_DATA + 1:
        raise ZipPageError(f"the trailer of {n_dense} records fills the page")
    cap = info_len + logical - PAGE_ZIP_START - PAGE_DIR
    out, stream_len = _inflate(zbuf[PAGE_DATA : limit - 1], cap)
    if len(out) < info_len:
        raise ZipPageError("zlib stream ends inside the index description")
    sink = _Out(page, out[info_len:])
    heap_status = _records(sink, recs, index, node_ptr, h.heap_top, logical)
    m_start = PAGE_DATA + stream_len
    log = zbuf[m_start:limit]
    m_end = m_start + _apply_log(page, log, recs, index, node_ptr, heap_status)
    if trailer + m_end >= physical:
        raise ZipPageError(f"modification log (to {m_end}) runs into the trailer")
    free = {d for d in dense[h.n_recs :]}
    n_blobs = _restore_columns(page, zbuf, recs, free, index, node_ptr, physical, m_end)
    min_rec = node_ptr and int.from_bytes(zbuf[8:12], "big") == FIL_NULL
    _set_extra_bytes(page, dense, h.n_recs, REC_INFO_MIN_REC_FLAG if min_rec else 0)
    _check_heap_numbers(page, recs)
    if h.free != (dense[h.n_recs] if n_dense > h.n_recs else 0):
        raise ZipPageError(f"PAGE_FREE {h.free} is not the first free record of the directory")
    return ZipPage(
        page=bytes(page),
        index=index,
        n_dense=n_dense,
        n_recs=h.n_recs,
        recs=tuple(recs),
        m_start=m_start,
        m_end=m_end,
        n_blobs=n_blobs,
        trailer_len=trailer + n_blobs * BTR_EXTERN_FIELD_REF_SIZE,
        physical_size=physical,
    )


# --- records and fill -----------------------------------------------------------------------


def record_layout(zp: ZipPage, rec: int) -> RecordLayout:
    """Fields of a record of a rebuilt page."""
    return _layout(bytearray(zp.page), rec, zp.index, not zp.index.leaf)


def live_records(zp: ZipPage) -> list[tuple[int, RecordLayout]]:
    """(origin, fields) of the records in key order, walked through the next pointers."""
    page = bytearray(zp.page)
    try:
        heads = list(iter_records(page))
    except RecordError as exc:
        raise ZipPageError(str(exc)) from None
    return [(h.origin, _layout(page, h.origin, zp.index, not zp.index.leaf)) for h in heads]


def zip_fill(zp: ZipPage) -> ZipFill:
    """Real fill of a zip page: live record bytes on the rebuilt page, used bytes of the image.

    ``used`` is what PAGE_HEAP_TOP − 120 − PAGE_GARBAGE claims, but counted record by record.
    """
    used = 0
    walked = live_records(zp)
    for origin, lay in walked:
        start = origin - REC_N_NEW_EXTRA_BYTES - lay.extra_len
        used += (lay.fields[-1].end if lay.fields else origin) - start
    capacity = len(zp.page) - PAGE_NEW_SUPREMUM_END - PAGE_DIR - 4
    return ZipFill(used, capacity, zp.physical_used, zp.physical_size, len(walked))


def zip_logical_image(stored: bytes | bytearray | memoryview, logical_size: int) -> bytes:
    """The uncompressed page of any page of a zip tablespace, as the server would hold it.

    Index pages are rebuilt (:func:`decompress_zip_page`); every other page (FSP_HDR, XDES,
    INODE, IBUF bitmap, ZBLOB …) is already stored uncompressed and only shorter, so it is
    padded with zeros to the logical size. A damaged index page raises :class:`ZipPageError`.
    """
    raw = bytes(stored)
    if len(raw) >= 26 and is_zip_index_page(int.from_bytes(raw[24:26], "big")):
        return decompress_zip_page(raw, logical_size).page
    return raw + bytes(logical_size - len(raw))
