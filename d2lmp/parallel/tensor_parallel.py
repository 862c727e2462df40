"""Layerwise (tensor) partitioning: one layer's weights split over ranks.

Two conjugate operators make a split layer differentiate correctly, Megatron-LM's f and g (Shoeybi et al.
2019, §3; ``shoeybi2019megatron``), the autograd functions ``CopyToParallel`` and ``ReduceFromParallel``:

* ``copy_to_parallel``: identity forward, all-reduce of the gradient backward. Put it where
  every rank uses the same input: each rank's input-gradient is only a partial sum.
* ``reduce_from_parallel``: all-reduce forward, identity backward. Put it where each rank
  has a partial sum of the output.

``ColumnParallelLinear`` splits output features (weight rows); ``RowParallelLinear`` splits
input features (weight columns); a column layer followed by a row layer needs one
all-reduce forward and one backward. ``ChannelParallelConv2d`` splits output channels and
``InputChannelParallelConv2d`` input channels, the same two ideas for convolutions.
Each is built from a full layer, so it starts with exactly the unsplit layer's weights; which
block of features a rank keeps comes from ``shard_range`` (pure arithmetic, also used to draw it).
Every collective is named to the traffic log (``p2p_log.record``): a ``MessageLog`` (``CommLog`` is its old
name here) lists them, with their bytes, in ``calls``. Every operator and layer takes ``group``,
the ranks that share the split (None: all).

Sequence parallelism (Korthikanti et al. 2022) adds the conjugate pair that moves a tensor between a
region split along the sequence and one split by features: ``all_gather_sequence`` (f_SP: all-gather
forward, reduce-scatter backward), ``reduce_scatter_sequence`` (g_SP: reduce-scatter forward, all-gather
backward), ``scatter_sequence`` (keep this rank's chunk forward, all-gather backward) and
``gather_linear``, f_SP fused with the column-parallel product that follows it, which keeps only this
rank's chunk of its input for backward and gathers it again there. ``MessageLog.wire_bytes`` is what
each rank sends for the logged collectives under ring algorithms (``ring_wire_bytes``).
"""

from __future__ import annotations

from typing import Any, cast

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed import ProcessGroup
from torch.nn import functional as F

from d2lmp.parallel.agreement import agree
from d2lmp.parallel.p2p_log import CommCall, MessageLog, ring_wire_bytes
from d2lmp.parallel.p2p_log import record as _log

__all__ = ["CommCall", "CommLog", "all_reduce", "CopyToParallel", "ReduceFromParallel", "GatherFromParallel",
           "GatherForSplitCompute", "ReduceScatterSequence", "gather_for_split_compute", "copy_to_parallel",
           "reduce_from_parallel", "gather_from_parallel", "shard_range", "local_shard_range", "ColumnParallelLinear",
           "RowParallelLinear", "ChannelParallelConv2d", "InputChannelParallelConv2d", "parallel_mlp", "comm_volume",
           "all_gather_sequence", "reduce_scatter_sequence", "scatter_sequence", "gather_linear", "all_reduce_logged",
           "ring_wire_bytes"]

CommLog = MessageLog  # the name notebooks 15 and 17 use: the one traffic log, whose ``calls`` are named here


def all_reduce(t: torch.Tensor, label: str, group: ProcessGroup | None = None) -> torch.Tensor:
    """The sum over ``group`` of a copy of ``t``, logged under ``label``; no autograd (f's backward, g's forward)."""
    t = t.contiguous().clone()
    _log("all_reduce", t, label)
    dist.all_reduce(t, group=group)
    return t


def _all_gather(t: torch.Tensor, dim: int, label: str, group: ProcessGroup | None = None) -> torch.Tensor:
    t = t.contiguous()
    parts = [torch.empty_like(t) for _ in range(dist.get_world_size(group))]
    _log("all_gather", t, label)
    dist.all_gather(parts, t, group=group)
    return torch.cat(parts, dim=dim)


