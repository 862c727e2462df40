"""Checkers for answers that the core helpers do not cover: several numbers at once, a pair of whole numbers, a
number this machine measures, and a function compared with a reference formula whose typical slips are recognised.

``gpu`` and ``figure`` read the figures a question quotes from ``gpu_specs``. Private to the exercise
modules; each builds on ``core.number_checker`` and ``core.function_checker`` so that messages read the same
everywhere.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from typing import Any

from d2lmp.exercises.core import Verdict, function_checker, number_checker
from d2lmp.gpu_specs import GPUSpec, find_gpu_spec

__all__ = ["parts_checker", "whole_pair", "MeasuredHere", "measured_checker", "formula_checker", "close", "gpu",
           "figure"]


def gpu(name: str) -> GPUSpec:
    """The row of ``gpu_specs.NOTABLE_GPUS`` for ``name``: a question quotes the library's figures, never its own."""
    spec = find_gpu_spec(name)
    if spec is None:
        raise ValueError(f"no GPU matching {name!r} in gpu_specs.NOTABLE_GPUS")
    return spec


def figure(value: float | None, what: str) -> float:
    """A figure of a ``GPUSpec`` that a question needs (a ValueError if the table leaves it out)."""
    if value is None:
        raise ValueError(f"gpu_specs has no {what}")
    return value


def parts_checker(*parts: tuple[str, Callable[[Any], Verdict]]) -> Callable[[Any], Verdict]:
    """A checker for a tuple of answers: ``parts`` are (label, checker) pairs, checked in order.

    The first wrong part is named with its label; a right answer repeats every part's explanation.
    """
    labels = ", ".join(label for label, _ in parts)

    def check(answer: Any) -> Verdict:
        if isinstance(answer, (str, bytes)) or not hasattr(answer, "__len__"):
            return Verdict(False, f"answer with a tuple of {len(parts)} values ({labels}), got {answer!r}.")
        if len(answer) != len(parts):
            return Verdict(False, f"expected {len(parts)} values ({labels}), got {len(answer)}.")
        said = []
        for (label, checker), value in zip(parts, answer):
            verdict = checker(value)
            if not verdict.correct:
                return Verdict(False, f"{label}: {verdict.message}")
            said.append(f"{label}: {verdict.message}")
        return Verdict(True, " ".join(said))

    return check


def whole_pair(answer: Any, nearest: bool = False) -> tuple[int, int] | None:
    """``answer`` as a pair of whole numbers, or None when it is not a pair of numbers. A number with a fraction
    is no whole number (None), unless ``nearest``, where it is rounded (a count typed as 3.07e5, say)."""
    try:
        a, b = answer
        if nearest:
            return round(float(a)), round(float(b))
        if float(a) != int(a) or float(b) != int(b):
            return None
        return int(a), int(b)
    except (TypeError, ValueError):
        return None


class MeasuredHere:
    """A model answer that is a measurement on this machine: ``float()`` runs (or reuses) the measurement.

    Used as an exercise's ``reference`` where the right number depends on the hardware, so that the
    solution is "what this machine measures", not a number copied from another computer.
    """

    def __init__(self, measure: Callable[[], float], what: str) -> None:
        self.measure = measure
        self.what = what

    def __float__(self) -> float:
        return float(self.measure())

    def __repr__(self) -> str:
        return f"<{self.what}, as measured on this machine>"


def measured_checker(measure: Callable[[], float], units: str, rel_tol: float, tolerance_reason: str,
                     why: str = "",
                     near_misses: Sequence[tuple[Callable[[float], float], str]] = ()) -> Callable[[Any], Verdict]:
    """A number checker whose expected value ``measure()`` is measured here, at check time.

    ``near_misses`` hold (value as a function of the measured value, explanation). Every verdict
    states the measured value and, when wrong, why the tolerance is as wide as it is.
    """

    def check(answer: Any) -> Verdict:
        measured = float(measure())
        misses = [(f(measured), text) for f, text in near_misses]
        verdict = number_checker(measured, units, rel_tol=rel_tol, why=why, near_misses=misses)(answer)
        note = f"This machine measured {measured:.3g}{' ' + units if units else ''}."
        if verdict.correct:
            return Verdict(True, f"{verdict.message} {note}")
        return Verdict(False, f"{verdict.message} {note} The tolerance is {rel_tol:.0%}: {tolerance_reason}")

    return check


def close(a: Any, b: Any, rel_tol: float = 1e-6) -> bool:
    """True when two numbers agree to ``rel_tol`` (or two non-numbers are equal)."""
    try:
        return math.isclose(float(a), float(b), rel_tol=rel_tol, abs_tol=1e-12)
    except (TypeError, ValueError):
        return bool(a == b)


def formula_checker(reference: Callable[..., Any], cases: Sequence[tuple[str, tuple[Any, ...]]],
                    slips: Sequence[tuple[Callable[..., Any], str]] = (),
                    compare: Callable[[Any, Any], bool] = close, success: str = "") -> Callable[[Any], Verdict]:
    """A checker for a function the student writes, run on ``cases`` (name, arguments) beside ``reference``.

    Where the student's result differs, each slip (a function with a typical mistake, and its message)
    is tried on the same arguments: the first that reproduces the student's result explains it.
    Arguments are deep-copied for every call, so a function that sorts or changes them in place
    cannot spoil the next case.
    """
    arguments = dict(cases)

    def run(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
        return [(name, fn(*copy.deepcopy(args)), reference(*copy.deepcopy(args))) for name, args in cases]

    def diagnose(name: str, got: Any, expected: Any) -> str:
        args = arguments[name]
        for slip, message in slips:
            value = slip(*copy.deepcopy(args))
            if compare(got, value) and not compare(value, expected):
                return message
        return f"expected {_show(expected)}, got {_show(got)}."

    return function_checker(run, compare, diagnose, success)


def _show(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else repr(value)
