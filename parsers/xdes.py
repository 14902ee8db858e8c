"""Extent descriptors: which pages the tablespace considers free (FORMATS.md §9).

XDES entries live on page 0 (after the FSP header) and on every XDES page, one per physical
page size worth of pages; each has a state and two bits per page, the first of which is the
FREE bit. Pure decoding: the caller reads the descriptor pages.
"""

# No ``from __future__ import annotations`` here: a NamedTuple's string annotations are each
# compiled by typing when the class is made, ~0.9 ms of every start over the records of
# inspect's path (issue 24, item 4; tests/test_startup.py checks them)

from collections.abc import Callable, Iterable, Mapping
from functools import cache
from struct import Struct
from typing import Any, NamedTuple

from ibdtool.parsers import _structs_gen
from ibdtool.parsers._structs_gen import (
    XDES_ARR_OFFSET,
    XDES_ENTRY_64_FAST,
    XDES_ENTRY_128_FAST,
    XDES_ENTRY_256_FAST,
)
from ibdtool.parsers.space import SpaceFormat, extent_pages, xdes_size

XDES_NOT_INITED = 0
XDES_FREE = 1
XDES_FREE_FRAG = 2
XDES_FULL_FRAG = 3
XDES_FSEG = 4
XDES_FSEG_FRAG = 5
XDES_STATES = {
    0: "NOT_INITED",
    1: "FREE",
    2: "FREE_FRAG",
    3: "FULL_FRAG",
    4: "FSEG",
    5: "FSEG_FRAG",
}


class Extent(NamedTuple):
    """One XDES entry, decoded."""

    first_page: int
    state: int
    seg_id: int
    free: tuple[bool, ...]  # per page of the extent

    @property
    def state_name(self) -> str:
        return XDES_STATES.get(self.state, f"STATE_{self.state}")


def descriptor_pages(fmt: SpaceFormat, n_pages: int) -> range:
    """Page numbers of page 0 and every XDES page of a file with ``n_pages`` pages (§9.1)."""
    return range(0, n_pages, fmt.physical_size)


#: the generated XDES entry of each extent size the five logical page sizes have (§9.1); its
#: tuple type named, made at first use (ibdtool.parsers._structs_gen)
_ENTRIES: dict[int, tuple[Struct, str]] = {
    64: (XDES_ENTRY_64_FAST, "XdesEntry64Tuple"),
    128: (XDES_ENTRY_128_FAST, "XdesEntry128Tuple"),
    256: (XDES_ENTRY_256_FAST, "XdesEntry256Tuple"),
}


@cache
def _entry_parser(ext: int) -> Callable[[Any, int], Any]:
    if ext not in _ENTRIES:  # no page size gives another; the declaration itself would
        from ibdtool.parsers.structs import fast_parser, xdes_entry

        return fast_parser(xdes_entry(ext), "XdesEntry")
    packer, typename = _ENTRIES[ext]
    make: Callable[[Iterable[Any]], Any] = getattr(_structs_gen, typename)._make
    unpack_from = packer.unpack_from

    def parse(buf: Any, offset: int = 0) -> Any:
        return make(unpack_from(buf, offset))

    return parse


def decode_descriptor_page(
    page: bytes | memoryview, first_page: int, fmt: SpaceFormat, n_pages: int | None = None
) -> list[Extent]:
    """The extents described by the descriptor page at ``first_page`` (§9.1, §9.2), up to the
    one holding page ``n_pages - 1`` when given."""
    ext = extent_pages(fmt.logical_size)
    size = xdes_size(fmt.logical_size)
    parse = _entry_parser(ext)
    out: list[Extent] = []
    data = bytes(page)
    count = fmt.physical_size // ext
    if n_pages is not None:
        count = min(count, max(0, -(-(n_pages - first_page) // ext)))
    for i in range(count):
        off = XDES_ARR_OFFSET + i * size
        if off + size > len(data):
            break
        e = parse(data, off)
        bitmap = e.bitmap
        if e.state in (XDES_NOT_INITED, XDES_FREE):
            free = (True,) * ext
        else:
            free = tuple(bool(bitmap[(2 * k) // 8] >> ((2 * k) % 8) & 1) for k in range(ext))
        out.append(Extent(first_page + i * ext, e.state, e.seg_id, free))
    return out


def free_map(
    descriptors: Mapping[int, bytes | memoryview], fmt: SpaceFormat, n_pages: int
) -> bytearray:
    """One byte per page: 1 when the XDES bitmaps (or the free limit) say the page is free.

    ``descriptors`` maps each descriptor page number to its bytes; a missing or damaged one
    leaves its pages marked used (0), the cautious answer.
    """
    out = bytearray(n_pages)
    for first, page in descriptors.items():
        for extent in decode_descriptor_page(page, first, fmt, n_pages):
            for k, is_free in enumerate(extent.free):
                n = extent.first_page + k
                if n < n_pages and is_free:
                    out[n] = 1
    for n in range(min(fmt.free_limit, n_pages), n_pages):
        out[n] = 1
    return out
