"""``too_deep`` (:mod:`ibdtool.parsers.jsontext`), the depth check every reader of outside JSON
shares (SDI records on every MySQL 8 file of a report), against a second computation: the
depth measured recursively on the same values."""

from __future__ import annotations

import json
import random
from typing import Any

from ibdtool.parsers.jsontext import too_deep
from ibdtool.tablespace import Tablespace
from tests.conftest import SAMPLES


def _depth(obj: Any) -> int:
    """Containers nested in ``obj``, counted recursively (the reference)."""
    if isinstance(obj, dict):
        return 1 + max([_depth(v) for v in obj.values()], default=0)
    if isinstance(obj, list):
        return 1 + max([_depth(v) for v in obj], default=0)
    return 0


def _random_value(rng: random.Random, budget: int) -> Any:
    roll = rng.random()
    if budget <= 0 or roll < 0.3:
        return rng.choice([1, "x", None, 2.5, True, "[{"])
    n = rng.randrange(0, 4)
    if roll < 0.65:
        return [_random_value(rng, budget - 1) for _ in range(n)]
    return {f"k{i}": _random_value(rng, budget - 1) for i in range(n)}


def test_too_deep_is_the_recursive_depth_on_random_values() -> None:
    rng = random.Random(24)
    seen = set()
    for _ in range(3000):
        value = rng.choice([list, dict])()
        value = (
            [_random_value(rng, rng.randrange(1, 12))]
            if isinstance(value, list)
            else {
                "a": _random_value(rng, rng.randrange(1, 12)),
                "b": [_random_value(rng, 3)],
            }
        )
        depth = _depth(value)
        seen.add(depth)
        for limit in (depth - 1, depth, depth + 1):
            assert too_deep(value, limit) is (depth > limit), (value, limit)
    assert len(seen) >= 8  # shallow and deep values both met


def test_too_deep_on_deep_chains_and_real_sdi() -> None:
    chain: list[Any] = []
    cur = chain
    for _ in range(100):
        nxt: list[Any] = []
        cur.append({"x": nxt})
        cur = nxt
    assert _depth(chain) == 201
    assert too_deep(chain, 200) and not too_deep(chain, 201)
    with Tablespace(SAMPLES / "mysql80" / "plain.ibd") as ts:
        entries = ts.sdi()
    assert entries
    for e in entries:
        depth = _depth(json.loads(json.dumps(e.obj)))
        assert depth > 3
        assert too_deep(e.obj, depth - 1) and not too_deep(e.obj, depth)
