"""INT8 inference by hand: symmetric scales, int8 × int8 products summed in int32, rescaling.

A weight matrix W (out × in) is stored as int8 numbers q_w and one FP32 scale per output
channel, s_w[j] = max |W[j, :]| / 127, so that W ≈ s_w[:, None] · q_w. Each input row x (one
example) is quantised the same way when it arrives, with its own scale s_x. Then

    y[i, j] = Σ_k x[i, k] W[j, k] ≈ s_x[i] · s_w[j] · Σ_k q_x[i, k] q_w[j, k],

and the sum is exact in int32 (each product is at most 127², and a 32-bit sum holds 2^31 / 127²
≈ 133,000 of them). This is the arithmetic INT8 tensor cores do; here it runs on the CPU.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

__all__ = ["QMAX", "quantize_symmetric", "dequantize", "has_int_mm", "int8_matmul", "Int8Linear",
           "quantize_linear_layers", "dispatched_operations", "weight_bytes", "InferenceRow", "compare_inference",
           "linear_intensity"]

QMAX = 127


def quantize_symmetric(x: torch.Tensor, dim: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(int8 values, FP32 scales) with x ≈ scale · q, q in [-127, 127].

    ``dim=None``: one scale for the whole tensor; ``dim=1`` for a matrix: one scale per row
    (per output channel of a weight, or per example of an activation). All-zero rows get scale 1.
    """
    x = x.detach().float()
    if dim is None:
        amax = x.abs().max()
    else:
        amax = x.abs().amax(dim=dim, keepdim=True)
    scale = torch.where(amax > 0, amax / QMAX, torch.ones_like(amax))
    q = torch.round(x / scale).clamp_(-QMAX, QMAX).to(torch.int8)
    return q, scale


def dequantize(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """FP32 values back from int8 ``q`` and its scales."""
    return q.float() * scale


def has_int_mm(device: str | torch.device = "cpu") -> bool:
    """True when this torch build runs ``torch._int_mm`` (int8 × int8 → int32) on ``device``.

    The answer is worked out once per device type ("cpu", "cuda") and cached: the probe
    allocates two small matrices, runs the kernel and reads one value back, which on a GPU
    waits for every queued kernel to finish. ``Int8Linear`` asks on every call, so an uncached
    probe would add that wait to every layer of every forward pass.
    """
    return _probe_int_mm(torch.device(device).type)


@functools.cache
def _probe_int_mm(device_type: str) -> bool:
    try:
        a = torch.ones(32, 32, dtype=torch.int8, device=device_type)
        return bool(torch._int_mm(a, a)[0, 0] == 32)
    except (RuntimeError, AttributeError, NotImplementedError, AssertionError):
        return False


def int8_matmul(a: torch.Tensor, b: torch.Tensor, method: str = "auto") -> torch.Tensor:
    """Exact int32 result of int8 ``a`` (m×k) @ int8 ``b`` (k×n).

    ``method``: "int_mm" (``torch._int_mm``, a dedicated int8 kernel where the build has one;
    it needs m > 16 and k, n multiples of 8), "int32" (widen to int32 and use an integer matmul:
    always exact, usually slow; on CUDA, which has no integer matmul, the widened product is
    computed in float64, exact while sums stay below 2^53) or "auto" (int_mm where possible, else int32).
    """
    if a.dtype != torch.int8 or b.dtype != torch.int8:
        raise ValueError(f"int8_matmul needs int8 inputs, got {a.dtype} and {b.dtype}")
    if method not in ("auto", "int_mm", "int32"):
        raise ValueError(f"method must be 'auto', 'int_mm' or 'int32', got {method!r}")
    m, k = a.shape
    n = b.shape[1]
    shape_ok = m > 16 and k % 8 == 0 and n % 8 == 0
    if method == "int_mm":
        return torch._int_mm(a.contiguous(), b.contiguous())
    if method == "auto" and shape_ok and has_int_mm(a.device.type):
        try:
            return torch._int_mm(a.contiguous(), b.contiguous())
        except RuntimeError:  # a layout or size this build's kernel refuses: fall back to the exact widened path
            pass
    if a.device.type == "cuda":
        return (a.double() @ b.double()).to(torch.int32)
    return a.to(torch.int32) @ b.to(torch.int32)


class Int8Linear(nn.Module):
    """A ``nn.Linear`` with int8 weights (one scale per output channel) and int8 inputs (one scale per row).

    The weight matrix is padded with zero rows and columns to multiples of 8, the sizes that
    ``torch._int_mm`` accepts; the padding adds zeros to the sums and is sliced off the result.
    """

    qweight_t: torch.Tensor  # buffers, registered in __init__
    wscale: torch.Tensor
    bias: torch.Tensor | None

    def __init__(self, linear: nn.Linear, method: str = "auto") -> None:
        super().__init__()
        q, scale = quantize_symmetric(linear.weight, dim=1)
        out_f, in_f = q.shape
        self.in_features, self.out_features = in_f, out_f
        self.in_pad, out_pad = -in_f % 8, -out_f % 8
        q = nn.functional.pad(q, (0, self.in_pad, 0, out_pad))  # zeros: they add nothing to the sums
        scale = nn.functional.pad(scale, (0, 0, 0, out_pad), value=1.0)
        self.register_buffer("qweight_t", q.t().contiguous())  # (in, out), ready for x @ Wᵀ
        self.register_buffer("wscale", scale.t().contiguous())  # (1, out)
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().float().clone())
        self.method = method

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, self.in_features)
        qx, xscale = quantize_symmetric(x2, dim=1)
        if self.in_pad:
            qx = nn.functional.pad(qx, (0, self.in_pad))
        acc = int8_matmul(qx, self.qweight_t, self.method)
        y = (acc.float().mul_(xscale).mul_(self.wscale))[:, : self.out_features]
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8 weights, method={self.method}"


