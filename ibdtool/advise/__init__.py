"""Simulation and advice: what compression would allocate, and what to choose.

- ``simulate``: predict what page compression (or ROW_FORMAT=COMPRESSED) would allocate.
- ``recommend``: per block size, the algorithm that saves most and the cheapest close to it.
- ``cpu_cost``: the CPU cost of codecs, measured so that two runs agree.
- ``rebuild``: the file a conversion's rebuild writes (records repacked by the bulk load),
  whose pages ``simulate`` compresses by default.
- ``estimate``: a predicted quantity with its 95% interval and basis, the shape of every
  prediction.

Uses :mod:`ibdtool.tablespace` and :mod:`ibdtool.fs`. New here: other predictions.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ibdtool.advise.cpu_cost import CLOCK, Cost
    from ibdtool.advise.estimate import Estimate
    from ibdtool.advise.rebuild import RebuiltImage, plan_rebuild, rebuilt_allocation
    from ibdtool.advise.recommend import (
        CHEAPEST_WITHIN,
        GOOD_ENOUGH_SHARE,
        Recommendation,
        recommendations,
        simulation_json,
    )
    from ibdtool.advise.simulate import (
        DEFAULT_SCENARIOS,
        BlockSpec,
        Scenario,
        ScenarioResult,
        SimResult,
        parse_algorithms,
        parse_block_sizes,
        simulate_path,
        wants_row_compressed,
    )
else:
    from ibdtool.exports import lazy

    __getattr__, __dir__ = lazy(
        __name__,
        {
            "cpu_cost": "CLOCK Cost",
            "estimate": "Estimate",
            "rebuild": "RebuiltImage plan_rebuild rebuilt_allocation",
            "recommend": (
                "CHEAPEST_WITHIN GOOD_ENOUGH_SHARE Recommendation recommendations simulation_json"
            ),
            "simulate": (
                "BlockSpec DEFAULT_SCENARIOS Scenario ScenarioResult SimResult parse_algorithms "
                "parse_block_sizes simulate_path wants_row_compressed"
            ),
        },
    )
