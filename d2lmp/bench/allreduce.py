"""All-reduce benchmark: our ring against the backend's own ``dist.all_reduce``, in bus bandwidth.

Rounds alternate the two implementations so that drifting machine load hits both alike;
figures are medians over rounds.
"""

from __future__ import annotations

import statistics

from ..parallel import collectives as C
from ..parallel.alpha_beta import bus_bandwidth
from ..parallel.launch import launch

__all__ = ["ALLREDUCE_SIZES", "allreduce_bench", "measure_all_reduces"]

KIB = 2**10
ALLREDUCE_SIZES = tuple(KIB * 4**k for k in range(9))  # 1 KiB ... 64 MiB


def measure_all_reduces(rank: int, world: int, sizes, impls=("torch", "naive", "tree", "ring"),
                        min_time: float = 0.05, repeats: int = 3) -> list[C.CollectiveTiming]:
    """On one rank: all-reduce timings of each implementation at each size (see ``collectives.measure_collective``)."""
    rows = []
    for impl in impls:
        rows += C.measure_collective("all_reduce", impl, sizes, repeats=repeats, min_time=min_time)
    return rows


def _allreduce_worker(rank, world, sizes, rounds, min_time):
    import torch.distributed as dist

    backend = dist.get_backend()  # "torch" below is this backend's own all-reduce
    rows = []
    for size in sizes:
        samples = {"torch": [], "ring": []}
        for _ in range(rounds):
            for impl in samples:
                samples[impl].append(C.measure_collective("all_reduce", impl, [size], repeats=3, min_time=min_time)[0])
        for impl, rs in samples.items():
            seconds = statistics.median(t.seconds for t in rs)
            algbw = rs[0].size_bytes / seconds / 1e9
            rows.append(dict(impl=impl, world=world, backend=backend, size_bytes=rs[0].size_bytes, seconds=seconds,
                             algbw_gbs=algbw, busbw_gbs=bus_bandwidth(algbw, "all_reduce", world)))
    return rows


def allreduce_bench(worlds=(2, 4), sizes=ALLREDUCE_SIZES, rounds: int = 5, min_time: float = 0.1) -> list[dict]:
    """Rows of (impl, world, backend, size, seconds, algbw, busbw) for our ring and the backend's all-reduce.

    ``launch`` picks the backend per world size: NCCL when there is a GPU per rank, else gloo.
    """
    rows = []
    for world in worlds:
        rows += launch(_allreduce_worker, world, tuple(sizes), rounds, min_time, timeout=600)[0]
    return rows
