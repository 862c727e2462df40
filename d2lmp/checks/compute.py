"""Self-checks of notebooks 01-03: the environment, GPU matmul and its timing, the roofline, graphics.

Like every topic module of ``d2lmp.checks``, it lists its checks in ``CHECKS``; each imports
the library inside the function, so importing this module stays cheap.
"""

from __future__ import annotations

import platform
import time
from dataclasses import asdict
from typing import cast

import torch

from d2lmp.checks.result import NO_GPU, CheckResult
from d2lmp.config import pick

__all__ = ["CHECKS"]


def check_environment(device: str | None, quick: bool) -> CheckResult:
    from d2lmp.hardware import accelerator_sentence, cpu_info, nvml_gpus

    gpus, sentence = nvml_gpus()
    cpu = cpu_info()
    return CheckResult("info", accelerator_sentence(), dict(
        python=platform.python_version(),
        torch=torch.__version__,
        cuda_runtime=torch.version.cuda,
        cpu=cpu.model,
        cpu_peak_fp32_gflops=cpu.peak_gflops_fp32,
        cpu_peak_formula=cpu.formula(),
        nvml=sentence,
        gpus=[g.__dict__ for g in gpus],
    ))


def check_nvml_matches_torch(device: str | None, quick: bool) -> CheckResult:
    from d2lmp.hardware import gpu_count, nvml_gpus

    if device is None:
        return NO_GPU
    gpus, sentence = nvml_gpus()
    ok = len(gpus) >= gpu_count() and len(gpus) > 0
    return CheckResult("pass" if ok else "fail", f"torch sees {gpu_count()} GPU(s); {sentence}",
                       dict(nvml_names=[g.name for g in gpus]))


def check_matmul_correctness(device: str | None, quick: bool) -> CheckResult:
    """CUDA matmul in each dtype against a float64 CPU reference, with a per-dtype tolerance."""
    if device is None:
        return NO_GPU
    n = 512
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(n, n, generator=g, dtype=torch.float64), torch.randn(n, n, generator=g, dtype=torch.float64)
    reference = a @ b
    tolerance = {"float32": 1e-3, "float16": 5e-2, "bfloat16": 2e-1}  # max error relative to max |value|
    errors = {}
    for name, dt in [("float32", torch.float32), ("float16", torch.float16), ("bfloat16", torch.bfloat16)]:
        out = (a.to(device, dt) @ b.to(device, dt)).double().cpu()
        errors[name] = float((out - reference).abs().max() / reference.abs().max())
    ok = all(errors[k] <= tolerance[k] for k in errors)
    return CheckResult("pass" if ok else "fail",
                       "GPU matmul agrees with a float64 CPU reference in every dtype" if ok
                       else "GPU matmul error above tolerance",
                       dict(relative_errors=errors, tolerances=tolerance))


def check_timer_synchronises(device: str | None, quick: bool) -> CheckResult:
    """An unsynchronised clock sees only the launch; ``Timer`` must see the work."""
    from d2lmp.timing import Timer, matmul_flops

    if device is None:
        return NO_GPU
    n = 8192
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    a @ b
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    a @ b
    launch = time.perf_counter() - start  # no synchronisation: measures the launch only
    torch.cuda.synchronize(device)
    with Timer(device) as t:
        a @ b
    timed = cast(float, t.seconds)  # set when the block ends
    naive_tflops = matmul_flops(n) / launch / 1e12
    timed_tflops = matmul_flops(n) / timed / 1e12
    ok = timed > 5 * launch
    return CheckResult("pass" if ok else "fail",
                       f"unsynchronised clock: {launch * 1e3:.3f} ms (would claim {naive_tflops:,.0f} TFLOP/s); "
                       f"Timer: {timed * 1e3:.3f} ms ({timed_tflops:,.1f} TFLOP/s)",
                       dict(launch_s=launch, timer_s=timed))


