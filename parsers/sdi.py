"""MySQL 8 Serialized Dictionary Information: walk the SDI B-tree and inflate its records (§8).

Pure decoding: the caller passes ``get_page(n) -> bytes`` returning the physical page ``n``.
Uncompressed tablespaces are walked exactly as ibd2sdi does (leftmost leaf, then FIL_PAGE_NEXT;
external records through SDI_BLOB chains). ROW_FORMAT=COMPRESSED SDI pages keep their records
inside a zlib stream (§7.1): there the stream is inflated and each record is found by its
(uncompressed length, compressed length, zlib header) signature.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from parsers.codecs import CodecError, zlib_inflate, zlib_stream
from parsers.constants import FIL_NULL, FIL_PAGE_SDI, FIL_PAGE_SDI_BLOB, UNIV_ZIP_SIZE_MAX
from parsers.errors import ParseError
from parsers.structs import SDI_RECORD_DATA, BlobRef, LobHeader, SdiRecord

PAGE_NEW_INFIMUM = 99
REC_INFO_DELETED = 0x20
REC_STATUS_NODE_PTR = 1
REC_STATUS_SUPREMUM = 3
MAX_SDI_PAGES = 100_000
#: the largest SDI record inflated: a table's JSON is kilobytes, a 4096-column one a few MB
MAX_SDI_RECORD = 64 << 20


class SdiError(ParseError):
    """The SDI could not be read."""


@dataclass(frozen=True)
class SdiEntry:
    """One SDI record: ``sdi_type`` 1 = Table, 2 = Tablespace; ``obj`` the parsed JSON."""

    sdi_type: int
    sdi_id: int
    obj: dict[str, Any]


def _be(buf: bytes, off: int, n: int) -> int:
    return int.from_bytes(buf[off : off + n], "big")


def _next_rec(page: bytes, origin: int) -> int:
    rel = _be(page, origin - 2, 2)
    return (origin + rel) & 0xFFFF


def _walk_leaf_records(get_page: Callable[[int], bytes], root: int) -> Iterator[tuple[bytes, int]]:
    """(page, record origin) of every live record, leftmost leaf first (§8.2)."""
    page_no = root
    seen: set[int] = {root}
    page = get_page(page_no)
    while _be(page, 64, 2) > 0:  # PAGE_LEVEL: descend through the first node pointer
        first = _next_rec(page, PAGE_NEW_INFIMUM)
        child = _be(page, first + 12, 4)
        if child in seen or len(seen) > MAX_SDI_PAGES:
            raise SdiError("SDI tree has a cycle")
        seen.add(child)
        page_no = child
        page = get_page(page_no)
    while True:
        if _be(page, 24, 2) != FIL_PAGE_SDI:
            raise SdiError(f"page {page_no} in the SDI tree is not an SDI page")
        origin = _next_rec(page, PAGE_NEW_INFIMUM)
        guard = 0
        while guard < 10_000:
            guard += 1
            status = _be(page, origin - 4, 2) & 0x7
            if status == REC_STATUS_SUPREMUM:
                break
            if not 120 <= origin <= len(page) - 8 - SDI_RECORD_DATA:
                raise SdiError(f"SDI page {page_no}: record pointer {origin} is outside the page")
            if not page[origin - 5] & REC_INFO_DELETED:
                yield page, origin
            origin = _next_rec(page, origin)
        nxt = _be(page, 12, 4)
        if nxt == FIL_NULL or nxt in seen or len(seen) > MAX_SDI_PAGES:
            return
        seen.add(nxt)
        page_no = nxt
        page = get_page(page_no)


def _record_data(get_page: Callable[[int], bytes], page: bytes, origin: int) -> bytes:
    """The compressed JSON of one record, from the page or its SDI_BLOB chain (§8.3)."""
    hdr = SdiRecord.parse(page[origin : origin + SDI_RECORD_DATA])
    b = page[origin - 6]
    if b & 0x80:
        local_len = ((b & 0x3F) << 8) | page[origin - 7]
        external = bool(b & 0x40)
    else:
        local_len, external = b, False
    start = origin + SDI_RECORD_DATA
    if not external:
        return page[start : start + local_len]
    prefix_len = local_len - BlobRef.sizeof()
    if prefix_len < 0 or start + local_len > len(page):
        raise SdiError(f"SDI record {hdr.sdi_id} has a broken external reference")
    data = bytearray(page[start : start + prefix_len])
    ref = BlobRef.parse(page[start + prefix_len : start + local_len])
    remaining = (ref.length & 0xFFFFFFFF) - 0
    blob_page = ref.page_no
    hops = 0
    while remaining > 0 and blob_page != FIL_NULL and hops < MAX_SDI_PAGES:
        hops += 1
        bp = get_page(blob_page)
        if _be(bp, 24, 2) != FIL_PAGE_SDI_BLOB:
            raise SdiError(f"page {blob_page} in an SDI BLOB chain is not SDI_BLOB")
        lob = LobHeader.parse(bp[38:46])
        part = bp[46 : 46 + lob.part_len]
        data += part
        remaining -= len(part)
        blob_page = lob.next_page_no
    if len(data) != hdr.compressed_len:
        raise SdiError(f"SDI record is {len(data)} bytes, header says {hdr.compressed_len}")
    return bytes(data)


def read_sdi(get_page: Callable[[int], bytes], root: int) -> list[SdiEntry]:
    """Every SDI record of an uncompressed tablespace, in B-tree order."""
    out: list[SdiEntry] = []
    for page, origin in _walk_leaf_records(get_page, root):
        hdr = SdiRecord.parse(page[origin : origin + SDI_RECORD_DATA])
        data = _record_data(get_page, page, origin)
        out.append(_entry(hdr.sdi_type, hdr.sdi_id, data, hdr.uncompressed_len))
    return out


def _entry(sdi_type: int, sdi_id: int, data: bytes, uncompressed_len: int) -> SdiEntry:
    if uncompressed_len > MAX_SDI_RECORD:
        raise SdiError(
            f"SDI record {sdi_id} claims {uncompressed_len} bytes, over {MAX_SDI_RECORD}"
        )
    try:
        text, _ = zlib_stream(data, uncompressed_len)
    except CodecError as exc:
        raise SdiError(
            f"SDI record {sdi_id} does not inflate to {uncompressed_len}: {exc}"
        ) from None
    if len(text) != uncompressed_len:
        raise SdiError(f"SDI record {sdi_id} inflates to {len(text)}, not {uncompressed_len}")
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise SdiError(f"SDI record {sdi_id} is not JSON: {exc}") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("dd_object", {}), dict):
        raise SdiError(f"SDI record {sdi_id} is not a JSON object with a dd_object object")
    return SdiEntry(sdi_type, sdi_id, obj)


def read_zip_sdi(get_page: Callable[[int], bytes], root: int, physical: int) -> list[SdiEntry]:
    """SDI records of a ROW_FORMAT=COMPRESSED tablespace, found by signature (§7.1, §8.3).

    A zip record keeps its data in the page's zlib stream, or, until the page is recompressed,
    in the modification log after it. DB_TRX_ID/DB_ROLL_PTR move to the page trailer, so the
    data reads type (4), id (8), uncompressed length (4), compressed length (4), zlib data.
    Both places are scanned; a later copy of the same (type, id) replaces an earlier one.
    """
    found: dict[tuple[int, int], SdiEntry] = {}
    pending = [root]
    seen: set[int] = set()
    while pending:
        page_no = pending.pop(0)
        if page_no in seen or page_no == FIL_NULL or len(seen) > MAX_SDI_PAGES:
            continue
        seen.add(page_no)
        page = get_page(page_no)
        if _be(page, 24, 2) != FIL_PAGE_SDI:
            continue
        body = page[94:physical]
        try:  # at most two pages out, as for any zip index page (parsers.page.zip_stream_length)
            stream, used = zlib_inflate(body, 2 * UNIV_ZIP_SIZE_MAX)
            mlog = body if used is None else body[used:]
        except CodecError:
            stream, mlog = b"", body
        for entry in (*_scan_stream(stream), *_scan_stream(mlog)):
            found[(entry.sdi_type, entry.sdi_id)] = entry
        if _be(page, 64, 2) > 0:
            # child page numbers of node pointers live in the uncompressed trailer
            pending.extend(_zip_node_children(page, physical))
        nxt = _be(page, 12, 4)
        if nxt != FIL_NULL:
            pending.append(nxt)
    return sorted(found.values(), key=lambda e: (e.sdi_type, e.sdi_id))


def _zip_node_children(page: bytes, physical: int) -> list[int]:
    """Child page numbers of a zip node-pointer page: 4 bytes per record before the dense
    directory (§7.1 trailer: n_dense slots of 2 bytes, then 4-byte child numbers)."""
    n_dense = (_be(page, 42, 2) & 0x7FFF) - 2
    dir_start = physical - 2 * n_dense
    return [
        _be(page, dir_start - 4 * (k + 1), 4)
        for k in range(n_dense)
        if dir_start - 4 * (k + 1) >= 94
    ]


def _scan_stream(stream: bytes) -> Iterator[SdiEntry]:
    i = 20
    n = len(stream)
    while i < n - 2:
        cmf, flg = stream[i], stream[i + 1]
        if cmf == 0x78 and (cmf * 256 + flg) % 31 == 0:
            ul = _be(stream, i - 8, 4)
            cl = _be(stream, i - 4, 4)
            if 0 < cl <= n - i and 0 < ul <= MAX_SDI_RECORD:
                try:
                    entry = _entry(
                        _be(stream, i - 20, 4), _be(stream, i - 16, 8), stream[i : i + cl], ul
                    )
                except SdiError:
                    entry = None
                if entry is not None and entry.sdi_type in (1, 2):
                    yield entry
                    i += cl
                    continue
        i += 1


def ibd2sdi_shape(entries: list[SdiEntry]) -> list[Any]:
    """ibd2sdi's output: ``["ibd2sdi", {"type": T, "id": I, "object": {...}}, ...]``."""
    return ["ibd2sdi"] + [{"type": e.sdi_type, "id": e.sdi_id, "object": e.obj} for e in entries]
