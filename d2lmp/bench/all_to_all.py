"""All-to-all benchmark: our all-to-all from send/recv against the backend's own, in bus bandwidth.

Two pairs run in the same rounds. "pairwise" (ours) and "torch" (``dist.all_to_all_single``) send
equal blocks and receive into buffers made once: the transports alone, which ``d2lmp bench all-to-all`` judges.
"pairwise+sizes" and "torch+sizes" treat the sizes as unknown, as an expert-parallel layer's are:
ours exchanges them and allocates its outputs, torch's is preceded by an all_to_all_single of the
counts (``all_to_all.torch_all_to_all_flat``). S is every block a rank sends, its own included; busbw =
algbw × (n-1)/n. Rounds alternate the order of the contenders so that drifting load hits all alike;
figures are medians over rounds, and a ratio is the median over rounds of the ratio within each round
(paired: a round the machine was busy slows both contenders of a pair).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import torch.distributed as dist

from d2lmp.model.alpha_beta import bus_bandwidth
from d2lmp.parallel import collectives as C
from d2lmp.parallel.launch import launch

__all__ = ["A2A_SIZES", "A2A_PAIRS", "AllToAllTiming", "AllToAllRatio", "all_to_all_bench", "all_to_all_ratios"]

KIB = 2**10
A2A_SIZES = tuple(64 * KIB * 4**k for k in range(5))  # 64 KiB ... 16 MiB
A2A_PAIRS = (("pairwise", "torch"), ("pairwise+sizes", "torch+sizes"))  # (ours, the backend's), compared in pairs


@dataclass(frozen=True)
class AllToAllTiming:
    """One implementation at one size on ``world`` ranks: the median over rounds, as nccl-tests reports it,
    and each round's time (the slowest rank's median call)."""

    impl: str
    world: int
    backend: str
    size_bytes: int
    seconds: float
    algbw_gbs: float
    busbw_gbs: float
    round_seconds: tuple[float, ...] = ()


@dataclass(frozen=True)
class AllToAllRatio:
    """Ours against the backend's at one size: median bus bandwidths in GB/s, and ``ratio``, ours / theirs:
    the median over rounds of each round's ratio (of the medians where rounds were not recorded)."""

    ours: str
    theirs: str
    world: int
    backend: str
    size_bytes: int
    ours_busbw_gbs: float
    theirs_busbw_gbs: float
    ratio: float


def _worker(rank: int, world: int, sizes: tuple[int, ...], impls: tuple[str, ...], rounds: int,
            min_time: float) -> list[AllToAllTiming]:
    backend = dist.get_backend()
    rows = []
    for size in sizes:
        samples: dict[str, list[C.CollectiveTiming]] = {impl: [] for impl in impls}
        for i in range(rounds):
            for impl in impls if i % 2 == 0 else impls[::-1]:
                samples[impl] += C.measure_collective("all_to_all", impl, [size], repeats=3, min_time=min_time)
        for impl, timings in samples.items():
            seconds = statistics.median(t.seconds for t in timings)
            algbw = timings[0].size_bytes / seconds / 1e9
            rows.append(AllToAllTiming(impl, world, backend, timings[0].size_bytes, seconds, algbw,
                                       bus_bandwidth(algbw, "all_to_all", world), tuple(t.seconds for t in timings)))
    return rows


def all_to_all_bench(worlds: Sequence[int] = (2, 4), sizes: Sequence[int] = A2A_SIZES, rounds: int = 5,
                     min_time: float = 0.1, pairs: Sequence[tuple[str, str]] = A2A_PAIRS) -> list[AllToAllTiming]:
    """Timings of each implementation of ``pairs`` at each size, on each number of ranks (one launch each).

    ``launch`` picks the backend per world size: NCCL when there is a GPU per rank, else gloo.
    """
    impls = tuple(impl for pair in pairs for impl in pair)
    unknown = set(impls) - {impl for pair in A2A_PAIRS for impl in pair}
    if unknown or rounds < 1 or min(worlds, default=0) < 2 or any(s < 4 * max(worlds) for s in sizes):
        raise ValueError(f"need implementations from {A2A_PAIRS} (unknown: {sorted(unknown)}), rounds >= 1, "
                         f"at least 2 ranks and sizes of at least one float32 per rank; got worlds {list(worlds)}, "
                         f"sizes {list(sizes)}, rounds {rounds}")
    rows: list[AllToAllTiming] = []
    for world in worlds:
        rows += launch(_worker, world, tuple(sizes), impls, rounds, min_time, timeout=600)[0]
    return rows


def all_to_all_ratios(rows: Sequence[AllToAllTiming],
                      pairs: Sequence[tuple[str, str]] = A2A_PAIRS) -> list[AllToAllRatio]:
    """Ours / theirs busbw for every (world, size) where both of a pair were measured."""
    found = {(r.impl, r.world, r.size_bytes): r for r in rows}
    ratios = []
    for ours, theirs in pairs:
        for (impl, world, size), row in found.items():
            other = found.get((theirs, world, size))
            if impl == ours and other is not None:
                paired = [t / o for o, t in zip(row.round_seconds, other.round_seconds)]
                ratio = statistics.median(paired) if paired else row.busbw_gbs / other.busbw_gbs
                ratios.append(AllToAllRatio(ours, theirs, world, row.backend, size, row.busbw_gbs, other.busbw_gbs,
                                            ratio))
    return ratios

