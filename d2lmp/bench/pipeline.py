"""Pipeline benchmark: balanced vs equal partitions, measured vs theoretical bubbles, GPipe, 1F1B, interleaved 1F1B.

The network is ``models.pipeline_model`` (a half-width AlexNet) on 115×115 inputs, split over
ranks by ``model.pipeline_balance`` and run with real processes by ``parallel.pipeline``. ``pipeline_bench``
returns a ``PipelineBench`` (``PartitionTiming``, ``BubbleTiming`` and ``InterleavedBubble`` rows), ``schedule_bench``
``ScheduleTiming`` rows.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from d2lmp.layer_profile import layer_costs
from d2lmp.model.pipeline_balance import balance, balance_schedule, equal_split
from d2lmp.model.pipeline_schedule import (
    bubble_fraction,
    bubble_time_fraction,
    measured_bubble,
    measured_bubble_time,
    step_span,
)
from d2lmp.model.timeline import TimelineEvent
from d2lmp.models import pipeline_model
from d2lmp.parallel import data_parallel as DP
from d2lmp.parallel.launch import launch
from d2lmp.parallel.pipeline import counted_pipeline_step, pipeline_step, pipeline_steps
from d2lmp.pipeline_memory import LedgerSummary

__all__ = ["PROFILE_TIME", "PartitionTiming", "BubbleTiming", "PipelineBench", "ScheduleTiming", "InterleavedBubble",
           "interleaved_bench", "pipeline_bench", "schedule_bench"]


@dataclass(frozen=True)
class PartitionTiming:
    """One partition of the layers over ``world`` stages (GPipe, 4 micro-batches): its median step."""

    world: int
    partition: str  # "equal layers" or "balanced"
    sizes: list[int]  # layers per stage
    step_s: float


@dataclass(frozen=True)
class BubbleTiming:
    """The measured bubble fraction of one micro-batch count against the theory (p-1)/(m+p-1)."""

    world: int
    micro_batches: int
    sizes: list[int]  # layers per stage, balanced at the micro-batch size
    measured: float
    theory: float


@dataclass(frozen=True)
class PipelineBench:
    """``pipeline_bench``'s result: the partitions compared, and the bubbles measured."""

    partitions: list[PartitionTiming]
    bubbles: list[BubbleTiming]
    interleaved: list[InterleavedBubble]  # 2 ranks, every even m: 1F1B and interleaved 1F1B


@dataclass(frozen=True)
class ScheduleTiming:
    """One schedule at one micro-batch count: its median step, bubble, and what each stage held at most."""

    world: int
    kind: str  # "gpipe" or "1f1b"
    micro_batches: int
    sizes: list[int]  # layers per stage
    step_s: float
    bubble: float  # measured
    theory: float  # (p-1)/(m+p-1), the same for GPipe and 1F1B
    peak_in_flight: list[int]  # per stage: micro-batches whose activations were held at once
    peak_saved_bytes: list[int]  # per stage


def _bench_data(batch: int, spec: DP.MLPSpec | None) -> tuple[Callable[[], nn.Sequential], torch.Tensor, torch.Tensor]:
    """(build, x, y): the half-width AlexNet on 115×115 images, or an MLP from ``spec``."""
    if spec is not None:
        return spec.build, *DP.synthetic_data(spec, batch)
    g = torch.Generator().manual_seed(0)
    return pipeline_model, torch.randn(batch, 3, 115, 115, generator=g), torch.randint(0, 10, (batch,), generator=g)


PROFILE_TIME = 0.05  # seconds each layer is timed for, per profiling round


def _profiled_costs(build: Callable[[], nn.Sequential], x: torch.Tensor, micro: int,
                    cache: dict[int, list[float]], profile_time: float = PROFILE_TIME, rounds: int = 3) -> list[float]:
    """Layer costs profiled at micro-batch size ``micro`` (balance each partition at the size it runs), each layer
    timed for ``profile_time`` seconds (in at least 5 blocks) in each of ``rounds`` rounds."""
    if micro not in cache:
        sample = torch.randn(micro, *x.shape[1:], generator=torch.Generator().manual_seed(1))
        cache[micro] = layer_costs(build(), sample, min_time=profile_time, rounds=rounds)
    return cache[micro]


