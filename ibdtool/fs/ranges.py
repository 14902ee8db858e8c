"""Byte ranges ``[start, end)`` kept packed: sorted, disjoint, ~2.5 bytes a range.

A page-compressed tablespace has a data range per page: 6.5 million of them in a 100 GB
table. As a tuple of ``(start, end)`` tuples that is ~120 bytes a range (780 MB for that
table); as two ``array('Q')`` 16 bytes (104 MB). Here the ranges are kept as their deltas
(each range's length, and the gap before it), :data:`CHUNK` ranges a chunk: a chunk holds its
first start, and its deltas divided by a unit in the narrowest array that holds them. The
unit is 256 where every delta is a multiple of it below 65,536 (FIEMAP's and SEEK_DATA's
ranges are whole filesystem blocks, and a compressed page's data and hole are a few blocks
each): a byte a delta, cut out of the deltas' bytes; else their greatest common divisor. A
range then costs 2 bytes (``array('B')``) plus its share of a chunk's ~90 bytes of
bookkeeping: ~2.5 bytes; any input is exact (an unaligned or long delta only widens its own
chunk).

:class:`PackedRanges` reads like the tuple of pairs it replaces (``len``, indexing,
iteration, ``==`` with any sequence of pairs); a walk from a range on is
:meth:`PackedRanges.pairs_from`, found by :meth:`PackedRanges.index_at` (a bisection over
the chunks' starts, then inside one chunk). Iteration decodes a chunk at a time at C speed
(``itertools.accumulate``), never the whole map at once.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate, chain, islice, repeat
from math import gcd
from operator import add, eq, floordiv, mul, sub
from typing import overload

__all__ = ["CHUNK", "PackedRanges"]

#: ranges a chunk: its first start (8 bytes), unit (8) and array (~64 bytes of header) are
#: shared by this many ranges; decoding one chunk (a lookup, a bisection) makes 2 x CHUNK ints
CHUNK = 256
#: deltas an open chunk holds when full: the first range's length, then a gap and a length each
_FULL = 2 * CHUNK - 1
#: array type codes from narrow to wide, with the largest value each holds
_WIDTHS = tuple((code, (1 << (8 * array(code).itemsize)) - 1) for code in "BHIQ")

#: the byte of a little- or big-endian u64 that holds its bits 8 to 15
_LANE = 1 if sys.byteorder == "little" else 6
#: the largest offset a map holds (as the arrays it replaced, and as FIEMAP's u64)
_LAST = (1 << 64) - 1

Pair = tuple[int, int]


def _outside(start: int, end: int) -> Exception:
    if start < 0:
        return ValueError(f"a range cannot start before 0: [{start}, {end})")
    return OverflowError(f"a range cannot end past 2**64 - 1: [{start}, {end})")


def _narrowest(top: int) -> str:
    for code, most in _WIDTHS:
        if top <= most:
            return code
    raise OverflowError(f"a range delta of {top} bytes does not fit 64 bits")  # pragma: no cover


class PackedRanges(Sequence[Pair]):
    """Sorted, disjoint byte ranges, built by :meth:`add` (or :meth:`extend`) in file order
    (touching or overlapping ranges are merged as they come) and read as a sequence of
    ``(start, end)``. See the module doc for the layout."""

    __slots__ = ("_bases", "_cache", "_chunks", "_last_end", "_n", "_open", "_total", "_units")

    #: ranges a chunk (:data:`CHUNK`): chunk ``c`` holds ranges ``c * CHUNK`` on
    CHUNK = CHUNK

    def __init__(self, pairs: Iterable[Pair] = ()) -> None:
        self._bases: array[int] = array("Q")  # each chunk's first start (the open one's last)
        self._units: array[int] = array("Q")  # each sealed chunk's delta divisor
        self._chunks: list[array[int]] = []  # sealed chunks' deltas / unit
        self._open: array[int] = array("Q")  # the open chunk's deltas, in bytes
        self._last_end = 0
        self._n = 0
        self._total = 0
        self._cache: tuple[int, array[int]] | None = None  # the last sealed chunk decoded
        for start, end in pairs:
            self.add(start, end)

    # --- building --------------------------------------------------------------------------

    def add(self, start: int, end: int) -> None:
        """Append ``[start, end)`` (empty ranges are dropped); one that starts at or before
        the last range's end extends it. Ranges must come in order of their starts."""
        if end <= start:
            return
        if start < 0 or end > _LAST:
            raise _outside(start, end)
        last = self._last_end
        if self._n and start <= last:
            if end > last:
                self._open[-1] += end - last
                self._total += end - last
                self._last_end = end
            return
        opened = self._open
        if len(opened) >= _FULL:
            self._seal()
            opened = self._open
        if opened:
            opened.append(start - last)
        else:
            self._bases.append(start)
        opened.append(end - start)
        self._n += 1
        self._total += end - start
        self._last_end = end

    def extend(self, starts: Sequence[int], ends: Sequence[int]) -> None:
        """:meth:`add` of each ``(starts[k], ends[k])``; at C speed when they are sorted,
        none empty and none touching another or the last range (a FIEMAP batch of a
        page-compressed file: an extent a page), else one :meth:`add` at a time. The deltas
        are made once, as lists (small ints: checked and summed faster than the offsets)."""
        if not starts:
            return
        n = len(starts)
        lengths = list(map(sub, ends, starts))
        gaps = list(map(sub, starts, chain((self._last_end,), ends)))
        ok = (
            starts[0] >= 0
            and ends[-1] <= _LAST
            and min(lengths) > 0
            and (min(gaps) > 0 if self._n else n == 1 or min(islice(gaps, 1, None)) > 0)
        )
        if not ok:
            for start, end in zip(starts, ends, strict=True):
                self.add(start, end)
            return
        i = 0
        while i < n:
            room = (_FULL - len(self._open)) // 2
            if not self._n or room == 0:  # the first range of a new chunk
                self.add(starts[i], ends[i])
                i += 1
                continue
            k = min(room, n - i)
            part = [0] * (2 * k)
            part[0::2] = gaps[i : i + k]
            part[1::2] = piece = lengths[i : i + k]
            self._open.fromlist(part)
            self._n += k
            self._total += sum(piece)
            self._last_end = ends[i + k - 1]
            i += k

    def _seal(self) -> None:
        """The open chunk, full, kept as its deltas over their divisor, narrowest; where
        every delta is a multiple of 256 below 65,536 (a compressed page's data and hole in
        filesystem blocks), as their second byte, cut out of the array's bytes at C speed."""
        deltas = self._open
        raw = deltas.tobytes()
        lanes = bytearray(raw)
        lanes[_LANE::8] = bytes(len(deltas))
        if lanes.count(0) == len(lanes):
            self._chunks.append(array("B", raw[_LANE::8]))
            self._units.append(256)
            self._open = array("Q")
            return
        unit = gcd(*deltas)
        code = _narrowest(max(deltas) // unit)
        if unit > 1:
            self._chunks.append(array(code, map(floordiv, deltas, repeat(unit))))
        else:
            self._chunks.append(array(code, deltas))
        self._units.append(unit)
        self._open = array("Q")

    # --- reading ---------------------------------------------------------------------------

    def _flat(self, c: int) -> Iterator[int]:
        """Chunk ``c``'s ranges as ``start0, end0, start1, end1, ...``, made as read."""
        base = self._bases[c]
        if c == len(self._chunks):
            return accumulate(self._open, initial=base)
        unit, deltas = self._units[c], self._chunks[c]
        if unit == 1:
            return accumulate(deltas, initial=base)
        if base % unit == 0:  # aligned as the deltas are: one step less a value
            return map(mul, accumulate(deltas, initial=base // unit), repeat(unit))
        return map(add, map(mul, accumulate(deltas, initial=0), repeat(unit)), repeat(base))

    def _decode(self, c: int) -> array[int]:
        """:meth:`_flat` kept in an array (for lookups)."""
        return array("Q", self._flat(c))

    def _positions(self, c: int) -> array[int]:
        """:meth:`_decode`, the last sealed chunk asked for kept (lookups come near each
        other: a bisection, then a walk from there)."""
        cached = self._cache
        if cached is not None and cached[0] == c:
            return cached[1]
        positions = self._decode(c)
        if c < len(self._chunks):
            self._cache = (c, positions)
        return positions

    def _chunk_pairs(self, c: int) -> Iterator[Pair]:
        flat = self._flat(c)
        return zip(flat, flat, strict=True)

    def pairs_from(self, index: int) -> Iterator[Pair]:
        """The ranges from the ``index``-th on, a chunk decoded at a time."""
        if index < 0:
            index = max(0, index + self._n)
        if index >= self._n:
            return iter(())
        c, k = divmod(index, CHUNK)
        flat = iter(self._positions(c)[2 * k :])
        later = map(self._chunk_pairs, range(c + 1, len(self._bases)))
        return chain(zip(flat, flat, strict=True), chain.from_iterable(later))

    def close_chunk_end(self, c: int, after: int, gap: int) -> int | None:
        """Where chunk ``c``'s last range ends, when the chunk is sealed and none of its ranges
        starts ``gap`` bytes or more after the end before it (its first range: after
        ``after``, the end of the range before the chunk); else None. For a walk that joins
        ranges closer than ``gap`` (``Tablespace.page_runs``): a chunk at a time, from its
        deltas (its gaps are every second one), not a range at a time."""
        if c >= len(self._chunks) or self._bases[c] - after >= gap:
            return None
        deltas, unit = self._chunks[c], self._units[c]
        if len(deltas) > 1 and max(deltas[1::2]) * unit >= gap:
            return None
        return self._bases[c] + sum(deltas) * unit

    def index_at(self, pos: int) -> int:
        """Index of the last range starting at or before ``pos`` (0 when none does): where a
        walk for the ranges that reach past ``pos`` begins."""
        c = bisect_right(self._bases, pos) - 1
        if c < 0:
            return 0
        starts = self._positions(c)[0::2]
        return c * CHUNK + bisect_right(starts, pos) - 1

    def total(self) -> int:
        """Bytes inside the ranges."""
        return self._total

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> Pair: ...
    @overload
    def __getitem__(self, index: slice) -> PackedRanges: ...
    def __getitem__(self, index: int | slice) -> Pair | PackedRanges:
        if isinstance(index, slice):
            lo, hi, step = index.indices(self._n)
            if step == 1:
                picked: Iterable[Pair] = islice(self.pairs_from(lo), max(0, hi - lo))
            else:
                picked = [self[i] for i in range(lo, hi, step)]
            out = PackedRanges()
            pairs = iter(picked)
            while part := list(islice(pairs, CHUNK)):
                starts, ends = zip(*part, strict=True)
                out.extend(starts, ends)
            return out
        if index < 0:
            index += self._n
        if not 0 <= index < self._n:
            raise IndexError("PackedRanges index out of range")
        c, k = divmod(index, CHUNK)
        positions = self._positions(c)
        return positions[2 * k], positions[2 * k + 1]

    def __iter__(self) -> Iterator[Pair]:
        return chain.from_iterable(map(self._chunk_pairs, range(len(self._bases))))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return len(other) == self._n and all(map(eq, map(tuple, other), self))
        return NotImplemented

    def __hash__(self) -> int:
        # the layout is a function of the ranges alone (chunks are cut every CHUNK ranges,
        # each kept at its divisor and narrowest width), so equal maps hash alike
        return hash(self.__getstate__())

    def __repr__(self) -> str:
        if self._n > 8:
            return f"PackedRanges(<{self._n} ranges>)"
        return f"PackedRanges({list(self)!r})"

    def __getstate__(self) -> tuple[object, ...]:
        chunks = tuple((a.typecode, a.tobytes()) for a in self._chunks)
        return (
            self._bases.tobytes(),
            self._units.tobytes(),
            chunks,
            self._open.tobytes(),
            self._last_end,
            self._n,
            self._total,
        )

    def __setstate__(self, state: tuple[object, ...]) -> None:
        bases, units, chunks, opened, last_end, n, total = state
        assert isinstance(bases, bytes) and isinstance(units, bytes)
        assert isinstance(chunks, tuple) and isinstance(opened, bytes)
        assert isinstance(last_end, int) and isinstance(n, int) and isinstance(total, int)
        self._bases = array("Q", bases)
        self._units = array("Q", units)
        self._chunks = [array(code, raw) for code, raw in chunks]
        self._open = array("Q", opened)
        self._last_end, self._n, self._total = last_end, n, total
        self._cache = None
