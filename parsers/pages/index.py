"""INDEX family (§5.1, §7.1): B-tree pages — INDEX, RTREE, SDI and MariaDB's INSTANT root.

The index page header and the two file-segment headers of a root, then the record heap, the
free space and the page directory; on a ROW_FORMAT=COMPRESSED page as stored the zlib stream
instead (the page rebuilt by :mod:`ibdtool.parsers.zip_page`, the server's uncompressed frame, is
laid out like any compact page: it holds the infimum and supremum records where the stored image
starts its stream).
"""

from __future__ import annotations

from ibdtool.parsers.compact_rec import PAGE_NEW_INFIMUM, PAGE_NEW_SUPREMUM
from ibdtool.parsers.constants import FIL_PAGE_DATA, SDI_INDEX_ID, index_types
from ibdtool.parsers.index_fill import PAGE_NEW_SUPREMUM_END, PAGE_OLD_SUPREMUM_END
from ibdtool.parsers.page import PageInfo
from ibdtool.parsers.pages.base import NOWHERE, FieldGroup, Parts, Region, field, spans
from ibdtool.parsers.space import SpaceFormat
from ibdtool.parsers.structs import PAGE_DATA, PAGE_HEADER, IndexHeader
from ibdtool.parsers.vendor import Vendor

PAGE_DIR = 8  # the directory ends 8 bytes before the page end (§5.2)
_DIRECTIONS = {1: "LEFT", 2: "RIGHT", 3: "SAME_REC", 4: "SAME_PAGE", 5: "NO_DIRECTION"}
_AT = spans(IndexHeader, PAGE_HEADER)
FSEG_START = _AT["btr_seg_leaf"].offset  # the index header proper ends here
_HEADER_REGIONS = [
    Region(PAGE_HEADER, FSEG_START, "index_header"),
    Region(FSEG_START, PAGE_DATA, "fseg"),
]


def page_types(vendor: Vendor) -> frozenset[int]:
    return index_types(vendor)


def layout(page: bytes, info: PageInfo, fmt: SpaceFormat) -> Parts:
    """Header fields and stats, segment headers of a root, heap / free / directory regions."""
    if info.index is None:  # an encrypted body: no header to show
        return [], []
    h = IndexHeader.parse(page[PAGE_HEADER:PAGE_DATA])
    at = _AT
    compact = bool(h.n_heap & 0x8000)
    direction = h.direction & 0x7 if fmt.vendor is Vendor.MARIADB else h.direction
    sdi = h.index_id == SDI_INDEX_ID
    fields = (
        field(at["n_dir_slots"], "PAGE_N_DIR_SLOTS", str(h.n_dir_slots)),
        field(at["heap_top"], "PAGE_HEAP_TOP", str(h.heap_top)),
        field(
            at["n_heap"],
            "PAGE_N_HEAP",
            str(h.n_heap & 0x7FFF),
            "compact" if compact else "redundant",
        ),
        field(at["free"], "PAGE_FREE", str(h.free)),
        field(at["garbage"], "PAGE_GARBAGE", str(h.garbage)),
        field(at["last_insert"], "PAGE_LAST_INSERT", str(h.last_insert)),
        field(at["direction"], "PAGE_DIRECTION", str(direction), _DIRECTIONS.get(direction, "")),
        field(at["n_direction"], "PAGE_N_DIRECTION", str(h.n_direction)),
        field(at["n_recs"], "PAGE_N_RECS", str(h.n_recs)),
        field(at["max_trx_id"], "PAGE_MAX_TRX_ID", str(h.max_trx_id)),
        field(at["level"], "PAGE_LEVEL", str(h.level), "leaf" if h.level == 0 else ""),
        field(at["index_id"], "PAGE_INDEX_ID", str(h.index_id), "SDI index" if sdi else ""),
    )
    stats = (
        field(NOWHERE, "(data bytes)", str(info.index.data_size)),
        field(NOWHERE, "(fill)", f"{100 * info.index.fill:.1f}%"),
    )
    seg = [
        field(at[key], name, f"space {f.space} page {f.page_no} offset {f.offset}")
        for name, key, f in (
            ("PAGE_BTR_SEG_LEAF", "btr_seg_leaf", h.btr_seg_leaf),
            ("PAGE_BTR_SEG_TOP", "btr_seg_top", h.btr_seg_top),
        )
        if f.space or f.page_no or f.offset
    ]
    groups = [FieldGroup("Index page header (§5.1)", fields + stats)]
    if seg:
        groups.append(FieldGroup("File segment headers (root page)", tuple(seg)))
    size = len(page)
    regions = list(_HEADER_REGIONS)
    if fmt.zip and not _is_frame(page):
        return groups, regions + zip_body_regions(info, size)
    sup_end = PAGE_NEW_SUPREMUM_END if compact else PAGE_OLD_SUPREMUM_END
    dir_start = size - PAGE_DIR - 2 * h.n_dir_slots
    top = min(max(h.heap_top, sup_end), dir_start)
    regions += [
        Region(PAGE_DATA, top, "records"),
        Region(top, dir_start, "free"),
        Region(dir_start, size - PAGE_DIR, "directory"),
    ]
    return groups, regions


def _is_frame(page: bytes) -> bool:
    """An uncompressed compact page (a zip page rebuilt), not a zip image (§5.2, §7.1)."""
    # a zip image holds its zlib stream where the frame has these two records
    return (
        page[PAGE_NEW_INFIMUM : PAGE_NEW_INFIMUM + 8] == b"infimum\x00"
        and page[PAGE_NEW_SUPREMUM : PAGE_NEW_SUPREMUM + 8] == b"supremum"
    )


def zip_regions(info: PageInfo, size: int) -> list[Region]:
    """§7.1: a ROW_FORMAT=COMPRESSED page (no trailer; header, zlib stream, the rest)."""
    if info.index is None:
        return [Region(FIL_PAGE_DATA, size, "data")]
    return list(_HEADER_REGIONS) + zip_body_regions(info, size)


def zip_body_regions(info: PageInfo, size: int) -> list[Region]:
    """§7.1: the zlib stream at PAGE_DATA and what follows it (modification log, directory)."""
    if not info.zip_stream:
        return []
    return [
        Region(PAGE_DATA, PAGE_DATA + info.zip_stream, "payload"),
        Region(PAGE_DATA + info.zip_stream, size, "data"),
    ]
