"""Data parallelism end to end: a small CNN with BatchNorm trained on CPU ranks to a test accuracy, against one device.

``dp_fit`` is the worker every rank runs: PyTorch's ``DistributedDataParallel`` around ``CNNSpec``'s network, the
same sequence of global batches on every rank (``global_batches``), each rank's slice of it (``shard``), the
summed gradient (``recording_hook``: each rank's loss is its summed loss over the global batch size, so the sum is
the global mean), SGD with momentum and a learning rate from ``FitConfig.schedule`` (the linear scaling rule with
warm-up, or the base rate). ``one_device_fit`` runs the same steps on the whole global batch in one process. With
no BatchNorm, or with ``SyncBatchNorm2d``, the two follow the same path to float rounding; with plain BatchNorm
each rank normalises with its own slice's statistics, and they differ. ``lr_scaling_table`` trains both for a
growing global batch, with the rule on and off, and returns one ``LRScalingRow`` per configuration.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace

import torch
import torch.distributed as dist
from torch import nn

from d2lmp.config import set_threads
from d2lmp.data import Dataset
from d2lmp.model.lr_scaling import LRSchedule, linear_scaling, warmup_steps_for
from d2lmp.model.timeline import Timeline
from d2lmp.parallel.data_parallel import local_loss, recording_hook, shard
from d2lmp.parallel.launch import launch
from d2lmp.parallel.sync_batchnorm import SyncBatchNorm2d
from d2lmp.report import table
from d2lmp.train import accuracy

__all__ = ["NORMS", "CNNSpec", "FitConfig", "FitResult", "LRScalingRow", "global_batches", "dp_fit",
           "one_device_fit", "dp_fit_many", "lr_scaling_table", "format_lr_scaling"]

NORMS = ("batch", "sync", "none")


@dataclass(frozen=True)
class CNNSpec:
    """A picklable recipe for a two-block CNN on 8×8 digits: (conv 3×3, norm, ReLU, max-pool 2) twice, then one
    linear layer. ``norm``: "batch" (``nn.BatchNorm2d``: per-rank statistics under data parallelism), "sync"
    (``SyncBatchNorm2d``: the global batch's statistics) or "none". ``seed`` fixes the initial weights."""

    channels: int = 16
    norm: str = "batch"
    seed: int = 0

    def build(self) -> nn.Sequential:
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {self.norm!r}")
        if self.channels < 1:
            raise ValueError(f"channels must be positive, got {self.channels}")
        c = self.channels

        def norm(ch: int) -> nn.Module:
            if self.norm == "none":
                return nn.Identity()
            return SyncBatchNorm2d(ch) if self.norm == "sync" else nn.BatchNorm2d(ch)

        torch.manual_seed(self.seed)
        return nn.Sequential(nn.Conv2d(1, c, 3, padding=1), norm(c), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(c, 2 * c, 3, padding=1), norm(2 * c), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(2 * c * 2 * 2, 10))


@dataclass(frozen=True)
class FitConfig:
    """One training run: global batch, epochs, SGD with momentum, the learning-rate rule, gradient accumulation.

    ``base_lr`` suits ``base_batch``; with ``scale_lr`` the run uses ``base_lr × global_batch / base_batch`` after
    ``warmup_epochs`` of linear warm-up. ``accumulation`` micro-steps per rank make up each rank's slice (the first
    ones inside DDP's ``no_sync``). ``seed`` fixes the order of the examples.
    """

    global_batch: int = 32
    epochs: int = 4
    base_lr: float = 0.005
    base_batch: int = 32
    scale_lr: bool = True
    warmup_epochs: float = 0.5
    momentum: float = 0.9
    accumulation: int = 1
    seed: int = 0

    def steps_per_epoch(self, train_size: int) -> int:
        """Full global batches per epoch (the last, partial one is dropped, so every step sees ``global_batch``)."""
        if not 1 <= self.global_batch <= train_size:
            raise ValueError(f"global_batch must be between 1 and the {train_size} training examples, "
                             f"got {self.global_batch}")
        return train_size // self.global_batch

    def schedule(self, train_size: int) -> LRSchedule:
        warmup = warmup_steps_for(self.warmup_epochs, self.steps_per_epoch(train_size))
        return linear_scaling(self.base_lr, self.base_batch, self.global_batch, warmup, self.scale_lr)


@dataclass(frozen=True)
class FitResult:
    """What one run ended with: test accuracy, the global mean loss and learning rate of every step, and the
    trained parameters and buffers (``state``, on the CPU)."""

    world: int
    spec: CNNSpec
    config: FitConfig
    test_acc: float
    losses: tuple[float, ...]
    lrs: tuple[float, ...]
    state: dict[str, torch.Tensor]


def global_batches(train_size: int, config: FitConfig) -> Iterator[torch.Tensor]:
    """The example indices of every step: each epoch a permutation seeded by (seed, epoch), cut into full
    global batches. Every rank and the one-device run draw the same sequence."""
    steps = config.steps_per_epoch(train_size)
    for epoch in range(config.epochs):
        order = torch.randperm(train_size, generator=torch.Generator().manual_seed(10_000 * config.seed + epoch))
        yield from order[:steps * config.global_batch].view(steps, config.global_batch)


def _backward(module: nn.Module, x: torch.Tensor, y: torch.Tensor, global_batch: int, micro_steps: int) -> float:
    """Backward over this rank's slice in ``micro_steps`` pieces, summing the gradient over the ranks only in the
    last one (DDP's ``no_sync`` before it); returns the slice's share of the global mean loss."""
    if not 1 <= micro_steps <= len(x):
        raise ValueError(f"accumulation must be between 1 and this rank's {len(x)} examples, got {micro_steps}")
    total = 0.0
    pieces = list(zip(x.tensor_split(micro_steps), y.tensor_split(micro_steps)))
    for j, (xj, yj) in enumerate(pieces):
        quiet = j < len(pieces) - 1 and isinstance(module, nn.parallel.DistributedDataParallel)
        with module.no_sync() if quiet else nullcontext():  # type: ignore[operator]
            loss = local_loss(module, xj, yj, global_batch)
            torch.autograd.backward(loss)
        total += float(loss.detach())
    return total


def _fit(module: nn.Module, model: nn.Module, data: Dataset, config: FitConfig, rank: int,
         world: int) -> tuple[list[float], list[float]]:
    """The training loop both fits share: returns this rank's loss shares and the learning rates, per step."""
    schedule = config.schedule(len(data.x_train))
    optimizer = torch.optim.SGD(model.parameters(), lr=schedule.lr(0), momentum=config.momentum)
    losses, lrs = [], []
    for step, index in enumerate(global_batches(len(data.x_train), config)):
        lrs.append(schedule.lr(step))
        for group in optimizer.param_groups:
            group["lr"] = lrs[-1]
        xs, ys = shard(data.x_train[index], data.y_train[index], rank, world)
        optimizer.zero_grad(set_to_none=True)
        losses.append(_backward(module, xs, ys, len(index), config.accumulation))
        optimizer.step()
    return losses, lrs


def _result(model: nn.Module, world: int, spec: CNNSpec, config: FitConfig, data: Dataset, losses: list[float],
            lrs: list[float]) -> FitResult:
    acc = accuracy(model, [(data.x_test, data.y_test)])
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return FitResult(world, spec, config, acc, tuple(losses), tuple(lrs), state)


def dp_fit(rank: int, world: int, spec: CNNSpec, config: FitConfig, data: Dataset) -> FitResult:
    """Worker: train ``spec``'s CNN with DDP on this rank's slice of every global batch; evaluate on the test set.

    DDP copies rank 0's buffers to every rank before each forward (its default): under plain BatchNorm each rank
    then adds its own slice's statistics, so the ranks' running statistics, and test accuracies, differ a little
    (take rank 0's); under ``SyncBatchNorm2d`` they are the same everywhere."""
    model = spec.build()  # the same seeded weights on every rank
    ddp = nn.parallel.DistributedDataParallel(model)  # which broadcasts rank 0's buffers before every forward
    ddp.register_comm_hook(Timeline(rank), recording_hook)  # sum the gradients (DDP's default averages them)
    losses, lrs = _fit(ddp, model, data, config, rank, world)
    total = torch.tensor(losses, dtype=torch.float64)
    dist.all_reduce(total)  # every rank's share of each step's global mean loss, summed once at the end
    return _result(model, world, spec, config, data, total.tolist(), lrs)


def dp_fit_many(rank: int, world: int, runs: Sequence[tuple[CNNSpec, FitConfig]], data: Dataset) -> list[FitResult]:
    """Worker: ``dp_fit`` for every (spec, config) in turn, in one launch."""
    return [dp_fit(rank, world, spec, config, data) for spec, config in runs]


def one_device_fit(spec: CNNSpec, config: FitConfig, data: Dataset) -> FitResult:
    """The reference: the same steps in this process, each on the whole global batch (BatchNorm over all of it;
    with ``accumulation`` > 1 the batch is cut into that many pieces, as each rank cuts its slice).

    It runs on one thread, as each rank does: operators this small gain nothing from more, and on a busy machine
    threads that wait for each other make them many times slower."""
    previous = set_threads(1)
    try:
        model = spec.build()
        losses, lrs = _fit(model, model, data, config, 0, 1)
        return _result(model, 1, spec, config, data, losses, lrs)
    finally:
        set_threads(previous)


@dataclass(frozen=True)
class LRScalingRow:
    """One configuration of the scaling experiment and the test accuracy it reached on one device and on ranks."""

    global_batch: int
    ranks: int
    per_rank_batch: int
    rule: bool
    peak_lr: float
    warmup_steps: int
    steps: int
    one_device_acc: float
    ranks_acc: float


def lr_scaling_table(data: Dataset, batches: Sequence[int] = (32, 64, 128, 256), world: int = 2,
                     spec: CNNSpec = CNNSpec(), config: FitConfig = FitConfig()) -> list[LRScalingRow]:
    """Train at each global batch with the linear scaling rule off and on, on one device and on ``world`` ranks
    (one launch for all), and return one row per configuration. Epochs stay fixed, so a bigger batch takes fewer
    steps."""
    configs = [replace(config, global_batch=b, scale_lr=rule) for rule in (False, True) for b in batches]
    on_ranks = launch(dp_fit_many, world, [(spec, c) for c in configs], data)[0]
    rows = []
    for c, dp in zip(configs, on_ranks):
        schedule, one = c.schedule(len(data.x_train)), one_device_fit(spec, c, data)
        rows.append(LRScalingRow(c.global_batch, world, c.global_batch // world, c.scale_lr, schedule.peak_lr,
                                 schedule.warmup_steps, len(dp.losses), one.test_acc, dp.test_acc))
    return rows


def format_lr_scaling(rows: Sequence[LRScalingRow]) -> str:
    """The rows as a text table."""
    return table([[r.global_batch, r.ranks, r.per_rank_batch, "on" if r.rule else "off", f"{r.peak_lr:.4g}",
                   r.warmup_steps, r.steps, f"{r.one_device_acc:.3f}", f"{r.ranks_acc:.3f}"] for r in rows],
                 ["global batch", "ranks", "per rank", "LR rule", "peak LR", "warm-up steps", "steps",
                  "1 device acc", f"{rows[0].ranks if rows else ''} ranks acc"])
