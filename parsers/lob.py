"""Externally stored column parts (BLOB/TEXT/JSON/long VARCHAR off-page), followed page by page.

A field stored off-page ends with a 20-byte reference (``BTR_EXTERN_FIELD_REF``): space id,
page number, offset, and an 8-byte length whose low 32 bits are the bytes stored off-page. What
the page number points to depends on the server and the row format, told by its page type:

* ``FIL_PAGE_TYPE_BLOB`` (10; MySQL 5.x, MariaDB): at the offset a 4-byte part length and the
  next page number, then the part; the chain ends at FIL_NULL.
* ``FIL_PAGE_TYPE_ZBLOB`` / ``ZBLOB2`` (11/12; ROW_FORMAT=COMPRESSED before MySQL 8): one zlib
  stream from byte 38 of each page to its end, the next page in FIL_PAGE_NEXT.
* ``FIL_PAGE_TYPE_LOB_FIRST`` (24; MySQL 8): a list of index entries (``lob0index.h``), each
  naming a page and the bytes it holds; the first page holds data itself after its ten entries
  (at 696), LOB_DATA pages (23) after their 11-byte header (at 49).

Every chain keeps a visited set and stops at ``limit`` bytes (the caller shows the value as
truncated).

* ``FIL_PAGE_TYPE_ZLOB_FIRST`` (25; MySQL 8 ROW_FORMAT=COMPRESSED): a list of index entries
  (``zlob0index.h``, 66 bytes), each one zlib stream of ``zdata_len`` bytes starting on its
  page: the first page (data after its 100/80/40/20/5 index and 200/100/40/20/5 fragment
  entries, by physical page size), ZLOB_DATA pages (26, data at 49, chained by FIL_PAGE_NEXT)
  or one fragment of a ZLOB_FRAG page (28: a directory of fragment offsets at the page end).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

from ibdtool.parsers.errors import ParseError

BTR_EXTERN_FIELD_REF_SIZE = 20
FIL_NULL = 0xFFFFFFFF
FIL_PAGE_TYPE = 24
FIL_PAGE_NEXT = 12
FIL_PAGE_DATA = 38
FIL_PAGE_TYPE_BLOB = 10
FIL_PAGE_TYPE_ZBLOB = 11
FIL_PAGE_TYPE_ZBLOB2 = 12
FIL_PAGE_TYPE_LOB_INDEX = 22
FIL_PAGE_TYPE_LOB_DATA = 23
FIL_PAGE_TYPE_LOB_FIRST = 24
FIL_PAGE_TYPE_ZLOB_FIRST = 25
BTR_BLOB_HDR_SIZE = 8  # part length (4), next page (4)
# lob0first.h / lob0index.h / lob0lob.h (MySQL 8 uncompressed LOB)
LOB_FIRST_INDEX_LIST = 64  # FLST_BASE_NODE: length (4), first (page 4, offset 2), last (6)
LOB_FIRST_DATA = 96 + 10 * 60  # after the header and its ten 60-byte index entries
LOB_FIRST_DATA_LEN = 54
LOB_ENTRY_NEXT = 6
LOB_ENTRY_PAGE_NO = 48
LOB_ENTRY_DATA_LEN = 52
LOB_DATA_PAGE_DATA_LEN = 39
LOB_DATA_PAGE_DATA = 49

# zlob0first.h / zlob0index.h / lob0impl.h (MySQL 8 compressed LOB)
FIL_PAGE_TYPE_ZLOB_DATA = 26
FIL_PAGE_TYPE_ZLOB_FRAG = 28
ZLOB_FIRST_DATA_LEN = 54
ZLOB_FIRST_INDEX_LIST = 88
ZLOB_FIRST_INDEX_BEGIN = 136
ZLOB_ENTRY_SIZE = 66
ZLOB_FRAG_ENTRY_SIZE = 24
ZLOB_ENTRY_NEXT = 6
ZLOB_ENTRY_Z_PAGE_NO = 48
ZLOB_ENTRY_Z_FRAG_ID = 52
ZLOB_ENTRY_DATA_LEN = 54
ZLOB_ENTRY_ZDATA_LEN = 58
ZLOB_DATA_PAGE_DATA_LEN = 39
ZLOB_DATA_PAGE_DATA = 49
ZLOB_FRAG_DIR_COUNT_FROM_END = 10
ZLOB_FRAG_DIR_FIRST_FROM_END = 12
ZLOB_FRAG_NODE_LEN = 4
ZLOB_FRAG_NODE_DATA = 8
ZLOB_FIRST_ENTRIES = {
    16384: (100, 200),
    8192: (80, 100),
    4096: (40, 40),
    2048: (20, 20),
    1024: (5, 5),
}

#: physical page ``n`` of the tablespace (uncompressed for page-compressed spaces)
GetPage = Callable[[int], bytes]


class LobError(ParseError):
    """An external reference or a page of its chain that cannot be followed."""


@dataclass(frozen=True, slots=True)
class ExternRef:
    space_id: int
    page_no: int
    offset: int
    length: int  # bytes stored off-page

    @classmethod
    def parse(cls, ref: bytes) -> ExternRef:
        if len(ref) != BTR_EXTERN_FIELD_REF_SIZE:
            raise LobError(f"external reference of {len(ref)} bytes")
        return cls(
            int.from_bytes(ref[0:4], "big"),
            int.from_bytes(ref[4:8], "big"),
            int.from_bytes(ref[8:12], "big"),
            int.from_bytes(ref[16:20], "big"),
        )


def _u32(page: bytes, off: int) -> int:
    return int.from_bytes(page[off : off + 4], "big")


def _u16(page: bytes, off: int) -> int:
    return int.from_bytes(page[off : off + 2], "big")


def _page(get_page: GetPage, no: int, seen: set[int]) -> bytes:
    if no == FIL_NULL:
        raise LobError("external chain ends early")
    if no in seen:
        raise LobError(f"external chain loops at page {no}")
    seen.add(no)
    try:
        page = get_page(no)
    except (ValueError, OSError) as exc:
        raise LobError(f"external page {no}: {exc}") from None
    if len(page) < FIL_PAGE_DATA + 8:
        raise LobError(f"external page {no} is too short")
    return page


def read_extern(get_page: GetPage, ref: ExternRef, limit: int) -> tuple[bytes, bool]:
    """The off-page bytes of a field, at most ``limit``; True when cut at ``limit``."""
    want = min(ref.length, limit)
    if want == 0:
        return b"", ref.length > 0
    seen: set[int] = set()
    first = _page(get_page, ref.page_no, seen)
    ptype = _u16(first, FIL_PAGE_TYPE)
    if ptype == FIL_PAGE_TYPE_BLOB:
        data = _old_blob(get_page, first, ref, want, seen)
    elif ptype in (FIL_PAGE_TYPE_ZBLOB, FIL_PAGE_TYPE_ZBLOB2):
        data = _zblob(get_page, first, want, seen)
    elif ptype == FIL_PAGE_TYPE_LOB_FIRST:
        data = _lob(get_page, first, ref.page_no, want, seen)
    elif ptype == FIL_PAGE_TYPE_ZLOB_FIRST:
        data = _zlob(get_page, first, ref.page_no, want)
    else:
        raise LobError(f"external reference to page {ref.page_no} of type {ptype}")
    if len(data) < want:
        raise LobError(f"external value has {len(data)} of {want} bytes")
    return data[:want], ref.length > want


def _old_blob(get_page: GetPage, page: bytes, ref: ExternRef, want: int, seen: set[int]) -> bytes:
    out = bytearray()
    off = ref.offset
    while True:
        if off + BTR_BLOB_HDR_SIZE > len(page):
            raise LobError(f"BLOB header at {off} outside the page")
        part, nxt = _u32(page, off), _u32(page, off + 4)
        start = off + BTR_BLOB_HDR_SIZE
        if start + part > len(page):
            raise LobError(f"BLOB part of {part} bytes runs past the page")
        out += page[start : start + part]
        if len(out) >= want or nxt == FIL_NULL:
            return bytes(out)
        page = _page(get_page, nxt, seen)
        if _u16(page, FIL_PAGE_TYPE) != FIL_PAGE_TYPE_BLOB:
            raise LobError(f"page {nxt} in a BLOB chain is not a BLOB page")
        off = FIL_PAGE_DATA


def _zblob(get_page: GetPage, page: bytes, want: int, seen: set[int]) -> bytes:
    inflater = zlib.decompressobj()
    out = bytearray()
    while True:
        try:
            out += inflater.decompress(page[FIL_PAGE_DATA:], want - len(out))
        except zlib.error as exc:
            raise LobError(f"compressed BLOB: {exc}") from None
        if len(out) >= want or inflater.eof:
            return bytes(out)
        nxt = _u32(page, FIL_PAGE_NEXT)
        if nxt == FIL_NULL:
            return bytes(out)
        page = _page(get_page, nxt, seen)
        if _u16(page, FIL_PAGE_TYPE) not in (FIL_PAGE_TYPE_ZBLOB, FIL_PAGE_TYPE_ZBLOB2):
            raise LobError(f"page {nxt} in a compressed BLOB chain is not a ZBLOB page")


def _lob(get_page: GetPage, first: bytes, first_no: int, want: int, seen: set[int]) -> bytes:
    out = bytearray()
    pages: dict[int, bytes] = {first_no: first}
    entries: set[tuple[int, int]] = set()
    node_page, node_off = (
        _u32(first, LOB_FIRST_INDEX_LIST + 4),
        _u16(first, LOB_FIRST_INDEX_LIST + 8),
    )
    while node_page != FIL_NULL and len(out) < want:
        if (node_page, node_off) in entries:
            raise LobError(f"LOB index list loops at page {node_page}")
        entries.add((node_page, node_off))
        holder = pages.get(node_page)
        if holder is None:
            holder = pages[node_page] = _page(get_page, node_page, seen)
        if node_off + 60 > len(holder):
            raise LobError(f"LOB index entry at {node_off} outside page {node_page}")
        data_no = _u32(holder, node_off + LOB_ENTRY_PAGE_NO)
        data_len = _u32(holder, node_off + LOB_ENTRY_DATA_LEN)
        if data_no == first_no:
            start, stored = LOB_FIRST_DATA, _u32(first, LOB_FIRST_DATA_LEN)
            data_page = first
        else:
            data_page = pages.get(data_no) or _page(get_page, data_no, seen)
            pages[data_no] = data_page
            if _u16(data_page, FIL_PAGE_TYPE) != FIL_PAGE_TYPE_LOB_DATA:
                raise LobError(f"page {data_no} in a LOB is not a LOB_DATA page")
            start, stored = LOB_DATA_PAGE_DATA, _u32(data_page, LOB_DATA_PAGE_DATA_LEN)
        n = min(data_len, stored)
        if start + n > len(data_page):
            raise LobError(f"LOB data of {n} bytes runs past page {data_no}")
        out += data_page[start : start + n]
        node_page = _u32(holder, node_off + LOB_ENTRY_NEXT)
        node_off = _u16(holder, node_off + LOB_ENTRY_NEXT + 4)
    return bytes(out)


def _zlob_chunk(get_page: GetPage, cache: dict[int, bytes], entry: bytes) -> bytes:
    """The compressed bytes of one ZLOB index entry's zlib stream (``cache``: pages read,
    shared by the streams: one fragment page holds pieces of several)."""
    chain: set[int] = set()
    page_no = _u32(entry, ZLOB_ENTRY_Z_PAGE_NO)
    frag_id = _u16(entry, ZLOB_ENTRY_Z_FRAG_ID)
    zlen = _u32(entry, ZLOB_ENTRY_ZDATA_LEN)
    out = bytearray()
    while len(out) < zlen and page_no != FIL_NULL:
        if page_no in chain:
            raise LobError(f"compressed LOB chain loops at page {page_no}")
        chain.add(page_no)
        page = cache.get(page_no) or _page(get_page, page_no, set())
        cache[page_no] = page
        ptype = _u16(page, FIL_PAGE_TYPE)
        size = len(page)
        if ptype == FIL_PAGE_TYPE_ZLOB_FRAG:
            n_dir = _u16(page, size - ZLOB_FRAG_DIR_COUNT_FROM_END)
            if frag_id >= n_dir:
                raise LobError(f"fragment {frag_id} beyond the {n_dir} of page {page_no}")
            node = _u16(page, size - ZLOB_FRAG_DIR_FIRST_FROM_END - 2 * frag_id)
            start = node + ZLOB_FRAG_NODE_DATA
            stored = _u16(page, node + ZLOB_FRAG_NODE_LEN) - ZLOB_FRAG_NODE_DATA
        elif ptype == FIL_PAGE_TYPE_ZLOB_FIRST:
            n_index, n_frag = ZLOB_FIRST_ENTRIES.get(size, (0, 0))
            if not n_index:
                raise LobError(f"compressed LOB page of {size} bytes")
            start = (
                ZLOB_FIRST_INDEX_BEGIN + n_index * ZLOB_ENTRY_SIZE + n_frag * ZLOB_FRAG_ENTRY_SIZE
            )
            stored = _u32(page, ZLOB_FIRST_DATA_LEN)
        elif ptype == FIL_PAGE_TYPE_ZLOB_DATA:
            start, stored = ZLOB_DATA_PAGE_DATA, _u32(page, ZLOB_DATA_PAGE_DATA_LEN)
        else:
            raise LobError(f"page {page_no} in a compressed LOB has type {ptype}")
        n = min(stored, zlen - len(out))
        if n < 0 or start + n > size:
            raise LobError(f"compressed LOB data runs past page {page_no}")
        out += page[start : start + n]
        page_no = _u32(page, FIL_PAGE_NEXT)
    return bytes(out)


def _zlob(get_page: GetPage, first: bytes, first_no: int, want: int) -> bytes:
    out = bytearray()
    pages: dict[int, bytes] = {first_no: first}
    entries: set[tuple[int, int]] = set()
    node_page = _u32(first, ZLOB_FIRST_INDEX_LIST + 4)
    node_off = _u16(first, ZLOB_FIRST_INDEX_LIST + 8)
    while node_page != FIL_NULL and len(out) < want:
        if (node_page, node_off) in entries:
            raise LobError(f"compressed LOB index list loops at page {node_page}")
        entries.add((node_page, node_off))
        holder = pages.get(node_page)
        if holder is None:
            holder = pages[node_page] = _page(get_page, node_page, set())
        entry = holder[node_off : node_off + ZLOB_ENTRY_SIZE]
        if len(entry) < ZLOB_ENTRY_SIZE:
            raise LobError(f"compressed LOB index entry at {node_off} outside page {node_page}")
        if _u32(entry, ZLOB_ENTRY_DATA_LEN) and _u32(entry, ZLOB_ENTRY_Z_PAGE_NO) != FIL_NULL:
            zdata = _zlob_chunk(get_page, pages, entry)
            try:
                out += zlib.decompressobj().decompress(zdata, want - len(out))
            except zlib.error as exc:
                raise LobError(f"compressed LOB: {exc}") from None
        node_page = _u32(entry, ZLOB_ENTRY_NEXT)
        node_off = _u16(entry, ZLOB_ENTRY_NEXT + 4)
    return bytes(out)
