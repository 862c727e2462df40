"""All-reduce benchmark: our ring against the backend's own ``dist.all_reduce``, in bus bandwidth.

Rounds alternate the two implementations (each round swaps which goes first) so that drifting
machine load hits both alike; figures are medians over rounds. ``allreduce_goal_lines`` judges the
ring/backend ratios of a run against ``ALLREDUCE_GOALS`` over ``GOAL_SIZES``.
"""

from __future__ import annotations

import statistics

from ..parallel import collectives as C
from ..parallel.alpha_beta import bus_bandwidth
from ..parallel.launch import launch

__all__ = ["ALLREDUCE_SIZES", "GOAL_SIZES", "ALLREDUCE_GOALS", "allreduce_bench", "allreduce_goal_lines",
           "measure_all_reduces", "size_label"]

KIB = 2**10
ALLREDUCE_SIZES = tuple(KIB * 4**k for k in range(9))  # 1 KiB ... 64 MiB
GOAL_SIZES = (64 * KIB, 64 * KIB**2)  # the goals hold from 64 KiB to 64 MiB, both included
ALLREDUCE_GOALS = {2: 0.9, 4: 0.8}  # ranks -> the least ring/backend bus-bandwidth ratio over GOAL_SIZES


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
        for i in range(rounds):
            for impl in ("torch", "ring") if i % 2 == 0 else ("ring", "torch"):
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


def size_label(n: int) -> str:
    """A size as the table shows it: whole MiB or KiB where it is one, else bytes."""
    for unit, scale in (("MiB", KIB**2), ("KiB", KIB)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def allreduce_goal_lines(rows) -> list[str]:
    """One line per world size of ``ALLREDUCE_GOALS`` that the rows measured: the goal, the worst
    ring/backend busbw ratio within ``GOAL_SIZES``, the size where it occurs, and "(met)" or "(missed)".

    Sizes of ``ALLREDUCE_SIZES`` in range that the run skipped are named, since the verdict then
    covers only part of the range. A world with no measured size in range gets a line saying so.
    """
    low, high = GOAL_SIZES
    lines = []
    for world, goal in ALLREDUCE_GOALS.items():
        ours = {r["size_bytes"]: r for r in rows if r["world"] == world and r["impl"] == "ring"}
        if not ours:
            continue  # this world size did not run
        theirs = {r["size_bytes"]: r for r in rows if r["world"] == world and r["impl"] == "torch"}
        ratios = {s: ours[s]["busbw_gbs"] / theirs[s]["busbw_gbs"] for s in ours if low <= s <= high}
        backend = next(iter(ours.values()))["backend"]
        head = (f"goal: ring/{backend} busbw >= {goal}x from {size_label(low)} to {size_label(high)} "
                f"on {world} ranks: ")
        if not ratios:
            lines.append(head + "no size in range measured")
            continue
        worst = min(ratios, key=ratios.get)
        skipped = [size_label(s) for s in ALLREDUCE_SIZES if low <= s <= high and s not in ratios]
        lines.append(head + f"worst {ratios[worst]:.2f} at {size_label(worst)} "
                     f"({'met' if ratios[worst] >= goal else 'missed'})"
                     + (f"; not measured: {', '.join(skipped)}" if skipped else ""))
    return lines
