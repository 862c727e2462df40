"""Benchmark: ZeRO stages 0-3 (``d2lmp.parallel.zero``) against PyTorch's FSDP2 on the same ranks.

For each configuration: the bytes of parameters, gradients and optimizer state each rank keeps
(counted from the tensors it holds) and the median step time of the slowest rank. Rounds
alternate the configurations, so drifting machine load hits all of them alike. The goal: our
stage 3, built from Python ring collectives, within 1.3x of FSDP2's step.
"""

from __future__ import annotations

import statistics
import sys

import torch
import torch.distributed as dist

from ..parallel.launch import launch
from ..parallel.zero import STAGES, fsdp2_train, zero_train

__all__ = ["CONFIGS", "DEFAULT_SIZES", "GOAL_RATIO", "zero_bench", "goal"]

CONFIGS = tuple(f"stage {s}" for s in STAGES) + ("FSDP2",)
DEFAULT_SIZES = (1024, 1536, 1536, 1536, 10)  # an MLP of about 6.3 M parameters (25 MB in float32)
GOAL_RATIO = 1.3


def _check(world, sizes, batch, steps, rounds) -> None:
    def whole(name, value, minimum):
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


def _worker(rank, world, sizes, batch, steps, rounds, progress):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(batch, sizes[0], generator=g)
    y = torch.randint(0, sizes[-1], (batch,), generator=g)
    times = {c: [] for c in CONFIGS}
    held = {}
    for r in range(rounds):
        for config in CONFIGS:
            if progress and rank == 0:
                print(f"  round {r + 1}/{rounds}: {config}", file=sys.stderr, flush=True)
            if config == "FSDP2":
                out = fsdp2_train(rank, world, sizes, x, y, steps=steps)
            else:
                out = zero_train(rank, world, sizes, x, y, stage=int(config[-1]), steps=steps)
            slowest = torch.tensor(out["step_seconds"], dtype=torch.float64)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            times[config] += slowest[1:].tolist()  # the first step warms up (FSDP2 initialises lazily)
            held[config] = out["held"]
    return {c: dict(step_s=statistics.median(times[c]), held=held[c]) for c in CONFIGS}


def zero_bench(world: int = 2, sizes=DEFAULT_SIZES, batch: int = 64, steps: int = 5, rounds: int = 3,
               progress: bool = False) -> list[dict]:
    """Rows of config, step_s (median, slowest rank), held (bytes kept per rank, the largest over ranks)."""
    sizes = tuple(sizes)
    _check(world, sizes, batch, steps, rounds)
    per_rank = launch(_worker, world, sizes, batch, steps, rounds, progress, timeout=1800)
    rows = []
    for config in CONFIGS:
        held = {k: max(r[config]["held"][k] for r in per_rank) for k in per_rank[0][config]["held"]}
        rows.append(dict(config=config, step_s=per_rank[0][config]["step_s"], held=held))
    return rows


def goal(rows: list[dict]) -> tuple[float, bool]:
    """(stage 3 step / FSDP2 step, whether it is within ``GOAL_RATIO``)."""
    step = {r["config"]: r["step_s"] for r in rows}
    ratio = step["stage 3"] / step["FSDP2"]
    return ratio, ratio <= GOAL_RATIO
