"""Three faults staged on real ranks, and how each one shows itself: alone, with every rank's stack, with DETAIL.

The commonest failure of a distributed program is a hang that prints nothing. Three classic causes, each a
few lines that run on real gloo ranks:

* ``skipped_collective``: the last rank skips an all-reduce (say, behind an ``if`` that differs by rank) and
  goes on to the next collective, a barrier; the others wait in the all-reduce forever.
* ``send_send``: two ranks both ``send`` first and ``recv`` second. A gloo send completes only once the
  receiver has posted its receive, so each waits for the other.
* ``shape_mismatch``: rank r all-reduces a tensor of 4 + r elements; the ranks disagree on the size.

``stage(fault, detail)`` runs one of them under ``launch`` and returns a ``Diagnosis``: how long until it was
reported, the message, and every rank's Python stack, with the line where each waits (``launch`` asks each
rank for its stack when its timeout expires). The group's own timeout is set far longer, so that the ranks
are found where they hang. ``detail=True`` sets ``TORCH_DISTRIBUTED_DEBUG=DETAIL``: PyTorch then wraps the
group so that before every collective the ranks compare what they are about to run (operation, shapes,
dtypes), and a mismatch is an immediate error that names both sides. Point-to-point messages are not
checked, so the send/send deadlock still hangs.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from d2lmp.parallel import stacks
from d2lmp.parallel.launch import WorkerError, launch

__all__ = ["FAULTS", "Diagnosis", "skipped_collective", "send_send", "shape_mismatch", "debug_level", "stage"]

DEBUG_ENV = "TORCH_DISTRIBUTED_DEBUG"
_TRACEBACK_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)')


def skipped_collective(rank: int, world: int) -> torch.Tensor:
    """The last rank skips the all-reduce and goes on to the barrier; the others wait in the all-reduce."""
    grad = torch.ones(4)
    if rank != world - 1:
        dist.all_reduce(grad)
    dist.barrier()
    return grad


def send_send(rank: int, world: int) -> torch.Tensor:
    """Both ranks send first: each waits for a receive that its partner, sending too, never posts."""
    mine, theirs = torch.full((4,), float(rank)), torch.empty(4)
    partner = (rank + 1) % 2
    dist.send(mine, partner)
    dist.recv(theirs, partner)
    return theirs


def shape_mismatch(rank: int, world: int) -> torch.Tensor:
    """Rank r all-reduces 4 + r elements: the ranks disagree on the size of the message."""
    grad = torch.ones(4 + rank)
    dist.all_reduce(grad)
    return grad


FAULTS: dict[str, Callable[[int, int], torch.Tensor]] = {
    "skipped_collective": skipped_collective, "send_send": send_send, "shape_mismatch": shape_mismatch}


@dataclass(frozen=True)
class Diagnosis:
    """How one staged fault was reported."""

    fault: str
    detail: bool  # TORCH_DISTRIBUTED_DEBUG=DETAIL
    seconds: float  # from the start of the launch to the error
    hung: bool  # the ranks were still waiting at launch's timeout
    summary: str  # the error's first line
    message: str  # the whole error: the rank's traceback, or every rank's stack
    stacks: dict[int, str] = field(default_factory=dict)  # rank -> faulthandler's report
    waiting: dict[int, str] = field(default_factory=dict)  # rank -> "file:line in function" where it waits


@contextlib.contextmanager
def debug_level(detail: bool) -> Iterator[None]:
    """Within the block, ranks started by fork get ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` (or ``OFF``).

    PyTorch reads the variable when ``torch.distributed`` is imported; ``set_debug_level_from_env`` reads
    it again, and a forked rank inherits the level. The previous setting comes back afterwards.
    """
    previous = os.environ.get(DEBUG_ENV)
    os.environ[DEBUG_ENV] = "DETAIL" if detail else "OFF"
    dist.set_debug_level_from_env()
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(DEBUG_ENV, None)
        else:
            os.environ[DEBUG_ENV] = previous
        dist.set_debug_level_from_env()


def stage(fault: str, detail: bool = False, world: int = 2, timeout: float = 3.0) -> Diagnosis:
    """Run ``fault`` on ``world`` gloo ranks and return how it was reported (it must fail: else RuntimeError)."""
    if fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}; available: {', '.join(FAULTS)}")
    if fault == "send_send" and world != 2:
        raise ValueError("send_send is a deadlock between two ranks: world must be 2")
    start = time.monotonic()
    with debug_level(detail):
        try:
            launch(FAULTS[fault], world, backend="gloo", start_method="fork", timeout=timeout,
                   group_timeout=20 * timeout)
        except WorkerError as err:
            text = str(err)
            where = {r: str(f) for r, s in err.stacks.items() if (f := stacks.waiting_line(s)) is not None}
            if not where and err.rank is not None and (line := _raising_line(err.remote_traceback)):
                where = {err.rank: line}
            return Diagnosis(fault, detail, time.monotonic() - start, err.kind == "timeout",
                             text.split("\n", 1)[0], text, err.stacks, where)
    raise RuntimeError(f"the staged fault {fault!r} ran without an error")


def _raising_line(traceback_text: str) -> str | None:
    """The innermost frame of the staged fault in a rank's Python traceback: "file:line in function"."""
    frames = [m for m in _TRACEBACK_FRAME.finditer(traceback_text) if m["file"].endswith("/faults.py")]
    if not frames:
        return None
    last = frames[-1]
    return str(stacks.Frame(last["file"], int(last["line"]), last["function"]))
