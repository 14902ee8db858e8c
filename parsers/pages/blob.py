"""BLOB family (§8.3): old-style externally stored columns and MySQL 8's SDI_BLOB pages.

Both chain pages through a LOB header at FIL_PAGE_DATA: the part length and the next page. Type
18 is SDI_BLOB only on MySQL; MariaDB uses it for its INSTANT root (an INDEX-family page).
"""

from __future__ import annotations

from ibdtool.parsers.constants import FIL_PAGE_DATA, FIL_PAGE_SDI_BLOB, FIL_PAGE_TYPE_BLOB
from ibdtool.parsers.page import PageInfo
from ibdtool.parsers.pages.base import FieldGroup, Parts, Region, field, page_ref, spans
from ibdtool.parsers.space import SpaceFormat
from ibdtool.parsers.structs import LobHeader
from ibdtool.parsers.vendor import Vendor

_AT = spans(LobHeader, FIL_PAGE_DATA)
DATA_START = FIL_PAGE_DATA + LobHeader.sizeof()


def page_types(vendor: Vendor) -> frozenset[int]:
    if vendor is Vendor.MYSQL:
        return frozenset({FIL_PAGE_TYPE_BLOB, FIL_PAGE_SDI_BLOB})
    return frozenset({FIL_PAGE_TYPE_BLOB})


def layout(page: bytes, info: PageInfo, fmt: SpaceFormat) -> Parts:
    """The LOB header and the part of the value it stores."""
    h = LobHeader.parse(page[FIL_PAGE_DATA:DATA_START])
    group = FieldGroup(
        "BLOB header",
        (
            field(_AT["part_len"], "BTR_BLOB_PART_LEN", str(h.part_len)),
            field(_AT["next_page_no"], "BTR_BLOB_NEXT_PAGE_NO", page_ref(h.next_page_no)),
        ),
    )
    regions = [
        Region(FIL_PAGE_DATA, DATA_START, "lob_header"),
        Region(DATA_START, DATA_START + h.part_len, "data"),
    ]
    return [group], regions
