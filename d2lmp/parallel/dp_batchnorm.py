"""BatchNorm under data parallelism, measured: per-rank statistics against synchronised ones, against one device.

One device normalises a global batch with that batch's mean and variance. Under data parallelism a plain
``nn.BatchNorm2d`` on each rank sees only the rank's slice; ``SyncBatchNorm2d`` all-reduces the statistics, and
PyTorch's ``nn.SyncBatchNorm`` does the same where it runs (GPUs). ``batchnorm_gaps`` is the worker that puts one
BatchNorm layer of each kind through a forward and a backward on this rank's slice of a batch of real features
(the CNN's first convolution on digits, ``bn_inputs``) and returns, per kind, the largest difference from one
device's ``nn.BatchNorm2d`` on the whole batch: outputs, running mean and variance, input gradients, and the weight
and bias gradients summed over the ranks (as DDP sums them), each relative to the largest value one device
computed. ``batchnorm_accuracy_table`` trains the CNN on ranks with each kind for small per-rank batches and
reports the test accuracy beside one device's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
import torch.distributed as dist
from torch import nn

from d2lmp.data import Dataset
from d2lmp.parallel.data_parallel import shard
from d2lmp.parallel.dp_training import CNNSpec, FitConfig, dp_fit_many, one_device_fit
from d2lmp.parallel.launch import launch, rank_device
from d2lmp.parallel.sync_batchnorm import SyncBatchNorm2d, torch_sync_batchnorm_error
from d2lmp.report import table

__all__ = ["BatchNormGap", "BatchNormAccuracy", "bn_inputs", "batchnorm_gaps", "batchnorm_gap_table",
           "batchnorm_accuracy_table", "format_batchnorm_gaps", "format_batchnorm_accuracy"]

_KINDS = ("per-rank nn.BatchNorm2d", "SyncBatchNorm2d (ours)", "nn.SyncBatchNorm (PyTorch)")


@dataclass(frozen=True)
class BatchNormGap:
    """How far one kind of statistics on ``world`` ranks sharing a ``batch`` of examples is from one device's
    BatchNorm on the whole batch: for each quantity, the largest |difference| divided by the largest |value| one
    device computed (relative to the quantity's scale); ``note`` says why a kind could not run (NaN gaps)."""

    statistics: str
    world: int
    batch: int
    output: float
    running_mean: float
    running_var: float
    input_grad: float
    weight_grad: float
    bias_grad: float
    note: str = ""


@dataclass(frozen=True)
class _Pass:
    """One BatchNorm layer's forward and backward: output, running statistics and gradients."""

    output: torch.Tensor
    running_mean: torch.Tensor
    running_var: torch.Tensor
    input_grad: torch.Tensor
    weight_grad: torch.Tensor
    bias_grad: torch.Tensor


def bn_inputs(data: Dataset, batch: int = 32, spec: CNNSpec | None = None) -> torch.Tensor:
    """What the CNN's first BatchNorm sees: its first convolution (seeded weights; default ``CNNSpec()``) on
    ``batch`` training images."""
    with torch.no_grad():
        out: torch.Tensor = (spec or CNNSpec()).build()[0](data.x_train[:batch])
        return out


_Layer = nn.BatchNorm2d | nn.SyncBatchNorm  # SyncBatchNorm2d is a BatchNorm2d


def _layer(kind: str, channels: int) -> _Layer:
    layer: _Layer
    if kind == _KINDS[2]:
        layer = nn.SyncBatchNorm(channels)
    else:
        layer = SyncBatchNorm2d(channels) if kind == _KINDS[1] else nn.BatchNorm2d(channels)
    g = torch.Generator().manual_seed(7)  # a non-trivial scale and shift, the same in every layer
    with torch.no_grad():
        layer.weight.copy_(1 + 0.5 * torch.randn(channels, generator=g))
        layer.bias.copy_(0.5 * torch.randn(channels, generator=g))
    return layer


def _pass(layer: _Layer, x: torch.Tensor, upstream: torch.Tensor, sum_over_ranks: bool) -> _Pass:
    """Forward ``x``, backward the loss Σ output·upstream; the parameter gradients summed over the ranks (as DDP
    sums them) when ``sum_over_ranks``."""
    x = x.clone().requires_grad_(True)
    y = layer(x)
    (y * upstream).sum().backward()
    assert x.grad is not None and layer.weight.grad is not None and layer.bias.grad is not None
    assert layer.running_mean is not None and layer.running_var is not None
    grads = torch.cat([layer.weight.grad, layer.bias.grad])
    if sum_over_ranks:
        dist.all_reduce(grads)
    c = layer.num_features
    return _Pass(y.detach().cpu(), layer.running_mean.cpu(), layer.running_var.cpu(), x.grad.cpu(), grads[:c].cpu(),
                 grads[c:].cpu())


def _largest(diffs: list[float]) -> list[float]:
    """The element-wise maximum of ``diffs`` over the ranks."""
    t = torch.tensor(diffs, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    out: list[float] = t.tolist()
    return out


def _gap(kind: str, world: int, batch: int, values: Sequence[float], note: str = "") -> BatchNormGap:
    output, running_mean, running_var, input_grad, weight_grad, bias_grad = values
    return BatchNormGap(kind, world, batch, output, running_mean, running_var, input_grad, weight_grad, bias_grad,
                        note)


def batchnorm_gaps(rank: int, world: int, x: torch.Tensor, upstream: torch.Tensor) -> list[BatchNormGap]:
    """Worker: each kind of BatchNorm on this rank's slice of ``x`` (gradient of the output: ``upstream``'s
    slice), against one device's ``nn.BatchNorm2d`` on all of ``x``; the gaps are the largest over the ranks."""
    channels, device = x.shape[1], rank_device()
    one = _pass(_layer(_KINDS[0], channels), x, upstream, sum_over_ranks=False)  # in this process, the whole batch
    xs, gs = shard(x, upstream, rank, world)
    out, dx = shard(one.output, one.input_grad, rank, world)  # this rank's part of one device's results
    rows = []
    for kind in _KINDS:
        error = torch_sync_batchnorm_error(device) if kind == _KINDS[2] else None
        if error is not None:
            rows.append(_gap(kind, world, len(x), [float("nan")] * 6, note=error))
            continue
        got = _pass(_layer(kind, channels).to(device), xs.to(device), gs.to(device), sum_over_ranks=True)
        pairs = ((got.output, out), (got.running_mean, one.running_mean), (got.running_var, one.running_var),
                 (got.input_grad, dx), (got.weight_grad, one.weight_grad), (got.bias_grad, one.bias_grad))
        gaps = [((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item() for a, b in pairs]
        rows.append(_gap(kind, world, len(x), _largest(gaps)))
    return rows


def batchnorm_gap_table(data: Dataset, worlds: Sequence[int] = (2, 4), batch: int = 32) -> list[BatchNormGap]:
    """``batchnorm_gaps`` on each number of ranks, for a batch of ``batch`` real features (one launch each)."""
    x = bn_inputs(data, batch)
    upstream = torch.randn(x.shape, generator=torch.Generator().manual_seed(3))
    return [row for world in worlds for row in launch(batchnorm_gaps, world, x, upstream)[0]]


def format_batchnorm_gaps(rows: Sequence[BatchNormGap]) -> str:
    """The rows as a text table (a kind that could not run says why below it)."""
    body = [[r.statistics, r.world, r.batch] + [f"{v:.1e}" for v in (
        r.output, r.running_mean, r.running_var, r.input_grad, r.weight_grad, r.bias_grad)] for r in rows]
    notes = sorted({f"{r.statistics}: {r.note}" for r in rows if r.note})
    return "\n".join([table(body, ["statistics", "ranks", "batch", "output", "running mean", "running var",
                                    "input grad", "weight grad", "bias grad"])] + notes)


@dataclass(frozen=True)
class BatchNormAccuracy:
    """Test accuracy after training with small per-rank batches: per-rank statistics, synchronised ones, and one
    device on the whole global batch (what synchronised statistics reproduce)."""

    ranks: int
    per_rank_batch: int
    global_batch: int
    per_rank_acc: float
    synchronised_acc: float
    one_device_acc: float


def batchnorm_accuracy_table(data: Dataset, per_rank_batches: Sequence[int] = (2, 4, 8, 16), world: int = 2,
                             config: FitConfig | None = None, channels: int = 16) -> list[BatchNormAccuracy]:
    """Train the CNN on ``world`` ranks with ``nn.BatchNorm2d`` and with ``SyncBatchNorm2d`` for each per-rank
    batch (all in one launch), and on one device; ``config`` (default ``FitConfig()``) sets everything but the
    global batch."""
    configs = [replace(config or FitConfig(), global_batch=world * b) for b in per_rank_batches]
    runs = [(CNNSpec(channels, norm), c) for c in configs for norm in ("batch", "sync")]
    results = launch(dp_fit_many, world, runs, data)[0]
    rows = []
    for i, (b, c) in enumerate(zip(per_rank_batches, configs)):
        one = one_device_fit(CNNSpec(channels, "batch"), c, data)
        rows.append(BatchNormAccuracy(world, b, c.global_batch, results[2 * i].test_acc, results[2 * i + 1].test_acc,
                                      one.test_acc))
    return rows


def format_batchnorm_accuracy(rows: Sequence[BatchNormAccuracy]) -> str:
    """The rows as a text table."""
    return table([[r.ranks, r.per_rank_batch, r.global_batch, f"{r.per_rank_acc:.3f}", f"{r.synchronised_acc:.3f}",
                   f"{r.one_device_acc:.3f}"] for r in rows],
                 ["ranks", "per rank", "global batch", "per-rank BN acc", "synchronised BN acc", "1 device acc"])
