"""The bridge to this machine: the cluster model's step time against the small GPT's steps on CPU ranks.

It compares the cluster model's step time, given a CPU preset calibrated here, against steps of the small GPT
measured on CPU ranks: data, tensor (``gpt_tp``), pipeline (1F1B: ``pipeline_step`` on ``gpt_sequential`` stages)
and data × tensor parallelism.

One launch of 2 ranks runs, round after round, a calibration (``cpu_calibration``) and a few steps of each 2-rank
strategy, in an order that turns by one every round; a launch of 4 ranks does the same for the 2 × 2 data × tensor
grid, its calibration's all-reduces and sends inside the tensor pairs, both at once. Each measured number's median
over the rounds makes the launch's CPU preset, from which ``model.cluster.cpu.predict_cpu`` predicts each strategy's
step, against the median of its measured steps; each round's own prediction against that round's step shows the
spread (on a shared machine the load moves within a round, so a round's calibration and steps need not see the
same). Every step is AdamW on float32, its gradients in one flat buffer (one all-reduce a step, after the backward:
the ranks' one thread computes, then talks), timed in phases on the one system-wide clock: from the first rank's
start to the last rank's end of its forward and backward, of the gradient all-reduce, and of the optimizer step.
``scale_bridge_bench`` returns a ``BridgeResult`` of ``StrategyRun`` records, one per strategy. """

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace

import torch
import torch.distributed as dist
from torch import nn

from d2lmp.bench.cpu_calibration import (
    ALLREDUCE_SIZES,
    P2P_SIZES,
    Calibrator,
    RankCalibration,
    calibrate_rank,
    cpu_calibration,
    flat_gradients,
)
from d2lmp.gpt import GPT, GPTConfig, gpt_sequential, lm_loss, preset
from d2lmp.hardware import usable_cores
from d2lmp.model.cluster.cpu import CPUCalibration, memory_passes_from, phases, predict_cpu
from d2lmp.model.cluster.layout import Plan
from d2lmp.model.pipeline_balance import equal_split
from d2lmp.model.vocabulary import BRIDGE_STRATEGIES, Axis, grid_name
from d2lmp.parallel.gpt_tp import TensorParallelGPT
from d2lmp.parallel.grid3d import grid3d_groups
from d2lmp.parallel.launch import launch
from d2lmp.parallel.pipeline import pipeline_step

__all__ = ["STRATEGIES", "PHASE_NAMES", "ALONE", "StepTimes", "StrategyRun", "PartRun", "BridgeResult", "bridge_plans",
           "scale_bridge_bench"]

STRATEGIES = BRIDGE_STRATEGIES  # data, tensor, pipeline, and the data x tensor grid (``vocabulary.Axis``)
PHASE_NAMES = ("forward+backward", "gradient all-reduce", "optimizer")
# Parts measured alone: (the strategy they belong to, the model's parts they are)
ALONE = {"pipeline stages alone": (Axis.PIPELINE.word, ("compute", "memory_bound")),
         "tensor ranks, collectives skipped": (Axis.TENSOR.word, ("compute", "memory_bound"))}


@dataclass(frozen=True)
class StepTimes:
    """One rank's step on the system-wide clock: its start, and the ends of its three phases."""

    start: float
    forward_backward_end: float
    allreduce_end: float
    end: float


@dataclass(frozen=True)
class StrategyRun:
    """One strategy: its plan; the step predicted from the launch's median calibration, the median measured step,
    their ``ratio``, and each round's own predicted / measured; the prediction and the measurement (median over
    steps) split into ``PHASE_NAMES``, and the prediction into the model's own parts."""

    strategy: str
    ranks: int
    plan: Plan
    predicted_s: float
    measured_s: float
    ratio: float
    round_ratios: tuple[float, ...]
    predicted_phases: dict[str, float]
    measured_phases: dict[str, float]
    predicted_parts: dict[str, float]


@dataclass(frozen=True)
class PartRun:
    """One part of a strategy's step measured alone (``ALONE``), against the model's parts that make it up."""

    name: str
    strategy: str
    model_parts: tuple[str, ...]
    predicted_s: float
    measured_s: float

    @property
    def ratio(self) -> float:
        return self.predicted_s / self.measured_s


@dataclass(frozen=True)
class BridgeResult:
    """Every strategy's run, and each launch's calibration (ranks → the median over rounds that predicts the runs, and
    each round's)."""

    config: GPTConfig
    batch: int
    micro_batches: int
    runs: tuple[StrategyRun, ...]
    parts: tuple[PartRun, ...]
    calibrations: dict[int, CPUCalibration]
    round_calibrations: dict[int, tuple[CPUCalibration, ...]]
    load: tuple[float, float]  # the machine's 1-minute load average before and after (other processes' share)
    cores: int


