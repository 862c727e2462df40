"""Data parallelism: every rank holds a full replica and a slice of the minibatch.

Three versions, each giving every rank the full-batch gradient:

1. ``allreduce_gradients``: after backward, all-reduce each gradient (no overlap).
2. ``BucketedAllReduce``: gradients are grouped into buckets of about ``bucket_bytes`` (``fill_buckets``,
   last layer first); a hook fires as each gradient is ready, and a full bucket's all-reduce starts at once,
   asynchronously, while backward keeps computing earlier layers (overlap). ``RecordedBucketedAllReduce`` is
   the same class with what measuring needs: a timeline, an ``overlap=False`` switch and ``no_sync()``;
   ``DataParallelStep`` runs it.
3. PyTorch's ``DistributedDataParallel``, with ``recording_hook`` logging its buckets.

Uneven splits: each rank's loss is the *sum* over its examples divided by the *global* batch size, and
gradients are summed over ranks, so the result is the mean over the whole batch however it was split.

Gradient accumulation, k micro-steps inside ``no_sync()`` before one synchronisation, is in
``parallel.accumulation``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.futures import Future

from d2lmp.model.timeline import Timeline, TimelineEvent
from d2lmp.models import mlp
from d2lmp.parallel.launch import rank_device

__all__ = ["MLPSpec", "synthetic_data", "shard", "local_loss", "allreduce_gradients", "fill_buckets", "grad_or_zeros",
           "unflatten_into_grads", "BucketedAllReduce", "RecordedBucketedAllReduce", "recording_hook", "VERSIONS",
           "DataParallelStep", "dp_gradients",
           "single_process_gradients", "DPRun", "dp_train", "single_process_train"]


@dataclass(frozen=True)
class MLPSpec:
    """A picklable recipe for ``models.mlp`` with a fixed initialisation: widths from input to output, and a seed."""

    sizes: tuple[int, ...] = (32, 64, 64, 10)
    seed: int = 0

    def build(self) -> nn.Sequential:
        if len(self.sizes) < 3:
            raise ValueError(f"sizes needs an input, at least one hidden and an output width; got {self.sizes}")
        torch.manual_seed(self.seed)
        return mlp(self.sizes[0], self.sizes[1:-1], self.sizes[-1], flatten=False)


def synthetic_data(spec: MLPSpec, n: int, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """A classification batch for ``spec``: inputs and labels from a fixed random teacher."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, spec.sizes[0], generator=g)
    teacher = torch.randn(spec.sizes[0], spec.sizes[-1], generator=g)
    return x, (x @ teacher).argmax(dim=1)


def shard(x: torch.Tensor, y: torch.Tensor, rank: int, world: int) -> tuple[torch.Tensor, torch.Tensor]:
    """This rank's slice of the minibatch; the first ``len % world`` ranks get one extra example."""
    if len(x) < world:
        raise ValueError(f"a batch of {len(x)} cannot give each of {world} ranks an example")
    return torch.tensor_split(x, world)[rank], torch.tensor_split(y, world)[rank]


def local_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor, global_batch: int) -> torch.Tensor:
    """Cross-entropy summed over the local examples, divided by the global batch size."""
    return nn.functional.cross_entropy(model(x), y, reduction="sum") / global_batch


def allreduce_gradients(model: nn.Module, timeline: Timeline | None = None,
                        group: dist.ProcessGroup | None = None) -> None:
    """Version 1: sum every gradient over the ranks of ``group`` (None: all), one blocking all-reduce per tensor."""
    for name, p in model.named_parameters():
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        start = time.perf_counter()
        dist.all_reduce(p.grad, group=group)
        if timeline is not None:
            timeline.add("allreduce", start, time.perf_counter(), name, nbytes=p.grad.numel() * p.grad.element_size())


