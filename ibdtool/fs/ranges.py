"""Byte ranges ``[start, end)`` kept packed: sorted, disjoint, 16 bytes a range.

A page-compressed tablespace has a data range per page: 6.5 million of them in a 100 GB
table. As a tuple of ``(start, end)`` tuples that is ~120 bytes a range (a tuple, two
ints, a pointer), 780 MB for that table; here it is two ``array('Q')``: the starts and the
ends. :class:`PackedRanges` reads like the tuple of pairs it replaces (``len``, indexing,
iteration, ``==`` with any sequence of pairs), so callers that walk ranges need no change;
the ones that search use :meth:`PackedRanges.index_at` (a bisection over the starts).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from operator import gt, lt
from typing import overload

__all__ = ["PackedRanges"]


class PackedRanges(Sequence[tuple[int, int]]):
    """Sorted, disjoint byte ranges, built by :meth:`add` in file order (touching or
    overlapping ranges are merged as they come) and read as a sequence of ``(start, end)``."""

    __slots__ = ("_ends", "_starts")

    def __init__(self, pairs: Iterable[tuple[int, int]] = ()) -> None:
        self._starts: array[int] = array("Q")
        self._ends: array[int] = array("Q")
        for start, end in pairs:
            self.add(start, end)

    def add(self, start: int, end: int) -> None:
        """Append ``[start, end)`` (empty ranges are dropped); one that starts at or before
        the last range's end extends it. Ranges must come in order of their starts."""
        if end <= start:
            return
        ends = self._ends
        if ends and start <= ends[-1]:
            if end > ends[-1]:
                ends[-1] = end
            return
        self._starts.append(start)
        ends.append(end)

    def extend(self, starts: Sequence[int], ends: Sequence[int]) -> None:
        """:meth:`add` of each ``(starts[k], ends[k])``; at C speed when they are sorted,
        none empty and none touching another or the last range (a FIEMAP batch of a
        page-compressed file: an extent a page), else one :meth:`add` at a time."""
        if not starts:
            return
        ok = (
            all(map(lt, starts, ends))
            and all(map(gt, starts[1:], ends[:-1]))
            and (not self._ends or starts[0] > self._ends[-1])
        )
        if ok:
            self._starts.extend(starts)
            self._ends.extend(ends)
            return
        for start, end in zip(starts, ends, strict=True):
            self.add(start, end)

    @property
    def starts(self) -> array[int]:
        """The ranges' starts, in order (for bisection; do not change)."""
        return self._starts

    @property
    def ends(self) -> array[int]:
        """The ranges' ends, in order (do not change)."""
        return self._ends

    def index_at(self, pos: int) -> int:
        """Index of the last range starting at or before ``pos`` (0 when none does): where a
        walk for the ranges that reach past ``pos`` begins."""
        return max(0, bisect_right(self._starts, pos) - 1)

    def total(self) -> int:
        """Bytes inside the ranges."""
        return sum(self._ends) - sum(self._starts)

    def __len__(self) -> int:
        return len(self._starts)

    @overload
    def __getitem__(self, index: int) -> tuple[int, int]: ...
    @overload
    def __getitem__(self, index: slice) -> PackedRanges: ...
    def __getitem__(self, index: int | slice) -> tuple[int, int] | PackedRanges:
        if isinstance(index, slice):
            out = PackedRanges()
            out._starts = self._starts[index]
            out._ends = self._ends[index]
            return out
        return self._starts[index], self._ends[index]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self._starts, self._ends, strict=True)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedRanges):
            return self._starts == other._starts and self._ends == other._ends
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return len(other) == len(self) and all(
                tuple(o) == s for o, s in zip(other, self, strict=True)
            )
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._starts.tobytes(), self._ends.tobytes()))

    def __repr__(self) -> str:
        if len(self) > 8:
            return f"PackedRanges(<{len(self)} ranges>)"
        return f"PackedRanges({list(self)!r})"

    def __getstate__(self) -> tuple[bytes, bytes]:
        return self._starts.tobytes(), self._ends.tobytes()

    def __setstate__(self, state: tuple[bytes, bytes]) -> None:
        self._starts = array("Q", state[0])
        self._ends = array("Q", state[1])
