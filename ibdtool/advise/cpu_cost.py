"""CPU cost of codecs, measured so that two runs agree: CPU time, repeated, median and spread.

One timing of a codec on a few pages swings several-fold between identical runs (another
process takes the core, the codec's first call pays for its set-up, caches are cold). Here
every codec works on the same pages and is timed with the CPU clock of the thread doing it
(``time.thread_time_ns``: time that thread spent on a core, not wall time, so neither other
processes nor other threads of this one — the TUI's — are counted). A warm-up pass on a few
pages (spread over them) is not counted; it prices a page, and so sets how many pages fit
:data:`BUDGET_NS` of CPU five times over (fewer pages when the codecs are slow). Then 3 to 5
repetitions, a fourth and fifth only while the budget lasts, each timing every codec once in
a rotated order, so that a slow spell falls on all of them. Each codec's figure per page is
the median of its repetitions, with their spread: the interquartile range (the middle half of
the runs; with 3 runs, halfway from the middle one to each end). Two codecs whose spreads
overlap cost the same as far as this run can tell (:meth:`Cost.overlaps`). Interference only
ever adds time, so one slow run is an outlier on one side: it moves min–max (kept beside) but
hardly the quartiles, and does not make two clearly different codecs look alike.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

MIN_REPETITIONS = 3
MAX_REPETITIONS = 5
#: pages timed at most, and at least (when the file has them) however slow the codecs
MAX_PAGES = 64
MIN_PAGES = 4
#: pages of the warm-up pass, which also prices a page for the budget
WARMUP_PAGES = 4
#: CPU the timed repetitions may take, all codecs together (0.3 s)
BUDGET_NS = 300_000_000
#: the clock, named for ``--json`` and the notes
CLOCK = "thread CPU time"


@dataclass(frozen=True)
class Cost:
    """CPU µs per page of one codec at one task, one figure per repetition (to the ns)."""

    samples: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.samples:
            raise ValueError("a cost needs at least one repetition")
        object.__setattr__(self, "samples", tuple(round(s, 3) for s in self.samples))

    @property
    def median(self) -> float:
        return float(statistics.median(self.samples))

    @property
    def q1(self) -> float:
        """The first quartile (inclusive method: interpolated between the runs, sorted)."""
        return self._quartiles()[0]

    @property
    def q3(self) -> float:
        return self._quartiles()[2]

    def _quartiles(self) -> list[float]:
        if len(self.samples) == 1:
            return [self.samples[0]] * 3
        return statistics.quantiles(self.samples, n=4, method="inclusive")

    @property
    def low(self) -> float:
        return min(self.samples)

    @property
    def high(self) -> float:
        return max(self.samples)

    def overlaps(self, other: Cost) -> bool:
        """The spreads (q1–q3) share a value: this run cannot tell which of the two costs
        less."""
        return self.q1 <= other.q3 and other.q1 <= self.q3

    def __add__(self, other: Cost) -> Cost:
        """Repetition by repetition (compress + decompress in the same repetition)."""
        return Cost(tuple(a + b for a, b in zip(self.samples, other.samples, strict=True)))

    def to_json(self) -> dict[str, Any]:
        return {
            "median_us": round(self.median, 3),
            "q1_us": round(self.q1, 3),
            "q3_us": round(self.q3, 3),
            "min_us": self.low,
            "max_us": self.high,
            "samples_us": list(self.samples),
        }


class Codec(Protocol):
    def compress(self, data: bytes) -> bytes: ...

    def decompress(self, payload: bytes, size: int) -> bytes: ...


K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class CostRun(Generic[K]):
    """What :func:`measure` found: per codec key, compress and decompress costs."""

    pages: int
    repetitions: int
    compress: dict[K, Cost]
    decompress: dict[K, Cost]


def plan(per_page_ns: float, pages: int, budget_ns: int = BUDGET_NS) -> tuple[int, int]:
    """(pages, repetitions) to time, for codecs costing ``per_page_ns`` together on a page:
    as many pages (up to :data:`MAX_PAGES`) as 5 repetitions allow in ``budget_ns``, at least
    :data:`MIN_PAGES`; then as many repetitions, 3 to 5, as the budget allows."""
    per_page = max(1.0, per_page_ns)
    n = int(budget_ns // (MAX_REPETITIONS * per_page))
    n = min(pages, MAX_PAGES, max(MIN_PAGES, n))
    reps = int(budget_ns // (max(1, n) * per_page))
    return n, min(MAX_REPETITIONS, max(MIN_REPETITIONS, reps))


def measure(
    work: Mapping[K, tuple[Codec, Sequence[bytes]]],
    *,
    budget_ns: int = BUDGET_NS,
    check: Callable[[], None] | None = None,
    clock: Callable[[], int] | None = None,
) -> CostRun[K] | None:
    """Time every codec of ``work`` (key → codec and its inputs, the same pages for all, in
    the same order) as the module doc says; None when there is nothing to compress.
    ``check()`` is called between codecs (it may raise to cancel)."""
    clock = clock or time.thread_time_ns
    keys = list(work)
    n_pages = min((len(items) for _codec, items in work.values()), default=0)
    if not keys or n_pages == 0:
        return None
    warm = range(0, n_pages, max(1, n_pages // WARMUP_PAGES))[:WARMUP_PAGES]
    spent = 0
    for key in keys:
        codec, items = work[key]
        t0 = clock()
        for i in warm:
            codec.decompress(codec.compress(items[i]), len(items[i]))
        spent += clock() - t0
        if check:
            check()
    pages, reps = plan(spent / len(warm), n_pages, budget_ns)
    comp: dict[K, list[float]] = {k: [] for k in keys}
    decomp: dict[K, list[float]] = {k: [] for k in keys}
    spent = 0
    for rep in range(MAX_REPETITIONS):
        if rep >= max(MIN_REPETITIONS, reps) or (
            rep >= MIN_REPETITIONS and spent / rep * (rep + 1) > budget_ns
        ):
            break
        turn = rep % len(keys)
        for key in keys[turn:] + keys[:turn]:
            codec, items = work[key]
            chosen = items[:pages]
            t0 = clock()
            payloads = [codec.compress(data) for data in chosen]
            t1 = clock()
            for payload, data in zip(payloads, chosen, strict=True):
                codec.decompress(payload, len(data))
            t2 = clock()
            spent += t2 - t0
            comp[key].append((t1 - t0) / pages / 1000)
            decomp[key].append((t2 - t1) / pages / 1000)
            if check:
                check()
    return CostRun(
        pages,
        len(comp[keys[0]]),
        {k: Cost(tuple(v)) for k, v in comp.items()},
        {k: Cost(tuple(v)) for k, v in decomp.items()},
    )
