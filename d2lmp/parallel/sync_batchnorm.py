"""BatchNorm whose statistics span every rank: one all-reduce of each channel's count, sum and sum of squares.

Under data parallelism a plain ``nn.BatchNorm2d`` normalises each rank's micro-batch with that micro-batch's own
mean and variance (per-rank statistics), which differ from those of the global batch one device would use, the
more so the smaller the micro-batch. ``SyncBatchNorm2d`` gives every rank the global statistics: each rank sums,
per channel, its count, Σx and Σx², all-reduces the three in one message, and takes mean = Σx/N and biased
variance Σx²/N − mean² of all N values (bibliography: ioffe2015batch, Algorithm 1); the sums are taken in float64,
since the difference of two large float32 numbers would lose the variance's digits. Autograd does the backward:
the all-reduce is an autograd operation whose gradient is the all-reduce of the gradient (``all_reduce_sum``),
so each rank's input gradient includes what its values did to the other ranks' outputs through the shared
statistics. Outside training, or without a process group of more than one rank, it is ``nn.BatchNorm2d``.
PyTorch's ``nn.SyncBatchNorm`` does the same, but in torch 2.13 only for GPU tensors: on CPU ranks (gloo) its
forward raises ``ValueError`` (``torch_sync_batchnorm_error`` reports it).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from torch import nn

__all__ = ["all_reduce_sum", "SyncBatchNorm2d", "to_sync_batchnorm", "torch_sync_batchnorm_error"]


class _AllReduceSum(torch.autograd.Function):
    """y = Σ over ranks of x; its backward is the same sum of the gradients (every rank's loss depends on y)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, group: dist.ProcessGroup | None) -> torch.Tensor:
        ctx.group = group
        total = x.clone()
        dist.all_reduce(total, group=group)
        return total

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        total = grad.clone()
        dist.all_reduce(total, group=ctx.group)
        return total, None


def all_reduce_sum(x: torch.Tensor, group: dist.ProcessGroup | None = None) -> torch.Tensor:
    """The sum of ``x`` over the ranks of ``group`` (None: all), differentiable."""
    out: torch.Tensor = _AllReduceSum.apply(x, group)  # type: ignore[no-untyped-call]
    return out


class SyncBatchNorm2d(nn.BatchNorm2d):
    """``nn.BatchNorm2d`` with statistics over the whole global batch: the same parameters and buffers, so a
    trained one loads into a plain ``nn.BatchNorm2d`` and back."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 group: dist.ProcessGroup | None = None) -> None:
        super().__init__(num_features, eps=eps, momentum=momentum)
        self.group = group

    def _synchronised(self) -> bool:
        return self.training and dist.is_initialized() and dist.get_world_size(self.group) > 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` [N, C, H, W] normalised with the mean and variance of every rank's batch, from one all-reduce of each
        channel's Σx and Σx² and the count (in training on several ranks; else ``nn.BatchNorm2d``'s own)."""
        if not self._synchronised():
            out: torch.Tensor = super().forward(x)
            return out
        self._check_input_dim(x)
        c = x.shape[1]
        wide = x.double()  # Σx²/N − mean² cancels digits where the mean is large against the spread
        count = wide.new_tensor([x.numel() // c])
        stats = all_reduce_sum(torch.cat([wide.sum(dim=(0, 2, 3)), (wide * wide).sum(dim=(0, 2, 3)), count]),
                               self.group)
        n = float(stats[2 * c].detach())
        mean64 = stats[:c] / n
        var64 = (stats[c:2 * c] / n - mean64 * mean64).clamp_min(0.0)
        self._update_running_stats(mean64.detach().to(x.dtype), var64.detach().to(x.dtype), n)
        mean, scale = mean64.to(x.dtype), torch.rsqrt(var64 + self.eps).to(x.dtype)
        y = (x - mean[None, :, None, None]) * scale[None, :, None, None]
        return y * self.weight[None, :, None, None] + self.bias[None, :, None, None]

    @torch.no_grad()
    def _update_running_stats(self, mean: torch.Tensor, var: torch.Tensor, n: float) -> None:
        """As ``nn.BatchNorm2d``: an exponential average (or, with momentum None, the running mean) of the batch
        mean and of the unbiased variance var·n/(n − 1)."""
        assert self.running_mean is not None and self.running_var is not None
        assert self.num_batches_tracked is not None
        self.num_batches_tracked.add_(1)
        factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        self.running_mean.mul_(1 - factor).add_(mean, alpha=factor)
        self.running_var.mul_(1 - factor).add_(var * (n / max(n - 1.0, 1.0)), alpha=factor)


def to_sync_batchnorm(module: nn.Module, group: dist.ProcessGroup | None = None) -> nn.Module:
    """``module`` with every ``nn.BatchNorm2d`` replaced by a ``SyncBatchNorm2d`` holding the same parameters and
    buffers (as ``nn.SyncBatchNorm.convert_sync_batchnorm`` does for PyTorch's own)."""
    if isinstance(module, nn.BatchNorm2d) and not isinstance(module, SyncBatchNorm2d):
        sync = SyncBatchNorm2d(module.num_features, module.eps, module.momentum, group)
        sync.load_state_dict(module.state_dict())
        sync.train(module.training)
        return sync
    for name, child in module.named_children():
        module.add_module(name, to_sync_batchnorm(child, group))
    return module


def torch_sync_batchnorm_error(device: torch.device) -> str | None:
    """Inside a process group: None when PyTorch's ``nn.SyncBatchNorm`` runs a training forward on ``device``,
    else the error it raises (on CPU tensors in torch 2.13: a ``ValueError`` asking for a GPU)."""
    layer = nn.SyncBatchNorm(2).to(device)
    try:
        layer(torch.randn(4, 2, 3, 3, device=device))
    except (ValueError, RuntimeError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None