def fill_buckets(params: Sequence[nn.Parameter], bucket_bytes: int) -> list[list[nn.Parameter]]:
    """``params``, in the order given, cut into buckets: a bucket closes as soon as it holds ``bucket_bytes`` or
    more, so it never splits a tensor (a tensor larger than the cap closes its bucket on its own)."""
    if bucket_bytes <= 0:
        raise ValueError(f"bucket_bytes must be positive, got {bucket_bytes}")
    buckets: list[list[nn.Parameter]] = [[]]
    size = 0
    for p in params:
        buckets[-1].append(p)
        size += p.numel() * p.element_size()
        if size >= bucket_bytes:  # full: the next parameter opens a new bucket
            buckets.append([])
            size = 0
    return [b for b in buckets if b]


def grad_or_zeros(p: torch.Tensor) -> torch.Tensor:
    """``p.grad``, set to zeros first for a parameter that took no part in this forward pass."""
    if p.grad is None:
        p.grad = torch.zeros_like(p)
    return p.grad


def unflatten_into_grads(flat: torch.Tensor, bucket: Sequence[nn.Parameter]) -> None:
    """Copy a bucket's flat tensor back into its parameters' ``.grad``, in bucket order."""
    for p, part in zip(bucket, flat.split([p.numel() for p in bucket])):
        grad_or_zeros(p).copy_(part.view_as(p))


class BucketedAllReduce:
    """Version 2: a backward hook starts each bucket's all-reduce as soon as the bucket is full; finish() waits."""

    def __init__(self, model: nn.Module, bucket_bytes: int = 1 << 20, group: Any = None) -> None:
        params = [p for p in model.parameters() if p.requires_grad]
        self.buckets = fill_buckets(params[::-1], bucket_bytes)  # the order backward produces the gradients in
        self.bucket_of = {id(p): i for i, bucket in enumerate(self.buckets) for p in bucket}
        self.group, self.waiting = group, [len(b) for b in self.buckets]  # gradients each bucket waits for
        # bucket -> its flat gradients, its all-reduce (whose future's value is the reduced tensors)
        self.inflight: dict[int, tuple[torch.Tensor, Future[list[torch.Tensor]]]] = {}
        self.hooks = [p.register_post_accumulate_grad_hook(self.grad_ready) for p in params]

    def grad_ready(self, p: torch.Tensor) -> None:  # autograd calls it once p.grad is complete
        i = self.bucket_of[id(p)]
        self.waiting[i] -= 1
        if self.waiting[i] == 0:  # the bucket is full: send it while backward goes on
            self.launch(i)

    def launch(self, i: int) -> None:  # asynchronous: the all-reduce returns at once, the sum arrives later
        flat = torch.cat([grad_or_zeros(p).reshape(-1) for p in self.buckets[i]])
        self.inflight[i] = flat, dist.all_reduce(flat, group=self.group, async_op=True).get_future()

    def finish(self) -> None:  # after backward: send what is left, wait for every bucket, sums into .grad
        for i in [i for i in range(len(self.buckets)) if i not in self.inflight]:
            self.launch(i)
        for i, (flat, future) in sorted(self.inflight.items()):
            future.wait()
            unflatten_into_grads(flat, self.buckets[i])
        self.waiting, self.inflight = [len(b) for b in self.buckets], {}


