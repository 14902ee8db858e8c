"""What the page map draws: one small code per page for each colouring, filled as pages are read.

A scan worker calls :meth:`PageMapModel.add` with each :class:`~parsers.page.PageInfo` the
engine yields; the UI thread reads the code arrays to draw cells, count legend entries and find
filter matches. Arrays are ``bytearray``\\ s so that counting, grouping and matching run in C
(``bytes.count``, ``translate``) even for a 10 GB file's 655,360 pages. Pages at or past
:attr:`PageMapModel.scanned` have not been read yet (code 0 in the page-content colourings);
the allocation colouring is known for every page before the scan starts, from SEEK_DATA.
"""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass
from enum import StrEnum

from ibdtool.inspect import unpunched_bytes
from parsers import codecs
from parsers.constants import Algorithm
from parsers.page import PageInfo


class Mode(StrEnum):
    """The page map's colourings, in the order the ``c`` key cycles through them."""

    TYPE = "type"
    COMPRESSION = "compression"
    RATIO = "ratio"
    ALLOCATION = "allocation"
    CHECKSUM = "checksum"
    INDEX = "index"
    LEVEL = "level"


MODE_TITLES = {
    Mode.TYPE: "page type",
    Mode.COMPRESSION: "compression algorithm",
    Mode.RATIO: "stored size / page size",
    Mode.ALLOCATION: "allocation on disk",
    Mode.CHECKSUM: "checksum",
    Mode.INDEX: "index",
    Mode.LEVEL: "B-tree level",
}


@dataclass(frozen=True, slots=True)
class Category:
    """One legend entry: a label, a colour and the glyph a uniform cell is drawn with."""

    label: str
    color: str
    glyph: str = "█"
    description: str = ""


UNSCANNED = Category("not read yet", "#3a3a3a", "·")

