"""The α-β (latency-bandwidth) model of collectives, and nccl-tests' bus bandwidth.

Pure arithmetic, no torch.distributed: the analytic models (``dp_model``, ``costmodel``)
and the figures use it without starting any process. Cost per rank for an all-reduce of
S bytes on n ranks, with latency α per message and β seconds per byte:
    naive (reduce to rank 0, then broadcast):  2(n-1)·(α + S·β) on rank 0, the bottleneck
    tree (binary, reduce then broadcast):       2⌈log2 n⌉·(α + S·β)
    ring (reduce-scatter, then all-gather):     2(n-1)·(α + S/n·β)
so the ring moves the least data per rank for large S, the tree has the fewest steps.
``fit_alpha_beta`` recovers α and β from measured times.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["BUS_FACTORS", "bus_bandwidth", "fit_alpha_beta", "predicted_all_reduce_time"]

BUS_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "all_to_all": lambda n: (n - 1) / n,  # a rank keeps 1/n of what it sends
}


def bus_bandwidth(algbw: float, collective: str, world: int) -> float:
    """nccl-tests' bus bandwidth: algbw × a factor that makes figures comparable to link speed."""
    if collective not in BUS_FACTORS:
        raise ValueError(f"unknown collective {collective!r}; available: {', '.join(BUS_FACTORS)}")
    return algbw * BUS_FACTORS[collective](world)


def fit_alpha_beta(sizes_bytes, seconds) -> tuple[float, float]:
    """Fit t = α + β·S to measurements: (α seconds per message, β seconds per byte).

    Sizes usually span several decades, so the fit minimises *relative* error (each point
    weighted by 1/t); an unweighted fit would let the largest size decide everything.
    α < 0 is refitted with α fixed at zero. Times that do not grow with size (β ≤ 0) mean the
    sizes never left the latency-bound region, or the machine was too noisy: that raises
    ValueError rather than returning a bandwidth the data do not show.
    """
    s = np.asarray(sizes_bytes, dtype=float)
    t = np.asarray(seconds, dtype=float)
    if s.shape != t.shape or s.ndim != 1 or len(s) < 2:
        raise ValueError("need at least two (size, time) pairs of equal length")
    if np.any(t <= 0) or np.any(s < 0):
        raise ValueError("times must be positive and sizes non-negative")
    w = 1 / t
    design = np.stack([np.ones_like(s), s], axis=1) * w[:, None]
    (alpha, beta), *_ = np.linalg.lstsq(design, t * w, rcond=None)
    if alpha < 0:
        alpha, beta = 0.0, float(np.dot(s * w, t * w) / np.dot(s * w, s * w))
    if not beta > 0:
        raise ValueError(
            "the times do not grow with message size "
            f"({', '.join(f'{x:.0f} B: {y * 1e6:.0f} µs' for x, y in zip(s, t))}); "
            "measure larger sizes, or repeat on a quieter machine")
    return float(alpha), float(beta)


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
