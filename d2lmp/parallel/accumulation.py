"""Gradient accumulation under data parallelism: k micro-steps per optimizer step, one synchronisation.

When the batch wanted does not fit at once, each rank cuts its slice into k micro-batches that run one after
the other and add their gradients into ``.grad``. ``accumulate`` is the algorithm: the first k - 1
backward passes run inside ``no_sync()`` (DDP's, or ``data_parallel.RecordedBucketedAllReduce``'s) and
communicate nothing; the last one sums the accumulated gradients over the ranks. Without accumulation
each micro-step's gradient is summed on its own and added to the total: k synchronisations, the same
gradient. ``accumulated_gradients`` is the rank worker around it, which counts the all-reduces from the
step's timeline. Each micro-batch's loss is its summed loss over the global batch, so the result is the
full-batch mean-loss gradient however the batch is cut.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from d2lmp.model.timeline import TimelineEvent
from d2lmp.parallel.data_parallel import DataParallelStep, MLPSpec, local_loss, shard

__all__ = ["accumulate", "AccumulatedGradients", "accumulated_gradients"]


def accumulate(step: DataParallelStep, xs: torch.Tensor, ys: torch.Tensor, global_batch: int, micro_steps: int,
               one_sync: bool = True, after_each: Callable[[], None] = lambda: None) -> None:
    """This rank's slice as ``micro_steps`` micro-batches into ``.grad``, summed over the ranks: once at the end
    (``one_sync``) or after every micro-step. ``after_each`` runs after each micro-step (for counting)."""
    params = list(step.model.parameters())
    for j, (xj, yj) in enumerate(zip(xs.tensor_split(micro_steps), ys.tensor_split(micro_steps))):
        xj, yj = xj.to(step.device), yj.to(step.device)
        if one_sync and j < micro_steps - 1:
            with step.no_sync():  # only add into .grad: no communication
                local_loss(step.module, xj, yj, global_batch).backward()
        elif one_sync:  # the last micro-step: sum everything accumulated so far over the ranks
            local_loss(step.module, xj, yj, global_batch).backward()
            step.sync_gradients()
        else:  # sum this micro-step's gradient on its own, then add it to the total
            total = [p.grad for p in params]
            for p in params:
                p.grad = None
            local_loss(step.module, xj, yj, global_batch).backward()
            step.sync_gradients()
            for p, g in zip(params, total):
                if g is not None:
                    p.grad += g  # type: ignore[operator]  # backward has just set p.grad
        after_each()


@dataclass(frozen=True)
class AccumulatedGradients:
    """What ``accumulated_gradients`` returns: the summed gradients (on the CPU), the micro-steps that
    communicated, and the gradient all-reduces of the optimizer step (calls and bytes, from the timeline)."""

    grads: list[torch.Tensor]
    syncs: int
    allreduce_calls: int
    allreduce_bytes: int


def accumulated_gradients(rank: int, world: int, spec: MLPSpec, x: torch.Tensor, y: torch.Tensor, version: str,
                          micro_steps: int, one_sync: bool = True, bucket_bytes: int = 1 << 20,
                          device: str = "auto") -> AccumulatedGradients:
    """Worker: one optimizer step's gradients from ``micro_steps`` micro-batches of this rank's slice
    (``accumulate``), with the micro-steps that communicated and the count and bytes of the all-reduces."""
    step = DataParallelStep(spec, version, lr=0.0, bucket_bytes=bucket_bytes, device=device)
    xs, ys = shard(x, y, rank, world)
    if not 1 <= micro_steps <= len(xs):
        raise ValueError(f"micro_steps must be between 1 and this rank's {len(xs)} examples, got {micro_steps}")

    def allreduces() -> list[TimelineEvent]:
        return [e for e in step.timeline.events if e.kind == "allreduce"]

    counts = [0]  # all-reduces after each micro-step

    def count() -> None:
        counts.append(len(allreduces()))

    accumulate(step, xs, ys, len(x), micro_steps, one_sync, count)
    syncs = sum(after > before for before, after in zip(counts, counts[1:]))
    return AccumulatedGradients(grads=[p.grad.cpu().clone() for p in step.model.parameters()],  # type: ignore[union-attr]
                                syncs=syncs, allreduce_calls=len(allreduces()),
                                allreduce_bytes=sum(e.nbytes or 0 for e in allreduces()))
