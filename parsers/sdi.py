"""MySQL 8 Serialized Dictionary Information: walk the SDI B-tree and inflate its records (§8).

Pure decoding: the caller passes ``get_page(n) -> bytes`` returning the physical page ``n``.
Uncompressed tablespaces are walked exactly as ibd2sdi does (leftmost leaf, then FIL_PAGE_NEXT;
external records through SDI_BLOB chains). ROW_FORMAT=COMPRESSED SDI pages keep their records
inside a zlib stream (§7.1): there the stream is inflated and each record is found by its
(uncompressed length, compressed length, zlib header) signature.

Every pointer comes from the file, so every walk is bounded by what it has seen, not by what the
file claims: each chain (records on a page, leaf pages, SDI_BLOB pages, zip node pointers) keeps
the set of places it visited and stops at the first repeat, with a warning (a looping BLOB chain
leaves its record unreadable: an error). What one read may inflate and parse is a
:class:`Budget`; a record past it, or JSON nested deeper than :data:`MAX_JSON_DEPTH`, is an
:class:`SdiError`, never a RecursionError or an exhausted machine.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from struct import Struct
from typing import Any

from ibdtool.parsers._structs_gen import (
    BLOB_REF_FAST,
    LOB_HEADER_FAST,
    SDI_RECORD_DATA,
    SDI_RECORD_FAST,
    BlobRefTuple,
    LobHeaderTuple,
    SdiRecordTuple,
)
from ibdtool.parsers.codecs import CodecError, zlib_inflate, zlib_stream
from ibdtool.parsers.constants import FIL_NULL, FIL_PAGE_SDI, FIL_PAGE_SDI_BLOB, UNIV_ZIP_SIZE_MAX
from ibdtool.parsers.constants import SDI_INDEX_ID as SDI_INDEX_ID  # declared there
from ibdtool.parsers.errors import ParseError
from ibdtool.parsers.jsontext import too_deep

PAGE_NEW_INFIMUM = 99
REC_INFO_DELETED = 0x20
REC_STATUS_NODE_PTR = 1
REC_STATUS_SUPREMUM = 3
#: JSON bytes one SDI read inflates in all. The largest real SDI (a 1017-column table, a table
#: of 8192 partitions) is a few MiB; the cap keeps a 2 MiB file of zlib bombs within ~200 MB.
MAX_INFLATED = 16 << 20
#: JSON values one SDI read parses in all (counted as ``{``, ``[`` and ``,`` bytes): a real
#: column or index is one value per ~20 bytes; ``[0,0,…]`` is one per 2, and each costs memory.
MAX_JSON_VALUES = 1_000_000
#: ibd2sdi's documents nest about 8 deep; deeper JSON is refused before anything recurses on it.
MAX_JSON_DEPTH = 100

Warn = Callable[[str], None]


class SdiError(ParseError):
    """The SDI could not be read."""


class SdiLimit(SdiError):
    """The SDI asks for more work than one read is allowed (:class:`Budget`)."""


class Budget:
    """What one SDI read may still inflate and parse; charging past it raises :class:`SdiLimit`."""

    def __init__(self, inflated: int = MAX_INFLATED, values: int = MAX_JSON_VALUES) -> None:
        self.inflated = inflated
        self.values = values

    def allow_inflate(self, n: int, what: str) -> None:
        """Refuse before inflating when ``n`` bytes would go past what is left."""
        if n > self.inflated:
            raise SdiLimit(
                f"{what} inflates to {n} bytes, past the {MAX_INFLATED >> 20} MiB of SDI "
                "ibdtool reads from one file"
            )

    def charge(self, text: bytes, what: str) -> None:
        """Count ``text`` (inflated JSON) and its values against the budget."""
        self.allow_inflate(len(text), what)
        self.inflated -= len(text)
        values = text.count(b"{") + text.count(b"[") + text.count(b",")
        if values > self.values:
            raise SdiLimit(
                f"{what} holds over {MAX_JSON_VALUES:,} JSON values, more than ibdtool parses "
                "from one file"
            )
        self.values -= values


def _ignore(message: str) -> None:
    pass


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


def _walk_leaf_records(
    get_page: Callable[[int], bytes], root: int, warn: Warn
) -> Iterator[tuple[bytes, int]]:
    """(page, record origin) of every live record, leftmost leaf first (§8.2).

    A record list or page chain that comes back to a place it has been stops there, warned.
    """
    page_no = root
    seen: set[int] = {root}
    page = get_page(page_no)
    while _be(page, 64, 2) > 0:  # PAGE_LEVEL: descend through the first node pointer
        first = _next_rec(page, PAGE_NEW_INFIMUM)
        child = _be(page, first + 12, 4)
        if child in seen:
            raise SdiError(f"SDI tree has a cycle: page {page_no} points down to page {child}")
        seen.add(child)
        page_no = child
        page = get_page(page_no)
    while True:
        if _be(page, 24, 2) != FIL_PAGE_SDI:
            raise SdiError(f"page {page_no} in the SDI tree is not an SDI page")
        origin = _next_rec(page, PAGE_NEW_INFIMUM)
        on_page: set[int] = set()
        while True:
            status = _be(page, origin - 4, 2) & 0x7
            if status == REC_STATUS_SUPREMUM:
                break
            if not 120 <= origin <= len(page) - 8 - SDI_RECORD_DATA:
                raise SdiError(f"SDI page {page_no}: record pointer {origin} is outside the page")
            if origin in on_page:
                warn(f"SDI page {page_no}: the record list loops back to offset {origin}; stopped")
                break
            on_page.add(origin)
            if not page[origin - 5] & REC_INFO_DELETED:
                yield page, origin
            origin = _next_rec(page, origin)
        nxt = _be(page, 12, 4)
        if nxt == FIL_NULL:
            return
        if nxt in seen:
            warn(f"SDI page {page_no}: the leaf chain loops back to page {nxt}; stopped")
            return
        seen.add(nxt)
        page_no = nxt
        page = get_page(page_no)


def _unpack(packer: Struct, buf: bytes, at: int, what: str) -> tuple[Any, ...]:
    """``packer``'s fields at ``at``; :class:`SdiError` when ``buf`` ends before them."""
    if at < 0 or at + packer.size > len(buf):
        raise SdiError(f"{what} cut short at byte {at}")
    return packer.unpack_from(buf, at)


