"""Self-checks of notebooks 10-15 on NCCL: collectives, data, pipeline and tensor parallelism, bandwidth.

Each launches one rank per GPU and runs a rank function of ``checks.ranks`` that compares the
parallel version with one device.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from d2lmp.checks.result import NO_GPU, CheckResult

if TYPE_CHECKING:
    from d2lmp.parallel.collectives import CollectiveTiming

__all__ = ["CHECKS"]


def check_nccl_collectives(device: str | None, quick: bool) -> CheckResult:
    """Our send/recv collectives against NCCL's, one rank per GPU."""
    from d2lmp.checks.ranks import check_collectives
    from d2lmp.hardware import gpu_count
    from d2lmp.parallel.launch import launch

    if device is None:
        return NO_GPU
    world = gpu_count()
    results = launch(check_collectives, world, (1, 3, 1001, 2**20 + 3), "cuda", backend="nccl", timeout=300)
    ok = all(all(r.values()) for r in results)
    note = "" if world > 1 else " (one GPU: one rank, so this exercises NCCL set-up and calls, not traffic)"
    return CheckResult("pass" if ok else "fail", f"{world} NCCL rank(s): all equal: {ok}{note}",
                       dict(per_rank=results))


def check_nccl_data_parallel(device: str | None, quick: bool) -> CheckResult:
    """Every data-parallel version on NCCL ranks gives the single-process gradients."""
    from d2lmp.checks.ranks import check_data_parallel
    from d2lmp.hardware import gpu_count
    from d2lmp.parallel.data_parallel import VERSIONS
    from d2lmp.parallel.launch import launch

    if device is None:
        return NO_GPU
    world = gpu_count()
    results = launch(check_data_parallel, world, VERSIONS, 23, "cuda", backend="nccl", timeout=300)
    worst = max(max(r.values()) for r in results)
    ok = worst < 1e-4
    return CheckResult("pass" if ok else "fail",
                       f"{world} NCCL rank(s), versions {', '.join(VERSIONS)}: max |grad error| {worst:.1e}",
                       dict(per_rank=results))


def check_nccl_bandwidth(device: str | None, quick: bool) -> CheckResult:
    """All-reduce bus bandwidth on NCCL, like nccl-tests (needs two or more GPUs)."""
    from d2lmp.hardware import gpu_count
    from d2lmp.parallel.launch import launch

    if device is None:
        return NO_GPU
    world = gpu_count()
    if world < 2:
        return CheckResult("skip", "one GPU: an all-reduce needs two or more to move data")
    timings = launch(_nccl_bandwidth_worker, world, backend="nccl", timeout=300)[0]
    best = max(t.busbw_gbs for t in timings)
    return CheckResult("pass", f"{world} GPUs: best all-reduce busbw {best:,.1f} GB/s",
                       dict(rows=[asdict(t) for t in timings]))


def check_nccl_pipeline_and_tensor_parallel(device: str | None, quick: bool) -> CheckResult:
    """Pipeline schedules and split linear layers on NCCL ranks against the unsplit model."""
    from d2lmp.checks.ranks import check_pipeline, check_tensor_parallel
    from d2lmp.hardware import gpu_count
    from d2lmp.parallel.launch import launch

    if device is None:
        return NO_GPU
    world = gpu_count()
    pipe = launch(check_pipeline, world, backend="nccl", timeout=300)
    tp = launch(check_tensor_parallel, world, backend="nccl", timeout=300)
    worst = max(max(r.values()) for r in pipe + tp)
    return CheckResult("pass" if worst < 1e-4 else "fail",
                       f"{world} NCCL rank(s): pipeline (naive, GPipe, 1F1B) and split linear layers, "
                       f"max error {worst:.1e}",
                       dict(pipeline=pipe, tensor_parallel=tp))


def _nccl_bandwidth_worker(rank: int, world: int) -> list[CollectiveTiming]:
    from d2lmp.parallel.collectives import measure_collective

    return measure_collective("all_reduce", "torch", [2**20, 2**24, 2**28], device="cuda")


CHECKS = [check_nccl_collectives, check_nccl_data_parallel, check_nccl_bandwidth,
          check_nccl_pipeline_and_tensor_parallel]
