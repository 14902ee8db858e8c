"""What to choose after a simulation: per block size, the algorithm that saves most and the
cheapest one within 5 points of it, or why compression saves nothing there.

Data, not text: ``simulate --json`` carries it, and the CLI and the TUI word it
(:func:`ibdtool.describe.recommendation_text`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ibdtool.simulate import BlockSpec, ScenarioResult, SimResult

#: savings at or below this (percent) count as nothing
NOTHING_PCT = 1.0
#: the cheapest algorithm is looked for among those this close (points) to the best saving
CHEAPEST_WITHIN = 5.0

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

    def to_json(self) -> dict[str, Any]:
        return {
            "block_size": self.block.size,
            "ntfs_unit": self.block.ntfs_unit,
            "saves_nothing": self.nothing,
            "best": _scenario_json(self.best),
            "cheapest": None if self.cheapest is None else _scenario_json(self.cheapest),
        }


def _scenario_json(x: ScenarioResult) -> dict[str, Any]:
    return {
        "server": x.scenario.server,
        "algorithm": x.scenario.algorithm,
        "level": x.scenario.level,
        "saving_pct": round(x.saving_pct, 2),
    }


def recommendations(r: SimResult) -> list[Recommendation]:
    """One recommendation per simulated block size that has a real (not what-if) scenario."""
    out: list[Recommendation] = []
    blocks = sorted({res.block for res in r.results}, key=lambda b: (b.ntfs_unit or 0, b.size))
    for b in blocks:
        rows = [x for x in r.results if x.block == b and x.scenario.server != "what-if"]
        if not rows:
            continue
        best = max(rows, key=lambda x: x.saving_pct)
        if best.saving_pct <= NOTHING_PCT:
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
        good = [x for x in rows if x.saving_pct >= floor and x.compress_us] or [best]
        cheapest = min(good, key=lambda x: (x.compress_us or 0) + (x.decompress_us or 0))
        out.append(Recommendation(b, best, None if cheapest is best else cheapest, None))
    return out
