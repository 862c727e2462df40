"""The α-β (latency-bandwidth) model of collectives, and nccl-tests' bus bandwidth.

Pure arithmetic, no torch.distributed: the analytic models (``dp_model``, ``costmodel``)
and the figures use it without starting any process. Cost per rank for an all-reduce of
S bytes on n ranks, with latency α per message and β seconds per byte:
    naive (reduce to rank 0, then broadcast):  2(n-1)·(α + S·β) on rank 0, the bottleneck
    tree (binary, reduce then broadcast):       2⌈log2 n⌉·(α + S·β)
    ring (reduce-scatter, then all-gather):     2(n-1)·(α + S/n·β)
so the ring moves the least data per rank for large S, the tree has the fewest steps.
``fit_alpha_beta`` fits a line to measured times and ``ring_alpha_beta`` reads α and β off it;
``GPU_ALPHA_S`` is the one GPU-typical α the series assumes, with its source.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = ["ALGORITHMS", "BUS_FACTORS", "GPU_ALPHA_S", "GPU_ALPHA_SOURCE", "AllReduceModel", "all_reduce_model",
           "bus_bandwidth", "fit_alpha_beta", "predicted_all_reduce_time", "ring_alpha_beta", "ring_bytes_per_rank"]

# The per-message latency α assumed for GPUs wherever no measurement is at hand (the cost model's presets,
# the α-β and data-parallel figures): NCCL's own tuning model charges each step of a ring over NVLink 3.4 µs
# with its Simple protocol, the protocol that reaches the link's bandwidth (its low-latency protocols cut
# the step to 0.6-1.9 µs at a fraction of the bandwidth; over PCIe the figure is 5.7 µs; NCCL also adds a
# base latency of a few µs once per collective, which this model leaves out).
GPU_ALPHA_S = 3.4e-6
GPU_ALPHA_SOURCE = ("nvidia_nccl_tuning",)
ALGORITHMS = ("naive", "tree", "ring")

BUS_FACTORS: dict[str, Callable[[int], float]] = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "all_to_all": lambda n: (n - 1) / n,  # a rank keeps 1/n of what it sends
}


def ring_bytes_per_rank(collective: str, size_bytes: float, world: int) -> float:
    """Bytes each rank sends when a collective of S = ``size_bytes`` runs as a ring on ``world`` ranks: S × the
    bus factor (S is the whole buffer, as nccl-tests counts it: an all-gather's gathered output). The one place
    code turns a collective's size into bytes on the wire; 0 on one rank."""
    if collective not in BUS_FACTORS:
        raise ValueError(f"unknown collective {collective!r}; available: {', '.join(BUS_FACTORS)}")
    if world < 1:
        raise ValueError(f"world must be at least 1, got {world}")
    return size_bytes * BUS_FACTORS[collective](world)


def bus_bandwidth(algbw: float, collective: str, world: int) -> float:
    """nccl-tests' bus bandwidth: algbw × a factor that makes figures comparable to link speed."""
    if collective not in BUS_FACTORS:
        raise ValueError(f"unknown collective {collective!r}; available: {', '.join(BUS_FACTORS)}")
    return algbw * BUS_FACTORS[collective](world)


def fit_alpha_beta(sizes_bytes: Sequence[float], seconds: Sequence[float]) -> tuple[float, float]:
    """Fit t = α + β·S to measurements: (α seconds per message, β seconds per byte).

    Sizes usually span several decades, so the fit minimises *relative* error (each point
    weighted by 1/t); an unweighted fit would let the largest size decide everything.
    α < 0 is refitted with α fixed at zero. Times that do not grow with size (β ≤ 0) mean the
    sizes never left the latency-bound region, or the machine was too noisy: that raises
    ValueError rather than returning a bandwidth the data do not show.
    """
    s = [float(x) for x in sizes_bytes]
    t = [float(y) for y in seconds]
    if len(s) != len(t) or len(s) < 2:
        raise ValueError("need at least two (size, time) pairs of equal length")
    if any(y <= 0 for y in t) or any(x < 0 for x in s):
        raise ValueError("times must be positive and sizes non-negative")
    # Weighted least squares: rows (w, w·S) against w·t with w = 1/t, so every w·t is 1.
    a = [1 / y for y in t]
    b = [x / y for x, y in zip(s, t)]
    saa, sab, sbb = sum(v * v for v in a), sum(u * v for u, v in zip(a, b)), sum(v * v for v in b)
    det = saa * sbb - sab * sab
    if det <= 1e-12 * saa * sbb:
        raise ValueError("need at least two different message sizes to fit a line")
    alpha = (sbb * sum(a) - sab * sum(b)) / det
    beta = (saa * sum(b) - sab * sum(a)) / det
    if alpha < 0:
        alpha, beta = 0.0, sum(b) / sbb
    if not beta > 0:
        raise ValueError(
            "the times do not grow with message size "
            f"({', '.join(f'{x:.0f} B: {y * 1e6:.0f} µs' for x, y in zip(s, t))}); "
            "measure larger sizes, or repeat on a quieter machine")
    return float(alpha), float(beta)


def ring_alpha_beta(intercept: float, slope: float, world: int) -> tuple[float, float]:
    """(α, β) of one ring step from a line t = intercept + slope·S fitted to ring all-reduce times on ``world`` ranks.

    A ring all-reduce is t = 2(n-1)(α + S/n·β) = 2(n-1)·α + 2(n-1)/n·β·S, so α = intercept / (2(n-1)) and
    β = slope · n / (2(n-1)); on 2 ranks, α = intercept / 2 and β = slope. A negative intercept (noise) gives α = 0.
    """
    if not isinstance(world, int) or isinstance(world, bool) or world < 2:
        raise ValueError(f"a ring all-reduce needs an integer world >= 2, got {world!r}")
    if not slope > 0:
        raise ValueError(f"the slope must be positive seconds per byte, got {slope!r}")
    messages = 2 * (world - 1)
    return max(intercept, 0.0) / messages, slope * world / messages


def predicted_all_reduce_time(algorithm: str, world: int, size_bytes: float, alpha: float, beta: float) -> float:
    """The α-β model's all-reduce time for "naive", "tree" or "ring" (see the module docstring)."""
    if world < 1 or size_bytes < 0:
        raise ValueError("world must be >= 1 and size_bytes >= 0")
    if world == 1:
        return 0.0
    if algorithm == "naive":
        return 2 * (world - 1) * (alpha + size_bytes * beta)
    if algorithm == "tree":
        return 2 * math.ceil(math.log2(world)) * (alpha + size_bytes * beta)
    if algorithm == "ring":
        return 2 * (world - 1) * (alpha + size_bytes / world * beta)
    raise ValueError(f"unknown algorithm {algorithm!r}; available: naive, tree, ring")


@dataclass(frozen=True)
class AllReduceModel:
    """The α-β model's naive, tree and ring all-reduce on ``world`` ranks: ``times`` at ``size_bytes``, and
    ``curves`` (seconds per algorithm) over ``sizes``."""

    world: int
    size_bytes: float
    alpha: float
    beta: float
    times: dict[str, float]
    sizes: tuple[float, ...]
    curves: dict[str, tuple[float, ...]]

    @property
    def fastest(self) -> str:
        return min(self.times, key=lambda a: self.times[a])


def all_reduce_model(world: int, size_bytes: float, alpha: float, beta: float,
                     sizes: Iterable[float] = ()) -> AllReduceModel:
    """``predicted_all_reduce_time`` of every algorithm in ``ALGORITHMS`` at ``size_bytes`` and over ``sizes``."""
    grid = tuple(float(s) for s in sizes)
    return AllReduceModel(
        world, size_bytes, alpha, beta,
        {a: predicted_all_reduce_time(a, world, size_bytes, alpha, beta) for a in ALGORITHMS}, grid,
        {a: tuple(predicted_all_reduce_time(a, world, s, alpha, beta) for s in grid) for a in ALGORITHMS})
