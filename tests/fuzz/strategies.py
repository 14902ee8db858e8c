"""Hypothesis strategies over the mutators: a damaged copy of a real file, and its story.

Every decision a mutator makes is a hypothesis draw, so a failing case shrinks to the fewest
mutations with the smallest choices before it is reported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from hypothesis import strategies as st

from tests.fuzz.mutators import mutate
from tests.fuzz.originals import original

T = TypeVar("T")


class DrawChooser:
    """A :class:`~tests.fuzz.mutators.Chooser` whose decisions are hypothesis draws."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any]) -> None:
        self.draw = draw

    def integer(self, lo: int, hi: int) -> int:
        return int(self.draw(st.integers(lo, max(lo, hi))))

    def choice(self, options: Sequence[T]) -> T:
        return options[self.draw(st.integers(0, len(options) - 1))]


@dataclass(frozen=True)
class Case:
    """A damaged copy of a real file; shown by what was done to it, not by its bytes."""

    kind: str
    data: bytes
    done: tuple[str, ...]

    def __repr__(self) -> str:
        return f"Case({self.kind}: {'; '.join(self.done)})"


@st.composite
def damaged(draw: Callable[[st.SearchStrategy[Any]], Any], kind: str) -> Case:
    """A damaged copy of the original ``kind``."""
    data, done = mutate(original(kind), DrawChooser(draw))
    return Case(kind, data, tuple(done))