class RecordedBucketedAllReduce(BucketedAllReduce):
    """``BucketedAllReduce`` as ``DataParallelStep`` runs it (and so ``d2lmp bench dp``): the same buckets, sums
    and order, with three controls that compute nothing. ``timeline`` logs each bucket's all-reduce, from its
    start to its sum's arrival; ``overlap=False`` holds every bucket back until ``finish()``, to measure what
    overlap buys; inside ``no_sync()`` backward only accumulates into ``.grad`` (as DDP's ``no_sync``), and the
    first synchronised backward after it sums the total."""

    def __init__(self, model: nn.Module, bucket_bytes: int = 1 << 20, overlap: bool = True,
                 timeline: Timeline | None = None, group: Any = None) -> None:
        super().__init__(model, bucket_bytes, group)
        self.overlap, self.timeline, self.sync = overlap, timeline, True

    def bucket_sizes(self) -> list[int]:
        """Bytes per bucket, in the order they are all-reduced."""
        return [sum(p.numel() * p.element_size() for p in b) for b in self.buckets]

    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Backward passes in this block only accumulate into ``.grad``: no all-reduce starts and ``finish()``
        does nothing (as DDP's ``no_sync``)."""
        self.sync = False
        try:
            yield
        finally:
            self.sync = True

    def grad_ready(self, p: torch.Tensor) -> None:
        if self.sync and self.overlap:
            super().grad_ready(p)

    def finish(self) -> None:
        if self.sync:
            super().finish()

    def launch(self, i: int) -> None:
        super().launch(i)
        start = time.perf_counter()  # the all-reduce was started just now: launch returns at once
        if self.timeline is None:
            return
        flat, future = self.inflight[i]
        timeline, nbytes = self.timeline, flat.numel() * flat.element_size()

        def done(fut: Future[list[torch.Tensor]]) -> list[torch.Tensor]:
            timeline.add("allreduce", start, time.perf_counter(), f"bucket {i}", nbytes=nbytes)
            return fut.value()

        self.inflight[i] = flat, future.then(done)  # finish() waits for this one: the event is logged by then

    def remove(self) -> None:
        """Detach the hooks from the model."""
        for h in self.hooks:
            h.remove()


def recording_hook(timeline, bucket):  # type: ignore[no-untyped-def]  # no annotations: DDP checks them literally
    """A DDP communication hook: sum the bucket over ranks (no averaging) and log its size and time.

    Each event records the bucket's bytes and the bytes of each parameter in it (``tensor_bytes``,
    in bucket order). DDP closes a bucket once it reaches ``bucket_cap_mb``, so a bucket may pass
    the cap by its last parameter. Note that in its first step DDP (PyTorch 2.x, without
    ``find_unused_parameters``) puts every parameter in one bucket, and only then rebuilds the
    buckets, in the order the gradients actually became ready, under the cap.
    """
    start = time.perf_counter()
    buffer = bucket.buffer()
    nbytes = buffer.numel() * buffer.element_size()
    tensor_bytes = tuple(p.numel() * p.element_size() for p in bucket.parameters())
    future = dist.all_reduce(buffer, async_op=True).get_future()

    def done(fut: torch.futures.Future[list[torch.Tensor]]) -> torch.Tensor:
        timeline.add("allreduce", start, time.perf_counter(), f"bucket {bucket.index()}", nbytes=nbytes,
                     tensor_bytes=tensor_bytes)
        return fut.value()[0]

    return future.then(done)


VERSIONS = ("allreduce", "bucketed", "bucketed-no-overlap", "ddp")


class DataParallelStep:
    """One training step of a chosen version on this rank: forward, backward, gradient sum, SGD."""

    def __init__(self, spec: MLPSpec, version: str, lr: float = 0.1, bucket_bytes: int = 1 << 20,
                 device: str = "auto") -> None:
        if version not in VERSIONS:
            raise ValueError(f"unknown version {version!r}; available: {', '.join(VERSIONS)}")
        self.version = version
        self.timeline = Timeline(dist.get_rank())
        self.device = rank_device(device)
        self.model = spec.build().to(self.device)
        self.bucketer: RecordedBucketedAllReduce | None = None
        self.module: nn.Module
        if version == "ddp":
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.module = nn.parallel.DistributedDataParallel(self.model, device_ids=ids,
                                                              bucket_cap_mb=bucket_bytes / 2**20)
            self.module.register_comm_hook(self.timeline, recording_hook)
        else:
            self.module = self.model
            if version.startswith("bucketed"):
                self.bucketer = RecordedBucketedAllReduce(self.model, bucket_bytes, overlap=version == "bucketed",
                                                          timeline=self.timeline)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr)

    def no_sync(self) -> AbstractContextManager[None]:
        """A block whose backward passes only accumulate into ``.grad`` (no sum over the ranks)."""
        if isinstance(self.module, nn.parallel.DistributedDataParallel):  # version "ddp"
            return self.module.no_sync()
        if self.bucketer is not None:
            return self.bucketer.no_sync()
        return nullcontext()  # "allreduce" sums only when sync_gradients() is called

    def sync_gradients(self) -> None:
        """After backward: sum the gradients over the ranks (DDP has already done so inside backward)."""
        if self.version == "allreduce":
            allreduce_gradients(self.model, self.timeline)
        elif self.bucketer is not None:
            start = time.perf_counter()
            self.bucketer.finish()
            self.timeline.add("wait", start, time.perf_counter())

    def __call__(self, x: torch.Tensor, y: torch.Tensor, global_batch: int) -> float:
        """Run one step on the local slice (x, y); return the global mean loss."""
        tl = self.timeline
        x, y = x.to(self.device), y.to(self.device)
        self.optimizer.zero_grad(set_to_none=True)
        with tl.span("forward"):
            loss = local_loss(self.module, x, y, global_batch)
        with tl.span("backward"):
            loss.backward()
            if self.device.type == "cuda":
                torch.cuda.synchronize(self.device)  # the span must cover the GPU work, not just its launch
        self.sync_gradients()
        with tl.span("step"):
            self.optimizer.step()
        total = loss.detach().clone()
        dist.all_reduce(total)
        return total.item()


