"""Checking code a student writes: run it (here, or on real gloo ranks) and say what is wrong.

Shared by the exercise modules of notebooks 08-14. ``code_checker`` turns a ``run`` function
(which calls the student's function on reference cases) and a ``judge`` (which explains one wrong
result, or returns None when it is right) into a checker for :class:`~d2lmp.exercises.core.Exercise`.
``on_ranks`` runs a worker on real CPU processes with ``d2lmp.parallel.launch`` (gloo, fork, so a
function defined in a notebook works) and turns a rank's failure into a sentence: a function that
still raises ``NotImplementedError`` means "not answered", a hang means unmatched messages, and the
sentence ends with the line where each rank was waiting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .core import Verdict, run_checker

__all__ = ["RanksFailed", "on_ranks", "code_checker", "detached", "max_error"]

RANK_TIMEOUT_S = 30.0  # the ranks move a few hundred bytes: anything slower is a hang (with room for a busy CI)


class RanksFailed(Exception):
    """The student's code failed on a rank; the message says how, in words a student can act on."""


def on_ranks(worker: Callable, world: int, *args, timeout: float = RANK_TIMEOUT_S) -> list:
    """``launch(worker, world, *args)`` on gloo CPU ranks started by fork; the results in rank order.

    Raises NotImplementedError when a rank's traceback shows the student's stub, and RanksFailed
    (with an explanation) for any other failure.
    """
    from d2lmp.parallel.launch import WorkerError, launch
    from d2lmp.parallel.stacks import format_stacks

    try:
        # the group's own timeout outlasts launch's, so a hang is found where it hangs, with every rank's stack
        return launch(worker, world, *args, backend="gloo", start_method="fork", timeout=timeout,
                      group_timeout=2 * timeout)
    except WorkerError as err:
        text = str(err)
        if "NotImplementedError" in text:
            raise NotImplementedError("the function still raises NotImplementedError") from err
        if "did not finish within" in text:
            where = ("\nWhere each rank was waiting when the time was up:\n" + format_stacks(err.stacks)
                     if err.stacks else "")
            raise RanksFailed(
                f"your ranks hung: {world} ranks did not finish within {timeout:g} s. A rank is waiting for a "
                "message no rank sends, or every rank is blocked in a send that waits for a recv its partner has "
                "not posted (post sends and receives together with isend/irecv). Check that every send has a "
                "recv of the same size on the other rank, and that every rank calls each collective." + where) from err
        summary = text.split("\n", 1)[0]
        raise RanksFailed(f"your function failed with {world} ranks: {summary}") from err


def code_checker(run: Callable[[Callable], list[tuple[str, Any, Any]]],
                 judge: Callable[[str, Any, Any], str | None], success: str) -> Callable[[Any], Verdict]:
    """A checker for a function: ``run(fn)`` gives (case, got, expected) triples; ``judge`` explains a wrong one.

    ``judge(case, got, expected)`` returns None when ``got`` is right, else a sentence saying what is
    wrong (it should recognise the typical mistakes). The first wrong case decides the verdict; a
    :class:`RanksFailed` from ``run`` is the verdict as it says.
    """

    def wrong(case: str, got: Any, expected: Any) -> str | None:
        reason = judge(case, got, expected)
        return f": {reason}" if reason else None

    return run_checker(run, wrong, success, explained=(RanksFailed,))


def detached(result: Any) -> Any:
    """A rank's result ready to travel back: a tensor (or each tensor of a tuple or list) detached from autograd."""
    if isinstance(result, torch.Tensor):
        return result.detach()
    if isinstance(result, (tuple, list)):
        items = [t.detach() if isinstance(t, torch.Tensor) else t for t in result]
        return items if isinstance(result, list) else tuple(items)
    return result


def max_error(a: torch.Tensor, b: torch.Tensor) -> float:
    """The largest absolute difference between two tensors of the same shape."""
    return (a.detach().double() - b.double()).abs().max().item() if a.numel() else 0.0