def bridge_plans(batch: int, micro_batches: int) -> dict[str, Plan]:
    """What each strategy runs, as the model's ``Plan``: 2 ranks (2 × 2 for data × tensor), ``batch`` sequences."""
    return {Axis.DATA.word: Plan(dp=2, micro_batch=batch // 2, global_batch=batch, dp_overlap=False),
            Axis.TENSOR.word: Plan(tp=2, micro_batch=batch, global_batch=batch),
            Axis.PIPELINE.word: Plan(pp=2, micro_batch=batch // micro_batches, global_batch=batch),
            grid_name(Axis.DATA, Axis.TENSOR): Plan(tp=2, dp=2, micro_batch=batch // 2, global_batch=batch,
                                                    dp_overlap=False)}


class _Trainer:
    """Data, tensor or data × tensor parallelism: ``loss`` (of this rank's data) backward, the flat gradients
    all-reduced over the ``replicas`` of ``data_group`` (none for 1), AdamW."""

    def __init__(self, model: nn.Module, loss: Callable[[], torch.Tensor], data_group: dist.ProcessGroup | None,
                 replicas: int) -> None:
        self.model, self.loss, self.group, self.replicas = model, loss, data_group, replicas
        params = [p for p in model.parameters() if p.requires_grad]
        self.flat = flat_gradients(params)
        self.optimizer = torch.optim.AdamW(params, lr=1e-5)

    def step(self) -> StepTimes:
        dist.barrier()
        start = time.perf_counter()
        self.flat.zero_()
        torch.autograd.backward(self.loss() / self.replicas)  # the replicas' gradients sum to the global mean's
        forward_backward = time.perf_counter()
        if self.replicas > 1:
            dist.all_reduce(self.flat, group=self.group)
        reduced = time.perf_counter()
        self.optimizer.step()
        return StepTimes(start, forward_backward, reduced, time.perf_counter())


class _CollectivesSkipped:
    """A trainer's forward and backward with every ``all_reduce`` skipped (the sums are wrong, the time is the
    compute's alone), every rank at once; no optimizer step."""

    def __init__(self, trainer: _Trainer) -> None:
        self.trainer = trainer

    def step(self) -> StepTimes:
        t, real = self.trainer, dist.all_reduce
        dist.barrier()
        start = time.perf_counter()
        dist.all_reduce = _skip
        try:
            t.flat.zero_()
            torch.autograd.backward(t.loss() / t.replicas)
        finally:
            dist.all_reduce = real
        end = time.perf_counter()
        return StepTimes(start, end, end, end)


def _skip(*args: object, **kwargs: object) -> None:
    return None


class _Pipeline:
    """1F1B over the ranks on ``gpt_sequential``'s stages (equal split), then AdamW on this rank's stage."""

    def __init__(self, config: GPTConfig, x: torch.Tensor, y: torch.Tensor, rank: int, world: int,
                 micro_batches: int) -> None:
        self.model = gpt_sequential(config)
        self.sizes = equal_split(len(self.model), world)
        start = sum(self.sizes[:rank])
        self.stage = self.model[start:start + self.sizes[rank]]
        self.optimizer = torch.optim.AdamW(self.stage.parameters(), lr=1e-5)
        self.x, self.y, self.rank, self.world, self.m = x, y, rank, world, micro_batches
        self.hidden = config.hidden

    def step(self) -> StepTimes:
        def loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:  # summed over sequences
            return lm_loss(logits, targets, reduction="sum") / logits.size(1)

        self.stage.zero_grad(set_to_none=True)
        result = pipeline_step(self.rank, self.world, lambda: self.model, self.sizes, self.x, self.y, "1f1b",
                               self.m, loss)
        start, last = min(e.start for e in result.events), max(e.end for e in result.events)
        before = time.perf_counter()
        self.optimizer.step()
        return StepTimes(start, last, last, last + time.perf_counter() - before)

    def alone(self) -> StepTimes:
        """This rank's stage on its m micro-batches, forward then backward each, without a message (inputs and
        output gradients of the right shapes made up), every rank at once: the work the bubble and sends add to."""
        b, s, h = len(self.x) // self.m, self.x.size(1), self.hidden
        last = self.rank == self.world - 1
        inputs = [xi.clone() for xi in self.x.tensor_split(self.m)] if self.rank == 0 else [
            torch.randn(b, s, h, requires_grad=True) for _ in range(self.m)]
        grads = [torch.randn(b, s, h) for _ in range(self.m)]
        self.stage.zero_grad(set_to_none=True)
        dist.barrier()
        start = time.perf_counter()
        for i, (inp, yi) in enumerate(zip(inputs, self.y.tensor_split(self.m))):
            out = self.stage(inp)
            if last:
                torch.autograd.backward(lm_loss(out, yi, reduction="sum") / s / len(self.x))
            else:
                torch.autograd.backward(out, grads[i])
        end = time.perf_counter()
        return StepTimes(start, end, end, end)


class _StagesAlone:
    def __init__(self, pipeline: _Pipeline) -> None:
        self.pipeline = pipeline

    def step(self) -> StepTimes:
        return self.pipeline.alone()


@dataclass(frozen=True)
class _RankRounds:
    calibrations: tuple[RankCalibration, ...]
    steps: dict[str, tuple[tuple[StepTimes, ...], ...]]  # strategy -> rounds -> steps


_Runner = _Trainer | _Pipeline | _StagesAlone | _CollectivesSkipped  # what a round runs: one .step() each


def _rounds(rank: int, trainers: dict[str, _Runner], calibrator: Calibrator,
            group: dist.ProcessGroup | None, rounds: int, steps: int, min_time: float,
            sizes: tuple[Sequence[int], Sequence[int]]) -> _RankRounds:
    for trainer in trainers.values():
        trainer.step()  # warm-up: allocations, the optimizer's state
    items = ["calibration", *trainers]
    calibrations: list[RankCalibration] = []
    times: dict[str, list[tuple[StepTimes, ...]]] = {name: [] for name in trainers}
    for k in range(rounds):
        for item in items[k % len(items):] + items[:k % len(items)]:  # every rank turns the same way
            if item == "calibration":
                calibrations.append(calibrate_rank(rank, calibrator, group, min_time, *sizes))
            else:
                times[item].append(tuple(trainers[item].step() for _ in range(steps)))
    return _RankRounds(tuple(calibrations), {name: tuple(t) for name, t in times.items()})


def _two_ranks(rank: int, world: int, config: GPTConfig, x: torch.Tensor, y: torch.Tensor, micro_batches: int,
               rounds: int, steps: int, min_time: float, sizes: tuple[Sequence[int], Sequence[int]]) -> _RankRounds:
    xs, ys = x.tensor_split(world)[rank], y.tensor_split(world)[rank]
    tp = TensorParallelGPT(GPT(config))
    dp = GPT(config)
    pipeline, tensor = _Pipeline(config, x, y, rank, world, micro_batches), _Trainer(tp, lambda: tp.loss(x, y), None, 1)
    trainers: dict[str, _Runner] = {
        "data": _Trainer(dp, lambda: lm_loss(dp(xs), ys), None, world), "tensor": tensor,
        "tensor ranks, collectives skipped": _CollectivesSkipped(tensor),
        "pipeline": pipeline, "pipeline stages alone": _StagesAlone(pipeline)}
    return _rounds(rank, trainers, Calibrator(config, xs, ys), None, rounds, steps, min_time, sizes)


def _four_ranks(rank: int, world: int, config: GPTConfig, x: torch.Tensor, y: torch.Tensor, rounds: int, steps: int,
                min_time: float, sizes: tuple[Sequence[int], Sequence[int]]) -> _RankRounds:
    grid = grid3d_groups(2, 1, 2)
    xs, ys = x.tensor_split(2)[grid.data_rank], y.tensor_split(2)[grid.data_rank]
    model = TensorParallelGPT(GPT(config), grid.tensor_group)
    trainers: dict[str, _Runner] = {
        "data x tensor": _Trainer(model, lambda: model.loss(xs, ys), grid.data_group, 2)}
    return _rounds(rank, trainers, Calibrator(config, xs, ys), grid.tensor_group, rounds, steps, min_time, sizes)


def _phases(steps: Sequence[StepTimes]) -> dict[str, float]:
    """One step's phases over its ranks: from the first start to the last end of each phase."""
    start = min(s.start for s in steps)
    ends = [max(getattr(s, f.name) for s in steps) for f in fields(StepTimes)[1:]]
    return dict(zip(PHASE_NAMES, (ends[0] - start, ends[1] - ends[0], ends[2] - ends[1])))


def _median_dict(dicts: Sequence[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(d[k] for d in dicts) for k in dicts[0]}


def _median_calibration(config: GPTConfig, batch: int, cals: Sequence[CPUCalibration],
                        forward_backward_s: Sequence[float]) -> CPUCalibration:
    """Each measured rate's median over the rounds, and the passes inverted from the median forward and backward."""
    values = {f.name: statistics.median(getattr(c, f.name) for c in cals) for f in fields(CPUCalibration)}
    cal = CPUCalibration(**{**values, "ranks": cals[0].ranks, "memory_passes": 0.0})
    passes = memory_passes_from(config.shape(), cal, Plan(micro_batch=batch, global_batch=batch),
                                statistics.median(forward_backward_s))
    return replace(cal, memory_passes=passes)


def _runs(config: GPTConfig, batch: int, plans: dict[str, Plan], per_rank: Sequence[_RankRounds]
          ) -> tuple[list[StrategyRun], list[PartRun], tuple[CPUCalibration, ...], CPUCalibration]:
    """Each strategy of one launch: predicted from the median calibration against the median measured step, and
    each round's own prediction against that round's step."""
    half = batch // 2  # the calibration's forward and backward: a data-parallel rank's sequences
    rounds = range(len(per_rank[0].calibrations))
    cals = tuple(cpu_calibration([r.calibrations[k] for r in per_rank], config, half) for k in rounds)
    median = _median_calibration(config, half, cals,
                                 [max(r.calibrations[k].forward_backward_s for r in per_rank) for k in rounds])
    out, parts = [], []
    for name, (strategy, model_parts) in ALONE.items():
        if name in per_rank[0].steps:
            seconds = predict_cpu(config.shape(), median, plans[strategy]).parts.seconds
            alone = statistics.median(sum(_phases([r.steps[name][k][i] for r in per_rank]).values())
                                      for k in rounds for i in range(len(per_rank[0].steps[name][k])))
            parts.append(PartRun(name, strategy, model_parts, sum(seconds[p] for p in model_parts), alone))
    for name in (n for n in per_rank[0].steps if n not in ALONE):
        plan = plans[name]
        prediction = predict_cpu(config.shape(), median, plan)
        measured = [[_phases([r.steps[name][k][i] for r in per_rank]) for i in range(len(per_rank[0].steps[name][k]))]
                    for k in rounds]
        round_steps = [statistics.median(sum(p.values()) for p in steps) for steps in measured]
        ratios = tuple(predict_cpu(config.shape(), cal, plan).step_s / m for cal, m in zip(cals, round_steps))
        step = statistics.median(round_steps)
        out.append(StrategyRun(name, plan.gpus, plan, prediction.step_s, step, prediction.step_s / step, ratios,
                               phases(prediction), _median_dict([p for steps in measured for p in steps]),
                               dict(prediction.parts.seconds)))
    return out, parts, cals, median


def _check(config: GPTConfig, batch: int, micro_batches: int, rounds: int, steps: int, min_time: float) -> None:
    for name, value, least in (("batch", batch, 2), ("micro_batches", micro_batches, 2), ("rounds", rounds, 1),
                               ("steps", steps, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
    if batch % 2 or batch % micro_batches:
        raise ValueError(f"the batch ({batch}) must split over 2 replicas and into {micro_batches} micro-batches")
    if not min_time > 0:
        raise ValueError(f"min_time must be positive, got {min_time!r}")
    for name, n in (("hidden", config.hidden), ("heads", config.heads), ("vocab", config.vocab)):
        if n % 2:
            raise ValueError(f"{name} = {n} does not split over 2 tensor-parallel ranks")
    if config.tied:
        raise ValueError("the pipeline's stages hold the embedding and the head apart: build the GPT with tied=False")


def scale_bridge_bench(config: GPTConfig | None = None, batch: int = 4, micro_batches: int = 4, rounds: int = 7,
                       steps: int = 1, min_time: float = 0.1, hybrid: bool = True,
                       allreduce_sizes: Sequence[int] = ALLREDUCE_SIZES,
                       p2p_sizes: Sequence[int] = P2P_SIZES) -> BridgeResult:
    """The small GPT (untied) on CPU ranks, each strategy's step predicted from this machine's calibration and
    measured, ``rounds`` rounds of ``steps`` steps (after one warm-up); ``hybrid`` adds the 4-rank grid."""
    config = config or preset("small", tied=False)
    _check(config, batch, micro_batches, rounds, steps, min_time)
    g = torch.Generator().manual_seed(0)
    x, y = (torch.randint(0, config.vocab, (batch, config.seq), generator=g) for _ in range(2))
    torch.optim.AdamW(nn.Linear(1, 1).parameters()).step()  # its first step imports lazily: here, not in each rank
    sizes = (tuple(allreduce_sizes), tuple(p2p_sizes))
    plans = bridge_plans(batch, micro_batches)
    before = _load()
    runs, parts, cals, median = _runs(config, batch, plans, launch(_two_ranks, 2, config, x, y, micro_batches, rounds,
                                                                   steps, min_time, sizes, timeout=1800))
    calibrations, medians = {2: cals}, {2: median}
    if hybrid:
        more, _, calibrations[4], medians[4] = _runs(config, batch, plans, launch(
            _four_ranks, 4, config, x, y, rounds, steps, min_time, sizes, timeout=1800))
        runs += more
    return BridgeResult(config, batch, micro_batches, tuple(runs), tuple(parts), medians, calibrations,
                        (before, _load()), usable_cores())


def _load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
