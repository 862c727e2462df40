"""Benchmarks of the convolutions in ``d2lmp.conv`` against ``F.conv2d``, and of the GEMM libraries under them.

``benchmark_conv`` times im2col, c01b and im2col's two halves (the copy, the GEMM) on AlexNet's
layers and reports each as a ratio to ``F.conv2d`` measured in the same run (``ConvTiming`` rows);
``conv_points`` places the rows on a roofline. ``compare_gemm_libraries`` times one FP32 matrix
product through ``torch.matmul`` (the BLAS) and through oneDNN, which ``F.conv2d`` runs on.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from d2lmp.conv import (
    ALEXNET_2012_CONV,
    ConvLayer,
    conv2d_c01b,
    conv2d_im2col,
    filters_to_c01b,
    im2col_columns,
    layer_inputs,
    to_c01b,
)
from d2lmp.roofline import OpPoint
from d2lmp.timing import benchmark, resolve_device

__all__ = ["IMPLEMENTATIONS", "ConvTiming", "GemmRate", "layer_fns", "benchmark_conv", "im2col_over_lower_bound",
           "conv_points", "blas_name", "onednn_matmul", "compare_gemm_libraries"]

IMPLEMENTATIONS = ("im2col", "c01b", "copy only", "GEMM only")


@dataclass(frozen=True)
class ConvTiming:
    """One implementation on one layer: median seconds, GFLOP/s and the ratio to ``F.conv2d`` in the same run."""

    layer: str
    impl: str
    device: str
    batch: int
    seconds: float
    gflops: float | None  # None for "copy only": a copy does no arithmetic
    ratio: float  # time / F.conv2d's time
    flops: int
    bytes: int


@dataclass(frozen=True)
class GemmRate:
    """One library's FP32 matrix product: GFLOP/s and the ratio to ``torch.matmul``'s."""

    library: str
    gflops: float
    ratio: float


def layer_fns(layer: ConvLayer, batch: int, device: str = "cpu") -> dict[str, Callable[[], torch.Tensor]]:
    """{"F.conv2d": fn, "im2col": fn, "c01b": fn, "copy only": fn, "GEMM only": fn}: zero-argument calls.

    The c01b call gets its input and filters already in c01b layout (cuda-convnet keeps
    activations in that layout from layer to layer), so the layout change is not timed.
    "copy only" is im2col's column building alone and "GEMM only" its matrix product alone,
    on columns built beforehand: each is a lower bound for im2col built this way.
    """
    x, w, b = layer_inputs(layer, batch, device)
    xc, wc = to_c01b(x), filters_to_c01b(w)
    kw = dict(stride=layer.stride, padding=layer.padding, groups=layer.groups)
    n, k, groups = batch, w.shape[1] * layer.kernel ** 2, layer.groups
    cols = F.unfold(x, layer.kernel, padding=layer.padding, stride=layer.stride).view(n, groups, k, -1)
    filters = w.reshape(groups, -1, k)
    return {
        "F.conv2d": lambda: F.conv2d(x, w, b, **kw),
        "im2col": lambda: conv2d_im2col(x, w, b, **kw),
        "c01b": lambda: conv2d_c01b(xc, wc, b, **kw),
        "copy only": lambda: im2col_columns(x, layer.kernel, layer.stride, layer.padding, groups),
        "GEMM only": lambda: torch.matmul(filters, cols),
    }


def benchmark_conv(layers: Iterable[ConvLayer] = ALEXNET_2012_CONV, batch: int = 16, device: str = "cpu",
                   implementations: Sequence[str] = IMPLEMENTATIONS, min_time: float = 0.3, rounds: int = 3,
                   progress: bool = False) -> list[ConvTiming]:
    """Time each implementation and ``F.conv2d`` (forward, no autograd) on each layer.

    Returns one ``ConvTiming`` per (layer, implementation): seconds, gflops and ``ratio`` = its time
    / ``F.conv2d``'s time measured in the same run (1.0 = as fast as the framework). The
    implementations are timed in ``rounds`` alternating turns and the median is kept.
    """
    device = resolve_device(device)
    unknown = set(implementations) - set(IMPLEMENTATIONS)
    if unknown:
        raise ValueError(f"unknown implementation(s) {sorted(unknown)}; available: {', '.join(IMPLEMENTATIONS)}")
    if batch < 1:
        raise ValueError(f"batch must be positive, got {batch}")
    jobs = list(layers)
    if progress:
        from tqdm.auto import tqdm

        jobs = tqdm(jobs, desc=f"conv layers on {device}")
    rows: list[ConvTiming] = []
    names = ["F.conv2d", *implementations]
    for layer in jobs:
        fns = layer_fns(layer, batch, device)
        flops, nbytes = layer.flops(batch), layer.min_bytes(batch)
        times: dict[str, list[float]] = {name: [] for name in names}
        with torch.no_grad():
            for _ in range(rounds):  # alternate so that drifting machine load hits all alike
                for name in names:
                    times[name].append(benchmark(fns[name], device, min_time=min_time / rounds, min_blocks=3).median)
        median = {name: statistics.median(ts) for name, ts in times.items()}
        for name in names:
            t = median[name]
            rows.append(ConvTiming(layer=layer.name, impl=name, device=device, batch=batch, seconds=t,
                                   gflops=None if name == "copy only" else flops / t / 1e9,
                                   ratio=t / median["F.conv2d"], flops=flops, bytes=nbytes))
        del fns
    return rows


def im2col_over_lower_bound(rows: Iterable[ConvTiming]) -> dict[str, float]:
    """Per layer: im2col's time / (copy only + GEMM only), the two parts it cannot avoid, timed in the same run.

    1.0 means im2col costs exactly its two parts; the gap to ``F.conv2d`` is then the libraries' (a BLAS
    product against oneDNN's direct convolution), not the algorithm's.
    """
    rows = list(rows)
    by = {(r.layer, r.impl): r.seconds for r in rows}
    layers = list(dict.fromkeys(r.layer for r in rows))
    missing = [name for name in layers for impl in ("im2col", "copy only", "GEMM only") if (name, impl) not in by]
    if missing:
        raise ValueError(f"rows lack im2col, copy only or GEMM only timings for {sorted(set(missing))}")
    return {name: by[name, "im2col"] / (by[name, "copy only"] + by[name, "GEMM only"]) for name in layers}


def conv_points(rows: Iterable[ConvTiming], impl: str = "F.conv2d") -> list[OpPoint]:
    """``roofline.OpPoint``s (minimum traffic, measured time) for one implementation's rows."""
    return [OpPoint(f"{r.layer} ({r.impl})", float(r.flops), float(r.bytes), r.seconds)
            for r in rows if r.impl == impl]


