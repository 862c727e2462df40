"""Benchmark: ZeRO stages 0-3 (``d2lmp.parallel.zero``) against PyTorch's FSDP2 on the same ranks.

For each configuration: the bytes of parameters, gradients and optimizer state each rank keeps
(counted from the tensors it holds, ``HeldBytes``) and the median step time of the slowest rank, one
``ZeroTiming`` per configuration. Rounds alternate the configurations, so drifting machine load hits
all of them alike.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.distributed as dist

from d2lmp.model.training_state import STATE_PARTS
from d2lmp.parallel.launch import launch
from d2lmp.parallel.zero import STAGES, fsdp2_train, zero_train

__all__ = ["CONFIGS", "DEFAULT_SIZES", "HeldBytes", "ZeroTiming", "zero_bench"]

CONFIGS = tuple(f"stage {s}" for s in STAGES) + ("FSDP2",)
DEFAULT_SIZES = (1024, 1536, 1536, 1536, 10)  # an MLP of about 6.3 M parameters (25 MB in float32)


@dataclass(frozen=True)
class HeldBytes:
    """The bytes one rank keeps between steps (the largest over the ranks), by kind."""

    parameters: int
    gradients: int
    optimizer_state: int

    @property
    def total(self) -> int:
        return self.parameters + self.gradients + self.optimizer_state


@dataclass(frozen=True)
class ZeroTiming:
    """One configuration ("stage 0" ... "stage 3", "FSDP2"): median step of the slowest rank and the bytes kept."""

    config: str
    step_s: float
    held: HeldBytes


def _check(world: int, sizes: tuple[int, ...], batch: int, steps: int, rounds: int) -> None:
    def whole(name: str, value: object, minimum: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")

    whole("world", world, 2)  # one rank shards nothing
    whole("steps", steps, 2)  # the first step of each round is a warm-up
    whole("rounds", rounds, 1)
    if len(sizes) < 2:
        raise ValueError(f"sizes needs at least an input and an output width, got {tuple(sizes)}")
    for size in sizes:
        whole("every layer width in sizes", size, 1)
    whole(f"batch (at least one example per rank on {world} ranks)", batch, world)


def _worker(rank: int, world: int, sizes: tuple[int, ...], batch: int, steps: int, rounds: int,
            progress: bool) -> dict[str, ZeroTiming]:
    """This rank's median step (of the slowest rank) and the bytes it keeps, per configuration."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(batch, sizes[0], generator=g)
    y = torch.randint(0, sizes[-1], (batch,), generator=g)
    times: dict[str, list[float]] = {c: [] for c in CONFIGS}
    held: dict[str, dict[str, int]] = {}
    for r in range(rounds):
        for config in CONFIGS:
            if progress and rank == 0:
                print(f"  round {r + 1}/{rounds}: {config}", file=sys.stderr, flush=True)
            if config == "FSDP2":
                out = fsdp2_train(rank, world, sizes, x, y, steps=steps)
            else:
                out = zero_train(rank, world, sizes, x, y, stage=int(config[-1]), steps=steps)
            slowest = torch.tensor(out.step_seconds, dtype=torch.float64)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            times[config] += slowest[1:].tolist()  # the first step warms up (FSDP2 initialises lazily)
            held[config] = out.held
    return {c: ZeroTiming(c, statistics.median(times[c]), HeldBytes(**held[c])) for c in CONFIGS}


def zero_bench(world: int = 2, sizes: Sequence[int] = DEFAULT_SIZES, batch: int = 64, steps: int = 5, rounds: int = 3,
               progress: bool = False) -> list[ZeroTiming]:
    """One ``ZeroTiming`` per configuration of ``CONFIGS``: the median step of the slowest rank, the bytes kept."""
    widths = tuple(sizes)
    _check(world, widths, batch, steps, rounds)
    per_rank = launch(_worker, world, widths, batch, steps, rounds, progress, timeout=1800)
    rows = []
    for config in CONFIGS:
        held = HeldBytes(**{k: max(getattr(r[config].held, k) for r in per_rank)
                            for k in STATE_PARTS})
        rows.append(ZeroTiming(config=config, step_s=per_rank[0][config].step_s, held=held))
    return rows
