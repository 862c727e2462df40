"""Ranks agree on a call's arguments before they exchange data: a disagreement is a ValueError on every rank.

A collective whose ranks pass tensors of other shapes, or a schedule that differs between ranks, does not
fail cleanly: gloo aborts the process (SIGABRT) when message sizes differ, and two ranks that follow
different pipeline schedules may finish with wrong gradients and no error. ``agree(what, group, **values)``,
called by every rank before the exchange, reduces a fingerprint of ``values`` to its largest and smallest
over the ranks (one all-reduce of two integers); when they differ, every rank gathers every rank's values
(``all_gather_object``) and raises the same ``ValueError``, naming each rank and its values.

Its cost, measured by ``bench.agreement.agreement_costs`` (gloo on 2 CPU cores shared with other jobs, load
about 15; medians of 200 rounds): 0.3 to 0.5 ms per check on 2 ranks, 1.0 to 1.7 ms on 4, the latency of one
small collective. That is 2 to 3 % of a pipeline step (checked once per step, not per micro-batch), 9 to 11 %
of ring attention's forward (1×2×16×8 per rank), 14 to 15 % of an all-to-all of 4×8 blocks, and 18 to 33 %
of a column-parallel layer's forward on 8×32 (tiny calls, whose own time is mostly latency too). The check's
messages are sent by the functions bound when this module was imported, so the traffic log
(``p2p_log.MessageLog``) does not count them: it counts the algorithm's traffic.
"""

from __future__ import annotations

import hashlib
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed import all_gather_object as _all_gather_object
from torch.distributed import all_reduce as _all_reduce

__all__ = ["agree", "fingerprint"]


def fingerprint(values: dict[str, Any]) -> int:
    """A 62-bit digest of ``values`` (names and reprs), equal on two ranks exactly when the reprs are (but for
    a collision, one chance in 2**62); small enough that its negative fits an int64 too."""
    text = repr(sorted(values.items()))
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") >> 2


def agree(what: str, group: dist.ProcessGroup | None = None, **values: Any) -> None:
    """Return when every rank of ``group`` (None: all) passed equal ``values``; else raise the same ``ValueError``
    on every rank, naming ``what`` was called and each rank's values. Every rank of ``group`` must call it."""
    world = dist.get_world_size(group)
    if world == 1:
        return
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend(group) == "nccl" else None
    f = fingerprint(values)
    extremes = torch.tensor([f, -f], dtype=torch.int64, device=device)
    _all_reduce(extremes, op=dist.ReduceOp.MAX, group=group)  # the largest fingerprint, and minus the smallest
    if extremes.tolist() == [f, -f]:
        return
    theirs: list[Any] = [None] * world
    _all_gather_object(theirs, values, group=group)
    ranks = dist.get_process_group_ranks(group) if group is not None else list(range(world))
    listed = "; ".join(f"rank {r}: " + ", ".join(f"{k}={v}" for k, v in sorted(t.items()))
                       for r, t in zip(ranks, theirs))
    raise ValueError(f"{what}: the ranks disagree on their arguments, which must be equal on every rank ({listed})")
