"""FIL header and trailer (§1.1, §1.2): the frame every page has, whatever its family.

Not a page family itself: :mod:`ibdtool.parsers.pages.stored` and
:mod:`ibdtool.parsers.pages.logical` frame every image with these groups.
"""

from __future__ import annotations

from ibdtool.parsers.constants import (
    FIL_PAGE_COMPRESSED,
    FIL_PAGE_COMPRESSED_AND_ENCRYPTED,
    FIL_PAGE_DATA,
    FIL_PAGE_PAGE_COMPRESSED,
    FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED,
    page_type_name,
)
from ibdtool.parsers.envelope import fcrc32_declared_size
from ibdtool.parsers.page import PageInfo
from ibdtool.parsers.pages.base import Field, FieldGroup, field, page_ref, spans
from ibdtool.parsers.space import SpaceFormat
from ibdtool.parsers.structs import FilHeader, FilTrailer

HEADER = spans(FilHeader)
TRAILER_SIZE = FilTrailer.sizeof()


def header_group(page: bytes, info: PageInfo, fmt: SpaceFormat, title: str) -> FieldGroup:
    """The 38-byte FIL header, with the names each variant gives its words."""
    h = FilHeader.parse(page[:FIL_PAGE_DATA])
    at = HEADER
    vendor = fmt.vendor
    stored = h.page_type
    if fmt.full_crc32:
        value, note = str(h.checksum), "key version (0: plain)"
    elif stored in (FIL_PAGE_PAGE_COMPRESSED, FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED):
        value, note = f"0x{h.checksum:08x}", "no checksum"
    else:
        value, note = f"0x{h.checksum:08x}", "checksum"
    first = field(at["checksum"], "FIL_PAGE_SPACE_OR_CHKSUM", value, note)
    mysql8_page0 = info.page_no == 0 and fmt.server_version is not None
    if fmt.full_crc32 and stored & 0x8000:
        type_note = f"page_compressed, {fcrc32_declared_size(stored)} bytes stored"
    else:
        type_note = page_type_name(stored, vendor)
    flush_note = ""
    if stored in (FIL_PAGE_COMPRESSED, FIL_PAGE_COMPRESSED_AND_ENCRYPTED):
        flush_note = "compression metadata"
    elif stored in (FIL_PAGE_PAGE_COMPRESSED, FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED):
        flush_note = "algorithm / key version"
    fields: tuple[Field, ...] = (
        first,
        field(at["page_no"], "FIL_PAGE_OFFSET", str(h.page_no), "page number"),
        field(
            at["prev"],
            "FIL_PAGE_SRV_VERSION" if mysql8_page0 else "FIL_PAGE_PREV",
            str(h.prev) if mysql8_page0 else page_ref(h.prev),
        ),
        field(
            at["next"],
            "FIL_PAGE_SPACE_VERSION" if mysql8_page0 else "FIL_PAGE_NEXT",
            str(h.next) if mysql8_page0 else page_ref(h.next),
        ),
        field(at["lsn"], "FIL_PAGE_LSN", str(h.lsn)),
        field(at["page_type"], "FIL_PAGE_TYPE", f"{stored} (0x{stored:04x})", type_note),
    )
    if not (fmt.full_crc32 and stored & 0x8000):  # there the payload starts at 26 (§3.2)
        fields += (
            field(at["flush_lsn"], "FIL_PAGE_FILE_FLUSH_LSN", f"0x{h.flush_lsn:016x}", flush_note),
            field(at["space_id"], "FIL_PAGE_SPACE_ID", str(h.space_id)),
        )
    return FieldGroup(title, fields)


def trailer_group(page: bytes, size: int, fcrc32: bool) -> FieldGroup:
    """The 8-byte FIL trailer at the end of a ``size``-byte image (full_crc32: LSN and CRC)."""
    at = spans(FilTrailer, size - TRAILER_SIZE)
    t = FilTrailer.parse(page[size - TRAILER_SIZE : size])
    first, second = at["old_checksum"], at["lsn_low"]
    if fcrc32:
        return FieldGroup(
            "FIL trailer (full_crc32)",
            (
                field(first, "FIL_PAGE_FCRC32_END_LSN", f"0x{t.old_checksum:08x}"),
                field(second, "FIL_PAGE_FCRC32_CHECKSUM", f"0x{t.lsn_low:08x}", "CRC-32C"),
            ),
        )
    return FieldGroup(
        "FIL trailer",
        (
            field(first, "FIL_PAGE_END_LSN_OLD_CHKSUM", f"0x{t.old_checksum:08x}"),
            field(second, "(LSN low 32 bits)", f"0x{t.lsn_low:08x}"),
        ),
    )
