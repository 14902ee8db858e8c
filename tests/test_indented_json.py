""":func:`ibdtool.cli.indented_json.dumps` writes what ``json.dumps(value, indent=2,
default=str)`` writes, byte for byte: on the report row of every sample and corpus file (the
values it was made for) and on generated values of every JSON type and of the types ``json``
converts (keys that are not strings, subclasses, objects for ``default``, NaN, deep nesting).
The oracle is the standard library's encoder."""

from __future__ import annotations

import enum
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ibdtool.cli.indented_json import MAX_DEPTH, dumps
from ibdtool.report import ScanOptions, discover, scan_one
from tests.catalog import CORPUS
from tests.cli_runner import REPO


def _json(value: Any, level: int = 0) -> str:
    text = json.dumps(value, indent=2, default=str)
    return text.replace("\n", "\n" + "  " * level)


def _rows(root: Path) -> list[dict[str, Any]]:
    return [scan_one(t, ScanOptions()) for t in discover([root])]


@pytest.mark.parametrize("root", [REPO / "samples", CORPUS], ids=["samples", "corpus"])
def test_every_report_row_is_jsons_text(root: Path) -> None:
    if not root.is_dir():
        pytest.skip(f"{root} not here")
    rows = _rows(root)
    assert len(rows) > 30
    for row in rows:
        for level in (0, 2):
            assert dumps(row, level) == _json(row, level), row["path"]


class Colour(enum.Enum):
    RED = "red"


class Size(enum.IntEnum):
    BIG = 1 << 40


class Word(enum.StrEnum):
    ZLIB = "zlib"


class Number(float):
    pass


class Mapping(dict[Any, Any]):
    pass


_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(1 << 200), max_value=1 << 200)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
    | st.sampled_from([Colour.RED, Size.BIG, Word.ZLIB, Number(2.5), Decimal("1.10"), Path("/x")])
)
_keys = st.text(max_size=8) | st.integers() | st.floats() | st.booleans() | st.none()


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return (
        st.lists(children, max_size=5)
        | st.lists(children, max_size=5).map(tuple)
        | st.dictionaries(_keys, children, max_size=5)
        | st.dictionaries(st.text(max_size=4), children, max_size=3).map(Mapping)
    )


@settings(max_examples=400, deadline=None)
@given(st.recursive(_scalars, _containers, max_leaves=40), st.integers(0, 3))
def test_generated_values_are_jsons_text(value: Any, level: int) -> None:
    assert dumps(value, level) == _json(value, level)


def test_nesting_deeper_than_its_own_limit_is_jsons_text() -> None:
    value: Any = {"leaf": [1, 2.0, "three"]}
    for n in range(MAX_DEPTH + 10):
        value = [value] if n % 2 else {"k": value, "n": n}
    assert dumps(value) == _json(value)
