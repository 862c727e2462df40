"""The roofline model: attainable FLOP/s = min(peak FLOP/s, arithmetic intensity × bandwidth).

Arithmetic intensity (AI) is FLOPs per byte moved to or from main memory. Operations
left of the ridge point (peak / bandwidth) are memory-bound, those right of it
compute-bound. Bytes here are the minimum traffic: every operand read once and every
result written once, as if caches were perfect for reuse within one call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .timing import benchmark, resolve_device, resolve_dtype


def attainable_gflops(intensity, peak_gflops: float, bandwidth_gbs: float):
    """The roofline: min(peak, intensity × bandwidth), for a number or an array of intensities."""
    if peak_gflops <= 0 or bandwidth_gbs <= 0:
        raise ValueError(f"peak and bandwidth must be positive, got {peak_gflops} and {bandwidth_gbs}")
    intensity = np.asarray(intensity, dtype=float)
    if np.any(intensity <= 0):
        raise ValueError("arithmetic intensity must be positive (FLOPs per byte)")
    result = np.minimum(peak_gflops, intensity * bandwidth_gbs)
    return float(result) if result.ndim == 0 else result


def ridge_point(peak_gflops: float, bandwidth_gbs: float) -> float:
    """The intensity (FLOP/byte) where the memory roof meets the compute roof."""
    return peak_gflops / bandwidth_gbs


@dataclass
class OpPoint:
    """One measured operation placed on a roofline."""

    name: str
    flops: float
    bytes: float
    seconds: float

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    @property
    def gflops(self) -> float:
        return self.flops / self.seconds / 1e9

    @property
    def gbs(self) -> float:
        return self.bytes / self.seconds / 1e9

    @classmethod
    def from_rates(cls, name: str, intensity: float, gflops: float, bytes: float = 1.0) -> OpPoint:
        """A point from its intensity (FLOP/byte) and rate (GFLOP/s), e.g. one read back from a report.

        The absolute size is lost in such records, so ``bytes`` (1 by default) only sets the
        scale: flops = intensity × bytes and seconds = flops / rate, which keeps both rates.
        """
        if intensity <= 0 or gflops <= 0 or bytes <= 0:
            raise ValueError(f"intensity, gflops and bytes must be positive, got {intensity}, {gflops}, {bytes}")
        flops = intensity * bytes
        return cls(name, flops, bytes, flops / (gflops * 1e9))


def points_from_records(records) -> list[OpPoint]:
    """``OpPoint``s from dicts with name, intensity and gflops (as ``d2lmp selfcheck`` records them)."""
    points = []
    for r in records:
        missing = {"name", "intensity", "gflops"} - set(r)
        if missing:
            raise ValueError(f"record {r!r} lacks {', '.join(sorted(missing))}")
        points.append(OpPoint.from_rates(r["name"], r["intensity"], r["gflops"]))
    return points


def best_matmul(points) -> OpPoint:
    """The matmul point (name starting "matmul") with the highest GFLOP/s: a measured peak."""
    matmuls = [p for p in points if p.name.startswith("matmul")]
    if not matmuls:
        raise ValueError("no matmul among the points; measure_operations needs matmul_sizes")
    return max(matmuls, key=lambda p: p.gflops)


def summarise(points, peak_gflops: float, bandwidth_gbs: float) -> list[dict]:
    """One dict per point: its rates, which roof bounds it, that roof's height and the fraction reached."""
    ridge = ridge_point(peak_gflops, bandwidth_gbs)
    rows = []
    for p in points:
        roof = attainable_gflops(p.intensity, peak_gflops, bandwidth_gbs)
        rows.append(dict(name=p.name, intensity=p.intensity, gflops=p.gflops, gbs=p.gbs,
                         bound="memory" if p.intensity < ridge else "compute",
                         roof_gflops=roof, fraction_of_roof=p.gflops / roof))
    return rows


def speedups(base, faster) -> list[tuple[str, float]]:
    """(name, GFLOP/s of ``faster`` / GFLOP/s of ``base``) for every operation both lists measured.

    Names are matched exactly, in ``base``'s order; operations in only one list are left out.
    """
    rates = {p.name: p.gflops for p in faster}
    return [(p.name, rates[p.name] / p.gflops) for p in base if p.name in rates]


def measure_operations(
    device: str = "cpu",
    vector_megabytes: int = 64,
    matmul_sizes=(128, 512, 2048),
    dtype: str = "float32",
    min_time: float = 0.2,
) -> list[OpPoint]:
    """Time a ladder of operations from memory-bound to compute-bound on ``device``.

    Vector operations work on arrays of ``vector_megabytes`` each; matmuls on n×n matrices.
    """
    device = resolve_device(device)
    _, torch_dtype = resolve_dtype(dtype)
    size = torch.tensor([], dtype=torch_dtype).element_size()
    n = vector_megabytes * 2**20 // size
    x = torch.rand(n, device=device, dtype=torch_dtype)
    y = torch.rand(n, device=device, dtype=torch_dtype)
    out = torch.empty_like(x)
    cases = [
        ("add: z = x + y", lambda: torch.add(x, y, out=out), n, 3 * n * size),
        ("axpy: z = 2x + y", lambda: torch.add(y, x, alpha=2.0, out=out), 2 * n, 3 * n * size),
        ("sum(x)", lambda: x.sum(), n, n * size),
        ("dot(x, y)", lambda: torch.dot(x, y), 2 * n, 2 * n * size),
    ]
    for k in matmul_sizes:
        a = torch.rand(k, k, device=device, dtype=torch_dtype)
        b = torch.rand(k, k, device=device, dtype=torch_dtype)
        c = torch.empty(k, k, device=device, dtype=torch_dtype)
        cases.append((f"matmul n={k}", lambda a=a, b=b, c=c: torch.mm(a, b, out=c), 2 * k**3, 3 * k * k * size))
    points = []
    for name, fn, flops, nbytes in cases:
        m = benchmark(fn, device, min_time=min_time, label=name)
        points.append(OpPoint(name, float(flops), float(nbytes), m.median))
    return points
