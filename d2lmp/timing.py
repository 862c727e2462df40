"""Timing that tells the truth about asynchronous devices.

GPU kernels are queued and return at once; a clock read right after a launch measures
the launch, not the work. ``Timer`` and ``benchmark`` synchronise the device they
measure before every clock read. ``benchmark`` follows the recipe of
``torch.utils.benchmark``'s ``blocked_autorange``: warm up, time blocks of calls long
enough to hide the clock's overhead, repeat until a minimum total time, report the
median and the spread.
"""

from __future__ import annotations

import functools
import math
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

import torch

__all__ = ["DTYPES", "synchronize", "Timer", "Measurement", "benchmark", "torch_benchmark_median", "matmul_flops",
           "resolve_dtype", "resolve_device", "time_matmul", "MatmulRow", "matmul_sweep", "HarnessAgreement",
           "harness_agreement", "LinearRow", "linear_sweep"]

DTYPES = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}


def synchronize(device: str | torch.device = "cpu") -> None:
    """Wait until all queued work on ``device`` has finished (a no-op on the CPU)."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


class Timer:
    """Context manager measuring wall time on ``device``, synchronising on entry and exit.

    >>> with Timer("cpu") as t:  # doctest: +SKIP
    ...     x @ x
    >>> t.seconds  # doctest: +SKIP
    """

    def __init__(self, device: str | torch.device = "cpu") -> None:
        self.device = torch.device(device)
        self.seconds: float | None = None

    def __enter__(self) -> Timer:
        synchronize(self.device)
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        synchronize(self.device)
        self.seconds = time.perf_counter() - self._start


@dataclass
class Measurement:
    """Per-call times from ``benchmark``: each entry is one block's time divided by its calls."""

    times: list[float]
    calls_per_block: int
    device: str
    label: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # figures a caller adds (time_matmul: n, dtype, gflops)
    budget_s: float | None = None  # the ``max_time`` the measurement ran under, if any
    budget_cut: bool = False  # True when the budget stopped it before ``min_time`` and ``min_blocks`` were met

    @property
    def calls(self) -> int:
        """Timed calls: blocks × calls per block (warm-up and calibration calls not counted)."""
        return len(self.times) * self.calls_per_block

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def iqr(self) -> float:
        """Interquartile range of the per-call times (a robust spread)."""
        if len(self.times) < 2:
            return 0.0
        q = statistics.quantiles(self.times, n=4)
        return q[2] - q[0]

    @property
    def spread(self) -> float:
        """IQR relative to the median: 0.05 means the middle half lies within ±2.5 %."""
        return self.iqr / self.median if self.median > 0 else 0.0

    def __repr__(self) -> str:
        return (
            f"Measurement({self.label or 'fn'} on {self.device}: median {self.median * 1e3:.3f} ms, "
            f"IQR {self.spread:.1%}, {len(self.times)} blocks × {self.calls_per_block} calls"
            + (f", cut by the {self.budget_s:g} s budget" if self.budget_cut else "") + ")"
        )


