"""A predicted quantity with its 95% interval and what it rests on: the one shape every
prediction takes (bytes after a conversion, seconds of a DROP), so that no figure is printed
without its uncertainty and its basis.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Estimate:
    """``value`` within ``[low, high]`` (95%; all three equal when exact), and ``basis``: what
    it was computed from, in words (``simulate, 1,203 pages sampled``)."""

    value: float
    low: float
    high: float
    basis: str

    @classmethod
    def exact(cls, value: float, basis: str) -> Estimate:
        return cls(value, value, value, basis)

    @property
    def is_exact(self) -> bool:
        return self.low == self.value == self.high

    def widened(self, below: float, above: float, why: str) -> Estimate:
        """The interval widened by ``below`` and ``above`` (never under 0), ``why`` added to
        the basis."""
        return Estimate(
            self.value, max(0.0, self.low - below), self.high + above, f"{self.basis}; {why}"
        )

    def __add__(self, other: Estimate) -> Estimate:
        """The sum of two independent parts (the interval: the sum of the bounds, which
        covers at least 95%)."""
        basis = self.basis if self.basis == other.basis else f"{self.basis}; {other.basis}"
        return Estimate(
            self.value + other.value, self.low + other.low, self.high + other.high, basis
        )

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "low": self.low, "high": self.high, "basis": self.basis}
