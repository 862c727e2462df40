"""Option types and checks for the commands: comma-separated lists, and numbers that must be positive.

Also rank counts within a benchmark's limits, and an argparse parser that answers bad input in one line.

Every option is checked before anything is timed: a bad value must not surface as a traceback after minutes of
measuring. A check raises ``ValueError`` (``UsageError`` where a command finds bad input while it runs), which
``commands.main`` prints as one line with exit status 2; any other failure during a run is exit status 1.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

__all__ = ["UsageError", "OneLineParser", "DefaultsFormatter", "RANKS_PER_CORE", "MIN_RANK_CAP", "ints", "words",
           "need_positive", "rank_cap", "need_ranks"]

# CPU ranks run one compute thread each and gloo connects every pair; past a few ranks per core a run spends its time
# switching between processes, and a collective can outlast its timeout (minutes of silence before a traceback).
RANKS_PER_CORE = 4
MIN_RANK_CAP = 4  # the cap on any machine: the default runs use 2 and 4 ranks


class UsageError(ValueError):
    """Bad input that a command finds while it runs (e.g. a plan nothing fits): one line and exit status 2."""


class DefaultsFormatter(argparse.HelpFormatter):
    """Help that names each option's default as it is typed (a list as ``2,4``, a switch as ``--x`` or ``--no-x``),
    unless the option is a plain flag, has none (None) or says it in words."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if isinstance(action, argparse.BooleanOptionalAction) and isinstance(default, bool) and "default" not in text:
            return f"{text} (default: {action.option_strings[0 if default else 1]})"
        if default is None or default is argparse.SUPPRESS or action.nargs == 0 or "default" in text \
                or not action.option_strings:
            return text
        shown = ",".join(map(str, default)) if isinstance(default, (list, tuple)) else str(default)
        return f"{text} (default: {shown.replace('%', '%%')})"


class OneLineParser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line on stderr, exit status 2 (no usage block); its subparsers are
    of the same class, and its help names every option's default."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> NoReturn:
        """Print ``<prog>: error: <message> (<prog> --help lists the options)`` and exit with status 2."""
        print(f"{self.prog}: error: {message} ({self.prog} --help lists the options)", file=sys.stderr)
        sys.exit(2)


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


def rank_cap() -> int:
    """The most CPU ranks a benchmark starts here: ``RANKS_PER_CORE`` per core, and never under ``MIN_RANK_CAP``."""
    return max(MIN_RANK_CAP, RANKS_PER_CORE * (os.cpu_count() or 1))


def need_ranks(option: str, worlds: int | Sequence[int], minimum: int, maximum: int | None = None,
               why: str = "") -> None:
    """Every rank count in ``worlds`` must be at least ``minimum`` and at most ``maximum`` (a benchmark's own limit,
    ``why`` saying why) and at most ``rank_cap()``."""
    values = list(worlds) if isinstance(worlds, Sequence) else [worlds]
    need_positive(option, values, minimum=minimum)
    cap = rank_cap()
    limit, reason = (maximum, why) if maximum is not None and maximum <= cap else (
        cap, f"{RANKS_PER_CORE} ranks per core on this machine's {os.cpu_count()} cores")
    too_many = [v for v in values if v > limit]
    if too_many:
        raise ValueError(f"{option} must be at most {limit} ({reason}), got {too_many[0]:g}")