def benchmark(
    fn: Callable[[], object],
    device: str | torch.device = "cpu",
    *,
    warmup: int = 2,
    min_time: float = 0.2,
    block_time: float = 0.01,
    min_blocks: int = 5,
    max_blocks: int = 1000,
    max_time: float | None = None,
    label: str = "",
) -> Measurement:
    """Time ``fn()`` on ``device``: warm up, then time blocks of calls until ``min_time`` seconds.

    Each block runs ``fn`` enough times to last about ``block_time`` seconds, so the cost
    of reading the clock and synchronising is spread over many calls for very fast
    functions. At least ``min_blocks`` blocks are timed. The result holds per-call times.

    ``max_time`` is a budget in seconds for the whole measurement, warm-up included, for functions
    whose single call can be slow on some machines: a warm-up call, the calibration call or another
    block runs only while the time spent so far plus its expected time (and one timed call after it)
    stays within the budget. One warm-up call (when ``warmup`` >= 1) and one timed block always run,
    so the fewest calls is two; ``Measurement.budget_cut`` says when the budget ended it early.
    """
    if not callable(fn):
        raise TypeError(f"benchmark needs a callable, got {type(fn).__name__}")
    if min_time <= 0 or block_time <= 0 or min_blocks < 1 or max_blocks < min_blocks:
        raise ValueError("min_time and block_time must be positive and 1 <= min_blocks <= max_blocks")
    if max_time is not None and not max_time > 0:
        raise ValueError(f"max_time must be a positive number of seconds or None, got {max_time!r}")
    device = torch.device(device)
    start = time.perf_counter()

    def fits(seconds: float) -> bool:
        return max_time is None or time.perf_counter() - start + seconds <= max_time

    cut = False
    last: float | None = None  # seconds of the latest single call
    for _ in range(warmup):
        if last is not None and not fits(2 * last):  # this warm-up and one timed call after it
            cut = True
            break
        with Timer(device) as t:
            fn()
        last = cast(float, t.seconds)  # set when the block ends
    if last is not None and not fits(2 * last):
        cut = True  # no room for a calibration call: the last warm-up call sizes the blocks
    else:
        with Timer(device) as first:
            fn()
        last = cast(float, first.seconds)
    calls = max(1, math.ceil(block_time / max(last, 1e-9)))
    times: list[float] = []
    total = 0.0
    while (total < min_time or len(times) < min_blocks) and len(times) < max_blocks:
        if times and not fits(calls * times[-1]):
            cut = True
            break
        with Timer(device) as t:
            for _ in range(calls):
                fn()
        elapsed = cast(float, t.seconds)
        times.append(elapsed / calls)
        total += elapsed
    return Measurement(times, calls, str(device), label, budget_s=max_time, budget_cut=cut)


def torch_benchmark_median(fn: Callable[[], object], min_run_time: float = 0.2) -> float:
    """Median seconds per call of ``fn`` according to ``torch.utils.benchmark`` (the reference)."""
    from torch.utils import benchmark as tb

    timer = tb.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=min_run_time).median


# ---------------------------------------------------------------------------------------
# Matrix multiplication sweeps


def matmul_flops(n: int) -> int:
    """FLOPs of an n×n by n×n matrix product: n² outputs × n multiply-adds × 2."""
    return 2 * n**3


def resolve_dtype(dtype: str | torch.dtype) -> tuple[str, torch.dtype]:
    """("float32", torch.float32) from a name or a torch dtype; ValueError names the known ones."""
    if isinstance(dtype, torch.dtype):
        for name, value in DTYPES.items():
            if value == dtype:
                return name, value
    elif dtype in DTYPES:
        return dtype, DTYPES[dtype]
    raise ValueError(f"unknown dtype {dtype!r}; available: {', '.join(DTYPES)}")


def resolve_device(device: str | torch.device) -> str:
    """A device string that is present here; ValueError names the available devices."""
    from d2lmp.hardware import torch_devices

    available = torch_devices()
    name = str(device)
    if name == "cuda":
        name = "cuda:0"
    if name not in available:
        raise ValueError(f"device {str(device)!r} is not present here; available: {', '.join(available)}")
    return name


def _check_sizes(sizes: Iterable[int]) -> list[int]:
    sizes = list(sizes)
    if not sizes:
        raise ValueError("sizes is empty; give at least one matrix size, e.g. [256, 512]")
    for n in sizes:
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise ValueError(f"matrix sizes must be positive integers, got {n!r}")
    return sizes


def time_matmul(n: int, dtype: str = "float32", device: str = "cpu", min_time: float = 0.2) -> Measurement:
    """Benchmark ``a @ b`` for n×n random matrices of ``dtype`` on ``device``."""
    (n,) = _check_sizes([n])
    dtype_name, torch_dtype = resolve_dtype(dtype)
    device = resolve_device(device)
    a = torch.randn(n, n, device=device, dtype=torch_dtype)
    b = torch.randn(n, n, device=device, dtype=torch_dtype)
    m = benchmark(lambda: a @ b, device, min_time=min_time, label=f"matmul n={n} {dtype_name}")
    m.extra.update(n=n, dtype=dtype_name, gflops=matmul_flops(n) / m.median / 1e9)
    return m


@dataclass(frozen=True)
class MatmulRow:
    """One size, dtype and device of ``matmul_sweep``: median seconds, spread, GFLOP/s, the peak estimate
    (None where none exists) and the fraction of it reached."""

    size: int
    dtype: str
    device: str
    median_s: float
    spread: float
    gflops: float
    peak_gflops: float | None
    fraction_of_peak: float | None


