"""Self-checking exercises: each one has a hint, a check that explains a wrong answer, and a solution.

An :class:`Exercise` wraps a checker, a function ``answer -> Verdict``. ``check(answer)`` prints the
verdict and returns it; called with nothing (or with a function that still raises
``NotImplementedError``) it prints what to do instead of failing, so an unanswered exercise never
breaks a notebook. ``solution()`` shows the model answer only when asked for.

The helpers at the bottom build checkers for the kinds of answers the exercises ask for: a number
with a tolerance and units, a choice among options, and a function run against reference cases
(``run_checker``, which the distributed exercises' ``_code.code_checker`` builds on too).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from d2lmp.source_code import source_of

__all__ = ["Verdict", "Exercise", "NOT_ANSWERED", "CHECK_TIMEOUT_S", "number_checker", "choice_checker",
           "function_checker", "run_checker"]

# How long one check may take (``Exercise.time_limit``): a check that launches ranks waits up to 30 s for each
# launch (``_code.RANK_TIMEOUT_S``), and a few launch more than once
CHECK_TIMEOUT_S = 120.0


class _NotAnswered:
    def __repr__(self) -> str:
        return "NOT_ANSWERED"


NOT_ANSWERED = _NotAnswered()


@dataclass(frozen=True)
class Verdict:
    """The outcome of a check: right or wrong, and why, in a sentence a student can act on."""

    correct: bool
    message: str

    def __bool__(self) -> bool:
        return self.correct

    def __str__(self) -> str:
        return ("Correct: " if self.correct else "Not yet: ") + self.message


@dataclass(frozen=True)
class Exercise:
    """One exercise of a notebook.

    ``title`` (a few words) and ``question`` and ``hint_text`` are written here only: the notebook's
    exercise cells are generated from them (``tools/exercise_cells.py``). ``checker`` is None for open questions,
    which have a model answer in ``solution_text`` only. ``reference`` is the answer that the solution
    gives (a number, a choice or a function); CI checks that it passes. ``wrong`` lists typical wrong
    answers with a fragment of the message each must get. A code exercise names the function the
    student writes in ``function`` ("my_all_gather(tensor)"), with any ``imports`` its cell needs; a
    find-the-bug exercise also has ``given``, the buggy function its cell shows under that name.
    ``check`` runs the checker of a function within ``time_limit`` seconds, in a process of its own (``bounded``).
    """

    key: str
    number: int
    question: str
    hint_text: str
    solution_text: str
    checker: Callable[[Any], Verdict] | None = None
    reference: Any = None
    wrong: Sequence[tuple[Any, str]] = field(default_factory=tuple)
    how_to_answer: str = ""
    title: str = ""
    function: str = ""
    imports: str = ""
    given: Callable[..., Any] | None = None
    time_limit: float = CHECK_TIMEOUT_S

    def hint(self) -> None:
        """Print the hint."""
        print(f"Hint for exercise {self.number}: {self.hint_text}")

    def check(self, answer: Any = NOT_ANSWERED) -> Verdict | None:
        """Check ``answer``, print the verdict and return it (None while the exercise is unanswered)."""
        if self.checker is None:
            print(f"Exercise {self.number} is an open question: compare your answer with "
                  f"ex.{self.key}.solution().")
            return None
        if answer is NOT_ANSWERED or answer is Ellipsis:
            print(f"Exercise {self.number} is not answered yet. {self.how_to_answer}".rstrip())
            return None
        from d2lmp.exercises.bounded import bounded  # it builds on this module

        checker = self.checker
        try:
            verdict = bounded(lambda: checker(answer), self.time_limit, fork=callable(answer))
        except NotImplementedError:
            print(f"Exercise {self.number} is not answered yet: your function still raises NotImplementedError.")
            return None
        print(verdict)
        return verdict

    def solution(self) -> None:
        """Print the model answer (and, for a function, its source)."""
        print(f"Solution to exercise {self.number}:\n{self.solution_text}")
        if callable(self.reference):
            print()
            print(source_of(self.reference))


def number_checker(expected: float, units: str = "", rel_tol: float = 0.02, abs_tol: float = 0.0,
                   why: str = "", near_misses: Sequence[tuple[float, str]] = ()) -> Callable[[Any], Verdict]:
    """A checker for a number: right within ``rel_tol`` (or ``abs_tol``) of ``expected``.

    ``near_misses`` are (value, explanation) pairs for typical wrong answers (a factor of two, a unit
    off by 1024...): an answer that matches one gets its explanation.
    """
    unit = f" {units}" if units else ""

    def check(answer: Any) -> Verdict:
        try:
            value = float(answer)
        except (TypeError, ValueError):
            return Verdict(False, f"expected a number{(' in ' + units) if units else ''}, got {answer!r}.")
        if math.isclose(value, expected, rel_tol=rel_tol, abs_tol=abs_tol):
            return Verdict(True, f"{value:g}{unit}. {why}".strip())
        for wrong_value, explanation in near_misses:
            if math.isclose(value, wrong_value, rel_tol=rel_tol, abs_tol=abs_tol):
                return Verdict(False, f"{value:g}{unit}: {explanation}")
        direction = "too large" if value > expected else "too small"
        return Verdict(False, f"{value:g}{unit} is {direction} (tolerance {rel_tol:.0%}). Check the units and "
                              "what is counted; the hint may help.")

    return check


def choice_checker(correct: str, explanations: dict[str, str]) -> Callable[[Any], Verdict]:
    """A checker for a short choice: ``explanations`` maps every option to why it is right or wrong."""
    options = ", ".join(repr(o) for o in explanations)

    def check(answer: Any) -> Verdict:
        key = str(answer).strip().lower()
        matches = {o.lower(): o for o in explanations}
        if key not in matches:
            return Verdict(False, f"answer with one of {options}, got {answer!r}.")
        option = matches[key]
        return Verdict(option == correct, explanations[option])

    return check


def function_checker(cases: Callable[[Callable[..., Any]], list[tuple[str, Any, Any]]],
                     compare: Callable[[Any, Any], bool],
                     diagnose: Callable[[str, Any, Any], str | None] | None = None,
                     success: str = "") -> Callable[[Any], Verdict]:
    """A checker for a function the student writes.

    ``cases(fn)`` runs ``fn`` on reference cases and returns (case name, got, expected) triples (for
    distributed exercises it launches real ranks). The first case where ``compare(got, expected)``
    fails is explained by ``diagnose(case, got, expected)`` when it recognises the mistake.
    """

    def wrong(case: str, got: Any, expected: Any) -> str | None:
        if compare(got, expected):
            return None
        reason = diagnose(case, got, expected) if diagnose else None
        return f": {reason}" if reason else "."

    return run_checker(cases, wrong, success)


def run_checker(run: Callable[[Callable[..., Any]], list[tuple[str, Any, Any]]],
                wrong: Callable[[str, Any, Any], str | None], success: str = "",
                explained: tuple[type[Exception], ...] = ()) -> Callable[[Any], Verdict]:
    """The checker behind every code exercise: run the student's function, then judge case by case.

    ``wrong(case, got, expected)`` returns None for a right result, else how the sentence "wrong result
    for <case>" ends. An exception of a type in ``explained`` carries a message for the student as it is;
    any other exception from the student's code is named with its first line, and a stub that still
    raises NotImplementedError (directly or as a cause) stays "not answered".
    """

    def check(fn: Any) -> Verdict:
        if not callable(fn):
            return Verdict(False, f"expected a function, got {type(fn).__name__}.")
        try:
            results = run(fn)
        except NotImplementedError:
            raise
        except explained as err:
            return Verdict(False, str(err))
        except BaseException as err:  # noqa: BLE001 - the student's code raised (even SystemExit): say where
            if any(isinstance(e, NotImplementedError) for e in _causes(err)):
                raise NotImplementedError from err
            return Verdict(False, f"your function raised {type(err).__name__}: {_first_line(err)}")
        for case, got, expected in results:
            ending = wrong(case, got, expected)
            if ending is not None:
                return Verdict(False, f"wrong result for {case}{ending}")
        return Verdict(True, success or f"all {len(results)} reference cases agree.")

    return check


def _causes(err: BaseException | None) -> Iterator[BaseException]:
    while err is not None:
        yield err
        err = err.__cause__ or err.__context__


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else "(no message)"