class CopyToParallel(torch.autograd.Function):
    """Megatron's f (Shoeybi et al. 2019, §3): identity forward, all-reduce backward.

    Where every rank feeds the same input to its part of a split layer, each rank's input gradient is
    a partial sum; backward adds them up over ``group``.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, label: str, group: ProcessGroup | None) -> torch.Tensor:
        ctx.label, ctx.group = label, group
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        return all_reduce(grad, ctx.label + " (backward)", ctx.group), None, None


class ReduceFromParallel(torch.autograd.Function):
    """Megatron's g (Shoeybi et al. 2019, §3): all-reduce forward, identity backward.

    Where each rank holds a partial sum of the output, forward adds them up over ``group``; every
    term of a sum gets the sum's gradient whole, so backward passes it on unchanged.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, label: str, group: ProcessGroup | None) -> torch.Tensor:
        return all_reduce(x, label, group)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        return grad, None, None


class GatherFromParallel(torch.autograd.Function):
    """All-gather along ``dim`` forward; backward keeps this rank's slice of the gradient.

    It joins a column-parallel layer's output features (picotron's ``GatherFromModelParallelRegion``).
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, dim: int, label: str, group: ProcessGroup | None) -> torch.Tensor:
        ctx.dim, ctx.size, ctx.group = dim, x.shape[dim], group
        return _all_gather(x, dim, label, group)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None, None]:
        rank = dist.get_rank(ctx.group)
        return grad.narrow(ctx.dim, rank * ctx.size, ctx.size).contiguous(), None, None, None


def _reduce_scatter(t: torch.Tensor, dim: int, label: str, group: ProcessGroup | None = None) -> torch.Tensor:
    """Sum over ranks, keeping this rank's block along ``dim`` (a ring reduce-scatter from send/recv)."""
    from d2lmp.parallel.collectives import ring_reduce_scatter

    world = dist.get_world_size(group)
    moved = t.movedim(dim, 0).contiguous()
    _log("reduce_scatter", moved, label)
    mine = ring_reduce_scatter(moved, group).view(moved.shape[0] // world, *moved.shape[1:])
    return mine.movedim(0, dim).contiguous()


class GatherForSplitCompute(torch.autograd.Function):
    """All-gather forward; reduce-scatter backward: sequence parallelism's f_SP (Korthikanti et al.'s g, 2022,
    §4.2.2; ``korthikanti2022reducing``), the all-gather that replaces f in front of a column-parallel layer.

    For a gathered tensor that each rank then uses *differently* (each computes its own
    output channels from all input channels), the input's gradient is the sum of every
    rank's contribution, and each rank keeps the block it owns.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, dim: int, label: str, group: ProcessGroup | None) -> torch.Tensor:
        ctx.dim, ctx.label, ctx.group = dim, label, group
        return _all_gather(x, dim, label, group)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None, None]:
        return _reduce_scatter(grad, ctx.dim, ctx.label + " (backward)", ctx.group), None, None, None


def gather_for_split_compute(x: torch.Tensor, dim: int = 1, label: str = "",
                             group: ProcessGroup | None = None) -> torch.Tensor:
    """The ranks' ``x`` joined along ``dim``; backward reduce-scatters the gradient (``GatherForSplitCompute``)."""
    out: torch.Tensor = GatherForSplitCompute.apply(x, dim % x.dim(), label, group)  # type: ignore[no-untyped-call]
    return out


def copy_to_parallel(x: torch.Tensor, label: str = "", group: ProcessGroup | None = None) -> torch.Tensor:
    """f: ``x`` unchanged; backward all-reduces its gradient over ``group`` (``CopyToParallel``)."""
    out: torch.Tensor = CopyToParallel.apply(x, label, group)  # type: ignore[no-untyped-call]
    return out


def reduce_from_parallel(x: torch.Tensor, label: str = "", group: ProcessGroup | None = None) -> torch.Tensor:
    """g: the sum of every rank's ``x`` over ``group``; the gradient passes back unchanged (``ReduceFromParallel``)."""
    out: torch.Tensor = ReduceFromParallel.apply(x, label, group)  # type: ignore[no-untyped-call]
    return out


def gather_from_parallel(x: torch.Tensor, dim: int = -1, label: str = "",
                         group: ProcessGroup | None = None) -> torch.Tensor:
    """The ranks' ``x`` joined along ``dim``; backward keeps this rank's slice (``GatherFromParallel``)."""
    out: torch.Tensor = GatherFromParallel.apply(x, dim % x.dim(), label, group)  # type: ignore[no-untyped-call]
    return out


def shard_range(n: int, world: int, rank: int, what: str = "n") -> tuple[int, int]:
    """(start, size) of rank ``rank``'s block when ``n`` features are split evenly over ``world`` ranks."""
    if not 0 <= rank < world:
        raise ValueError(f"rank must be in [0, {world}), got {rank}")
    if n % world:
        raise ValueError(f"{what} = {n} is not divisible by the {world} ranks; choose a multiple of {world}")
    size = n // world
    return rank * size, size


def local_shard_range(n: int, what: str, group: ProcessGroup | None = None) -> tuple[int, int]:
    """This rank's (start, size) of ``n`` features in ``group`` (None: all ranks)."""
    return shard_range(n, dist.get_world_size(group), dist.get_rank(group), what)


class ColumnParallelLinear(nn.Module):
    """A ``Linear`` whose output features are split: rank r computes features [r·k, (r+1)·k)."""

    def __init__(self, full: nn.Linear, gather_output: bool = True, label: str = "column linear",
                 group: ProcessGroup | None = None) -> None:
        super().__init__()
        start, size = local_shard_range(full.out_features, "out_features", group)
        self.weight = nn.Parameter(full.weight.detach()[start:start + size].clone())
        self.bias = nn.Parameter(full.bias.detach()[start:start + size].clone()) if full.bias is not None else None
        self.gather_output, self.label, self.group = gather_output, label, group

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        agree(self.label, self.group, batch=tuple(x.shape[:-1]), dtype=x.dtype)  # the same on every rank
        out = F.linear(copy_to_parallel(x, self.label, self.group), self.weight, self.bias)
        return gather_from_parallel(out, -1, self.label, self.group) if self.gather_output else out


class RowParallelLinear(nn.Module):
    """A ``Linear`` whose input features are split; partial outputs are summed by an all-reduce."""

    def __init__(self, full: nn.Linear, input_is_parallel: bool = True, label: str = "row linear",
                 group: ProcessGroup | None = None) -> None:
        super().__init__()
        self.start, self.size = local_shard_range(full.in_features, "in_features", group)
        self.weight = nn.Parameter(full.weight.detach()[:, self.start:self.start + self.size].clone())
        self.bias = nn.Parameter(full.bias.detach().clone()) if full.bias is not None else None
        self.input_is_parallel, self.label, self.group = input_is_parallel, label, group

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        agree(self.label, self.group, batch=tuple(x.shape[:-1]), dtype=x.dtype)
        if not self.input_is_parallel:
            x = copy_to_parallel(x, self.label, self.group)[..., self.start:self.start + self.size]
        out = reduce_from_parallel(F.linear(x, self.weight), self.label, self.group)
        return out + self.bias if self.bias is not None else out


class ChannelParallelConv2d(nn.Module):
    """A ``Conv2d`` whose output channels are split; all-gather them when the next layer needs all."""

    def __init__(self, full: nn.Conv2d, gather_output: bool = True, label: str = "channel conv",
                 group: ProcessGroup | None = None) -> None:
        super().__init__()
        if full.groups != 1:
            raise ValueError("ChannelParallelConv2d splits an ungrouped convolution (groups=1)")
        start, size = local_shard_range(full.out_channels, "out_channels", group)
        self.weight = nn.Parameter(full.weight.detach()[start:start + size].clone())
        self.bias = nn.Parameter(full.bias.detach()[start:start + size].clone()) if full.bias is not None else None
        self.stride, self.padding, self.gather_output, self.label = full.stride, full.padding, gather_output, label
        self.group = group

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        agree(self.label, self.group, batch=x.shape[0], image=tuple(x.shape[2:]), dtype=x.dtype)
        out = F.conv2d(copy_to_parallel(x, self.label, self.group), self.weight, self.bias, self.stride, self.padding)
        return gather_from_parallel(out, 1, self.label, self.group) if self.gather_output else out


class InputChannelParallelConv2d(nn.Module):
    """A ``Conv2d`` whose input channels are split; each rank's partial sum is all-reduced."""

    def __init__(self, full: nn.Conv2d, input_is_parallel: bool = True, label: str = "input-channel conv",
                 group: ProcessGroup | None = None) -> None:
        super().__init__()
        if full.groups != 1:
            raise ValueError("InputChannelParallelConv2d splits an ungrouped convolution (groups=1)")
        self.start, self.size = local_shard_range(full.in_channels, "in_channels", group)
        self.weight = nn.Parameter(full.weight.detach()[:, self.start:self.start + self.size].clone())
        self.bias = nn.Parameter(full.bias.detach().clone()) if full.bias is not None else None
        self.stride, self.padding = full.stride, full.padding
        self.input_is_parallel, self.label, self.group = input_is_parallel, label, group

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        agree(self.label, self.group, batch=x.shape[0], image=tuple(x.shape[2:]), dtype=x.dtype)
        if not self.input_is_parallel:
            x = copy_to_parallel(x, self.label, self.group)[:, self.start:self.start + self.size]
        out = reduce_from_parallel(F.conv2d(x, self.weight, None, self.stride, self.padding), self.label, self.group)
        return out + self.bias.view(1, -1, 1, 1) if self.bias is not None else out


def parallel_mlp(full: nn.Sequential, group: ProcessGroup | None = None) -> nn.Sequential:
    """Megatron's MLP split of ``Linear → activation → Linear``: column then row, one all-reduce each way."""
    first, act, second = full
    column = ColumnParallelLinear(cast(nn.Linear, first), gather_output=False, label="fc1", group=group)
    return nn.Sequential(column, act, RowParallelLinear(cast(nn.Linear, second), input_is_parallel=True, label="fc2",
                                                        group=group))


def comm_volume(batch: int, n_in: int, n_out: int, world: int, element_size: int = 4) -> dict[str, dict[str, int]]:
    """Bytes each rank puts into collectives for one forward+backward of a Linear(n_in, n_out).

    * column split, output gathered: forward all-gather of its B·n_out/t outputs; backward
      all-reduce of the B·n_in input gradient.
    * row split, input already split: forward all-reduce of the B·n_out partial outputs;
      backward nothing.
    * data parallel (for comparison): all-reduce of the weight and bias gradients.
    """
    if min(batch, n_in, n_out, world) < 1 or n_out % world or n_in % world:
        raise ValueError(f"need positive sizes with n_in and n_out divisible by world ({world})")
    e = element_size
    return {
        "column, gather output": {"forward": batch * n_out // world * e, "backward": batch * n_in * e},
        "row, split input": {"forward": batch * n_out * e, "backward": 0},
        "data parallel (gradients)": {"forward": 0, "backward": (n_in * n_out + n_out) * e},
    }


def all_reduce_logged(t: torch.Tensor, label: str, group: dist.ProcessGroup | None = None,
                      op: str = "sum") -> torch.Tensor:
    """A logged all-reduce (no autograd) of a copy of ``t``: ``op`` "sum" or "max"."""
    if op not in ("sum", "max"):
        raise ValueError(f"op must be 'sum' or 'max', got {op!r}")
    t = t.contiguous().clone()
    _log("all_reduce" if op == "sum" else "all_reduce_max", t, label)
    dist.all_reduce(t, dist.ReduceOp.SUM if op == "sum" else dist.ReduceOp.MAX, group=group)
    return t


def _chunk(t: torch.Tensor, dim: int, group: dist.ProcessGroup | None = None) -> torch.Tensor:
    """This rank's chunk of ``t`` along ``dim`` (its size must divide by the group's ranks)."""
    start, size = local_shard_range(t.shape[dim], f"dimension {dim} of size", group)
    return t.narrow(dim, start, size).contiguous()


class ReduceScatterSequence(torch.autograd.Function):
    """Sequence parallelism's g_SP (Korthikanti et al.'s ḡ, 2022, §4.2.2): sum the partial outputs and keep this rank's
    chunk along ``dim`` forward, all-gather backward; it replaces g after a row-parallel layer."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, dim: int, label: str, group: dist.ProcessGroup | None) -> torch.Tensor:
        ctx.dim, ctx.label, ctx.group = dim, label, group
        return _reduce_scatter(x, dim, label, group)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None, None]:
        return _all_gather(grad, ctx.dim, ctx.label + " (backward)", ctx.group), None, None, None


class _ScatterSequence(torch.autograd.Function):
    """Keep this rank's chunk along ``dim`` of a tensor every rank holds whole; all-gather backward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, dim: int, label: str, group: dist.ProcessGroup | None) -> torch.Tensor:
        ctx.dim, ctx.label, ctx.group = dim, label, group
        return _chunk(x, dim, group)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None, None]:
        return _all_gather(grad, ctx.dim, ctx.label + " (backward)", ctx.group), None, None, None


class _GatherLinear(torch.autograd.Function):
    """All-gather the sequence chunks, then ``x·Wᵀ + b`` on this rank's output features.

    Only the chunk is kept for backward, which gathers it again for the weight's gradient and
    reduce-scatters the input's gradient (each rank's is a partial sum over its output features).
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, dim: int, label: str,
                group: dist.ProcessGroup | None) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        ctx.dim, ctx.label, ctx.group, ctx.has_bias = dim, label, group, bias is not None
        return F.linear(_all_gather(x, dim, label, group), weight, bias)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, weight = ctx.saved_tensors
        whole = _all_gather(x, ctx.dim, ctx.label + " (backward, gathered again)", ctx.group)
        grad_x = _reduce_scatter(grad @ weight, ctx.dim, ctx.label + " (backward)", ctx.group)
        grad_w = grad.flatten(0, -2).t() @ whole.flatten(0, -2)
        grad_b = grad.flatten(0, -2).sum(0) if ctx.has_bias else None
        return grad_x, grad_w, grad_b, None, None, None


def all_gather_sequence(x: torch.Tensor, dim: int = 1, label: str = "",
                        group: dist.ProcessGroup | None = None) -> torch.Tensor:
    """g of sequence parallelism: all-gather the chunks along ``dim`` forward, reduce-scatter backward."""
    out: torch.Tensor = GatherForSplitCompute.apply(x, dim % x.dim(), label, group)  # type: ignore[no-untyped-call]
    return out


def reduce_scatter_sequence(x: torch.Tensor, dim: int = 1, label: str = "",
                            group: dist.ProcessGroup | None = None) -> torch.Tensor:
    """g_SP of sequence parallelism (Korthikanti et al.'s ḡ): reduce-scatter along ``dim`` forward, all-gather
    backward."""
    out: torch.Tensor = ReduceScatterSequence.apply(x, dim % x.dim(), label, group)  # type: ignore[no-untyped-call]
    return out


def scatter_sequence(x: torch.Tensor, dim: int = 1, label: str = "",
                     group: dist.ProcessGroup | None = None) -> torch.Tensor:
    """Enter the sequence-split region from a tensor every rank holds: keep this rank's chunk; all-gather backward."""
    out: torch.Tensor = _ScatterSequence.apply(x, dim % x.dim(), label, group)  # type: ignore[no-untyped-call]
    return out


def gather_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, dim: int = 1, label: str = "",
                  group: dist.ProcessGroup | None = None) -> torch.Tensor:
    """``F.linear(all_gather_sequence(x, dim), weight, bias)``, keeping only ``x`` (this rank's chunk) for backward."""
    out: torch.Tensor = _GatherLinear.apply(x, weight, bias, dim % x.dim(), label, group)  # type: ignore[no-untyped-call]
    return out
