"""The fill of an index page, from three fields of its header (FORMATS.md §5.1, §5.3).

:func:`index_fill` is the formula (the decoder's, :func:`ibdtool.parsers.page.index_stats`);
:func:`index_fills` and :func:`index_fill_sum` give the same over the header columns of a
chunk of pages (:mod:`ibdtool.parsers.pagecolumns`), in C where the pages share one record
format. Apart from the decoder so that the scans that tally columns (``inspect``) load neither
it nor its per-page record (issue 24, item 4: start-up; ``tests/test_startup.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from operator import sub, truediv

PAGE_NEW_SUPREMUM_END = 120
PAGE_OLD_SUPREMUM_END = 125
_COMPACT = 0x8000  # PAGE_N_HEAP bit 15 (§5.1)


def index_fill(n_heap: int, heap_top: int, garbage: int, logical_size: int) -> tuple[int, float]:
    """(data bytes, fill 0..1) of an index page from its header's PAGE_N_HEAP, PAGE_HEAP_TOP
    and PAGE_GARBAGE (§5.1, §5.3): records between the supremum and the heap top, less the
    deleted ones, against the free space of an empty page. The header alone gives it, so scans
    that inflate only the header report the same fill as whole pages."""
    if n_heap & 0x8000:
        data_size = heap_top - PAGE_NEW_SUPREMUM_END - garbage
        empty_free = logical_size - PAGE_NEW_SUPREMUM_END - 8 - 4
    else:
        data_size = heap_top - PAGE_OLD_SUPREMUM_END - garbage
        empty_free = logical_size - PAGE_OLD_SUPREMUM_END - 12
    data_size = max(0, data_size)
    return data_size, min(1.0, data_size / empty_free) if empty_free > 0 else 0.0


def index_fills(
    n_heap: Sequence[int], heap_top: Sequence[int], garbage: Sequence[int], logical_size: int
) -> list[float]:
    """``index_fill(...)[1]`` of many index pages at once (scans of whole chunks): the same
    floats, computed by ``map`` in C where the pages share one record format."""
    compact = sum(map(_COMPACT.__and__, n_heap)) // _COMPACT
    if 0 < compact < len(n_heap):
        return [
            index_fill(*h, logical_size)[1] for h in zip(n_heap, heap_top, garbage, strict=True)
        ]
    end = PAGE_NEW_SUPREMUM_END if compact else PAGE_OLD_SUPREMUM_END
    empty_free = logical_size - end - 12  # less the directory's two slots and the trailer
    if empty_free <= 0:
        return [0.0] * len(n_heap)
    data = map(max, map(sub, map(end.__rsub__, heap_top), garbage), repeat(0))
    return list(map(min, repeat(1.0), map(truediv, data, repeat(empty_free))))


def index_fill_sum(
    n_heap: Sequence[int], heap_top: Sequence[int], garbage: Sequence[int], logical_size: int
) -> float:
    """``sum(index_fills(...))``: where the pages share one record format and no fill needs
    clamping to 0..1 (every page a server writes), their data bytes summed as integers and
    divided once: one pass in C where the fills took seven; the same sum but for rounding
    in its last bits."""
    if not n_heap:
        return 0.0
    compact = sum(map(_COMPACT.__and__, n_heap)) // _COMPACT
    if compact == len(n_heap) or not compact:
        end = PAGE_NEW_SUPREMUM_END if compact else PAGE_OLD_SUPREMUM_END
        empty_free = logical_size - end - 12  # as index_fills
        used = list(map(sub, heap_top, garbage))  # data bytes + end, page by page
        if empty_free > 0 and min(used) >= end and max(used) - end <= empty_free:
            return (sum(used) - end * len(used)) / empty_free
    return sum(index_fills(n_heap, heap_top, garbage, logical_size))
