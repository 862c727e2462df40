"""Checking code a student writes: run it (here, or on real gloo ranks), look at what it sent, say what is wrong.

Shared by the exercise modules. ``code_checker`` turns a ``run`` function (which calls the student's
function on reference cases) and a ``judge`` (which explains one wrong result, or returns None when it
is right) into a checker for :class:`~d2lmp.exercises.core.Exercise`. ``on_ranks`` runs a worker on
real CPU processes with ``d2lmp.parallel.launch`` (gloo, fork, so a function defined in a notebook
works) and turns a rank's failure into a sentence: a function that still raises ``NotImplementedError``
means "not answered", a hang means unmatched messages (and the sentence ends with the line where
each rank was waiting). ``logged`` runs the student's function inside a
``p2p_log.MessageLog``, so that a judge sees each rank's traffic too, and the traffic rules below
(``no_collective``, ``ring_only``, ``sent_at_most``) say, in the exercise's words, when the numbers are
right but the messages are not the algorithm asked for (a library collective and a slice, say).
``bug_hunt`` wraps the checker of a find-the-bug exercise: the function as given, bug included, gets a
pointer to the notebook's own equality check instead of a diagnosis.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from d2lmp.exercises.core import Verdict, run_checker
from d2lmp.parallel.p2p_log import Message, MessageLog

__all__ = ["DIST_IMPORT", "RanksFailed", "on_ranks", "code_checker", "detached", "max_error", "Logged", "logged",
           "no_collective", "ring_only", "sent_at_most", "bug_hunt", "same_code"]

# The first line of the cell of a code exercise on ranks: the name its function calls.
DIST_IMPORT = "import torch.distributed as dist  # noqa: F401 (your function will need it)"
RANK_TIMEOUT_S = 30.0  # the ranks move a few hundred bytes: anything slower is a hang (with room for a busy CI)


class RanksFailed(Exception):
    """The student's code failed on a rank; the message says how, in words a student can act on."""


def on_ranks(worker: Callable[..., Any], world: int, *args: Any, timeout: float = RANK_TIMEOUT_S) -> list[Any]:
    """``launch(worker, world, *args)`` on gloo CPU ranks started by fork; the results in rank order.

    Raises NotImplementedError when a rank's traceback shows the student's stub, and RanksFailed
    (with an explanation) for any other failure.
    """
    from d2lmp.parallel.launch import WorkerError, launch
    from d2lmp.parallel.stacks import format_stacks

    try:
        # the group's own timeout outlasts launch's, so a hang is found where it hangs, with every rank's stack
        results: list[Any] = launch(worker, world, *args, backend="gloo", start_method="fork", timeout=timeout,
                                    group_timeout=2 * timeout)
        return results
    except WorkerError as err:
        if err.kind == "raised" and "NotImplementedError" in err.remote_traceback:
            raise NotImplementedError("the function still raises NotImplementedError") from err
        if err.kind == "timeout":
            where = ("\nWhere each rank was waiting when the time was up:\n" + format_stacks(err.stacks)
                     if err.stacks else "")
            raise RanksFailed(
                f"your ranks hung: {world} ranks did not finish within {timeout:g} s. A rank is waiting for a "
                "message no rank sends, or every rank is blocked in a send that waits for a recv its partner has "
                "not posted (post sends and receives together with isend/irecv). Check that every send has a "
                "recv of the same size on the other rank, and that every rank calls each collective." + where) from err
        summary = str(err).split("\n", 1)[0]
        raise RanksFailed(f"your function failed with {world} ranks: {summary}") from err


