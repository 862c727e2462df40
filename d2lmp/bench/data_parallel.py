"""Data-parallel benchmark: step time of each version against PyTorch's ``DistributedDataParallel``.

Rounds alternate the versions so that drifting machine load hits all alike; figures are
medians over steps and rounds, taken on the slowest rank, one ``VersionTiming`` per version.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from d2lmp.parallel import data_parallel as DP
from d2lmp.parallel.launch import launch

__all__ = ["VersionTiming", "dp_bench", "dp_bench_spec"]


@dataclass(frozen=True)
class VersionTiming:
    """One data-parallel version's median step seconds (the slowest rank's)."""

    version: str  # one of data_parallel.VERSIONS
    step_s: float


def dp_bench_spec() -> DP.MLPSpec:
    """The benchmark model: about 15 M parameters (60 MB of gradients) in five linear layers."""
    return DP.MLPSpec((1024, 2048, 2048, 2048, 2048, 10), seed=0)


def _dp_worker(rank: int, world: int, spec: DP.MLPSpec, batch: int, steps: int, rounds: int, bucket_bytes: int,
               versions: tuple[str, ...]) -> dict[str, float]:
    x, y = DP.synthetic_data(spec, batch)
    times: dict[str, list[float]] = {v: [] for v in versions}
    for _ in range(rounds):
        for v in versions:
            result = DP.dp_train(rank, world, spec, x, y, v, steps=steps, lr=0.01, bucket_bytes=bucket_bytes)
            times[v] += result.step_seconds[2:]  # the first steps warm up (DDP builds its buckets)
    return {v: statistics.median(t) for v, t in times.items()}


def dp_bench(world: int = 2, batch: int = 64, steps: int = 6, rounds: int = 3, bucket_bytes: int = 4 * 2**20,
             versions: Sequence[str] = DP.VERSIONS, spec: DP.MLPSpec | None = None) -> list[VersionTiming]:
    """Median step seconds of each data-parallel version on ``world`` ranks (the slowest rank's), in order."""
    spec = spec or dp_bench_spec()
    per_rank = launch(_dp_worker, world, spec, batch, steps, rounds, bucket_bytes, tuple(versions), timeout=900)
    return [VersionTiming(v, max(r[v] for r in per_rank)) for v in versions]