def _sdi_record(page: bytes, origin: int) -> SdiRecordTuple:
    """The SDI record header at ``origin`` (§8.3)."""
    return SdiRecordTuple._make(_unpack(SDI_RECORD_FAST, page, origin, "SDI record"))


def _record_data(get_page: Callable[[int], bytes], page: bytes, origin: int) -> bytes:
    """The compressed JSON of one record, from the page or its SDI_BLOB chain (§8.3)."""
    hdr = _sdi_record(page, origin)
    b = page[origin - 6]
    if b & 0x80:
        local_len = ((b & 0x3F) << 8) | page[origin - 7]
        external = bool(b & 0x40)
    else:
        local_len, external = b, False
    start = origin + SDI_RECORD_DATA
    if not external:
        return page[start : start + local_len]
    prefix_len = local_len - BLOB_REF_FAST.size
    if prefix_len < 0 or start + local_len > len(page):
        raise SdiError(f"SDI record {hdr.sdi_id} has a broken external reference")
    data = bytearray(page[start : start + prefix_len])
    ref = BlobRefTuple._make(BLOB_REF_FAST.unpack(page[start + prefix_len : start + local_len]))
    remaining = min(ref.length & 0xFFFFFFFF, hdr.compressed_len - len(data))
    blob_page = ref.page_no
    chain: set[int] = set()
    while remaining > 0 and blob_page != FIL_NULL:
        if blob_page in chain:
            raise SdiError(
                f"SDI record {hdr.sdi_id}: its BLOB chain loops back to page {blob_page}"
            )
        chain.add(blob_page)
        bp = get_page(blob_page)
        if _be(bp, 24, 2) != FIL_PAGE_SDI_BLOB:
            raise SdiError(f"page {blob_page} in an SDI BLOB chain is not SDI_BLOB")
        lob = LobHeaderTuple._make(_unpack(LOB_HEADER_FAST, bp, 38, "SDI BLOB page"))
        part = bp[46 : 46 + min(lob.part_len, remaining)]
        data += part
        remaining -= len(part)
        blob_page = lob.next_page_no
    if len(data) != hdr.compressed_len:
        raise SdiError(f"SDI record is {len(data)} bytes, header says {hdr.compressed_len}")
    return bytes(data)


def read_sdi(get_page: Callable[[int], bytes], root: int, warn: Warn = _ignore) -> list[SdiEntry]:
    """Every SDI record of an uncompressed tablespace, in B-tree order.

    ``warn`` is told, in one line, of each loop the walk stopped at.
    """
    out: list[SdiEntry] = []
    budget = Budget()
    for page, origin in _walk_leaf_records(get_page, root, warn):
        hdr = _sdi_record(page, origin)
        budget.allow_inflate(hdr.uncompressed_len, f"SDI record {hdr.sdi_id}")
        data = _record_data(get_page, page, origin)
        out.append(_entry(hdr.sdi_type, hdr.sdi_id, data, hdr.uncompressed_len, budget))
    return out