def dp_gradients(rank: int, world: int, spec: MLPSpec, x: torch.Tensor, y: torch.Tensor, version: str,
                 bucket_bytes: int = 1 << 20, device: str = "auto") -> list[torch.Tensor]:
    """Worker: one backward pass of ``version`` on this rank's slice; returns the summed gradients (on the CPU)."""
    step = DataParallelStep(spec, version, lr=0.0, bucket_bytes=bucket_bytes, device=device)
    xs, ys = shard(x, y, rank, world)
    step(xs, ys, len(x))
    return [p.grad.cpu().clone() for p in step.model.parameters()]  # type: ignore[union-attr]


def single_process_gradients(spec: MLPSpec, x: torch.Tensor, y: torch.Tensor) -> list[torch.Tensor]:
    """The reference: full-batch mean-loss gradients computed in this process."""
    model = spec.build()
    local_loss(model, x, y, len(x)).backward()
    return [p.grad.clone() for p in model.parameters()]  # type: ignore[union-attr]


@dataclass(frozen=True)
class DPRun:
    """What ``dp_train`` returns on a rank: the global mean loss and the seconds of every step, the rank's
    ``TimelineEvent``s, and the bytes of each bucket (None for the versions without buckets)."""

    losses: list[float]
    step_seconds: list[float]
    events: list[TimelineEvent]
    bucket_sizes: list[int] | None


def dp_train(rank: int, world: int, spec: MLPSpec, x: torch.Tensor, y: torch.Tensor, version: str,
             steps: int = 20, lr: float = 0.1, bucket_bytes: int = 1 << 20, device: str = "auto") -> DPRun:
    """Worker: ``steps`` SGD steps on the same global batch; returns losses, step times and ``TimelineEvent``s."""
    step = DataParallelStep(spec, version, lr=lr, bucket_bytes=bucket_bytes, device=device)
    xs, ys = shard(x, y, rank, world)
    losses, times = [], []  # the global mean loss and the seconds of each step
    for _ in range(steps):
        dist.barrier()
        start = time.perf_counter()
        losses.append(step(xs, ys, len(x)))
        times.append(time.perf_counter() - start)
    return DPRun(losses=losses, step_seconds=times, events=step.timeline.events,
                 bucket_sizes=step.bucketer.bucket_sizes() if step.bucketer else None)


def single_process_train(spec: MLPSpec, x: torch.Tensor, y: torch.Tensor, steps: int = 20,
                         lr: float = 0.1) -> list[float]:
    """The reference loss curve: the same SGD steps on the whole batch in one process."""
    model = spec.build()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        (loss := local_loss(model, x, y, len(x))).backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
