"""FSP/XDES family (§4.1, §9.2): page 0 (FSP_HDR) and the XDES pages every extent group starts.

Both hold the array of extent descriptors at XDES_ARR_OFFSET, one line per initialised extent;
page 0 also holds the FSP header before it and, on MySQL 8, the SDI version and root page after
the encryption info.
"""

from __future__ import annotations

from ibdtool.parsers.constants import FIL_PAGE_TYPE_FSP_HDR, FIL_PAGE_TYPE_XDES
from ibdtool.parsers.page import PageInfo
from ibdtool.parsers.pages.base import FieldGroup, Parts, Region, field, flst, ranges, spans
from ibdtool.parsers.space import SpaceFormat, sdi_offset, xdes_size
from ibdtool.parsers.structs import FSP_HEADER_OFFSET, XDES_ARR_OFFSET, FspHeader, SdiHeader
from ibdtool.parsers.vendor import Vendor
from ibdtool.parsers.xdes import XDES_NOT_INITED, decode_descriptor_page

#: Where the FSP header's fields lie on page 0 (also read by the stored view of §3.2).
FSP = spans(FspHeader, FSP_HEADER_OFFSET)


def page_types(vendor: Vendor) -> frozenset[int]:
    return frozenset({FIL_PAGE_TYPE_FSP_HDR, FIL_PAGE_TYPE_XDES})


def layout(page: bytes, info: PageInfo, fmt: SpaceFormat) -> Parts:
    """The XDES array; on page 0 also the FSP header and the MySQL 8 SDI header."""
    xdes_group, xdes_region = _xdes(page, info, fmt)
    if info.real_type != FIL_PAGE_TYPE_FSP_HDR:
        return [xdes_group], [xdes_region]
    groups = [_fsp_header(page, fmt), xdes_group]
    regions = [Region(FSP_HEADER_OFFSET, XDES_ARR_OFFSET, "fsp_header"), xdes_region]
    if fmt.sdi_root is not None and fmt.vendor is Vendor.MYSQL:
        at = spans(SdiHeader, sdi_offset(fmt.logical_size, fmt.physical_size))
        s = at["version"].offset
        h = SdiHeader.parse(page[s : s + SdiHeader.sizeof()])
        groups.append(
            FieldGroup(
                "SDI header (§4.1, MySQL 8)",
                (
                    field(at["version"], "SDI version", str(h.version)),
                    field(at["root_page"], "SDI root page", str(h.root_page)),
                ),
            )
        )
        regions.append(Region(s, at["root_page"].end, "fseg"))
    return groups, regions


def _fsp_header(page: bytes, fmt: SpaceFormat) -> FieldGroup:
    h = FspHeader.parse(page[FSP_HEADER_OFFSET:XDES_ARR_OFFSET])
    at = FSP
    flags = " ".join(fmt.flags.names())
    return FieldGroup(
        "FSP header (§4.1)",
        (
            field(at["space_id"], "FSP_SPACE_ID", str(h.space_id)),
            field(at["size"], "FSP_SIZE", str(h.size), "pages"),
            field(at["free_limit"], "FSP_FREE_LIMIT", str(h.free_limit)),
            field(at["space_flags"], "FSP_SPACE_FLAGS", f"0x{h.space_flags:x}", flags),
            field(at["frag_n_used"], "FSP_FRAG_N_USED", str(h.frag_n_used)),
            field(at["free"], "FSP_FREE", flst(h.free)),
            field(at["free_frag"], "FSP_FREE_FRAG", flst(h.free_frag)),
            field(at["full_frag"], "FSP_FULL_FRAG", flst(h.full_frag)),
            field(at["seg_id"], "FSP_SEG_ID", str(h.seg_id), "next segment id"),
            field(at["seg_inodes_full"], "FSP_SEG_INODES_FULL", flst(h.seg_inodes_full)),
            field(at["seg_inodes_free"], "FSP_SEG_INODES_FREE", flst(h.seg_inodes_free)),
        ),
    )


def _xdes(page: bytes, info: PageInfo, fmt: SpaceFormat) -> tuple[FieldGroup, Region]:
    """§9.2: one line per initialised extent: state, owning segment, used pages."""
    extent = fmt.extent_pages
    lines: list[str] = []
    not_inited = 0
    extents = decode_descriptor_page(page, info.page_no, fmt)
    for i, e in enumerate(extents):
        if e.state == XDES_NOT_INITED:
            not_inited += 1
            continue
        first = e.first_page
        used = [first + k for k, free in enumerate(e.free) if not free]
        lines.append(
            f"extent {i:>3} pages {first}-{first + extent - 1}: {e.state_name}"
            + (f" seg {e.seg_id}" if e.seg_id else "")
            + f", {len(used)}/{extent} used"
            + (f" ({ranges(used)})" if 0 < len(used) < extent else "")
        )
    if not_inited:
        lines.append(f"{not_inited} entries NOT_INITED")
    end = XDES_ARR_OFFSET + (fmt.physical_size // extent) * xdes_size(fmt.logical_size)
    region = Region(XDES_ARR_OFFSET, end, "xdes")
    return FieldGroup("Extent descriptors (XDES, §9.2)", lines=tuple(lines)), region