def blas_name() -> str:
    """The BLAS library this torch build calls for CPU matrix products (from ``torch.__config__``)."""
    found = re.search(r"BLAS_INFO=([^,\s]+)", torch.__config__.show())
    return found.group(1) if found else "unknown"


def onednn_matmul() -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None:
    """oneDNN's FP32 matrix product ``(a, b) -> a @ b.T`` if this torch exposes it, else None.

    PyTorch's CPU convolutions run on oneDNN, but ``torch.matmul`` in FP32 goes to the BLAS
    (MKL on x86 builds). oneDNN's own matrix product is reachable only through the private
    operator ``torch.ops.mkldnn._linear_pointwise``; it is used here to *compare* the two
    libraries, never inside ``conv2d_im2col``, and it may disappear in a later torch.
    """
    try:
        op = torch.ops.mkldnn._linear_pointwise
    except (AttributeError, RuntimeError):
        return None
    if not torch.backends.mkldnn.is_available():
        return None

    def matmul_bt(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = op(a, b, None, "none", [], "")
        return out

    try:
        probe = torch.ones(2, 3)
        if not torch.equal(matmul_bt(probe, probe), probe @ probe.T):
            return None
    except RuntimeError:
        return None
    return matmul_bt


def compare_gemm_libraries(n: int = 2048, min_time: float = 0.3) -> list[GemmRate]:
    """GFLOP/s of an n×n×n FP32 product through ``torch.matmul`` (the BLAS) and through oneDNN.

    On CPUs where the BLAS is slower than oneDNN, an im2col convolution built on
    ``torch.matmul`` cannot match ``F.conv2d`` (which runs on oneDNN) however good its copy is.
    One ``GemmRate`` per library, ratio to torch.matmul; oneDNN's is missing where it is not exposed.
    """
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(n, n, generator=g), torch.randn(n, n, generator=g)
    flops = 2 * n**3
    rates = {f"torch.matmul ({blas_name()})": flops / benchmark(lambda: a @ b, min_time=min_time).median / 1e9}
    onednn = onednn_matmul()
    if onednn is not None:
        bt = b.T.contiguous()
        if not torch.allclose(onednn(a, bt), a @ b, rtol=1e-4, atol=1e-3):
            raise RuntimeError("oneDNN's matrix product disagrees with torch.matmul")
        rates["oneDNN matmul (private op)"] = flops / benchmark(lambda: onednn(a, bt), min_time=min_time).median / 1e9
    first = next(iter(rates.values()))
    return [GemmRate(library, gflops, gflops / first) for library, gflops in rates.items()]
