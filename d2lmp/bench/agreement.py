"""The cost of the ranks' agreement on arguments (``parallel.agreement.agree``) beside each call it guards.

Each round times, on every rank, ``agree`` alone (with the values the call agrees on) and then the call
itself, which agrees inside: ring attention's forward, the all-to-all, a column-parallel layer's forward and a
whole pipeline step (which agrees once, not per micro-batch). A round's time is the slowest rank's; figures
are medians over rounds, and ``share`` is the check's median over the call's (the part of the call it costs).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist

from d2lmp.parallel import data_parallel as DP
from d2lmp.parallel import pipeline as P
from d2lmp.parallel import tensor_parallel as TP
from d2lmp.parallel.agreement import agree
from d2lmp.parallel.all_to_all import all_to_all
from d2lmp.parallel.context_parallel import ring_attention
from d2lmp.parallel.launch import launch

__all__ = ["GUARDED", "AgreementCost", "agreement_costs"]

GUARDED = ("ring_attention", "all_to_all", "column linear", "pipeline_step")
_PIPELINE = DP.MLPSpec((16, 32, 32, 32, 5), seed=0)


@dataclass(frozen=True)
class AgreementCost:
    """One guarded call on ``world`` ranks: the median seconds of the check alone and of the call (check included)."""

    call: str
    world: int
    agree_seconds: float
    call_seconds: float

    @property
    def share(self) -> float:
        """The check's time over the call's."""
        return self.agree_seconds / self.call_seconds


def _pairs(rank: int, world: int) -> dict[str, tuple[Callable[[], object], Callable[[], object]]]:
    """For each guarded call: (the check alone, with the values the call agrees on; the call)."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 16, 8) for _ in range(3))
    blocks = [torch.randn(4, 8) for _ in range(world)]
    layer, x = TP.ColumnParallelLinear(torch.nn.Linear(32, 32)), torch.randn(8, 32)
    layers = len(_PIPELINE.build())
    sizes = [layers // world + (s < layers % world) for s in range(world)]
    px, py = DP.synthetic_data(_PIPELINE, 16)
    return {
        "ring_attention": (lambda: agree("b", None, shape=tuple(q.shape), dtype=q.dtype, causal=True, layout="plain"),
                           lambda: ring_attention(q, k, v)),
        "all_to_all": (lambda: agree("b", None, rows=(8,), dtype=torch.float32), lambda: all_to_all(blocks)),
        "column linear": (lambda: agree("b", None, batch=(8,), dtype=torch.float32), lambda: layer(x)),
        "pipeline_step": (lambda: agree("b", None, kind="1f1b", micro_batches=4, chunks=1, sizes=tuple(sizes),
                                        x=px.shape),
                          lambda: P.pipeline_step(rank, world, _PIPELINE.build, sizes, px, py, "1f1b", 4)),
    }


def _timed(call: Callable[[], object]) -> float:
    dist.barrier()
    start = time.perf_counter()
    call()
    seconds = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
    dist.all_reduce(seconds, op=dist.ReduceOp.MAX)  # the round's time: the slowest rank's
    return float(seconds)


def _worker(rank: int, world: int, rounds: int) -> dict[str, tuple[float, float]]:
    out = {}
    for name, (check, call) in _pairs(rank, world).items():
        timed = [(_timed(check), _timed(call)) for _ in range(rounds)]
        out[name] = (statistics.median(a for a, _ in timed), statistics.median(c for _, c in timed))
    return out


def agreement_costs(world: int, rounds: int = 200) -> list[AgreementCost]:
    """Every guarded call's check and call on ``world`` gloo ranks, medians over ``rounds`` rounds."""
    if world < 2 or rounds < 1:
        raise ValueError(f"the check costs something on 2 ranks or more, over at least 1 round: got {world}, {rounds}")
    medians = launch(_worker, world, rounds, backend="gloo", timeout=600)[0]
    return [AgreementCost(name, world, *medians[name]) for name in GUARDED]
