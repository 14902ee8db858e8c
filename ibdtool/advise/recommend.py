"""What to choose after a simulation: per block size, the algorithm that saves most and the
cheapest one within 5 points of it, or why compression saves nothing there; and the CPU
trade-off: the cheapest algorithm that saves at least :data:`GOOD_ENOUGH_SHARE` of the best's
saving, when it is cheaper than both (bzip2 saving 65% for 1,220 µs a page against lz4's 52%
for 27 µs).

"Cheapest" is by median CPU per page (compress + decompress, :mod:`ibdtool.advise.cpu_cost`), and
the advice says how sure it is: ``clear`` when the cheapest one's spread lies wholly below every
other candidate's, ``within_noise`` when some overlap it (they are named: any of them will do).

Data, not text: ``simulate --json`` carries it (:func:`simulation_json`, the result and its
recommendations), and the CLI and the TUI word it
(:func:`ibdtool.present.describe.recommendation_text`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ibdtool.advise.simulate import BlockSpec, ScenarioResult, SimResult

#: savings at or below this (percent) count as nothing
NOTHING_PCT = 1.0
#: the cheapest algorithm is looked for among those this close (points) to the best saving
CHEAPEST_WITHIN = 5.0
#: "good enough": saves at least this share of what the best saves ...
GOOD_ENOUGH_SHARE = 0.75
#: ... for this many times less CPU (or more) than the best's or the cheapest close one's
GOOD_ENOUGH_CHEAPER = 2.0

#: how sure the cost ranking is: the cheapest one's spread clear of the others', or overlapping
Certainty = Literal["clear", "within_noise"]

#: why a block size gains nothing: NTFS frees only whole compression units, a block at least
#: half a page can never be freed, the file is already ROW_FORMAT=COMPRESSED, or the data
#: itself does not compress
Reason = Literal[
    "ntfs_unit", "block_too_large", "row_compressed", "already_compressed", "incompressible"
]


@dataclass(frozen=True)
class Recommendation:
    block: BlockSpec
    best: ScenarioResult  #: the real (not what-if) scenario that saves most
    cheapest: ScenarioResult | None  #: cheapest in CPU within 5 points, when not ``best``
    nothing: Reason | None  #: set when even ``best`` saves 1% or less
    #: how sure "cheapest" is (of ``cheapest``, or of ``best`` when it is the cheapest); None
    #: when there was nothing to rank (one candidate, or no timings)
    certainty: Certainty | None = None
    #: the other candidates whose cost spread overlaps the cheapest one's, cheapest first
    ties: tuple[ScenarioResult, ...] = ()
    #: the cheapest in CPU saving at least GOOD_ENOUGH_SHARE of ``best``'s saving, when it is
    #: cheaper than ``best`` and ``cheapest`` (median compress + decompress)
    good_enough: ScenarioResult | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "block_size": self.block.size,
            "ntfs_unit": self.block.ntfs_unit,
            "saves_nothing": self.nothing,
            "best": _scenario_json(self.best),
            "cheapest": None if self.cheapest is None else _scenario_json(self.cheapest),
            "cost_certainty": self.certainty,
            "cost_ties": [_scenario_json(x) for x in self.ties],
            "good_enough": None if self.good_enough is None else _scenario_json(self.good_enough),
            "good_enough_share": GOOD_ENOUGH_SHARE,
        }


def _scenario_json(x: ScenarioResult) -> dict[str, Any]:
    cost = x.cost
    return {
        "server": x.scenario.server,
        "algorithm": x.scenario.algorithm,
        "level": x.scenario.level,
        "saving_pct": round(x.saving_pct, 2),
        "cost": None if cost is None else cost.to_json(),
    }


def rank_by_cost(
    candidates: Sequence[ScenarioResult],
) -> tuple[ScenarioResult, Certainty | None, tuple[ScenarioResult, ...]]:
    """The cheapest of ``candidates`` (by median compress + decompress CPU; those without a
    cost last), how sure that is, and the others whose spread overlaps its own."""
    ranked = sorted(
        candidates,
        key=lambda x: (x.cost is None, x.cost.median if x.cost else 0.0, x.scenario),
    )
    first, others = ranked[0], [x for x in ranked[1:] if x.cost is not None]
    if first.cost is None or not others:
        return first, None, ()
    ties = tuple(x for x in others if x.cost is not None and first.cost.overlaps(x.cost))
    return first, "within_noise" if ties else "clear", ties


def recommendations(r: SimResult) -> list[Recommendation]:
    """One recommendation per simulated block size that has a real (not what-if) scenario."""
    out: list[Recommendation] = []
    blocks = sorted({res.block for res in r.results}, key=lambda b: (b.ntfs_unit or 0, b.size))
    for b in blocks:
        rows = [x for x in r.results if x.block == b and x.scenario.server != "what-if"]
        if not rows:
            continue
        best = max(rows, key=lambda x: x.saving_pct)
        # as rebuilt, the saving includes the rebuild's own: compression must add to it,
        # against the same file written uncompressed; a file compressed today must also beat
        # today's allocation (recompressing it frees nothing the DBA has not already got)
        base = best.uncompressed
        gain = best.saving_pct if not base else 100.0 * (base - best.predicted) / base
        if r.zip_source or r.current.get("compressed_pages"):
            gain = min(gain, best.saving_pct)
        if gain <= NOTHING_PCT:
            why: Reason = (
                "ntfs_unit"
                if b.ntfs_unit
                else "block_too_large"
                if b.size * 2 > r.page_size
                else "row_compressed"
                if r.zip_source
                # the saving is measured against today's allocation: "does not compress" only
                # when the uncompressed data does not shrink either
                else "already_compressed"
                if best.predicted * 100 < r.logical_size * (100 - NOTHING_PCT)
                else "incompressible"
            )
            out.append(Recommendation(b, best, None, why))
            continue
        # no timings when every page looked at was empty: then the best is also the cheapest
        floor = best.saving_pct - CHEAPEST_WITHIN
        good = [x for x in rows if x.saving_pct >= floor and x.cost is not None] or [best]
        cheapest, certainty, ties = rank_by_cost(good)
        out.append(
            Recommendation(
                b,
                best,
                None if cheapest is best else cheapest,
                None,
                certainty,
                ties,
                good_enough(rows, best, cheapest),
            )
        )
    return out


def good_enough(
    rows: Sequence[ScenarioResult], best: ScenarioResult, cheapest: ScenarioResult
) -> ScenarioResult | None:
    """The cheapest of ``rows`` (median compress + decompress) that saves at least
    :data:`GOOD_ENOUGH_SHARE` of ``best``'s saving, if it costs :data:`GOOD_ENOUGH_CHEAPER`
    times less than ``cheapest`` (the cheapest within 5 points, or ``best`` itself), their
    spreads apart."""
    floor = best.saving_pct * GOOD_ENOUGH_SHARE
    timed = [x for x in rows if x.cost is not None and x.saving_pct >= floor]
    if not timed or cheapest.cost is None:
        return None
    pick = min(timed, key=lambda x: (x.cost.median if x.cost else 0.0, -x.saving_pct))
    assert pick.cost is not None
    worth = pick.cost.median * GOOD_ENOUGH_CHEAPER <= cheapest.cost.median
    return pick if worth and not pick.cost.overlaps(cheapest.cost) else None


def simulation_json(r: SimResult) -> dict[str, Any]:
    """``simulate --json``'s document of one file: the result's fields, then its
    recommendations."""
    return {**r.to_json(), "recommendations": [rec.to_json() for rec in recommendations(r)]}
