"""A real profiler trace of one DistributedDataParallel step on every rank, written as Chrome trace JSON.

``record_ddp_trace`` launches the ranks; each builds ``MLPSpec``'s network inside PyTorch's
``DistributedDataParallel`` with small buckets, takes a few steps (DDP settles its buckets after the first), then
runs one step under ``torch.profiler`` and exports the trace (``ddp_trace_rank{r}.json``): forward, every backward
operator, every all-reduce the process group ran on its own threads, the optimizer. Where the rank's device is a
GPU the profiler records its kernels too (``ProfilerActivity.CUDA``, only when the build supports it, so CPU ranks
never ask for it). The same step is also logged by the project's ``Timeline`` (``recording_hook``), so the figure
drawn from the trace can stand beside the Gantt chart drawn from the timeline. The returned ``TraceRecording``
holds the paths (one file per rank and one merged, for ui.perfetto.dev or chrome://tracing), each rank's
``TraceSummary`` measured from its trace file, and the timeline's events.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, supported_activities

from d2lmp.model.timeline import Timeline, TimelineEvent
from d2lmp.parallel.data_parallel import MLPSpec, local_loss, recording_hook, shard, synthetic_data
from d2lmp.parallel.launch import launch, rank_device
from d2lmp.parallel.trace_events import TraceSummary, load_trace, merge_traces, summarise, trace_spans

__all__ = ["TRACE_SPEC", "TraceRecording", "RankTrace", "profiler_activities", "ddp_trace_step", "record_ddp_trace"]

TRACE_SPEC = MLPSpec((256, 512, 512, 512, 512, 10), seed=0)  # about 1 M parameters: several 1 MiB buckets


@dataclass(frozen=True)
class TraceRecording:
    """One profiled DDP step: the trace files (one per rank, then the merged one), what each rank's trace says
    (``TraceSummary``), the same step's ``Timeline`` events (every rank), the bucket cap and the device."""

    paths: tuple[Path, ...]
    merged: Path
    summaries: tuple[TraceSummary, ...]
    timeline: tuple[TimelineEvent, ...]
    bucket_bytes: int
    device: str


def profiler_activities(device: torch.device) -> list[ProfilerActivity]:
    """What to record: the CPU always, a GPU's kernels when ``device`` is one and this build can trace them."""
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda" and ProfilerActivity.CUDA in supported_activities():
        activities.append(ProfilerActivity.CUDA)
    return activities


def _step(ddp: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor, batch: int,
          timeline: Timeline) -> None:
    """One step, each phase named for the profiler (``record_function``) and for the timeline (``span``)."""
    optimizer.zero_grad(set_to_none=True)
    with record_function("forward"), timeline.span("forward"):
        loss = local_loss(ddp, x, y, batch)
    with record_function("backward"), timeline.span("backward"):
        torch.autograd.backward(loss)  # DDP's hooks start each bucket's all-reduce; it waits for all at the end
        if x.device.type == "cuda":
            torch.cuda.synchronize(x.device)
    with record_function("optimizer"), timeline.span("step"):
        optimizer.step()


@contextmanager
def _quiet_stderr() -> Iterator[None]:
    """The process's stderr (file descriptor 2) sent to /dev/null for the block: the profiler's C++ side logs a line
    there as it starts and as it stops ("USDT: ... profiler_start"), which is not the reader's business."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@dataclass(frozen=True)
class RankTrace:
    """What one rank's ``ddp_trace_step`` wrote and logged: its trace file, the step's events, its device."""

    path: str
    events: tuple[TimelineEvent, ...]
    device: str


def ddp_trace_step(rank: int, world: int, folder: str, spec: MLPSpec = TRACE_SPEC, batch: int = 128,
                   bucket_bytes: int = 1 << 20, warmup: int = 2, device: str = "auto") -> RankTrace:
    """Worker: ``warmup`` DDP steps, then one under the profiler, exported to ``folder``."""
    dev = rank_device(device)
    model = spec.build().to(dev)
    timeline = Timeline(rank)
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=[dev.index] if dev.type == "cuda" else None,
                                              bucket_cap_mb=bucket_bytes / 2**20)
    ddp.register_comm_hook(timeline, recording_hook)  # sums each bucket, and logs it on the timeline
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = synthetic_data(spec, batch)
    xs, ys = (t.to(dev) for t in shard(x, y, rank, world))
    for _ in range(warmup):
        _step(ddp, optimizer, xs, ys, batch, timeline)
    timeline.events.clear()
    prof = profile(activities=profiler_activities(dev))
    with _quiet_stderr():  # only the profiler's start and stop: the step's own warnings stay visible
        prof.start()
    try:
        _step(ddp, optimizer, xs, ys, batch, timeline)
    finally:
        with _quiet_stderr():
            prof.stop()
    path = Path(folder) / f"ddp_trace_rank{rank}.json"
    prof.export_chrome_trace(str(path))
    return RankTrace(str(path), tuple(timeline.events), str(dev))


def record_ddp_trace(folder: str | Path, world: int = 2, spec: MLPSpec = TRACE_SPEC, batch: int = 128,
                     bucket_bytes: int = 1 << 20, device: str = "auto") -> TraceRecording:
    """Profile one DDP step on ``world`` ranks; write the traces into ``folder``; measure them (``summarise``).
    ``device``: "auto" (each rank's GPU under NCCL, else the CPU), "cpu" or "cuda"."""
    if bucket_bytes <= 0:
        raise ValueError(f"bucket_bytes must be positive, got {bucket_bytes}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    results = launch(ddp_trace_step, world, str(folder), spec, batch, bucket_bytes, 2, device)
    paths = tuple(Path(r.path) for r in results)
    merged = merge_traces(paths, folder / "ddp_trace_all_ranks.json")
    summaries = tuple(summarise(trace_spans(load_trace(p), rank), rank) for rank, p in enumerate(paths))
    events = tuple(e for r in results for e in r.events)
    return TraceRecording(paths, merged, summaries, events, bucket_bytes, results[0].device)