def _entry(
    sdi_type: int, sdi_id: int, data: bytes, uncompressed_len: int, budget: Budget
) -> SdiEntry:
    what = f"SDI record {sdi_id}"
    budget.allow_inflate(uncompressed_len, what)
    try:
        text, _ = zlib_stream(data, uncompressed_len)
    except CodecError as exc:
        raise SdiError(f"{what} does not inflate to its {uncompressed_len} bytes: {exc}") from None
    budget.charge(text, what)
    if len(text) != uncompressed_len:
        raise SdiError(f"{what} inflates to {len(text)}, not {uncompressed_len}")
    try:
        obj = json.loads(text)
    except RecursionError:
        raise SdiError(f"{what} is JSON nested too deep") from None
    except ValueError as exc:
        raise SdiError(f"{what} is not JSON: {exc}") from None
    if too_deep(obj, MAX_JSON_DEPTH):
        raise SdiError(f"{what} is JSON nested deeper than {MAX_JSON_DEPTH} levels")
    if not isinstance(obj, dict) or not isinstance(obj.get("dd_object", {}), dict):
        raise SdiError(f"SDI record {sdi_id} is not a JSON object with a dd_object object")
    return SdiEntry(sdi_type, sdi_id, obj)


def read_zip_sdi(
    get_page: Callable[[int], bytes],
    root: int,
    physical: int,
    warn: Warn = _ignore,
) -> list[SdiEntry]:
    """SDI records of a ROW_FORMAT=COMPRESSED tablespace, found by signature (§7.1, §8.3).

    A zip record keeps its data in the page's zlib stream, or, until the page is recompressed,
    in the modification log after it. DB_TRX_ID/DB_ROLL_PTR move to the page trailer, so the
    data reads type (4), id (8), uncompressed length (4), compressed length (4), zlib data.
    Both places are scanned; a later copy of the same (type, id) replaces an earlier one. Each
    page is visited once, a repeat being warned.
    """
    found: dict[tuple[int, int], SdiEntry] = {}
    pending = deque([root])
    seen: set[int] = set()
    looped = False
    budget = Budget()
    while pending:
        page_no = pending.popleft()
        if page_no == FIL_NULL:
            continue
        if page_no in seen:
            if not looped:  # once: a node page may point at every page again and again
                warn(f"SDI page {page_no} is reached twice (a loop in the SDI tree); read once")
                looped = True
            continue
        seen.add(page_no)
        page = get_page(page_no)
        if _be(page, 24, 2) != FIL_PAGE_SDI:
            continue
        body = page[94:physical]
        # at most two pages out, as for any zip index page (ibdtool.parsers.page.zip_stream_length)
        try:
            stream, used = zlib_inflate(body, 2 * UNIV_ZIP_SIZE_MAX)
            mlog = body if used is None else body[used:]
        except CodecError:
            stream, mlog = b"", body
        for entry in (*_scan_stream(stream, budget), *_scan_stream(mlog, budget)):
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


def _scan_stream(stream: bytes, budget: Budget) -> Iterator[SdiEntry]:
    """Records found by signature: a zlib header (0x78, FCHECK) 20 bytes after the record's
    start; candidates are found with ``bytes.find``, so a page of anything costs C time."""
    n = len(stream)
    i = stream.find(b"\x78", 20)
    while 0 <= i < n - 2:
        cmf, flg = stream[i], stream[i + 1]
        if (cmf * 256 + flg) % 31 == 0:
            ul = _be(stream, i - 8, 4)
            cl = _be(stream, i - 4, 4)
            if 0 < cl <= n - i and 0 < ul <= MAX_INFLATED:  # else not a record: skipped
                sdi_type, sdi_id = _be(stream, i - 20, 4), _be(stream, i - 16, 8)
                entry: SdiEntry | None
                try:
                    entry = _entry(sdi_type, sdi_id, stream[i : i + cl], ul, budget)
                except SdiLimit:
                    raise
                except SdiError:
                    entry = None
                if entry is not None and entry.sdi_type in (1, 2):
                    yield entry
                    i = stream.find(b"\x78", i + cl)
                    continue
        i = stream.find(b"\x78", i + 1)


def ibd2sdi_shape(entries: list[SdiEntry]) -> list[Any]:
    """ibd2sdi's output: ``["ibd2sdi", {"type": T, "id": I, "object": {...}}, ...]``."""
    return ["ibd2sdi"] + [{"type": e.sdi_type, "id": e.sdi_id, "object": e.obj} for e in entries]