def pipeline_bench(worlds: Sequence[int] = (2, 4), micro_batches: Sequence[int] = (1, 2, 4, 8), batch: int = 128,
                   steps: int = 4, chunks: int = 2, profile_time: float = PROFILE_TIME) -> PipelineBench:
    """Balanced vs equal-layer partitions (GPipe, m=4), measured vs theoretical bubbles (balanced), and the
    ``interleaved_bench`` records (2 ranks, ``chunks`` chunks per rank, every m of ``micro_batches`` that is even).

    Layer costs are not proportional to the batch (a small batch uses the vector units less well,
    and each operator has a fixed overhead), so every partition is balanced on costs profiled at
    the micro-batch size it will run: batch / m. Each configuration runs ``steps`` steps; the
    first is a warm-up and the rest give medians. ``profile_time``: seconds each layer is timed for in each of
    the 3 profiling rounds (shorter is cheaper and noisier).
    """
    if steps < 2:
        raise ValueError(f"steps must be at least 2 (the first is a warm-up), got {steps}")
    if batch < max(4, *micro_batches):
        raise ValueError(f"batch {batch} is too small for {max(4, *micro_batches)} micro-batches")
    build, x, y = _bench_data(batch, None)
    profiled: dict[int, list[float]] = {}

    def costs_at(micro: int) -> list[float]:
        return _profiled_costs(build, x, micro, profiled, profile_time)

    def run(world: int, sizes: list[int], kind: str, m: int) -> tuple[float, float]:
        per_rank = launch(pipeline_steps, world, pipeline_model, sizes, x, y, steps, kind, m, timeout=600)
        # step 0 is the warm-up
        steps_events: list[list[TimelineEvent]] = [sum((r[s] for r in per_rank), []) for s in range(1, steps)]
        return (statistics.median(step_span(e) for e in steps_events),
                statistics.median(measured_bubble(e, world) for e in steps_events))

    partitions: list[PartitionTiming] = []
    bubbles: list[BubbleTiming] = []
    costs = costs_at(batch // 4)
    for world in worlds:
        for name, sizes in (("equal layers", equal_split(len(costs), world)), ("balanced", balance(costs, world))):
            span, _ = run(world, sizes, "gpipe", 4)
            partitions.append(PartitionTiming(world=world, partition=name, sizes=sizes, step_s=span))
    for m in micro_batches:
        sizes = balance(costs_at(batch // m), 2)
        _, bubble = run(2, sizes, "gpipe", m)
        bubbles.append(BubbleTiming(world=2, micro_batches=m, sizes=sizes, measured=bubble,
                                   theory=bubble_fraction(2, m)))
    even = tuple(m for m in micro_batches if m % 2 == 0)
    interleaved = interleaved_bench(2, even, chunks, batch, steps, costs=costs_at) if even else []
    return PipelineBench(partitions, bubbles, interleaved)


@dataclass(frozen=True)
class InterleavedBubble:
    """One schedule's bubble on real ranks: "1f1b" (chunks = 1) or "interleaved"; ``measured`` is idle over busy
    time (median of the steps after the warm-up), ``theory`` (p - 1)/(v·m), ``messages`` the point-to-point
    sends of one step over all ranks, counted by ``p2p_log.MessageLog``."""

    world: int
    kind: str
    micro_batches: int
    chunks: int
    sizes: tuple[int, ...]
    step_s: float
    measured: float
    theory: float
    messages: int


def _interleaved_worker(rank: int, world: int, build: Callable[[], nn.Sequential],
                        plans: Sequence[tuple[str, int, int, Sequence[int]]], x: torch.Tensor, y: torch.Tensor,
                        steps: int) -> list[tuple[list[list[TimelineEvent]], int]]:
    """Each (kind, m, chunks, sizes) of ``plans`` for ``steps`` steps, the plans alternating step by step;
    per plan, every step's events and the messages this rank sent in its last step."""
    events: list[list[list[TimelineEvent]]] = [[] for _ in plans]
    sent = [0] * len(plans)
    for _ in range(steps):
        for n, (kind, m, chunks, sizes) in enumerate(plans):
            counted = counted_pipeline_step(rank, world, build, sizes, x, y, kind, m, chunks)
            events[n].append(counted.result.events)
            sent[n] = counted.sent
    return list(zip(events, sent))


def interleaved_bench(world: int = 2, micro_batches: Sequence[int] = (2, 4, 8), chunks: int = 2, batch: int = 128,
                      steps: int = 4, spec: DP.MLPSpec | None = None,
                      costs: Callable[[int], list[float]] | None = None) -> list[InterleavedBubble]:
    """1F1B and interleaved 1F1B (``chunks`` per rank) timed alike on ``world`` ranks: their bubbles, measured
    from the timeline against (p - 1)/(v·m), and their point-to-point messages, counted.

    Every m must be a multiple of ``world``. Each partition (``world`` stages for 1F1B, ``world`` × ``chunks``
    for the interleaved one) is the one whose step under its own schedule, simulated on layer costs profiled
    at the micro-batch size it runs, is shortest (``balance_schedule``); ``costs(micro)`` may supply the costs.
    The model is the half-width AlexNet, or an MLP from ``spec``.
    """
    if steps < 2:
        raise ValueError(f"steps must be at least 2 (the first is a warm-up), got {steps}")
    if not micro_batches or any(m < 1 or m % world for m in micro_batches):
        raise ValueError(f"interleaved 1F1B needs micro-batch counts that are multiples of {world}, got "
                         f"{tuple(micro_batches)}")
    if chunks < 2:
        raise ValueError(f"chunks must be at least 2 to interleave, got {chunks}")
    if batch < max(micro_batches):
        raise ValueError(f"batch {batch} is too small for {max(micro_batches)} micro-batches")
    build, x, y = _bench_data(batch, spec)
    profiled: dict[int, list[float]] = {}
    costs = costs or (lambda micro: _profiled_costs(build, x, micro, profiled))
    plans = [(kind, m, v, balance_schedule(costs(batch // m), kind, world, m, v))
             for m in micro_batches for kind, v in (("1f1b", 1), ("interleaved", chunks))]
    per_rank = launch(_interleaved_worker, world, build, plans, x, y, steps, timeout=900)
    rows: list[InterleavedBubble] = []
    for n, (kind, m, v, sizes) in enumerate(plans):
        steps_events: list[list[TimelineEvent]] = [sum((r[n][0][s] for r in per_rank), []) for s in range(1, steps)]
        rows.append(InterleavedBubble(world, kind, m, v, tuple(sizes),
                                      step_s=statistics.median(step_span(e) for e in steps_events),
                                      measured=statistics.median(measured_bubble_time(e, world) for e in steps_events),
                                      theory=bubble_time_fraction(world, m, v),
                                      messages=sum(r[n][1] for r in per_rank)))
    return rows


@dataclass(frozen=True)
class _Runs:
    """One schedule's steps on a rank: every step's events, and what the stage held (the first step's)."""

    events: list[list[TimelineEvent]]
    memory: LedgerSummary


def _schedule_worker(rank: int, world: int, build: Callable[[], nn.Sequential], sizes_by_m: dict[int, list[int]],
                     x: torch.Tensor, y: torch.Tensor, steps: int,
                     kinds: Sequence[str]) -> dict[tuple[str, int], _Runs]:
    out: dict[tuple[str, int], _Runs] = {}
    for m, sizes in sizes_by_m.items():
        for _ in range(steps):  # the schedules alternate step by step: drifting load hits both alike
            for kind in kinds:
                result = pipeline_step(rank, world, build, sizes, x, y, kind, m)
                entry = out.setdefault((kind, m), _Runs(events=[], memory=result.memory))
                entry.events.append(result.events)
    return out


def schedule_bench(worlds: Sequence[int] = (2, 4), micro_batches: Sequence[int] = (2, 4, 8), batch: int = 64,
                   steps: int = 4, kinds: Sequence[str] = ("gpipe", "1f1b"),
                   spec: DP.MLPSpec | None = None, profile_s: float = 0.05,
                   profile_rounds: int = 3) -> list[ScheduleTiming]:
    """Each schedule timed alike, with what each stage held: one row per (stages, schedule, micro-batches).

    Partitions are balanced at the micro-batch size they run, from layer costs profiled for ``profile_s`` seconds a
    layer, the median of ``profile_rounds`` sweeps (``layer_profile.layer_costs``). Each ``ScheduleTiming``:
    ``step_s`` and ``bubble``
    (medians over the steps after the first, a warm-up; all ranks' events), ``theory`` ((p-1)/(m+p-1), the same
    for GPipe and 1F1B), and per stage ``peak_in_flight`` and ``peak_saved_bytes`` (from
    ``pipeline_memory.ActivationLedger``). The model is the half-width AlexNet, or an MLP from ``spec``.
    """
    if steps < 2:
        raise ValueError(f"steps must be at least 2 (the first is a warm-up), got {steps}")
    if batch < max(micro_batches):
        raise ValueError(f"batch {batch} is too small for {max(micro_batches)} micro-batches")
    build, x, y = _bench_data(batch, spec)
    profiled: dict[int, list[float]] = {}
    rows: list[ScheduleTiming] = []
    for world in worlds:
        sizes_by_m = {m: balance(_profiled_costs(build, x, batch // m, profiled, profile_s, profile_rounds),
                                 world) for m in micro_batches}
        per_rank = launch(_schedule_worker, world, build, sizes_by_m, x, y, steps, tuple(kinds), timeout=900)
        for m in micro_batches:
            for kind in kinds:
                steps_events: list[list[TimelineEvent]] = [sum((r[kind, m].events[s] for r in per_rank), [])
                                                           for s in range(1, steps)]
                memory = [r[kind, m].memory for r in per_rank]
                rows.append(ScheduleTiming(world=world, kind=kind, micro_batches=m, sizes=sizes_by_m[m],
                                           step_s=statistics.median(step_span(e) for e in steps_events),
                                           bubble=statistics.median(measured_bubble(e, world) for e in steps_events),
                                           theory=bubble_fraction(world, m),
                                           peak_in_flight=[mem.peak_in_flight for mem in memory],
                                           peak_saved_bytes=[mem.peak_saved_bytes for mem in memory]))
    return rows
