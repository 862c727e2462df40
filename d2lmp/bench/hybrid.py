"""Hybrid benchmark: the measured step of a 2 × 2 data × tensor grid against the cost model's prediction.

The model (``model.costmodel.predict(..., "hybrid", grid=(2, 2))``) is calibrated on this machine the
way the grid runs: every rank's share of the compute timed while all four compute at once, and α, β
fitted from all-reduces inside the two-rank groups while both groups talk at once. Calibration and
measurement alternate round by round in one launch, so load from other processes hits both alike.
The measured step is split the way the model adds it up (``breakdown``): forward and backward with the
layers' tensor-group collectives, the data-group gradient all-reduce, and the optimizer's update. The
result is a ``HybridResult``; ``hybrid_table`` shows it part by part.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from d2lmp.model.alpha_beta import fit_alpha_beta, ring_alpha_beta
from d2lmp.model.costmodel import Hardware, predict, this_machine
from d2lmp.model.timeline import TimelineEvent
from d2lmp.models import LayerRow, layer_table
from d2lmp.parallel import data_parallel as DP
from d2lmp.parallel.hybrid import grid_groups, hybrid_train
from d2lmp.parallel.launch import launch
from d2lmp.report import table
from d2lmp.timing import benchmark

__all__ = ["HYBRID_SPEC", "HybridResult", "breakdown", "hybrid_bench", "hybrid_table"]

HYBRID_SPEC = DP.MLPSpec((512, 1024, 1024, 1024, 10), seed=0)
CALIBRATION_SIZES = (2**14, 2**16, 2**18, 2**20, 2**22)


@dataclass(frozen=True)
class HybridResult:
    """The hybrid's predicted and measured step, the calibration it was predicted from, and both split into parts."""

    predicted_s: float
    measured_s: float  # median step of the slowest rank
    ratio: float  # predicted / measured
    compute_s: float
    comm_s: float
    flops: float  # calibrated FLOP/s of one rank
    alpha: float  # calibrated seconds per message
    beta: float  # calibrated seconds per byte
    parts_predicted: dict[str, float]  # costmodel.StrategyStep.parts
    parts_measured: dict[str, float]  # medians of ``breakdown`` over the measured steps
    gradient_tensors: int  # all-reduces per step in each data group (one per parameter tensor)


