"""Option types and checks for the commands: comma-separated lists, and numbers that must be positive.

Every numeric option is checked before anything is timed: a bad value must not surface as a traceback
after minutes of measuring. A check raises ``ValueError``, which ``commands.main`` prints as one line.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence

__all__ = ["ints", "words", "need_positive"]


def ints(text: str) -> list[int]:
    """``"1,2,4"`` -> ``[1, 2, 4]`` (an argparse type: a bad item is a usage error)."""
    try:
        return [int(t) for t in text.split(",") if t]
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from err


def words(text: str) -> list[str]:
    """``"cpu,cuda:0"`` -> ``["cpu", "cuda:0"]``."""
    return [t for t in text.split(",") if t]


def need_positive(option: str, value: float | Sequence[float], minimum: float | None = None) -> None:
    """``value`` (a number or a list of them) must be finite and > 0, or >= ``minimum`` where given."""
    values = list(value) if isinstance(value, Sequence) else [value]
    if not values:
        raise ValueError(f"{option} is empty; give at least one value")
    for v in values:
        if not math.isfinite(v) or (v < minimum if minimum is not None else v <= 0):
            need = f"at least {minimum}" if minimum is not None else "positive"
            raise ValueError(f"{option} must be {need}, got {v:g}")
