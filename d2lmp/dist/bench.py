"""Benchmarks of the distributed pieces, each against PyTorch's own in the same run.

``allreduce_bench``: our ring against ``dist.all_reduce`` (bus bandwidth ratio).
``dp_bench``: step time of each data-parallel version against ``DistributedDataParallel``.
Rounds alternate the implementations so that drifting machine load hits both alike;
figures are medians over rounds.
"""

from __future__ import annotations

import statistics

from . import collectives as C
from . import data_parallel as DP
from .launch import launch

KIB, MIB = 2**10, 2**20
ALLREDUCE_SIZES = tuple(KIB * 4**k for k in range(9))  # 1 KiB ... 64 MiB


def _allreduce_worker(rank, world, sizes, rounds, min_time):
    rows = []
    for size in sizes:
        samples = {"torch": [], "ring": []}
        for _ in range(rounds):
            for impl in samples:
                samples[impl].append(C.measure_collective("all_reduce", impl, [size], repeats=3, min_time=min_time)[0])
        for impl, rs in samples.items():
            seconds = statistics.median(r["seconds"] for r in rs)
            algbw = rs[0]["size_bytes"] / seconds / 1e9
            rows.append(dict(impl=impl, world=world, size_bytes=rs[0]["size_bytes"], seconds=seconds,
                             algbw_gbs=algbw, busbw_gbs=C.bus_bandwidth(algbw, "all_reduce", world)))
    return rows


def allreduce_bench(worlds=(2, 4), sizes=ALLREDUCE_SIZES, rounds: int = 3, min_time: float = 0.05) -> list[dict]:
    """Rows of (impl, world, size, seconds, algbw, busbw) for our ring and gloo's all-reduce."""
    rows = []
    for world in worlds:
        rows += launch(_allreduce_worker, world, tuple(sizes), rounds, min_time, timeout=600)[0]
    return rows


def dp_bench_spec() -> DP.MLPSpec:
    """The benchmark model: about 15 M parameters (60 MB of gradients) in five linear layers."""
    return DP.MLPSpec((1024, 2048, 2048, 2048, 2048, 10), seed=0)


def _dp_worker(rank, world, spec, batch, steps, rounds, bucket_bytes, versions):
    x, y = DP.synthetic_data(spec, batch)
    times = {v: [] for v in versions}
    for _ in range(rounds):
        for v in versions:
            result = DP.dp_train(rank, world, spec, x, y, v, steps=steps, lr=0.01, bucket_bytes=bucket_bytes)
            times[v] += result["step_seconds"][2:]  # the first steps warm up (DDP builds its buckets)
    return {v: statistics.median(t) for v, t in times.items()}


def dp_bench(world: int = 2, batch: int = 64, steps: int = 6, rounds: int = 3, bucket_bytes: int = 4 * MIB,
             versions=DP.VERSIONS, spec: DP.MLPSpec | None = None) -> dict[str, float]:
    """Median step seconds of each data-parallel version on ``world`` ranks (the slowest rank's)."""
    spec = spec or dp_bench_spec()
    per_rank = launch(_dp_worker, world, spec, batch, steps, rounds, bucket_bytes, tuple(versions), timeout=900)
    return {v: max(r[v] for r in per_rank) for v in versions}
