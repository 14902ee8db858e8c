"""The colours pages are drawn in, the same in every picture of a tablespace.

The TUI's page map, ``inspect --map`` in the terminal, its SVG (``--map-svg``) and the report's
HTML page strips all colour a page by its type, its codec, what the filesystem allocates for
its slot or its index; a DBA who reads one picture reads the others. A page type or codec
without a colour of its own gets a fallback (BLOB-family types share one), so a codec the
registry gains later can never break a picture. Plain strings, no Rich or Textual.
"""

from __future__ import annotations

TYPE_COLORS = {
    "INDEX": "#5f9ee8",
    "SDI": "#c678dd",
    "RTREE": "#56b6c2",
    "INSTANT": "#7aa2f7",
    "FSP_HDR": "#e5c07b",
    "XDES": "#d7a35f",
    "INODE": "#98c379",
    "IBUF_BITMAP": "#8fbcbb",
    "IBUF_FREE_LIST": "#8fbcbb",
    "UNDO_LOG": "#b5bd68",
    "SYS": "#a0a0d0",
    "TRX_SYS": "#a0a0d0",
    "RSEG_ARRAY": "#a0a0d0",
    "DOUBLEWRITE": "#8787af",
    "LEGACY_DBLWR": "#8787af",
    "ALLOCATED": "#585858",
    "ENCRYPTED": "#ff8700",
    "UNKNOWN": "#ff5f5f",
}
#: every BLOB, ZBLOB, LOB and ZLOB page type
BLOB_COLOR = "#d787af"
#: a page type, index or category with no colour of its own
OTHER_COLOR = "#ff5f5f"


def type_color(name: str) -> str:
    """The colour of pages of type ``name`` (InnoDB's name without ``FIL_PAGE_``)."""
    if name in TYPE_COLORS:
        return TYPE_COLORS[name]
    if "BLOB" in name or "LOB" in name:
        return BLOB_COLOR
    return OTHER_COLOR


#: colours of the codecs the registry knows today; one it gains later gets the fallback
_ALGO_COLORS = {
    "none": "#8a8a8a",
    "zlib": "#5f9ee8",
    "lz4": "#98c379",
    "lzo": "#e5c07b",
    "lzma": "#c678dd",
    "bzip2": "#d7875f",
    "snappy": "#56b6c2",
}
FALLBACK_ALGO_COLOR = "#afafd7"


def compression_color(algorithm: str) -> str:
    """The colour of pages stored with ``algorithm`` (``none`` for plain ones)."""
    return _ALGO_COLORS.get(algorithm, FALLBACK_ALGO_COLOR)


#: an all-zero page, and what is not read yet
EMPTY_COLOR = "#444444"
UNREAD_COLOR = "#3a3a3a"
#: what the filesystem allocates for a page's slot
HOLE_COLOR = "#3a4a6a"  # nothing
PARTIAL_COLOR = "#5f9ee8"  # part of the slot: punched
FULL_COLOR = "#b0b0b0"  # the whole slot
UNPUNCHED_COLOR = "#ff8700"  # compressed, but more blocks than its image needs

#: distinct colours for indexes, in the order a scan meets them (then again from the start)
INDEX_PALETTE = (
    "#5f9ee8", "#98c379", "#e5c07b", "#c678dd", "#56b6c2", "#d7875f",
    "#ff87af", "#87d7af", "#afafd7", "#d7d75f", "#5fafaf", "#af87ff",
)  # fmt: skip