def matmul_sweep(sizes: Iterable[int], dtypes: Iterable[str | torch.dtype] = ("float32",),
                 devices: Iterable[str | torch.device] = ("cpu",), min_time: float = 0.2,
                 progress: bool = False) -> list[MatmulRow]:
    """GFLOP/s of square matmuls for every size × dtype × device: one ``MatmulRow`` per measurement.

    All inputs are checked before anything is timed.
    """
    from d2lmp.hardware import cpu_info, peak_gflops

    sizes = _check_sizes(sizes)
    dtype_names = [resolve_dtype(d)[0] for d in dtypes]
    device_names = [resolve_device(d) for d in devices]
    cpu = cpu_info()
    jobs = [(dev, dt, n) for dev in device_names for dt in dtype_names for n in sizes]
    if progress:
        from tqdm.auto import tqdm

        jobs = tqdm(jobs, desc="matmul sweep")
    rows: list[MatmulRow] = []
    for dev, dt, n in jobs:
        m = time_matmul(n, dt, dev, min_time=min_time)
        peak, _ = peak_gflops(dev, dt, cpu)
        gflops = m.extra["gflops"]
        rows.append(
            MatmulRow(size=n, dtype=dt, device=dev, median_s=m.median, spread=m.spread, gflops=gflops,
                      peak_gflops=peak, fraction_of_peak=gflops / peak if peak else None)
        )
    return rows


@dataclass(frozen=True)
class HarnessAgreement:
    """``harness_agreement``: the product timed, both harnesses' medians, and ours / torch's."""

    n: int
    dtype: str
    device: str
    ours_s: float
    torch_s: float
    ratio: float


def harness_agreement(n: int = 1024, dtype: str = "float32", device: str = "cpu",
                      min_time: float = 0.5) -> HarnessAgreement:
    """Median time of ``a @ b`` from our ``benchmark`` and from ``torch.utils.benchmark``, same run.

    Returns both medians and ``ratio`` = ours / torch's (1.0 means perfect agreement).
    Both harnesses synchronise CUDA devices before each clock read. Bad inputs raise
    ValueError before anything is allocated or timed.
    """
    (n,) = _check_sizes([n])
    if not (isinstance(min_time, (int, float)) and math.isfinite(min_time) and min_time > 0):
        raise ValueError(f"min_time must be a positive number of seconds, got {min_time!r}")
    dtype_name, torch_dtype = resolve_dtype(dtype)
    device = resolve_device(device)
    a = torch.randn(n, n, device=device, dtype=torch_dtype)
    b = torch.randn(n, n, device=device, dtype=torch_dtype)

    def fn() -> torch.Tensor:
        return a @ b

    # Alternate the two harnesses so drifting machine load affects both alike.
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(3):
        ours.append(benchmark(fn, device, min_time=min_time / 3).median)
        theirs.append(torch_benchmark_median(fn, min_run_time=min_time / 3))
    o, t = statistics.median(ours), statistics.median(theirs)
    return HarnessAgreement(n=n, dtype=dtype_name, device=device, ours_s=o, torch_s=t, ratio=o / t)


@dataclass(frozen=True)
class LinearRow:
    """One batch size and device of ``linear_sweep``: median seconds of the forward pass and its GFLOP/s."""

    batch: int
    device: str
    seconds: float
    gflops: float


def linear_sweep(batch_sizes: Iterable[int], in_features: int = 1024, out_features: int = 1024,
                 devices: Iterable[str | torch.device] = ("cpu",), min_time: float = 0.1) -> list[LinearRow]:
    """GFLOP/s of a fully connected layer's forward pass (x @ Wᵀ + b) for each batch size and device.

    FLOPs are 2 × batch × in × out (the bias add is not counted).
    """
    batch_sizes = _check_sizes(batch_sizes)
    if in_features <= 0 or out_features <= 0:
        raise ValueError(f"feature counts must be positive, got {in_features} and {out_features}")
    rows: list[LinearRow] = []
    for device in [resolve_device(d) for d in devices]:
        layer = torch.nn.Linear(in_features, out_features).to(device)
        for b in batch_sizes:
            x = torch.randn(b, in_features, device=device)
            with torch.no_grad():
                m = benchmark(functools.partial(layer, x), device, min_time=min_time)
            flops = 2 * b * in_features * out_features
            rows.append(LinearRow(batch=b, device=device, seconds=m.median, gflops=flops / m.median / 1e9))
    return rows