def quantize_linear_layers(model: nn.Module, method: str = "auto") -> nn.Module:
    """A copy of ``model`` with every ``nn.Linear`` replaced by an ``Int8Linear`` (other layers unchanged)."""
    model = copy.deepcopy(model).eval()

    def swap(parent: nn.Module) -> None:
        for name, child in parent.named_children():
            if isinstance(child, nn.Linear):
                setattr(parent, name, Int8Linear(child, method))
            else:
                swap(child)

    swap(model)
    return model


def dispatched_operations(fn: Callable[[], object]) -> list[str]:
    """Names of the tensor operations one call of ``fn()`` runs, views left out, in order.

    Recorded with a ``__torch_dispatch__`` mode, the level where PyTorch picks a kernel: in eager
    mode each name is one pass over its data, and on a GPU one kernel launch. Operations that
    only make a view (reshape, transpose, slicing) are not counted. ``fn`` runs under ``torch.no_grad()``.
    """
    from torch.utils._python_dispatch import TorchDispatchMode

    names: list[str] = []

    class _Record(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: object, args: tuple[Any, ...] = (),
                               kwargs: dict[str, Any] | None = None) -> Any:
            if not getattr(func, "is_view", False):
                names.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with torch.no_grad(), _Record():  # type: ignore[no-untyped-call]  # TorchDispatchMode.__init__ is untyped
        fn()
    return names


def weight_bytes(model: nn.Module) -> int:
    """Bytes of parameters and buffers (int8 weights count one byte each)."""
    tensors = list(model.parameters()) + [b for b in model.buffers() if b is not None]
    return sum(t.numel() * t.element_size() for t in tensors)


@dataclass(frozen=True)
class InferenceRow:
    """One number format of ``compare_inference``: accuracy, agreement with FP32, weight bytes, median latency."""

    method: str
    device: str
    accuracy: float
    agrees_with_fp32: float
    weight_bytes: int
    median_s: float
    spread: float
    timed_calls: int  # blocks × calls per block of the measurement
    budget_cut: bool  # True when ``max_time`` stopped the measurement early


def _as_float(net: nn.Module, x: torch.Tensor) -> torch.Tensor:
    out: torch.Tensor = net(x).float()
    return out


def compare_inference(model: nn.Module, x: torch.Tensor, y: torch.Tensor, min_time: float = 0.2,
                      methods: Iterable[str] = ("fp32", "bf16", "int8"), device: str = "cpu",
                      max_time: float | None = None) -> list[InferenceRow]:
    """Accuracy, agreement with FP32, weight bytes and median latency for each precision on ``device``.

    "bf16" casts the model and input to bfloat16; "int8" uses ``quantize_linear_layers``
    (with ``torch._int_mm`` where the build has it); "int8-int32" forces the widened int32 path.
    The call that computes the accuracy is each variant's first warm-up. ``max_time`` bounds each
    variant's timing (``timing.benchmark``): where one call is slow, fewer calls are timed; each row's
    ``timed_calls`` and ``budget_cut`` say so.
    """
    from d2lmp.timing import benchmark

    model = copy.deepcopy(model).eval().to(device)
    x, y = x.to(device), y.to(device)
    variants: dict[str, tuple[nn.Module, Callable[[], torch.Tensor]]] = {}
    for m in methods:
        if m == "fp32":
            variants[m] = (model, functools.partial(model, x))
        elif m == "bf16":
            net = copy.deepcopy(model).to(torch.bfloat16)
            xb = x.to(torch.bfloat16)
            variants[m] = (net, functools.partial(_as_float, net, xb))
        elif m in ("int8", "int8-int32"):
            net = quantize_linear_layers(model, "auto" if m == "int8" else "int32")
            variants[m] = (net, functools.partial(net, x))
        else:
            raise ValueError(f"unknown method {m!r}; use fp32, bf16, int8 or int8-int32")
    rows: list[InferenceRow] = []
    with torch.no_grad():
        reference = model(x).argmax(1)
        for name, (net, fn) in variants.items():
            pred = fn().argmax(1)  # the first warm-up call
            t = benchmark(fn, device, warmup=1, min_time=min_time, max_time=max_time, label=name)
            rows.append(InferenceRow(method=name, device=str(device), accuracy=float((pred == y).float().mean()),
                                     agrees_with_fp32=float((pred == reference).float().mean()),
                                     weight_bytes=weight_bytes(net), median_s=t.median, spread=t.spread,
                                     timed_calls=t.calls, budget_cut=t.budget_cut))
    return rows


def linear_intensity(batch: int, in_features: int, out_features: int, bytes_per_value: float) -> float:
    """Operations per byte of a fully connected layer: 2·B·in·out over the bytes of weights, input and output.

    All three are stored with ``bytes_per_value`` (4 FP32, 2 FP16/BF16, 1 INT8). At batch 1 the weights
    dominate and the intensity is about 2 / bytes_per_value: a memory-bound operation on any accelerator.
    """
    if min(batch, in_features, out_features) < 1 or bytes_per_value <= 0:
        raise ValueError("batch and feature counts must be positive integers and bytes_per_value positive")
    ops = 2 * batch * in_features * out_features
    nbytes = bytes_per_value * (in_features * out_features + batch * (in_features + out_features))
    return ops / nbytes
