"""All-reduce benchmark: our ring against the backend's own ``dist.all_reduce``, in bus bandwidth.

Rounds alternate the two implementations (each round swaps which goes first) so that drifting
machine load hits both alike; figures are medians over rounds. Each measurement is an
``AllReduceTiming``; ``busbw_ratios`` gives the ring/backend ratio per size, which
``d2lmp bench allreduce`` (``d2lmp.commands.bench.allreduce``) judges against its goals.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from d2lmp.model.alpha_beta import bus_bandwidth
from d2lmp.parallel import collectives as C
from d2lmp.parallel.launch import launch

__all__ = ["KIB", "ALLREDUCE_SIZES", "AllReduceTiming", "allreduce_bench", "busbw_ratios", "measure_all_reduces",
           "size_label"]

KIB = 2**10
ALLREDUCE_SIZES = tuple(KIB * 4**k for k in range(9))  # 1 KiB ... 64 MiB


@dataclass(frozen=True)
class AllReduceTiming:
    """One implementation's all-reduce at one size on ``world`` ranks: median seconds and nccl-tests' bandwidths."""

    impl: str  # "torch" (the backend's own dist.all_reduce) or "ring" (ours)
    world: int
    backend: str  # the backend that ran: "gloo" or "nccl"
    size_bytes: int
    seconds: float
    algbw_gbs: float
    busbw_gbs: float


def measure_all_reduces(rank: int, world: int, sizes: Sequence[int],
                        impls: Sequence[str] = ("torch", "naive", "tree", "ring"),
                        min_time: float = 0.05, repeats: int = 3) -> list[C.CollectiveTiming]:
    """On one rank: all-reduce timings of each implementation at each size (see ``collectives.measure_collective``)."""
    rows = []
    for impl in impls:
        rows += C.measure_collective("all_reduce", impl, sizes, repeats=repeats, min_time=min_time)
    return rows


def _allreduce_worker(rank: int, world: int, sizes: tuple[int, ...], rounds: int,
                      min_time: float) -> list[AllReduceTiming]:
    import torch.distributed as dist

    backend = str(dist.get_backend())  # "torch" below is this backend's own all-reduce
    rows = []
    for size in sizes:
        samples: dict[str, list[C.CollectiveTiming]] = {"torch": [], "ring": []}
        for i in range(rounds):
            for impl in ("torch", "ring") if i % 2 == 0 else ("ring", "torch"):
                samples[impl].append(C.measure_collective("all_reduce", impl, [size], repeats=3, min_time=min_time)[0])
        for impl, rs in samples.items():
            seconds = statistics.median(t.seconds for t in rs)
            algbw = rs[0].size_bytes / seconds / 1e9
            rows.append(AllReduceTiming(impl=impl, world=world, backend=backend, size_bytes=rs[0].size_bytes,
                                        seconds=seconds, algbw_gbs=algbw,
                                        busbw_gbs=bus_bandwidth(algbw, "all_reduce", world)))
    return rows


def allreduce_bench(worlds: Iterable[int] = (2, 4), sizes: Sequence[int] = ALLREDUCE_SIZES, rounds: int = 5,
                    min_time: float = 0.1) -> list[AllReduceTiming]:
    """Our ring and the backend's all-reduce at every size on every world size, medians of ``rounds``.

    ``launch`` picks the backend per world size: NCCL when there is a GPU per rank, else gloo.
    """
    rows: list[AllReduceTiming] = []
    for world in worlds:
        rows += launch(_allreduce_worker, world, tuple(sizes), rounds, min_time, timeout=600)[0]
    return rows


def size_label(n: int) -> str:
    """A size as the table shows it: whole MiB or KiB where it is one, else bytes."""
    for unit, scale in (("MiB", KIB**2), ("KiB", KIB)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def busbw_ratios(rows: Iterable[AllReduceTiming], world: int) -> dict[int, float]:
    """Size in bytes -> ring busbw / backend busbw on ``world`` ranks, for every size where both ran."""
    rows = list(rows)
    ours = {r.size_bytes: r.busbw_gbs for r in rows if r.world == world and r.impl == "ring"}
    theirs = {r.size_bytes: r.busbw_gbs for r in rows if r.world == world and r.impl == "torch"}
    return {size: ours[size] / theirs[size] for size in ours if size in theirs}
