"""Number formats, gradient underflow in FP16, loss scaling and mixed-precision training.

- ``format_table``: range, smallest normal and subnormal, epsilon of FP32, TF32, FP16, BF16 and
  the FP8 formats the installed torch has, read from ``torch.finfo`` (TF32 is not a storage
  type; its row is derived from its bit layout: FP32's exponent, FP16's mantissa).
- ``underflow_fractions``: of a set of real, non-zero FP32 gradients, the fraction that becomes
  zero (or infinite) when cast to FP16 after multiplying by a loss scale.
- ``train_mixed``: one small training loop in FP32, BF16 autocast (CPU or GPU) or FP16 autocast
  with ``torch.amp.GradScaler`` (CUDA).
- ``tf32_off``: a block in which CUDA's FP32 matrix products and cuDNN's convolutions stay full FP32.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import torch
from torch import nn

__all__ = ["PRECISION_MODES", "format_table", "representable", "tf32_off", "underflow_fractions", "gradients_of",
           "scale_sweep", "exponent_histogram", "train_mixed", "lost_update_threshold", "bits_needed"]

PRECISION_MODES = ("fp32", "bf16", "fp16")


def _format_row(name: str, dtype, exponent_bits: int, mantissa_bits: int, note: str = "") -> dict:
    if dtype is not None:
        fi = torch.finfo(dtype)
        big, tiny, eps, bits = float(fi.max), float(fi.tiny), float(fi.eps), fi.bits
    else:  # TF32: FP32's 8-bit exponent with a 10-bit mantissa
        big = (2 - 2.0**-mantissa_bits) * 2.0**127
        tiny, eps, bits = 2.0**-126, 2.0**-mantissa_bits, 19
    return dict(name=name, bits=bits, exponent_bits=exponent_bits, mantissa_bits=mantissa_bits, max=big,
                smallest_normal=tiny, smallest_subnormal=tiny * eps, eps=eps, note=note)


def format_table() -> list[dict]:
    """One row per number format: bits, exponent/mantissa bits, max, smallest normal and subnormal, eps.

    Smallest subnormal = smallest normal × eps (2^(emin − mantissa bits)). FP8 rows appear only
    when the installed torch defines ``float8_e4m3fn`` / ``float8_e5m2``.
    """
    rows = [_format_row("FP32", torch.float32, 8, 23),
            _format_row("TF32", None, 8, 10, "tensor-core math format on NVIDIA GPUs since Ampere, not a storage type"),
            _format_row("FP16", torch.float16, 5, 10),
            _format_row("BF16", torch.bfloat16, 8, 7)]
    for name, attr, e, m in (("FP8 E4M3", "float8_e4m3fn", 4, 3), ("FP8 E5M2", "float8_e5m2", 5, 2)):
        if hasattr(torch, attr):
            rows.append(_format_row(name, getattr(torch, attr), e, m))
    return rows


def representable(value: float, dtype: torch.dtype) -> float:
    """``value`` rounded to ``dtype`` and back to a Python float (0.0 when it underflows)."""
    return float(torch.tensor(value, dtype=torch.float32).to(dtype).float())


def _has_precision_settings() -> bool:
    """True on torch 2.9 and later, which sets TF32 per backend and operation (``...fp32_precision``)."""
    return hasattr(torch.backends.cudnn, "conv") and hasattr(torch.backends.cuda.matmul, "fp32_precision")


@contextlib.contextmanager
def tf32_off() -> Iterator[None]:
    """Inside the block, CUDA matrix products and cuDNN convolutions compute in full FP32, never TF32.

    On torch 2.9 and later this sets ``torch.backends.cuda.matmul.fp32_precision`` and
    ``torch.backends.cudnn.conv.fp32_precision`` to ``"ieee"``; older torch has only the ``allow_tf32``
    flags, which newer torch deprecates. cuDNN is enabled in the block; every setting is restored after it.
    Nothing changes on the CPU, which has no TF32 mode.
    """
    cuda, cudnn = torch.backends.cuda, torch.backends.cudnn
    if _has_precision_settings():
        saved = cuda.matmul.fp32_precision, cudnn.conv.fp32_precision, cudnn.enabled
        cuda.matmul.fp32_precision, cudnn.conv.fp32_precision, cudnn.enabled = "ieee", "ieee", True
        try:
            yield
        finally:
            cuda.matmul.fp32_precision, cudnn.conv.fp32_precision, cudnn.enabled = saved
    else:
        saved_matmul = cuda.matmul.allow_tf32
        cuda.matmul.allow_tf32 = False
        try:
            with cudnn.flags(enabled=True, allow_tf32=False):
                yield
        finally:
            cuda.matmul.allow_tf32 = saved_matmul


# ---------------------------------------------------------------------------------------
# Underflow and loss scaling


def underflow_fractions(values: torch.Tensor, scale: float = 1.0, dtype: torch.dtype = torch.float16) -> dict:
    """Of the non-zero ``values`` (FP32), the fractions that flush to zero, land in the subnormal
    range (few significant bits left) or overflow to infinity when ``values × scale`` is cast to ``dtype``.
    """
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale}")
    v = values.detach().float().flatten()
    v = v[v != 0]
    if v.numel() == 0:
        raise ValueError("values has no non-zero entries")
    scaled = (v.double() * scale)
    cast = scaled.to(dtype)
    tiny = torch.finfo(dtype).tiny
    zero = cast == 0
    inf = torch.isinf(cast)
    sub = (~zero) & (cast.abs().double() < tiny)
    return dict(scale=scale, count=v.numel(), zero=float(zero.float().mean()), subnormal=float(sub.float().mean()),
                overflow=float(inf.float().mean()))


def gradients_of(model: nn.Module, x: torch.Tensor, y: torch.Tensor, activations: bool = True) -> dict:
    """Real FP32 gradients of one cross-entropy step: {"weights": all parameter gradients,
    "activations": gradients of every leaf layer's output} (flattened, concatenated)."""
    outputs = []
    hooks = []
    if activations:
        for m in model.modules():
            if not list(m.children()):
                hooks.append(m.register_forward_hook(lambda mod, a, out: out.retain_grad() or outputs.append(out)
                                                     if out.requires_grad else None))
    model.zero_grad(set_to_none=True)
    try:
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
    finally:
        for h in hooks:
            h.remove()
    weights = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    acts = [o.grad.flatten() for o in outputs if o.grad is not None]
    return dict(weights=weights, activations=torch.cat(acts) if acts else torch.empty(0), loss=float(loss.detach()))


def scale_sweep(values: torch.Tensor, scales=(1, 8, 2**10, 2**16, 2**24)) -> list[dict]:
    """``underflow_fractions`` for each loss scale (FP16)."""
    return [underflow_fractions(values, s) for s in scales]


def exponent_histogram(values: torch.Tensor, low: int = -60, high: int = 20):
    """(bin edges as powers of two, counts) of log2 |values| for the non-zero values."""
    v = values.detach().float().abs()
    v = v[v > 0]
    e = torch.log2(v.double()).clamp(low, high - 1e-9)
    counts = torch.histc(e, bins=high - low, min=low, max=high)
    return list(range(low, high + 1)), [int(c) for c in counts]


# ---------------------------------------------------------------------------------------
# Mixed-precision training


def _autocast(mode: str, device_type: str):
    if mode == "fp32":
        return torch.autocast(device_type, enabled=False)
    return torch.autocast(device_type, dtype=torch.bfloat16 if mode == "bf16" else torch.float16)


def train_mixed(model: nn.Module, train_loader, test_loader, mode: str = "fp32", epochs: int = 1,
                lr: float = 1e-3, device: str = "cpu", loss_scale: str | float = "dynamic") -> dict:
    """Train with Adam in ``mode``: "fp32", "bf16" (autocast, no scaling needed: BF16 has FP32's range)
    or "fp16" (autocast plus ``GradScaler``; CUDA only). The weights stay FP32 (the master copy).

    ``loss_scale`` for "fp16": "dynamic" (GradScaler's default schedule) or a number (a constant
    scale; 1 means no scaling). Returns {"mode", "losses" (per step), "test_acc", "skipped_steps"}.
    """
    if mode not in PRECISION_MODES:
        raise ValueError(f"mode must be one of {', '.join(PRECISION_MODES)}, got {mode!r}")
    device_type = torch.device(device).type
    if mode == "fp16" and device_type != "cuda":
        raise ValueError("fp16 training with a GradScaler needs a CUDA device here; use mode='bf16' on the CPU")
    model.to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    scaler = None
    if mode == "fp16":
        if loss_scale == "dynamic":
            scaler = torch.amp.GradScaler("cuda")
        else:
            scaler = torch.amp.GradScaler("cuda", init_scale=float(loss_scale), growth_interval=10**9)
    losses, skipped = [], 0
    for _ in range(epochs):
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            opt.zero_grad(set_to_none=True)
            with _autocast(mode, device_type):
                loss = nn.functional.cross_entropy(model(x), y)
            if scaler is None:
                loss.backward()
                opt.step()
            else:
                before = scaler.get_scale()
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
                skipped += int(scaler.get_scale() < before)
            losses.append(float(loss.detach()))
    model.eval()
    correct = total = 0
    with torch.no_grad(), _autocast(mode, device_type):
        for x, y in test_loader:
            correct += int((model(x.to(device)).argmax(1) == y.to(device)).sum())
            total += len(y)
    return dict(mode=mode, losses=losses, test_acc=correct / max(total, 1), skipped_steps=skipped,
                final_scale=scaler.get_scale() if scaler is not None else None)


def lost_update_threshold(dtype: torch.dtype = torch.float16) -> float:
    """Ratio weight / update beyond which ``w + u`` rounds back to ``w``: 2 / eps (2^11 for FP16)."""
    return 2 / torch.finfo(dtype).eps


def bits_needed(value: float) -> int:
    """Exponent of ``value`` in base 2 (floor of log2 |value|): where it sits on a format's scale."""
    if value == 0:
        raise ValueError("zero has no exponent")
    return math.floor(math.log2(abs(value)))

