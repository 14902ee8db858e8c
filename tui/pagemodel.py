"""What the page map draws: small codes per page for each colouring, filled as pages are read.

A scan worker calls :meth:`PageMapModel.add` with each :class:`~ibdtool.parsers.page.PageInfo` the
engine yields; the UI thread reads the codes to draw cells, count legend entries and find
filter matches. Pages at or past :attr:`PageMapModel.scanned` have not been read yet (code 0 in
the page-content colourings). The allocation colouring comes from the data ranges (SEEK_DATA,
FIEMAP): of the whole file at once when the model is made with its map, else a window at a
time as the scan reads each window's map just before its pages (:meth:`PageMapModel.fill_window`,
so the map of a page-compressed file's millions of extents is never held whole); pages past
:attr:`PageMapModel.allocation_known` are then "not read yet" there too.

Memory: four bytes a page, in four ``bytearray`` objects, and nothing else per page (a 1 TiB file
of 16K pages: 256 MiB). The page type and the index each take a byte (up to 254 values each:
a file's indexes, a damaged file's made-up types); the five small colourings are packed two
and three to a byte — compression (4 bits) with the B-tree level (4 bits), and allocation (2
bits) with checksum (3) and the stored-size ratio (3). A colouring's codes are unpacked with
one ``bytes.translate``, so counting, grouping and matching still run in C. One or two bytes a
page would need a palette of (type, index, level) combinations, which a general tablespace
with hundreds of indexes overflows. The bytes each page's slot holds and its stored image size
are not kept: they are read when the cursor asks (:meth:`PageMapModel.allocated_at`, from the
data ranges; :meth:`PageMapModel.stored_size`, from the page's header).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from ibdtool.errors import InputError
from ibdtool.fs import Allocation, open_regular, read_window
from ibdtool.parsers import codecs
from ibdtool.parsers.constants import Algorithm
from ibdtool.parsers.envelope import read_envelope
from ibdtool.parsers.page import PageInfo
from ibdtool.parsers.space import SpaceFormat
from ibdtool.present import (
    EMPTY_COLOR,
    FULL_COLOR,
    HOLE_COLOR,
    INDEX_PALETTE,
    OTHER_COLOR,
    PARTIAL_COLOR,
    UNPUNCHED_COLOR,
    UNREAD_COLOR,
    compression_color,
    type_color,
)
from ibdtool.tablespace import InspectResult, Tablespace, inspect_tablespace, unpunched_bytes

if TYPE_CHECKING:
    from ibdtool.fs import WindowCounts
    from ibdtool.parsers.tabledef import TableDef


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


UNSCANNED = Category("not read yet", UNREAD_COLOR, "·")

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
LEVEL_COLORS = ("#5f9ee8", "#98c379", "#e5c07b", "#d7875f", "#c678dd", "#ff5f5f")
MAX_CODES = 254  # codes 0 and 1 are "not read yet" and "not an index page"
OTHER_INDEXES = MAX_CODES - 1  # the code of every index past the first 251

HOLE, PUNCHED, FULL, UNPUNCHED, UNKNOWN = range(5)
ALLOCATION_CATEGORIES = (
    Category("hole", HOLE_COLOR, "░", "nothing allocated"),
    Category("punched", PARTIAL_COLOR, description="part of the slot allocated"),
    Category("full", FULL_COLOR, description="the whole slot allocated"),
    Category(
        "unpunched", UNPUNCHED_COLOR, description="compressed, but more blocks than its image needs"
    ),
    UNSCANNED,  # past allocation_known: its window's map not read yet (never stored: 2 bits)
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


#: how the packed colourings sit in their bytes: mode -> (array, shift, bits)
_PACKED = {
    Mode.COMPRESSION: ("_cl", 0, 4),
    Mode.LEVEL: ("_cl", 4, 4),
    Mode.ALLOCATION: ("_acr", 0, 2),
    Mode.CHECKSUM: ("_acr", 2, 3),
    Mode.RATIO: ("_acr", 5, 3),
}
#: ``bytes.translate`` tables that unpack one colouring from its byte
_UNPACK = {
    m: bytes((b >> shift) & ((1 << bits) - 1) for b in range(256))
    for m, (_a, shift, bits) in _PACKED.items()
}
MAX_LEVEL_CODE = 15  # 4 bits: codes 2..15 are levels 0..13, the last also every deeper one
#: pages whose allocation codes are filled at once (bounds the temporary per-page array)
_ALLOC_WINDOW = 1 << 20
#: pages whose allocated bytes the scan looks up at once (4 bytes each while held)
_HELD_WINDOW = 4096


class PageMapModel:
    """Per-page codes for every colouring of one tablespace (see module doc)."""

    def __init__(
        self,
        n_pages: int,
        physical_size: int,
        logical_size: int,
        fs_block_size: int,
        alloc: Allocation | None,
        path: str | os.PathLike[str] | None = None,
        fmt: SpaceFormat | None = None,
    ) -> None:
        self.n_pages = n_pages
        self.physical_size = physical_size
        self.logical_size = logical_size
        self.fs_block_size = fs_block_size
        self.alloc = alloc
        self.path = path
        self.format = fmt
        self.scanned = 0
        self.type_names: list[str] = [UNSCANNED.label]
        self._type_index: dict[str, int] = {}
        #: index ids in the order the scan met them (code 2 is the first); names once known
        self.index_ids: list[int] = []
        self._index_code: dict[int, int] = {}
        self.index_names: dict[int, str] = {}
        self.max_level = 0
        self._type = bytearray(n_pages)
        self._index = bytearray(n_pages)
        self._cl = bytearray(n_pages)  # compression | level << 4
        self._acr = bytearray(n_pages)  # allocation | checksum << 2 | ratio << 5 (HOLE is 0)
        #: the scan's window of allocated bytes per page (:meth:`_held`)
        self._held_base = 0
        self._held_pages: Sequence[int] = ()
        #: the map that holds pages [first, stop): the file's, or the window the scan is in
        self._window: tuple[int, int, Allocation | None] = (0, 0, None)
        #: pages [0, allocation_known) have their allocation codes
        self.allocation_known = 0
        if alloc is not None:
            self.fill_window(0, n_pages, alloc)

    def fill_window(self, first: int, stop: int, alloc: Allocation) -> None:
        """The allocation codes of pages [first, stop) from ``alloc``, a map that holds them
        (the file's, or :meth:`~ibdtool.tablespace.Tablespace.window_allocation`'s, given by
        the scan before the window's pages), kept for the scan's lookups until the next
        window: windows come in page order, from page 0."""
        self._fill_allocation(alloc, first, min(stop, self.n_pages))
        self._held_pages = ()
        self._window = (first, stop, alloc)
        self.allocation_known = max(self.allocation_known, min(stop, self.n_pages))

    def _fill_allocation(self, alloc: Allocation, first_page: int, stop_page: int) -> None:
        """Allocation codes of pages [first_page, stop_page) from the data ranges, a range at
        a time (never page by page: a sparse file of a billion pages has a handful of ranges):
        slots a range covers whole are full, slots it covers in part punched, the rest holes
        (code 0 already)."""
        acr, psize = self._acr, self.physical_size
        full = bytes([FULL]) * min(_ALLOC_WINDOW, stop_page - first_page)
        limit = stop_page * psize
        for start, end in alloc.data_ranges_from(first_page * psize):
            if start >= limit:
                break
            first, stop = -(-start // psize), min(stop_page, end // psize)
            for lo in range(first, stop, _ALLOC_WINDOW):
                hi = min(stop, lo + _ALLOC_WINDOW)
                acr[lo:hi] = full[: hi - lo]
            for part in {start // psize, end // psize} - set(range(first, stop)):
                if part < stop_page and part * psize < end and (part + 1) * psize > start:
                    acr[part] = PUNCHED

    # --- filled by the scan worker ---------------------------------------------------------

    def add(self, info: PageInfo) -> None:
        """Record one page (called in page order from the scan thread)."""
        n = info.page_no
        code = self._type_index.get(info.type_name)
        if code is None:
            # a damaged file can hold thousands of made-up types: past 253, one "OTHER"
            name = info.type_name if len(self.type_names) < 254 else "OTHER"
            code = self._type_index.get(name)
            if code is None:
                code = self._type_index[name] = len(self.type_names)
                self.type_names.append(name)
        self._type[n] = code
        allocation = self._acr[n] & 3
        if info.empty:
            comp, ratio, check = _EMPTY_ALGO, 1, _EMPTY_CHECK
        else:
            comp = _ALGO_CODE[info.compression]
            stored = self.physical_size
            if info.is_compressed and info.stored_size:
                stored = info.stored_size
            ratio = 2 + next(
                (i for i, b in enumerate(RATIO_BOUNDS) if stored / self.logical_size <= b), 4
            )
            if info.checksum_valid is None:
                check = _UNVERIFIABLE
            else:
                check = _VALID if info.checksum_valid else _INVALID
        idx = info.index
        if idx is None:
            self._index[n] = 1
            level_code = 1
        else:
            icode = self._index_code.get(idx.index_id)
            if icode is None and len(self.index_ids) < OTHER_INDEXES - 2:
                icode = self._index_code[idx.index_id] = len(self.index_ids) + 2
                self.index_ids.append(idx.index_id)
            self._index[n] = icode or OTHER_INDEXES
            level = min(idx.level, MAX_LEVEL_CODE - 2)
            self.max_level = max(self.max_level, level)
            level_code = 2 + level
        self._cl[n] = comp | level_code << 4
        if allocation != HOLE and info.is_compressed:
            held = self.physical_size if allocation == FULL else self._held(n)
            if unpunched_bytes(info, held, self.fs_block_size):
                allocation = UNPUNCHED
        self._acr[n] = allocation | check << 2 | ratio << 5
        self.scanned = n + 1

    def _held(self, page: int) -> int:
        """:meth:`allocated_at` for the scan, which asks in page order: the allocation of
        :data:`_HELD_WINDOW` pages worked out at once (a page-compressed file has a data range
        a page, and one lookup of the ranges per page was most of the cost of its map)."""
        base, held = self._held_base, self._held_pages
        if not base <= page < base + len(held):
            first, stop, alloc = self._window
            if alloc is None or not first <= page < stop:
                return self.allocated_at(page)
            count = min(_HELD_WINDOW, self.n_pages - page, stop - page)
            held = self._held_pages = alloc.per_page_allocated(self.physical_size, count, page)
            base = self._held_base = page
        return held[page - base]

    # --- per page, on demand --------------------------------------------------------------

    def allocated_at(self, page: int) -> int:
        """Bytes the filesystem holds in the slot of ``page``: from the map that holds it (the
        file's, or the scan's window), else read now (SEEK_DATA over the slot alone)."""
        if not 0 <= page < self.n_pages:
            return 0
        first, stop, alloc = self._window
        if alloc is not None and first <= page < stop:
            return alloc.per_page_allocated(self.physical_size, 1, page)[0]
        if self.path is None:
            return 0
        lo, hi = page * self.physical_size, (page + 1) * self.physical_size
        try:
            fd, st = open_regular(self.path)
        except InputError:
            return 0
        try:
            ranges, _ = read_window(fd, st.st_size, lo, hi, with_extents=False)
        except OSError:
            return 0
        finally:
            os.close(fd)
        return sum(max(0, min(end, hi) - max(start, lo)) for start, end in ranges)

    def stored_size(self, page: int) -> int | None:
        """The stored image size of a compressed ``page``, read from its header now; None
        when it cannot be read or the header names none."""
        if self.path is None or self.format is None:
            return None
        try:
            fd, _st = open_regular(self.path)
        except InputError:
            return None
        try:
            data = os.pread(fd, self.physical_size, page * self.physical_size)
        except OSError:
            return None
        finally:
            os.close(fd)
        if len(data) < self.physical_size:
            return None
        return read_envelope(data, self.format).stored_size

    def codes(self, mode: Mode, start: int = 0, stop: int | None = None) -> bytes | bytearray:
        """One code per page of ``[start, stop)`` under ``mode`` (indexes of
        :meth:`categories`); for the whole file of the type and index colourings, the model's
        own array, which callers only read."""
        whole = start == 0 and stop is None  # no copy of the whole array (read it only)
        if mode is Mode.TYPE:
            return self._type if whole else self._type[start:stop]
        if mode is Mode.INDEX:
            return self._index if whole else self._index[start:stop]
        packed: bytearray = getattr(self, _PACKED[mode][0])
        out = (packed if whole else packed[start:stop]).translate(_UNPACK[mode])
        known = self.allocation_known - start
        if mode is Mode.ALLOCATION and known < len(out):
            out = bytearray(out)  # the pages whose window's map is not read yet
            out[max(0, known) :] = bytes([UNKNOWN]) * (len(out) - max(0, known))
        return out

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
            return (UNSCANNED, NOT_INDEX, *named, *gap, Category("other indexes", OTHER_COLOR))
        if mode is Mode.LEVEL:
            return (
                UNSCANNED,
                NOT_INDEX,
                *(
                    Category(
                        f"level {lv}"
                        + (" (leaf)" if lv == 0 else "")
                        + ("+" if lv == MAX_LEVEL_CODE - 2 else ""),
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
        codes = self.codes(mode)
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
        seg = self.codes(mode, start, start + count)
        if not seg:
            return 0, True
        first = seg[0]
        if len(seg) == 1 or seg.count(first) == len(seg):
            return first, True
        return Counter(seg).most_common(1)[0][0], False

    def group_counts(self, mode: Mode, start: int, count: int) -> list[tuple[Category, int]]:
        cats = self.categories(mode)
        seg = self.codes(mode, start, start + count)
        return [(cats[c], n) for c, n in Counter(seg).most_common() if c < len(cats)]

    def labels(self, page: int) -> dict[Mode, str]:
        """The page's category under every colouring."""
        return {m: self.categories(m)[self.codes(m, page, page + 1)[0]].label for m in Mode}

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
                acc |= int.from_bytes(self.codes(mode).translate(table), "big")
        return acc.to_bytes(self.n_pages, "big")


def model_for(ts: Tablespace) -> PageMapModel:
    """An empty page map of ``ts`` whose allocation codes :func:`scan_into` fills a window at a
    time (``fstat`` alone here: no map is read)."""
    return PageMapModel(
        ts.n_pages,
        ts.physical_size,
        ts.logical_size,
        ts.allocation_stat[2],
        None,
        ts.path,
        ts.format,
    )


def scan_into(
    ts: Tablespace,
    model: PageMapModel,
    *,
    on_page: Callable[[PageInfo], None] | None = None,
    window_map: Callable[[int, int], tuple[Allocation, WindowCounts]] | None = None,
    schema: TableDef | None = None,
) -> InspectResult:
    """The tablespace view's scan (:func:`~ibdtool.tablespace.inspect_tablespace` in this
    process): each window's allocation map (``window_map``, else
    :meth:`~ibdtool.tablespace.Tablespace.window_allocation`: the view's logs the call) fills
    ``model``'s allocation codes just before the window's pages, each page is added to
    ``model``, then handed to ``on_page`` (progress, cancellation). The file's map is never held
    whole: a few bytes a window's extent, dropped with the window."""
    read = window_map or ts.window_allocation

    def window(start: int, stop: int) -> tuple[Allocation, WindowCounts]:
        alloc, counts = read(start, stop)
        model.fill_window(start, stop, alloc)
        return alloc, counts

    record = model.add
    if on_page is not None:
        hook = on_page

        def both(info: PageInfo) -> None:
            record(info)
            hook(info)

    return inspect_tablespace(
        ts, on_page=record if on_page is None else both, schema=schema, window_map=window
    )