def code_checker(run: Callable[[Callable[..., Any]], list[tuple[str, Any, Any]]],
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


def detached(result: object) -> object:
    """A rank's result ready to travel back: a tensor (or each tensor of a tuple or list) detached from autograd.

    What a student's function returns is anything at all, so the result is an ``object`` that the checker inspects.
    """
    if isinstance(result, torch.Tensor):
        return result.detach()
    if isinstance(result, (tuple, list)):
        items = [t.detach() if isinstance(t, torch.Tensor) else t for t in result]
        return items if isinstance(result, list) else tuple(items)
    return result


def max_error(a: torch.Tensor, b: torch.Tensor) -> float:
    """The largest absolute difference between two tensors of the same shape."""
    return (a.detach().double() - b.double()).abs().max().item() if a.numel() else 0.0



# --------------------------------------------------------------------------------------------
# What the student's function sent


@dataclass(frozen=True)
class Logged:
    """What the student's function returned on one rank, and every message and collective it issued there."""

    result: Any
    messages: tuple[Message, ...]

    @property
    def sent_bytes(self) -> float:
        """Bytes this rank sent: its messages, and each collective's share when it runs as a ring."""
        return sum(m.sent_bytes for m in self.messages)

    @property
    def sends(self) -> tuple[Message, ...]:
        """The point-to-point messages this rank sent."""
        return tuple(m for m in self.messages if m.op in ("send", "isend"))


def logged(fn: Callable[..., Any], *args: Any) -> Logged:
    """``fn(*args)`` inside a ``MessageLog``: its result, detached, and the traffic of this rank."""
    with MessageLog() as log:
        result = fn(*args)
    return Logged(detached(result), tuple(log.messages))


def no_collective(run: Logged, asked: str) -> str | None:
    """None when ``run`` called no library collective, else "your function called dist.X; the exercise asks for ..."."""
    used = [m.op for m in run.messages if m.collective]
    if not used:
        return None
    return f"your function called dist.{used[0]}; the exercise asks for {asked}"


def ring_only(run: Logged, rank: int, world: int, sends: int, sent_bytes: int, what: str) -> str | None:
    """None when ``run`` sent exactly ``sends`` messages, all to the right neighbour, ``sent_bytes`` in all, and
    received only from the left neighbour; else what differs, in the words of a ring."""
    right, left = (rank + 1) % world, (rank - 1) % world
    others = sorted({m.peer for m in run.sends if m.peer != right}, key=str)
    if others:
        return (f"rank {rank} sent to rank(s) {others}: in a ring each rank sends only to its right neighbour "
                f"(rank {right}) and receives only from its left one (rank {left})")
    sources = sorted({m.peer for m in run.messages if m.op in ("recv", "irecv") and m.peer != left}, key=str)
    if sources:
        return f"rank {rank} received from rank(s) {sources}: in a ring each rank receives only from rank {left}"
    sent = sum(m.nbytes for m in run.sends)
    if len(run.sends) != sends or sent != sent_bytes:
        return (f"rank {rank} sent {len(run.sends)} message(s), {sent} bytes in all; {what} sends {sends} "
                f"({sent_bytes} bytes) per rank")
    return None


def sent_at_most(run: Logged, limit: float, what: str, why: str = "") -> str | None:
    """None when ``run`` sent at most ``limit`` bytes (a collective counted as a ring would run it), else how
    many it sent against the ``limit`` of ``what``, and ``why`` that is enough."""
    if run.sent_bytes <= limit * (1 + 1e-9):
        return None
    used = sorted({m.op for m in run.messages if m.collective})
    through = f" (through {', '.join('dist.' + op for op in used)})" if used else ""
    return (f"this rank sent {run.sent_bytes:,.0f} bytes{through}, {run.sent_bytes / limit:.2g} times the "
            f"{limit:,.0f} bytes of {what} (a collective counted as a ring runs it)" + (f": {why}" if why else ""))


# --------------------------------------------------------------------------------------------
# Find the bug


def _body(fn: Any) -> str | None:
    """The function's definition as a syntax tree without its name, annotations and decorators (None when its
    source cannot be read): the notebook's cell writes the signature without the library's annotations."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    node = tree.body[0] if tree.body else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    node.name, node.returns, node.decorator_list = "", None, []  # e.g. @no_type_check, which the cell leaves out
    for arg in ast.walk(node.args):
        if isinstance(arg, ast.arg):
            arg.annotation = None
    return ast.dump(node)


def _code_key(code: types.CodeType) -> tuple[Any, ...]:
    """What a function's compiled code says, without the bytes of its instructions, which depend on how it was
    compiled (a notebook compiles each statement of a cell on its own)."""
    consts = tuple(_code_key(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return consts, code.co_names, code.co_varnames, code.co_freevars


def same_code(a: Any, b: Any) -> bool:
    """True when two functions have the same definition but for their names and annotations: the same syntax tree,
    comments and layout aside, or (where the source is lost) the same constants and names in their compiled code."""
    if not (callable(a) and callable(b)):
        return False
    tree_a, tree_b = _body(a), _body(b)
    if tree_a is not None and tree_b is not None:
        return tree_a == tree_b
    code_a, code_b = getattr(a, "__code__", None), getattr(b, "__code__", None)
    return code_a is not None and code_b is not None and _code_key(code_a) == _code_key(code_b)


def bug_hunt(given: Callable[..., Any], checker: Callable[[Any], Verdict],
             how_to_find: str) -> Callable[[Any], Verdict]:
    """The checker of a find-the-bug exercise: ``checker`` for a changed function; for the function as given
    (``given``, compared by its compiled body), a reply that does not name the bug but says how to find it."""

    def check(fn: Any) -> Verdict:
        if same_code(fn, given):
            return Verdict(False, "this is the function as given, bug included: it runs and its results look "
                                  f"plausible, but they are wrong. {how_to_find}")
        return checker(fn)

    return check
