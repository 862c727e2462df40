"""Self-checks of notebooks 06-07 on number formats: FP16 training with a gradient scaler, int8 inference."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import torch

from d2lmp.checks.result import NO_GPU, CheckResult
from d2lmp.config import pick

__all__ = ["CHECKS"]


def check_fp16_grad_scaler(device: str | None, quick: bool) -> CheckResult:
    """Train the same MLP in FP32, BF16 autocast and FP16 autocast with GradScaler on the GPU; accuracies must agree."""
    from d2lmp.config import set_seed
    from d2lmp.data import load_digits
    from d2lmp.models import mlp
    from d2lmp.precision import train_mixed

    if device is None:
        return NO_GPU
    data = load_digits(resize=None)
    train_loader, test_loader = data.loaders(batch_size=64)
    results: dict[str, dict[str, Any]] = {}
    for mode in ("fp32", "bf16", "fp16"):
        set_seed(0)
        r = train_mixed(mlp(64, (256, 256), 10), train_loader, test_loader, mode, epochs=pick(5, 3), device=device)
        results[mode] = dict(test_acc=r.test_acc, final_loss=r.losses[-1], skipped_steps=r.skipped_steps,
                             final_scale=r.final_scale)
    finite = all(torch.isfinite(torch.tensor(r["final_loss"])) for r in results.values())
    close = all(abs(results[m]["test_acc"] - results["fp32"]["test_acc"]) <= 0.03 for m in ("bf16", "fp16"))
    return CheckResult("pass" if finite and close else "fail",
                       ", ".join(f"{m} {r['test_acc']:.1%}" for m, r in results.items())
                       + f" test accuracy; GradScaler skipped {results['fp16']['skipped_steps']} step(s), "
                         f"final scale {results['fp16']['final_scale']:g}",
                       dict(results=results))


def check_int8_inference(device: str | None, quick: bool) -> CheckResult:
    """Hand-written int8 inference (torch._int_mm) on the GPU against FP32 and BF16: accuracy and latency."""
    from d2lmp.config import set_seed
    from d2lmp.data import load_digits
    from d2lmp.models import mlp
    from d2lmp.precision import train_mixed
    from d2lmp.quantize import compare_inference, has_int_mm

    if device is None:
        return NO_GPU
    set_seed(0)
    data = load_digits(resize=None)
    train_loader, test_loader = data.loaders(batch_size=64)
    model = mlp(64, (1024, 1024), 10)
    train_mixed(model, train_loader, test_loader, "fp32", epochs=3, device=device)
    x, y = data.x_test.repeat(8, 1, 1, 1), data.y_test.repeat(8)
    rows = compare_inference(model, x, y, min_time=0.2, device=device)
    acc = {r.method: r.accuracy for r in rows}
    ok = acc["int8"] >= acc["fp32"] - 0.02
    return CheckResult("pass" if ok else "fail",
                       f"_int_mm on GPU: {has_int_mm(device)}; " + ", ".join(
                           f"{r.method} {r.accuracy:.1%} in {r.median_s * 1e3:.3f} ms" for r in rows),
                       dict(rows=[asdict(r) for r in rows]))


CHECKS = [check_fp16_grad_scaler, check_int8_inference]
