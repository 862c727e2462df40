"""Self-checks of notebooks 04-07 on memory: copy bandwidth, host-device copies, the memory of a step.

The models of the memory check come from ``recorded.memory_cuda_models``, which also converts
the peaks a recorded report holds for them.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import torch

from d2lmp.checks.result import NO_GPU, CheckResult
from d2lmp.config import pick

__all__ = ["CHECKS", "MEMORY_ACCOUNTING"]

MEMORY_ACCOUNTING = ("peaks include the parameters, the input batch and (training) the optimizer state; "
                     "measured on a step after an unmeasured warm-up step")


def check_bandwidth_sweep(device: str | None, quick: bool) -> CheckResult:
    """Device-memory copy bandwidth from small to large buffers, against the vendor figure.

    Copies whose read + write fit in the L2 cache can be served from it and beat the memory's
    spec; only the larger ones are held to it (a copy above the spec from device memory would
    mean the measurement is wrong).
    """
    from d2lmp.bandwidth import device_copy_sweep

    if device is None:
        return NO_GPU
    rows = device_copy_sweep(device, megabytes=pick([1, 4, 16, 64, 256, 1024, 4096], [1, 16, 256, 2048]), min_time=0.1)
    # the report keeps a row's fields that were measured (a CPU row has no L2 or spec figures)
    json_rows = [{k: v for k, v in asdict(r).items() if v is not None} for r in rows]
    from_memory = [r for r in rows if not r.fits_in_l2]
    if not from_memory:
        return CheckResult("fail", "every buffer fit in the L2 cache: no device-memory bandwidth measured",
                           dict(rows=json_rows))
    best = max(from_memory, key=lambda r: r.gbs)
    ratios = [r.fraction_of_spec for r in from_memory if r.fraction_of_spec is not None]
    ok = all(r <= 1.0 for r in ratios)
    cached = [r for r in rows if r.fits_in_l2]
    cache_note = ""
    if cached:
        top = max(cached, key=lambda r: r.gbs)
        cache_note = (f"; from the {(top.l2_bytes or 0) / 2**20:.0f} MiB L2 cache: up to {top.gbs:,.0f} GB/s "
                      f"at {top.megabytes} MiB")
    return CheckResult("pass" if ok else "fail",
                       f"device memory: best {best.gbs:,.0f} GB/s at {best.megabytes} MiB"
                       + (f" = {best.fraction_of_spec:.0%} of spec" if ratios else "; GPU not in NOTABLE_GPUS")
                       + cache_note,
                       dict(rows=json_rows))


def check_pinned_copies(device: str | None, quick: bool) -> CheckResult:
    """Host-to-device and back, pageable vs pinned host memory; pinned should be faster, and below the PCIe link."""
    from d2lmp.bandwidth import transfer_sweep
    from d2lmp.hardware import nvml_gpus
    from d2lmp.topology import PCIE, pcie_bandwidth_gbs

    if device is None:
        return NO_GPU
    rows = transfer_sweep(device, megabytes=pick([1, 16, 256, 1024], [16, 256]), min_time=0.1)
    big = max(r.megabytes for r in rows)
    get = {(r.direction, r.pinned): r.gbs for r in rows if r.megabytes == big}
    gpus, _ = nvml_gpus()
    link = None
    if gpus and gpus[0].pcie_gen in PCIE and gpus[0].pcie_width in (1, 2, 4, 8, 16):
        link = pcie_bandwidth_gbs(gpus[0].pcie_gen, gpus[0].pcie_width)
    faster = get[("h2d", True)] >= get[("h2d", False)]
    below = link is None or max(get.values()) <= 1.05 * link
    return CheckResult("pass" if faster and below else "fail",
                       f"{big} MiB h2d: pageable {get[('h2d', False)]:,.1f}, pinned {get[('h2d', True)]:,.1f} GB/s; "
                       f"d2h: pageable {get[('d2h', False)]:,.1f}, pinned {get[('d2h', True)]:,.1f} GB/s"
                       + (f"; PCIe link (NVML gen {gpus[0].pcie_gen} x{gpus[0].pcie_width}) "
                          f"{link:,.1f} GB/s per direction"
                          if link else "; PCIe link not reported"),
                       dict(rows=[asdict(r) for r in rows], pcie_link_gbs=link))


def check_memory_cuda(device: str | None, quick: bool) -> CheckResult:
    """Saved activations measured on the GPU vs the formula (dropout keeps a 1-byte mask on CUDA), and the
    allocator's peak for an inference pass (vs its prediction, within 5 %) and a training step (at least
    parameters + optimizer state + saved activations; see ``memory.judge_cuda_peaks``)."""
    from d2lmp.config import set_seed
    from d2lmp.memory import (
        compare_saved_activations,
        cuda_peak_memory,
        judge_cuda_peaks,
        predict_inference_memory,
        predict_step_memory,
    )
    from d2lmp.recorded import memory_cuda_models

    if device is None:
        return NO_GPU
    set_seed(0)
    results: dict[str, dict[str, Any]] = {}
    for name, model, shape in memory_cuda_models():
        model = model.to(device)
        x = torch.randn(shape, device=device)
        y = torch.randint(0, 10, (shape[0],), device=device)
        cmp = compare_saved_activations(model, x)
        pred = predict_step_memory(model, shape, "adam", device_type="cuda")
        pred_infer = predict_inference_memory(model, shape)
        infer = cuda_peak_memory(model, x, y, train=False)
        train = cuda_peak_memory(model, x, y, train=True)
        verdict = judge_cuda_peaks(pred, pred_infer, train.peak_bytes, infer.peak_bytes)
        results[name] = dict(saved_ratio=cmp.ratio, measured=cmp.measured_bytes, predicted=cmp.predicted_bytes,
                             train_peak=train.peak_bytes, inference_peak=infer.peak_bytes,
                             parameter_bytes=train.parameter_bytes, input_bytes=train.input_bytes,
                             optimizer_state_bytes=train.optimizer_state_bytes,
                             train_step_bytes=train.step_bytes, inference_step_bytes=infer.step_bytes,
                             predicted_step_total=pred.total, predicted_parts=asdict(pred), **asdict(verdict))
    ok = all(abs(r["saved_ratio"] - 1) <= 0.05 and r["inference_ok"] and r["train_ok"] for r in results.values())
    return CheckResult("pass" if ok else "fail",
                       "; ".join(f"{k}: saved measured/predicted {r['saved_ratio']:.3f}; inference peak "
                                 f"{r['inference_peak'] / 2**20:,.2f} MiB = {r['inference_ratio']:.3f} × predicted; "
                                 f"training peak {r['train_peak'] / 2**20:,.2f} MiB (lower bound "
                                 f"{r['train_lower_bound'] / 2**20:,.2f}, "
                                 f"formula total {r['train_formula_total'] / 2**20:,.2f})"
                                 for k, r in results.items()),
                       dict(accounting=MEMORY_ACCOUNTING, models=results))


CHECKS = [check_bandwidth_sweep, check_pinned_copies, check_memory_cuda]
