"""The benches' verdict rule (bench/sidebyside.py): best wall times when the load average at a
row's start is under 1.5, else median CPU seconds — over the cores for a command that splits a
file over every core — and the line says it is an estimate. Expected values worked by hand."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

# bench/ is scripts, not a package: load its module by path, under a name of its own
_spec = importlib.util.spec_from_file_location(
    "bench_sidebyside", Path(__file__).resolve().parent.parent / "bench" / "sidebyside.py"
)
assert _spec is not None and _spec.loader is not None
sb = sys.modules.setdefault("bench_sidebyside", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(sb)


def _c(walls: list[float], cpus: list[float], splits: bool = False) -> object:
    return sb.Contender("x", ["true"], walls=walls, cpus=cpus, splits=splits)


def test_idle_compares_best_wall_times() -> None:
    anchor = _c([1.6, 1.0, 1.2], [0.1, 0.1, 0.1])
    mine = _c([2.0, 3.0, 2.5], [0.1, 0.1, 0.1])  # CPU alone would say 1.0×
    line = sb.verdict(sb.Goal("at_most", 1.3), mine, anchor, load=0.4, cores=2)
    assert line == "wall, best runs: 2.00× x (goal ≤ 1.3×): **not met**"


def test_busy_compares_cpu_over_the_cores_of_a_split_command() -> None:
    anchor = _c([9.0, 9.0, 9.0], [1.0, 1.2, 1.0])  # one process: median 1.0
    mine = _c([0.5, 0.5, 0.5], [2.0, 2.4, 2.2], splits=True)  # median 2.2 over 2 cores
    line = sb.verdict(sb.Goal("at_most", 1.3), mine, anchor, load=1.5, cores=2)
    assert line == ("machine busy (load 1.5): CPU-based estimate, 1.10× x (goal ≤ 1.3×): met")
    not_split = _c([0.5], [2.2])
    line = sb.verdict(sb.Goal("at_most", 1.3), not_split, anchor, load=3.0, cores=2)
    assert line.endswith("2.20× x (goal ≤ 1.3×): **not met**")


def test_share_of_the_anchors_speed() -> None:
    bare = _c([3.1, 3.3], [6.0, 6.0], splits=True)
    assert sb.verdict(sb.Goal("share", 0.85), _c([3.5], [7.0]), bare, 1.0, 2).endswith(
        "89% of the speed of x (goal ≥ 85%): met"
    )
    assert sb.verdict(sb.Goal("share", 0.85), _c([4.2], [8.4]), bare, 1.0, 2).endswith(
        "74% of the speed of x (goal ≥ 85%): **not met**"
    )
    near = sb.verdict(sb.Goal("share", 0.85), _c([3.1 / 0.849], [1.0]), bare, 1.0, 2)
    assert near.endswith("84.9% of the speed of x (goal ≥ 85%): **not met**")  # not "85%"
    near = sb.verdict(sb.Goal("at_most", 1.0), _c([1.004], [1.0]), _c([1.0], [1.0]), 1.0, 2)
    assert near.endswith("1.004× x (goal ≤ 1.0×): **not met**")


def test_seconds_scaled_and_in_milliseconds() -> None:
    tui = _c([4.0, 4.4], [3.0, 3.0])
    goal = sb.Goal("seconds", 3.0, scale=1e9 / 1_459_617_792, note=" for 1 GB")
    assert sb.verdict(goal, tui, tui, 0.2, 2).endswith("2.74 s for 1 GB (goal ≤ 3 s): met")
    start = _c([0.061, 0.070], [0.050, 0.054])
    idle = sb.verdict(sb.Goal("seconds", 0.060), start, start, 0.2, 2)
    assert idle.endswith("61 ms (goal ≤ 60 ms): **not met**")
    busy = sb.verdict(sb.Goal("seconds", 0.060), start, start, 2.0, 2)  # CPU median 52 ms
    assert busy.endswith("52 ms (goal ≤ 60 ms): met")
