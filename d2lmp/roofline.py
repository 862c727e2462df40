"""The roofline model: attainable FLOP/s = min(peak FLOP/s, arithmetic intensity × bandwidth).

Arithmetic intensity (AI) is FLOPs per byte moved to or from main memory. Operations
left of the ridge point (peak / bandwidth) are memory-bound, those right of it
compute-bound. Bytes here are the minimum traffic: every operand read once and every
result written once, as if caches were perfect for reuse within one call. ``place_operation``
counts the FLOPs and bytes of a named operation (matmul, elementwise add, reduction, conv layer)
and places it under a roof, without running it; ``vendor_roofs`` reads one compute roof per number format
from a GPU's vendor figures, and ``place_linear_layer`` places a fully connected layer at a batch size
under the roof of its format.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
import numpy.typing as npt
import torch

from d2lmp.conv import conv2d_flops, conv2d_min_bytes
from d2lmp.gpu_specs import GPUSpec
from d2lmp.quantize import linear_intensity
from d2lmp.timing import benchmark, resolve_device, resolve_dtype

__all__ = ["attainable_gflops", "ridge_point", "OpPoint", "ELEMENT_BYTES", "OPERATIONS", "operation_cost", "Placement",
           "place_operation", "points_from_records", "best_matmul", "PointSummary", "summarise", "speedups",
           "measure_operations", "FORMAT_BYTES", "vendor_roofs", "place_linear_layer"]


@overload
def attainable_gflops(intensity: float, peak_gflops: float, bandwidth_gbs: float) -> float: ...
@overload
def attainable_gflops(intensity: Sequence[float] | npt.NDArray[Any], peak_gflops: float,
                      bandwidth_gbs: float) -> npt.NDArray[np.float64]: ...
def attainable_gflops(intensity: float | Sequence[float] | npt.NDArray[Any], peak_gflops: float,
                      bandwidth_gbs: float) -> float | npt.NDArray[np.float64]:
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


ELEMENT_BYTES = {"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2}
OPERATIONS = {  # name -> what it does with size n (a template for str.format)
    "matmul": "{n}×{n} @ {n}×{n} matrix product",
    "elementwise add": "z = x + y on {n}·{n} numbers",
    "reduction": "sum of {n}·{n} numbers",
    "conv layer": "3×3 convolution, {n} → {n} channels, 13×13 maps (as AlexNet's conv3-5), batch 32",
}


def operation_cost(op: str, n: int, dtype: str = "float32") -> tuple[float, float]:
    """(FLOPs, minimum bytes) of one operation of size ``n`` in ``dtype`` (``OPERATIONS`` says what n is)."""
    if dtype not in ELEMENT_BYTES:
        raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(ELEMENT_BYTES)}")
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"size n must be a positive int, got {n!r}")
    size = ELEMENT_BYTES[dtype]
    if op == "matmul":  # n·n outputs, each n multiply-adds; read A and B, write C
        return 2.0 * n**3, 3.0 * n * n * size
    if op == "elementwise add":  # one add per output; read x and y, write z
        return float(n * n), 3.0 * n * n * size
    if op == "reduction":  # one add per input; read x (the single result is negligible)
        return float(n * n), float(n * n * size)
    if op == "conv layer":
        x, w = (32, n, 13, 13), (n, n, 3, 3)
        return float(conv2d_flops(x, w, padding=1)), float(conv2d_min_bytes(x, w, padding=1, element_size=size))
    raise ValueError(f"unknown operation {op!r}; known: {', '.join(OPERATIONS)}")


@dataclass(frozen=True)
class Placement:
    """Where one operation sits under a roof: its intensity, the FLOP/s the roof allows and what bounds it."""

    name: str
    flops: float
    bytes: float
    intensity: float
    attainable_gflops: float
    bound: str  # "memory" or "compute"

    @property
    def seconds(self) -> float:
        """The shortest time the roof allows: FLOPs / attainable FLOP/s."""
        return self.flops / (self.attainable_gflops * 1e9)

    def point(self) -> OpPoint:
        """The operation as an ``OpPoint`` running exactly at its bound, for ``plot_roofline``."""
        return OpPoint(self.name, self.flops, self.bytes, self.seconds)


def place_operation(op: str, n: int, dtype: str, peak_gflops: float, bandwidth_gbs: float) -> Placement:
    """Count ``op``'s FLOPs and bytes (``operation_cost``) and place it under the roof min(peak, I × bandwidth)."""
    flops, nbytes = operation_cost(op, n, dtype)
    intensity = flops / nbytes
    bound = "memory" if intensity < ridge_point(peak_gflops, bandwidth_gbs) else "compute"
    return Placement(f"{op}, n={n}, {dtype}", flops, nbytes, intensity,
                     attainable_gflops(intensity, peak_gflops, bandwidth_gbs), bound)


FORMAT_BYTES = {"FP32": 4, "FP16 tensor": 2, "INT8 tensor": 1}  # bytes per number of each vendor compute roof


def vendor_roofs(spec: GPUSpec) -> dict[str, float]:
    """A GPU's compute roofs in GFLOP/s (GOP/s for INT8) from its vendor figures, one per number format.

    FP32 runs on the ordinary lanes, FP16 and INT8 on the tensor cores (dense figures); a format the
    table has no figure for is left out.
    """
    roofs = {"FP32": spec.fp32_tflops * 1e3}
    if spec.fp16_tensor_tflops is not None:
        roofs["FP16 tensor"] = spec.fp16_tensor_tflops * 1e3
    if spec.int8_tops is not None:
        roofs["INT8 tensor"] = spec.int8_tops * 1e3
    return roofs