def _share_seconds(rank: int, spec: DP.MLPSpec, batch: int, tensor: int, min_time: float) -> float:
    """Median seconds of this rank's compute in one hybrid step, without its messages: each layer's
    1/tensor of the outputs, forward and backward, for ``batch`` examples (one replica's slice)."""
    torch.manual_seed(rank)
    widths = spec.sizes
    layers = [nn.Linear(a, b // tensor) for a, b in zip(widths, widths[1:])]
    inputs = [torch.randn(batch, a, requires_grad=i > 0) for i, a in enumerate(widths[:-1])]

    def one_step() -> None:
        for layer, x in zip(layers, inputs):
            out = layer(x)
            out.backward(torch.ones_like(out))

    dist.barrier()
    return benchmark(one_step, min_time=min_time).median


def _group_all_reduce_seconds(group: dist.ProcessGroup, sizes: Sequence[int],
                              repeats: int = 7) -> list[tuple[int, float]]:
    """(bytes, seconds) of an all-reduce inside ``group``, every group at once (median of the slowest rank)."""
    out: list[tuple[int, float]] = []
    for size in sizes:
        t = torch.ones(size // 4)
        dist.all_reduce(t, group=group)  # warm-up
        samples: list[float] = []
        for _ in range(repeats):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(t, group=group)
            samples.append(time.perf_counter() - start)
        slowest = torch.tensor([statistics.median(samples)], dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        out.append((size, slowest.item()))
    return out


@dataclass(frozen=True)
class _Rounds:
    """What ``_rounds`` returns on a rank, one entry per round: its compute share's seconds, the (bytes, seconds)
    of the tensor group's all-reduces, the hybrid's step seconds and each step's events; and its column."""

    shares: list[float]
    points: list[list[tuple[int, float]]]
    step_seconds: list[list[float]]
    events: list[list[list[TimelineEvent]]]
    tensor_rank: int


def _rounds(rank: int, world: int, spec: DP.MLPSpec, x: torch.Tensor, y: torch.Tensor, data: int, tensor: int,
            rounds: int, steps: int, min_time: float) -> _Rounds:
    """Worker: ``rounds`` times in turn, time this rank's share of the compute, the all-reduces inside the
    tensor groups, and ``steps`` steps of the hybrid."""
    grid = grid_groups(data, tensor)
    out = _Rounds([], [], [], [], grid.tensor_rank)
    for _ in range(rounds):
        out.shares.append(_share_seconds(rank, spec, -(-len(x) // data), tensor, min_time))
        out.points.append(_group_all_reduce_seconds(grid.tensor_group, CALIBRATION_SIZES))
        run = hybrid_train(rank, world, spec, x, y, data, tensor, steps, 0.01)
        out.step_seconds.append(run.step_seconds)
        out.events.append(run.events)
    return out


def breakdown(steps: list[list[TimelineEvent]], tensor_ranks: list[int]) -> dict[str, float]:
    """The parts of one measured step, from every rank's ``Timeline`` events of that step (``steps[rank]``).

    The step is the slowest rank's. Its data-group all-reduce can start only when both ranks of its column
    have finished backward, so: "forward+backward" runs from its start to the later of the two; "data-group
    all-reduce" from there to its last all-reduce's end, of which "waiting" is the time its all-reduces waited
    for the partner to enter; "optimizer" is the rest. The three parts add up to the step.
    """
    spans = [{e.kind: e for e in events if e.kind in ("step", "forward+backward")} for events in steps]
    slowest = max(range(len(steps)), key=lambda r: spans[r]["step"].duration)
    column = [r for r, t in enumerate(tensor_ranks) if t == tensor_ranks[slowest]]
    arrived = max(spans[r]["forward+backward"].end for r in column)
    mine = [e for e in steps[slowest] if e.kind == "allreduce"]
    peers = [[e for e in steps[r] if e.kind == "allreduce"] for r in column]
    waiting = sum(max(0.0, max(p[i].start for p in peers) - max(e.start, arrived)) for i, e in enumerate(mine))
    step = spans[slowest]["step"]
    data_end = mine[-1].end if mine else arrived
    return {"forward+backward": arrived - step.start, "data-group all-reduce": data_end - arrived,
            "waiting": waiting, "optimizer": step.end - data_end, "step": step.duration}


def _hardware(rows: Sequence[LayerRow], shares: list[list[float]], points: list[list[tuple[int, float]]], world: int,
              tensor: int) -> Hardware:
    """``Hardware`` from the rounds: median over rounds of the slowest rank's share; α, β fitted per size
    to the median over rounds."""
    share = statistics.median(max(per_rank) for per_rank in zip(*shares))
    flops = 3 * sum(r.flops for r in rows) / world / share
    sizes = [s for s, _ in points[0]]
    seconds = [statistics.median(p[i][1] for p in points) for i in range(len(sizes))]
    intercept, slope = fit_alpha_beta(sizes, seconds)
    return this_machine(flops, *ring_alpha_beta(intercept, slope, tensor), devices=world)


def hybrid_bench(batch: int = 128, steps: int = 6, data: int = 2, tensor: int = 2,
                 spec: DP.MLPSpec | None = None, rounds: int = 5, min_time: float = 0.1) -> HybridResult:
    """Predicted and measured step of the ``data × tensor`` hybrid (median step of the slowest rank, the
    first of each round skipped), with both split into parts (``parts_predicted``, ``parts_measured``)."""
    for name, value, least in (("batch", batch, data), ("steps", steps, 2), ("data", data, 1), ("tensor", tensor, 1),
                               ("rounds", rounds, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
    spec = spec or HYBRID_SPEC
    world = data * tensor
    torch.optim.SGD(nn.Linear(1, 1).parameters())  # its first use imports lazily: once here, not in each rank
    rows = layer_table(spec.build(), (batch, spec.sizes[0]))
    x, y = DP.synthetic_data(spec, batch)
    per_rank = launch(_rounds, world, spec, x, y, data, tensor, rounds, steps, min_time, timeout=600)
    hw = _hardware(rows, [r.shares for r in per_rank], per_rank[0].points, world, tensor)
    tensors = len(list(spec.build().parameters()))  # allreduce_gradients sends one all-reduce per tensor
    p = predict(rows, "hybrid", hw, batch, batch_of_table=batch, grid=(data, tensor), gradient_tensors=tensors)
    tensor_ranks = [r.tensor_rank for r in per_rank]
    seconds: list[float] = []
    parts: list[dict[str, float]] = []
    for k in range(rounds):
        for i in range(1, steps):
            seconds.append(max(r.step_seconds[k][i] for r in per_rank))
            parts.append(breakdown([r.events[k][i] for r in per_rank], tensor_ranks))
    measured = statistics.median(seconds)
    return HybridResult(predicted_s=p.step_s, measured_s=measured, ratio=p.step_s / measured, compute_s=p.compute_s,
                        comm_s=p.comm_s, flops=hw.flops, alpha=hw.alpha, beta=1 / hw.link_bytes_per_s,
                        parts_predicted=dict(p.parts),
                        parts_measured={k: statistics.median(d[k] for d in parts) for k in parts[0]},
                        gradient_tensors=tensors)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


def hybrid_table(r: HybridResult) -> str:
    """``hybrid_bench``'s result as a table: predicted and measured milliseconds, part by part."""
    pp, pm = r.parts_predicted, r.parts_measured
    return table([["forward+backward", f"{_ms(pp['compute'])} + {_ms(pp['tensor-group collectives'])}",
                   _ms(pm["forward+backward"])],
                  [f"data-group all-reduces ({r.gradient_tensors} tensors)", _ms(pp["data-group all-reduce"]),
                   _ms(pm["data-group all-reduce"])],
                  ["  of which waiting for the partner", "", _ms(pm["waiting"])],
                  ["optimizer update", "not modelled", _ms(pm["optimizer"])],
                  ["step (median step of the slowest rank)", _ms(r.predicted_s), _ms(r.measured_s)]],
                 ["part of the step", "predicted ms (compute + row collectives)", "measured ms"])
