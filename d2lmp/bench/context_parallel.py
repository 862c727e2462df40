"""Benchmark: ring attention's forward on p ranks against one rank's whole-sequence attention.

It times ring attention's forward on p ranks against one rank's ``F.scaled_dot_product_attention`` on the whole
sequence, measured in the same launch.

Each round times, one after another: the reference (rank 0 alone, the other ranks waiting at a barrier),
ring attention in each layout (plain, balanced) with each block kernel (explicit, fused), and the ring's K/V
messages alone (``pass_kv_round``, nothing computed). A ring time is the slowest rank's; ``RingLog`` splits
each rank's time into computing blocks and waiting for the next K/V chunk. The overlap is the fraction of the
messages' own time that did not show up as waiting: 1 − wait / transfer. Rounds alternate the contenders, so
drifting machine load hits all alike; every figure is a median over rounds. The fused kernel is the
reference's own kernel, so with it the ring is measured and not the libraries; ``d2lmp bench ring-attention``
states the goal.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.nn import functional as F

from d2lmp.config import pick
from d2lmp.model.context_layout import LAYOUTS
from d2lmp.parallel.attention_blocks import BLOCK_KERNELS
from d2lmp.parallel.context_parallel import RingLog, pass_kv_round, ring_attention
from d2lmp.parallel.launch import launch
from d2lmp.parallel.sequence_chunks import split_sequence

__all__ = ["CONTENDERS", "RingTiming", "RingAttentionBench", "ring_attention_bench"]

CONTENDERS = tuple((layout, kernel) for kernel in BLOCK_KERNELS for layout in LAYOUTS)


@dataclass(frozen=True)
class RingTiming:
    """Ring attention in one layout with one block kernel: median seconds of the slowest rank, and each
    rank's median seconds computing blocks and waiting for the next K/V chunk."""

    layout: str
    kernel: str
    seconds: float
    compute_s: tuple[float, ...]
    wait_s: tuple[float, ...]

    @property
    def compute_imbalance(self) -> float:
        """The busiest rank's compute time over the mean (1.0: even)."""
        return max(self.compute_s) / (sum(self.compute_s) / len(self.compute_s))


@dataclass(frozen=True)
class RingAttentionBench:
    """The whole measurement: the problem, the reference, the messages alone, one row per layout and kernel."""

    world: int
    shape: tuple[int, int, int, int]  # batch, heads, whole sequence, head dim
    causal: bool
    rounds: int
    reference_s: float  # F.scaled_dot_product_attention on the whole sequence, one rank
    transfer_s: float  # the ring's K/V messages alone, slowest rank
    rows: tuple[RingTiming, ...]

    def row(self, layout: str, kernel: str = "fused") -> RingTiming:
        return next(r for r in self.rows if (r.layout, r.kernel) == (layout, kernel))

    def ratio(self, layout: str, kernel: str = "fused") -> float:
        """Ring time / one rank's whole-sequence time: below 1 is faster."""
        return self.row(layout, kernel).seconds / self.reference_s

    def overlap(self, layout: str, kernel: str = "fused") -> float:
        """Fraction of the transfer's own time hidden behind compute: 1 − (slowest rank's wait) / transfer."""
        return min(1.0, max(0.0, 1.0 - max(self.row(layout, kernel).wait_s) / self.transfer_s))


@dataclass(frozen=True)
class _RankSamples:
    reference: list[float]
    transfer: list[float]
    ring: dict[tuple[str, str], list[float]]
    compute: dict[tuple[str, str], list[float]]
    wait: dict[tuple[str, str], list[float]]


def _timed(fn: Callable[[], object], alone: bool = False) -> float:
    """Seconds of ``fn()`` on the slowest rank (``alone``: rank 0 runs it while the others wait)."""
    dist.barrier()
    start = time.perf_counter()
    if not alone or dist.get_rank() == 0:
        fn()
    seconds = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
    dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
    return seconds.item()


def _per_contender() -> dict[tuple[str, str], list[float]]:
    return {c: [] for c in CONTENDERS}


def _ring(qkv: tuple[torch.Tensor, torch.Tensor, torch.Tensor], causal: bool, layout: str,
          kernel: str) -> tuple[float, RingLog]:
    q, k, v = qkv
    with RingLog() as log:
        seconds = _timed(lambda: ring_attention(q, k, v, causal, layout=layout, kernel=kernel))
    return seconds, log


def _worker(rank: int, world: int, shape: tuple[int, int, int, int], causal: bool, rounds: int) -> _RankSamples:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(*shape, generator=g) for _ in range(3))
    parts = {layout: (split_sequence(q, world, layout)[rank], split_sequence(k, world, layout)[rank],
                      split_sequence(v, world, layout)[rank]) for layout in LAYOUTS}
    samples = _RankSamples([], [], _per_contender(), _per_contender(), _per_contender())
    with torch.no_grad():
        for r in range(rounds + 1):  # round 0 warms up
            reference = _timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), alone=True)
            transfer = _timed(lambda: pass_kv_round(parts["plain"][1], parts["plain"][2]))
            rings = {(layout, kernel): _ring(parts[layout], causal, layout, kernel) for layout, kernel in CONTENDERS}
            if r == 0:
                continue
            samples.reference.append(reference)
            samples.transfer.append(transfer)
            for c, (seconds, log) in rings.items():
                samples.ring[c].append(seconds)
                samples.compute[c].append(log.compute_s)
                samples.wait[c].append(log.wait_s.get("K/V", 0.0))
    return samples


def _check(world: int, shape: tuple[int, ...], rounds: int) -> None:
    if not isinstance(world, int) or world < 2:
        raise ValueError(f"world must be an integer >= 2 (a ring of one passes nothing), got {world!r}")
    if not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds must be an integer >= 1, got {rounds!r}")
    if len(shape) != 4 or any(not isinstance(n, int) or n < 1 for n in shape):
        raise ValueError(f"shape must be four positive integers (batch, heads, sequence, head dim), got {shape!r}")
    split_sequence(torch.empty(1, 1, shape[2], 1), world, "balanced")  # a clear ValueError if it does not split


def ring_attention_bench(world: int = 2, shape: tuple[int, int, int, int] | None = None, causal: bool = True,
                         rounds: int | None = None) -> RingAttentionBench:
    """Measure ring attention's forward on ``world`` ranks against one rank's whole-sequence SDPA (see the module).

    ``shape``: batch, heads, whole sequence, head dim (default 1 × 4 × 2048 × 64; 1 × 2 × 256 × 32 in quick mode).
    ``rounds``: timed rounds after one warm-up round (default 7; 2 in quick mode).
    """
    size = shape if shape is not None else pick((1, 4, 2048, 64), (1, 2, 256, 32))
    rounds = rounds if rounds is not None else pick(7, 2)
    _check(world, tuple(size), rounds)
    per_rank = launch(_worker, world, size, causal, rounds, timeout=1800)
    median = statistics.median
    rows = tuple(RingTiming(*c, median(per_rank[0].ring[c]), tuple(median(s.compute[c]) for s in per_rank),
                            tuple(median(s.wait[c]) for s in per_rank)) for c in CONTENDERS)
    return RingAttentionBench(world, size, causal, rounds, median(per_rank[0].reference),
                              median(per_rank[0].transfer), rows)