def check_matmul_sweep(device: str | None, quick: bool) -> CheckResult:
    """GPU matmul GFLOP/s in three dtypes with the ratio to the vendor peak; above-peak figures fail."""
    from d2lmp.timing import matmul_sweep

    if device is None:
        return NO_GPU
    sizes = pick([1024, 2048, 4096, 8192], [1024, 4096])
    rows = matmul_sweep(sizes, ["float32", "float16", "bfloat16"], [device], min_time=0.2)
    ratios = [r.fraction_of_peak for r in rows if r.fraction_of_peak is not None]
    ok = all(r <= 1.05 for r in ratios)
    best = max(rows, key=lambda r: r.gflops)
    return CheckResult("pass" if ok else "fail",
                       f"best {best.gflops / 1e3:,.1f} TFLOP/s ({best.dtype}, n={best.size})"
                       + ("" if ratios else "; no vendor peak known for this GPU"),
                       dict(rows=[asdict(r) for r in rows]))


def check_harness_agreement(device: str | None, quick: bool) -> CheckResult:
    """Our benchmark against torch.utils.benchmark on the GPU (goal: within 5 %)."""
    from d2lmp.timing import harness_agreement

    if device is None:
        return NO_GPU
    result = harness_agreement(4096, "float32", device, min_time=1.0)
    ok = abs(result.ratio - 1) <= 0.05
    return CheckResult("pass" if ok else "fail",
                       f"ours / torch.utils.benchmark = {result.ratio:.3f} at n=4096 float32", asdict(result))


def check_bandwidth(device: str | None, quick: bool) -> CheckResult:
    """Device-memory copy bandwidth against the vendor figure (above spec would mean a broken timer)."""
    from d2lmp.bandwidth import measure_bandwidth
    from d2lmp.gpu_specs import find_gpu_spec

    if device is None:
        return NO_GPU
    gbs = measure_bandwidth(device, megabytes=pick(2048, 512))
    spec = find_gpu_spec(torch.cuda.get_device_name(device))
    ratio = gbs / spec.bandwidth_gbs if spec else None
    ok = ratio is None or ratio <= 1.0
    return CheckResult("pass" if ok else "fail",
                       f"copy bandwidth {gbs:,.0f} GB/s"
                       + (f" = {ratio:.0%} of {spec.name}'s {spec.bandwidth_gbs:,.0f} GB/s" if spec else ""),
                       dict(bandwidth_gbs=gbs, ratio_to_spec=ratio))


def check_roofline_points(device: str | None, quick: bool) -> CheckResult:
    """The operation ladder of notebook 03, measured on the GPU."""
    from d2lmp.roofline import measure_operations

    if device is None:
        return NO_GPU
    points = measure_operations(device, vector_megabytes=256, matmul_sizes=(256, 1024, 4096, 8192))
    return CheckResult("pass", "; ".join(f"{p.name}: {p.gflops:,.0f} GFLOP/s" for p in points),
                       dict(points=[dict(name=p.name, intensity=p.intensity, gflops=p.gflops, gbs=p.gbs)
                                    for p in points]))


def check_graphics(device: str | None, quick: bool) -> CheckResult:
    """The vertex transform of notebook 01 gives the same result on the GPU as on the CPU."""
    from d2lmp.graphics import rotation_y, transform_batched

    if device is None:
        return NO_GPU
    v = torch.randn(100_000, 4)
    m = rotation_y(0.7)
    ok = torch.allclose(transform_batched(v.to(device), m.to(device)).cpu(), transform_batched(v, m), atol=1e-5)
    return CheckResult("pass" if ok else "fail", "batched vertex transform: GPU equals CPU" if ok else "GPU differs")


CHECKS = [
    check_environment,
    check_nvml_matches_torch,
    check_matmul_correctness,
    check_timer_synchronises,
    check_matmul_sweep,
    check_harness_agreement,
    check_bandwidth,
    check_roofline_points,
    check_graphics,
]
