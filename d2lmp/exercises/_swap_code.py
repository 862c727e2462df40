"""Exercise 7 of notebook 12 on real ranks: swap two ranks' tensors with point-to-point messages, without a deadlock.

The student's ``my_swap(tensor)`` runs on 2 gloo ranks (``_code.on_ranks``), each holding a different tensor, under
``p2p_log.MessageLog``: the result must be the other rank's tensor, and each rank must have sent its tensor once to
the other and received once, with send/recv or isend/irecv (a collective sends no point-to-point message). Two
blocking sends hang: ``on_ranks`` stops them after ``SWAP_TIMEOUT_S`` and says why.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from d2lmp.exercises._code import code_checker, detached, on_ranks
from d2lmp.parallel.p2p_log import MessageLog

__all__ = ["SWAP_TIMEOUT_S", "SHAPES", "my_swap", "swap_checker", "SWAP_WRONG"]

SWAP_TIMEOUT_S = 10.0  # two ranks swap a few bytes: anything slower is the deadlock
SHAPES = ((3,), (2, 5))
Traffic = list[tuple[str, int | None, int]]  # (operation, peer, bytes) of every call MessageLog saw
_POINT_TO_POINT = ("send", "isend", "recv", "irecv")


def _rank_tensor(rank: int, shape: tuple[int, ...]) -> torch.Tensor:
    """(i + 1)·10^rank: the two ranks' tensors differ everywhere."""
    values: torch.Tensor = torch.arange(1, math.prod(shape) + 1, dtype=torch.float32) * 10**rank
    return values.reshape(shape)


def my_swap(tensor: torch.Tensor) -> torch.Tensor:
    """The other rank's ``tensor`` (2 ranks): both messages posted before either rank waits."""
    peer = 1 - dist.get_rank()
    theirs = torch.empty_like(tensor)
    requests = [dist.isend(tensor, peer), dist.irecv(theirs, peer)]
    for request in requests:
        if request is not None:
            request.wait()
    return theirs


def _swap_worker(rank: int, world: int, fn: Callable[[torch.Tensor], Any]) -> list[tuple[Any, ...]]:
    results = []
    for shape in SHAPES:
        with MessageLog() as log:
            got = fn(_rank_tensor(rank, shape))
        traffic = [(m.op, m.peer, m.nbytes) for m in log.messages]
        results.append((shape, detached(got), _rank_tensor(1 - rank, shape), traffic))
    return results


def _swap_run(fn: Callable[[torch.Tensor], Any]) -> list[tuple[str, Any, Any]]:
    per_rank = on_ranks(_swap_worker, 2, fn, timeout=SWAP_TIMEOUT_S)
    return [(f"2 ranks, a tensor of shape {shape}, rank {rank}", got, (theirs, rank, traffic))
            for rank, cases in enumerate(per_rank) for shape, got, theirs, traffic in cases]


def _swap_judge(case: str, got: Any, context: tuple[torch.Tensor, int, Traffic]) -> str | None:
    theirs, rank, traffic = context
    peer, nbytes = 1 - rank, theirs.numel() * theirs.element_size()
    if not isinstance(got, torch.Tensor):
        return f"expected a tensor, got {type(got).__name__}"
    if got.shape == theirs.shape and torch.equal(got, _rank_tensor(rank, tuple(theirs.shape))):
        return "you returned this rank's own tensor: return what the other rank sent"
    if got.shape != theirs.shape or not torch.equal(got, theirs):
        return f"your result is not rank {peer}'s tensor (shape {tuple(theirs.shape)})"
    if not any(op in _POINT_TO_POINT for op, _, _ in traffic):  # nothing, or a collective (MessageLog logs both)
        return ("your function sent no point-to-point message: the exercise asks for dist.send/recv or "
                "dist.isend/irecv between the two ranks, not a library collective")
    sent = [(p, b) for op, p, b in traffic if op in ("send", "isend")]
    received = [(p, b) for op, p, b in traffic if op in ("recv", "irecv")]
    if sent != [(peer, nbytes)] or received != [(peer, nbytes)]:
        return (f"each rank should send its tensor once to rank {peer} and receive once from it ({nbytes} bytes "
                f"each); rank {rank} sent {sent} and received {received} (peer, bytes)")
    return None


swap_checker = code_checker(_swap_run, _swap_judge, "on 2 ranks your swap returns the other rank's tensor, with "
                                                    "one message each way and no deadlock.")


def _swap_blocking(tensor: torch.Tensor) -> torch.Tensor:
    """The lesson's deadlock: both ranks send first."""
    peer, theirs = 1 - dist.get_rank(), torch.empty_like(tensor)
    dist.send(tensor, peer)
    dist.recv(theirs, peer)
    return theirs


def _swap_by_all_gather(tensor: torch.Tensor) -> torch.Tensor:
    parts = [torch.empty_like(tensor) for _ in range(2)]
    dist.all_gather(parts, tensor)
    return parts[1 - dist.get_rank()]


def _swap_own(tensor: torch.Tensor) -> torch.Tensor:
    peer, theirs = 1 - dist.get_rank(), torch.empty_like(tensor)
    for request in [dist.isend(tensor, peer), dist.irecv(theirs, peer)]:
        if request is not None:
            request.wait()
    return tensor


SWAP_WRONG = [(_swap_blocking, "ranks hung"), (_swap_by_all_gather, "no point-to-point message"),
              (_swap_own, "own tensor")]
