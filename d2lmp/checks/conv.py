"""Self-checks of notebook 09: im2col and c01b convolution on the GPU, correct and timed against cuDNN."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import cast

import torch

from d2lmp.checks.result import NO_GPU, CheckResult
from d2lmp.config import pick
from d2lmp.precision import tf32_off

__all__ = ["CHECKS"]


def check_conv_cuda(device: str | None, quick: bool) -> CheckResult:
    """im2col and c01b convolution on the GPU against F.conv2d on AlexNet's layers (forward and gradients)."""
    import torch.nn.functional as F

    from d2lmp.conv import ALEXNET_2012_CONV, check_layer, conv2d_im2col

    if device is None:
        return NO_GPU
    with tf32_off():  # compare FP32 with FP32
        errors = [check_layer(layer, batch=4, device=device) for layer in ALEXNET_2012_CONV]
    worst = max(max(e.im2col, e.c01b) / e.max_abs_ref for e in errors)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 8, 11, 11, generator=g).to(device).requires_grad_()
    w = torch.randn(6, 4, 3, 3, generator=g).to(device).requires_grad_()
    grads = []
    fns: tuple[Callable[[], torch.Tensor], ...] = (lambda: F.conv2d(x, w, None, 2, 1, 1, 2),
                                                   lambda: conv2d_im2col(x, w, None, 2, 1, 2))
    for fn in fns:
        x.grad = w.grad = None
        fn().square().sum().backward()
        grads.append((cast(torch.Tensor, x.grad).clone(), cast(torch.Tensor, w.grad).clone()))  # set by backward
    grad_ok = all(torch.allclose(a, b, rtol=1e-3, atol=1e-3) for a, b in zip(grads[0], grads[1]))
    ok = worst < 1e-3 and grad_ok
    return CheckResult("pass" if ok else "fail",
                       f"largest error relative to max |output| {worst:.1e} over AlexNet's conv layers; "
                       f"im2col gradients {'match' if grad_ok else 'DIFFER from'} F.conv2d's",
                       dict(errors=[asdict(e) for e in errors]))


def check_conv_speed(device: str | None, quick: bool) -> CheckResult:
    """im2col and c01b against F.conv2d (cuDNN) on AlexNet's conv layers on the GPU, batch 128 and 16."""
    from d2lmp.bench.conv import ConvTiming, benchmark_conv
    from d2lmp.conv import ALEXNET_2012_CONV

    if device is None:
        return NO_GPU
    rows: list[ConvTiming] = []
    with tf32_off():  # FP32 against FP32, not TF32
        for batch in pick([16, 128], [16, 128]):
            rows += benchmark_conv(ALEXNET_2012_CONV, batch=batch, device=device, min_time=pick(0.3, 0.15))
    summary = "; ".join(f"b{b} {impl} {min(r.ratio for r in rows if r.impl == impl and r.batch == b):.1f}–"
                        f"{max(r.ratio for r in rows if r.impl == impl and r.batch == b):.1f}×"
                        for b in sorted({r.batch for r in rows})
                        for impl in ("im2col", "c01b", "copy only", "GEMM only"))
    return CheckResult("info", f"time / F.conv2d time (FP32, TF32 off): {summary}",
                       dict(rows=[asdict(r) for r in rows]))


CHECKS = [check_conv_cuda, check_conv_speed]
