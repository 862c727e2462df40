"""The one way a benchmark states its goal: ``goal: <what> <op> <threshold>: <value> (met|missed)``.

A ``Goal`` holds what is compared, how (``<=``, ``>=`` or ``within`` a range) and the threshold; its
``line`` judges a measured value and prints it. Every ``d2lmp bench`` command prints its goals this way,
each threshold a named constant beside the command that judges it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["OPS", "Goal", "goal_line"]

OPS = ("<=", ">=", "within")


def goal_line(what: str, target: str, value: str, met: bool, note: str = "") -> str:
    """``goal: <what> <target>: <value> (met|missed)``, then ``; <note>`` where there is one."""
    return f"goal: {what} {target}: {value} ({'met' if met else 'missed'})" + (f"; {note}" if note else "")


@dataclass(frozen=True)
class Goal:
    """A goal on one measured number: ``value <= threshold``, ``value >= threshold`` or ``low <= value <= high``.

    ``unit`` follows every number shown ("×", " s", "%"). A value that is not a number (NaN) misses.
    """

    what: str
    op: str
    threshold: float | tuple[float, float]
    unit: str = ""

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"unknown goal operator {self.op!r}; available: {', '.join(OPS)}")
        if (self.op == "within") != isinstance(self.threshold, tuple):
            raise ValueError(f"'within' takes a (low, high) range and '<=', '>=' one number; "
                             f"got {self.op!r} with {self.threshold!r}")
        if isinstance(self.threshold, tuple) and not (len(self.threshold) == 2
                                                      and self.threshold[0] <= self.threshold[1]):
            raise ValueError(f"a 'within' range is (low, high) with low <= high, got {self.threshold!r}")

    @property
    def target(self) -> str:
        """The operator and threshold as the goal line shows them, e.g. ``<= 1.15×`` or ``within 0.75–1.33×``."""
        if isinstance(self.threshold, tuple):
            low, high = self.threshold
            return f"within {low:g}–{high:g}{self.unit}"
        return f"{self.op} {self.threshold:g}{self.unit}"

    def met(self, value: float) -> bool:
        """Whether ``value`` meets the goal (never for NaN)."""
        if math.isnan(value):
            return False
        if isinstance(self.threshold, tuple):
            return self.threshold[0] <= value <= self.threshold[1]
        return value <= self.threshold if self.op == "<=" else value >= self.threshold

    def line(self, value: float, shown: str | None = None, note: str = "") -> str:
        """The goal line for ``value``; ``shown`` replaces the value's default text (two decimals and the unit)."""
        return goal_line(self.what, self.target, f"{value:.2f}{self.unit}" if shown is None else shown,
                         self.met(value), note)

    def worst_line(self, ratios: Mapping[int, float], planned: Sequence[int], label: Callable[[int], str]) -> str:
        """The goal line for the worst of ``ratios`` (message size -> ratio), saying at which size, and naming the
        sizes of ``planned`` the run did not measure; a goal with no measured size misses, and says so."""
        if not ratios:
            return goal_line(self.what, self.target, "no size in range measured", False)
        worst = min(ratios, key=lambda s: ratios[s])
        skipped = [label(s) for s in planned if s not in ratios]
        return self.line(ratios[worst], shown=f"worst {ratios[worst]:.2f}{self.unit} at {label(worst)}",
                         note=f"not measured: {', '.join(skipped)}" if skipped else "")