_TYPE_COLORS = {
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
_BLOB_COLOR = "#d787af"
_OTHER_COLOR = "#ff5f5f"


def type_color(name: str) -> str:
    if name in _TYPE_COLORS:
        return _TYPE_COLORS[name]
    if "BLOB" in name or "LOB" in name:
        return _BLOB_COLOR
    return _OTHER_COLOR


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
EMPTY_COLOR = "#444444"


def compression_color(algorithm: str) -> str:
    """The page map's colour for pages stored with ``algorithm`` (``none`` for plain ones)."""
    return _ALGO_COLORS.get(algorithm, FALLBACK_ALGO_COLOR)


_ALGORITHMS = tuple(codecs.on_disk())  # every algorithm a page header can name, NONE first
COMPRESSION_CATEGORIES = (
    UNSCANNED,
    *(
        Category(
            a.value,
            compression_color(a.value),
            description="stored uncompressed" if a is Algorithm.NONE else "",
        )
        for a in _ALGORITHMS
    ),
    Category("empty", EMPTY_COLOR, "░", "all-zero page"),
)
_ALGO_CODE = {a: i + 1 for i, a in enumerate(_ALGORITHMS)}
_EMPTY_ALGO = len(COMPRESSION_CATEGORIES) - 1

#: stored bytes / logical page size, upper bounds of the buckets
RATIO_BOUNDS = (0.25, 0.5, 0.75, 0.99999)
RATIO_CATEGORIES = (
    UNSCANNED,
    Category("empty", EMPTY_COLOR, "░", "all-zero page"),
    Category("≤25%", "#2e9e5b", description="stored in a quarter of the page or less"),
    Category("≤50%", "#8cc152"),
    Category("≤75%", "#e5c07b"),
    Category("<100%", "#d7875f"),
    Category("100%", "#8a8a8a", description="stored whole"),
)

NOT_INDEX = Category("not an index page", "#3a3a3a", "·")
#: distinct colours for indexes, in the order the scan meets them (then again from the start)
INDEX_PALETTE = (
    "#5f9ee8", "#98c379", "#e5c07b", "#c678dd", "#56b6c2", "#d7875f",
    "#ff87af", "#87d7af", "#afafd7", "#d7d75f", "#5fafaf", "#af87ff",
)  # fmt: skip
LEVEL_COLORS = ("#5f9ee8", "#98c379", "#e5c07b", "#d7875f", "#c678dd", "#ff5f5f")
MAX_CODES = 254  # codes 0 and 1 are "not read yet" and "not an index page"
OTHER_INDEXES = MAX_CODES - 1  # the code of every index past the first 251

HOLE, PUNCHED, FULL, UNPUNCHED = range(4)
ALLOCATION_CATEGORIES = (
    Category("hole", "#3a4a6a", "░", "nothing allocated"),
    Category("punched", "#5f9ee8", description="part of the slot allocated"),
    Category("full", "#b0b0b0", description="the whole slot allocated"),
    Category(
        "unpunched", "#ff8700", description="compressed, but more blocks than its image needs"
    ),
)

CHECKSUM_CATEGORIES = (
    UNSCANNED,
    Category("valid", "#5faf5f"),
    Category("empty", EMPTY_COLOR, "░", "all-zero page"),
    Category("invalid", "#ff5f5f", description="checksum mismatch or damaged"),
    Category("unverifiable", "#ff8700", description="encrypted"),
)
_VALID, _EMPTY_CHECK, _INVALID, _UNVERIFIABLE = 1, 2, 3, 4

MIXED_GLYPH = "▓"


class PageMapModel:
    """Per-page codes for every colouring of one tablespace (see module doc)."""

    def __init__(
        self,
        n_pages: int,
        physical_size: int,
        logical_size: int,
        fs_block_size: int,
        allocated: array[int],
    ) -> None:
        self.n_pages = n_pages
        self.physical_size = physical_size
        self.logical_size = logical_size
        self.fs_block_size = fs_block_size
        self.allocated = allocated
        self.scanned = 0
        self.type_names: list[str] = [UNSCANNED.label]
        self._type_index: dict[str, int] = {}
        self.stored = array("I", bytes(4 * n_pages))
        #: index ids in the order the scan met them (code 2 is the first); names once known
        self.index_ids: list[int] = []
        self._index_code: dict[int, int] = {}
        self.index_names: dict[int, str] = {}
        self.max_level = 0
        self.codes: dict[Mode, bytearray] = {m: bytearray(n_pages) for m in Mode}
        alloc = self.codes[Mode.ALLOCATION]
        for n, a in enumerate(allocated):
            alloc[n] = HOLE if a == 0 else FULL if a >= physical_size else PUNCHED

    # --- filled by the scan worker ---------------------------------------------------------

    def add(self, info: PageInfo) -> None:
        """Record one page (called in page order from the scan thread)."""
        n = info.page_no
        codes = self.codes
        code = self._type_index.get(info.type_name)
        if code is None:
            # a damaged file can hold thousands of made-up types: past 253, one "OTHER"
            name = info.type_name if len(self.type_names) < 254 else "OTHER"
            code = self._type_index.get(name)
            if code is None:
                code = self._type_index[name] = len(self.type_names)
                self.type_names.append(name)
        codes[Mode.TYPE][n] = code
        if info.empty:
            codes[Mode.COMPRESSION][n] = _EMPTY_ALGO
            codes[Mode.RATIO][n] = 1
            codes[Mode.CHECKSUM][n] = _EMPTY_CHECK
        else:
            codes[Mode.COMPRESSION][n] = _ALGO_CODE[info.compression]
            stored = self.physical_size
            if info.is_compressed and info.stored_size:
                stored = info.stored_size
            self.stored[n] = stored
            ratio = stored / self.logical_size
            bucket = next((i for i, b in enumerate(RATIO_BOUNDS) if ratio <= b), 4)
            codes[Mode.RATIO][n] = 2 + bucket
            if info.checksum_valid is None:
                codes[Mode.CHECKSUM][n] = _UNVERIFIABLE
            else:
                codes[Mode.CHECKSUM][n] = _VALID if info.checksum_valid else _INVALID
        idx = info.index
        if idx is None:
            codes[Mode.INDEX][n] = codes[Mode.LEVEL][n] = 1
        else:
            icode = self._index_code.get(idx.index_id)
            if icode is None and len(self.index_ids) < OTHER_INDEXES - 2:
                icode = self._index_code[idx.index_id] = len(self.index_ids) + 2
                self.index_ids.append(idx.index_id)
            codes[Mode.INDEX][n] = icode or OTHER_INDEXES
            level = min(idx.level, MAX_CODES - 1)
            self.max_level = max(self.max_level, level)
            codes[Mode.LEVEL][n] = 2 + level
        if n < len(self.allocated) and unpunched_bytes(info, self.allocated[n], self.fs_block_size):
            codes[Mode.ALLOCATION][n] = UNPUNCHED
        self.scanned = n + 1

    # --- read by the UI -------------------------------------------------------------------

    def categories(self, mode: Mode) -> tuple[Category, ...]:
        if mode is Mode.TYPE:
            names = list(self.type_names)
            return (UNSCANNED, *(Category(t, type_color(t)) for t in names[1:]))
        if mode is Mode.INDEX:
            named = [
                Category(self.index_label(iid), INDEX_PALETTE[k % len(INDEX_PALETTE)])
                for k, iid in enumerate(list(self.index_ids))
            ]
            gap = [NOT_INDEX] * (OTHER_INDEXES - 2 - len(named))  # never drawn: no page has them
            return (UNSCANNED, NOT_INDEX, *named, *gap, Category("other indexes", _OTHER_COLOR))
        if mode is Mode.LEVEL:
            return (
                UNSCANNED,
                NOT_INDEX,
                *(
                    Category(
                        f"level {lv}" + (" (leaf)" if lv == 0 else ""),
                        LEVEL_COLORS[min(lv, len(LEVEL_COLORS) - 1)],
                    )
                    for lv in range(self.max_level + 1)
                ),
            )
        return {
            Mode.COMPRESSION: COMPRESSION_CATEGORIES,
            Mode.RATIO: RATIO_CATEGORIES,
            Mode.ALLOCATION: ALLOCATION_CATEGORIES,
            Mode.CHECKSUM: CHECKSUM_CATEGORIES,
        }[mode]

    def index_label(self, index_id: int) -> str:
        """``PRIMARY (144)``, or ``index 144`` while no source names it."""
        if index_id == 0xFFFFFFFFFFFFFFFF:
            return "SDI"
        name = self.index_names.get(index_id)
        return f"{name} ({index_id})" if name else f"index {index_id}"

    def counts(self, mode: Mode) -> list[tuple[Category, int]]:
        """Pages per category, skipping empty categories (and unread pages once all are read)."""
        codes = self.codes[mode]
        out = []
        for i, cat in enumerate(self.categories(mode)):
            if i > 1 and cat is NOT_INDEX:
                continue  # the index colouring's unused codes
            n = codes.count(i)
            if n:
                out.append((cat, n))
        return out

    def cell(self, mode: Mode, start: int, count: int) -> tuple[int, bool]:
        """The code drawn for pages ``[start, start + count)``: the most common, and whether
        every page has it."""
        seg = self.codes[mode][start : start + count]
        if not seg:
            return 0, True
        first = seg[0]
        if len(seg) == 1 or seg.count(first) == len(seg):
            return first, True
        return Counter(seg).most_common(1)[0][0], False

    def group_counts(self, mode: Mode, start: int, count: int) -> list[tuple[Category, int]]:
        cats = self.categories(mode)
        seg = self.codes[mode][start : start + count]
        return [(cats[c], n) for c, n in Counter(seg).most_common() if c < len(cats)]

    def labels(self, page: int) -> dict[Mode, str]:
        """The page's category under every colouring."""
        return {m: self.categories(m)[self.codes[m][page]].label for m in Mode}

    def matches(self, query: str) -> bytes:
        """One byte per page: 1 where any colouring's label of the page contains ``query``
        (case-insensitive; ``a|b`` matches either, as htop's filter)."""
        words = [w.strip().lower() for w in query.split("|") if w.strip()]
        acc = 0
        for mode in Mode:
            table = bytearray(256)
            for i, cat in enumerate(self.categories(mode)):
                if cat is not UNSCANNED and any(w in cat.label.lower() for w in words):
                    table[i] = 1
            if any(table):
                acc |= int.from_bytes(self.codes[mode].translate(table), "big")
        return acc.to_bytes(self.n_pages, "big")
