"""The logical (decompressed) page: its FIL frame, then what its page family declares.

:data:`PAGE_FAMILIES` maps each vendor's page types to their family module, built from the
families' own ``page_types``; a page type no family claims shows only its FIL header and
trailer.
"""

from __future__ import annotations

from collections.abc import Mapping

from ibdtool.parsers.constants import FIL_PAGE_DATA
from ibdtool.parsers.page import PageInfo
from ibdtool.parsers.pages import blob, fsp, index, inode
from ibdtool.parsers.pages.base import Family, FieldGroup, Layout, Region, clip
from ibdtool.parsers.pages.fil import TRAILER_SIZE, header_group, trailer_group
from ibdtool.parsers.space import SpaceFormat
from ibdtool.parsers.vendor import Vendor

#: Every page family; a new one is added here.
FAMILIES: tuple[Family, ...] = (index, fsp, inode, blob)


def _by_type(vendor: Vendor) -> dict[int, Family]:
    out: dict[int, Family] = {}
    for family in FAMILIES:
        for page_type in family.page_types(vendor):
            if page_type in out:
                raise AssertionError(f"{vendor} page type {page_type} is in two families")
            out[page_type] = family
    return out


#: vendor -> page type -> the family module that lays it out.
PAGE_FAMILIES: Mapping[Vendor, Mapping[int, Family]] = {v: _by_type(v) for v in Vendor}


def logical_layout(logical: bytes, info: PageInfo, fmt: SpaceFormat) -> Layout:
    """Type-specific structures of the decoded page (§4.1, §5.1, §8.3, §9.2, §9.3)."""
    size = len(logical)
    if info.empty:
        return Layout((), (Region(0, size, "free"),))
    if info.real_type < 0:
        return Layout((FieldGroup("Body unreadable (encrypted or damaged)"),), ())
    groups: list[FieldGroup] = []
    regions = [Region(0, FIL_PAGE_DATA, "fil_header")]
    if info.is_compressed:
        groups.append(header_group(logical, info, fmt, "FIL header (decompressed)"))
    family = PAGE_FAMILIES[fmt.vendor].get(info.real_type)
    if family is not None:
        family_groups, family_regions = family.layout(logical, info, fmt)
        groups += family_groups
        regions += family_regions
    trailer = not fmt.zip
    if trailer and not (fmt.full_crc32 and info.is_compressed):
        groups.append(trailer_group(logical, size, fmt.full_crc32))
    if trailer:
        regions.append(Region(size - TRAILER_SIZE, size, "trailer"))
    return Layout(tuple(groups), clip(regions, size))