def place_linear_layer(batch: int, features: int, number_format: str, roofs: Mapping[str, float],
                       bandwidth_gbs: float) -> Placement:
    """A ``features`` → ``features`` fully connected layer at ``batch``, placed under its number format's roof.

    Weights, input and output are all stored in ``number_format`` (``FORMAT_BYTES``); its bytes and
    operations are those of ``quantize.linear_intensity``: 2·batch·features² operations over the weights,
    the input and the output, so the intensity grows with the batch until the weights no longer dominate.
    """
    if number_format not in roofs or number_format not in FORMAT_BYTES:
        raise ValueError(f"no roof for number format {number_format!r}; roofs given: {', '.join(roofs)}")
    if not isinstance(batch, int) or not isinstance(features, int) or batch < 1 or features < 1:
        raise ValueError(f"batch and features must be positive ints, got {batch!r} and {features!r}")
    ops = 2.0 * batch * features * features
    intensity = linear_intensity(batch, features, features, FORMAT_BYTES[number_format])
    peak = roofs[number_format]
    bound = "memory" if intensity < ridge_point(peak, bandwidth_gbs) else "compute"
    return Placement(f"linear {features}→{features}, batch {batch}, {number_format}", ops, ops / intensity,
                     intensity, attainable_gflops(intensity, peak, bandwidth_gbs), bound)


def points_from_records(records: Iterable[Mapping[str, Any]]) -> list[OpPoint]:
    """``OpPoint``s from dicts with name, intensity and gflops (as ``d2lmp selfcheck`` records them)."""
    points: list[OpPoint] = []
    for r in records:
        missing = {"name", "intensity", "gflops"} - set(r)
        if missing:
            raise ValueError(f"record {r!r} lacks {', '.join(sorted(missing))}")
        points.append(OpPoint.from_rates(r["name"], r["intensity"], r["gflops"]))
    return points


def best_matmul(points: Iterable[OpPoint]) -> OpPoint:
    """The matmul point (name starting "matmul") with the highest GFLOP/s: a measured peak."""
    matmuls = [p for p in points if p.name.startswith("matmul")]
    if not matmuls:
        raise ValueError("no matmul among the points; measure_operations needs matmul_sizes")
    return max(matmuls, key=lambda p: p.gflops)


@dataclass(frozen=True)
class PointSummary:
    """One point of ``summarise``: its rates, which roof bounds it ("memory" or "compute"), that roof's height
    and the fraction of it reached."""

    name: str
    intensity: float
    gflops: float
    gbs: float
    bound: str
    roof_gflops: float
    fraction_of_roof: float


def summarise(points: Iterable[OpPoint], peak_gflops: float, bandwidth_gbs: float) -> list[PointSummary]:
    """One ``PointSummary`` per point: its rates, which roof bounds it, that roof's height and the fraction reached."""
    ridge = ridge_point(peak_gflops, bandwidth_gbs)
    rows = []
    for p in points:
        roof = attainable_gflops(p.intensity, peak_gflops, bandwidth_gbs)
        rows.append(PointSummary(name=p.name, intensity=p.intensity, gflops=p.gflops, gbs=p.gbs,
                                 bound="memory" if p.intensity < ridge else "compute",
                                 roof_gflops=roof, fraction_of_roof=p.gflops / roof))
    return rows


def speedups(base: Iterable[OpPoint], faster: Iterable[OpPoint]) -> list[tuple[str, float]]:
    """(name, GFLOP/s of ``faster`` / GFLOP/s of ``base``) for every operation both lists measured.

    Names are matched exactly, in ``base``'s order; operations in only one list are left out.
    """
    rates = {p.name: p.gflops for p in faster}
    return [(p.name, rates[p.name] / p.gflops) for p in base if p.name in rates]


def measure_operations(
    device: str = "cpu",
    vector_megabytes: int = 64,
    matmul_sizes: Sequence[int] = (128, 512, 2048),
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
    cases: list[tuple[str, Callable[[], object], int, int]] = [
        ("add: z = x + y", lambda: torch.add(x, y, out=out), n, 3 * n * size),
        ("axpy: z = 2x + y", lambda: torch.add(y, x, alpha=2.0, out=out), 2 * n, 3 * n * size),
        ("sum(x)", lambda: x.sum(), n, n * size),
        ("dot(x, y)", lambda: torch.dot(x, y), 2 * n, 2 * n * size),
    ]
    for k in matmul_sizes:
        a = torch.rand(k, k, device=device, dtype=torch_dtype)
        b = torch.rand(k, k, device=device, dtype=torch_dtype)
        c = torch.empty(k, k, device=device, dtype=torch_dtype)
        cases.append((f"matmul n={k}", functools.partial(torch.mm, a, b, out=c), 2 * k**3, 3 * k * k * size))
    points: list[OpPoint] = []
    for name, fn, flops, nbytes in cases:
        m = benchmark(fn, device, min_time=min_time, label=name)
        points.append(OpPoint(name, float(flops), float(nbytes), m.median))
    return points
