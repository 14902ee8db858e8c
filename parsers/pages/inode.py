"""INODE family (§9.3): pages of file-segment inodes, one line per used slot."""

from __future__ import annotations

from ibdtool.parsers.constants import FIL_NULL, FIL_PAGE_DATA, FIL_PAGE_INODE
from ibdtool.parsers.page import PageInfo
from ibdtool.parsers.pages.base import FieldGroup, Parts, Region, ranges
from ibdtool.parsers.space import SpaceFormat
from ibdtool.parsers.structs import FSEG_ARR_OFFSET, FSEG_MAGIC_N_VALUE, inode_entry
from ibdtool.parsers.vendor import Vendor


def page_types(vendor: Vendor) -> frozenset[int]:
    return frozenset({FIL_PAGE_INODE})


def layout(page: bytes, info: PageInfo, fmt: SpaceFormat) -> Parts:
    """The list node linking inode pages, then each used inode: lists, fragment pages."""
    extent = fmt.extent_pages
    con = inode_entry(extent)
    size = con.sizeof()
    per_page = (fmt.physical_size - FSEG_ARR_OFFSET - 10) // size
    lines: list[str] = []
    for j in range(per_page):
        off = FSEG_ARR_OFFSET + j * size
        e = con.parse(page[off : off + size])
        if e.fseg_id == 0:
            continue
        frags = [p for p in e.frag_arr if p != FIL_NULL]
        magic = "" if e.magic_n == FSEG_MAGIC_N_VALUE else " BAD MAGIC"
        lines.append(
            f"slot {j:>2} seg {e.fseg_id}: not_full_n_used {e.not_full_n_used}, extents "
            f"free {e.free.length} not_full {e.not_full.length} full {e.full.length}, "
            f"{len(frags)} fragment pages"
            + (f" ({ranges(sorted(frags))})" if frags else "")
            + magic
        )
    regions = [
        Region(FIL_PAGE_DATA, FSEG_ARR_OFFSET, "fseg"),
        Region(FSEG_ARR_OFFSET, FSEG_ARR_OFFSET + per_page * size, "inode"),
    ]
    group = FieldGroup("Segment inodes (§9.3)", lines=tuple(lines) or ("no used slots",))
    return [group], regions
