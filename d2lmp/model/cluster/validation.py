"""The cluster model against every published run of ``model.cluster.runs``: one judgement a record, a summary a source.

``judge`` converts a record (``convert``), predicts it with the fitted parameters (never refitting) and pairs the
prediction with the published figure: ``ratio`` is predicted / published tokens per second per GPU; a published
out-of-memory is judged by whether the model says it does not fit; where the source reports the memory a GPU used,
``memory_ratio`` is predicted / reported, on the GPU the figure is from (``comparable_memory``). A record the model
cannot judge keeps its reason and is counted as information; a record whose configuration is known but whose speed
depends on code its source does not name (``RunRecord.speed_unknown``) has its memory judged and its speed counted as
information (``speed_reason``).
``summarise`` gives each source's rows, ratio distribution (median, worst, share within ``GOAL``) and memory checks;
``goal_checks`` the issue's goals over the validation rows: at least ``SHARE_GOAL`` of them within ``GOAL``, every run
that ran fits, every published out-of-memory does not, memory within ``MEMORY_GOAL``. ``sweep_cells`` finds the cells of
published sweeps (one model on one cluster, many configurations measured) and scores the model's pick among them against
the fastest measured (``PICK_GOAL``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from d2lmp.model.cluster.convert import Converted, convert, published_tokens_per_s
from d2lmp.model.cluster.efficiency import FITTED, Efficiency
from d2lmp.model.cluster.memory import stage_memory
from d2lmp.model.cluster.predict import Prediction, predict
from d2lmp.model.cluster.run_record import RunRecord

__all__ = ["GOAL", "SHARE_GOAL", "MEMORY_GOAL", "Judgement", "comparable_memory", "memory_within_goal",
           "memory_ratios_by_micro_batch", "judge", "judge_all",
           "SourceSummary", "summarise", "GoalCheck", "goal_checks", "model_error", "PICK_GOAL", "SWEEP_MIN_ROWS",
           "SweepCell", "sweep_cells"]

GOAL = (0.8, 1.25)  # predicted / published tokens/s per GPU
SHARE_GOAL = 0.9  # of the validation rows within GOAL
MEMORY_GOAL = 0.2  # predicted memory within ±20 % of the reported one


@dataclass(frozen=True)
class Judgement:
    """One record against its prediction (``prediction`` None: the record is information, ``converted.reason``)."""

    converted: Converted
    prediction: Prediction | None = None
    published: float = 0.0  # tokens/s per GPU (0 for a published out-of-memory)

    @property
    def record(self) -> RunRecord:
        return self.converted.record

    @property
    def oom(self) -> bool:
        return self.record.metric == "oom"

    @property
    def speed_reason(self) -> str:
        """Why a predicted row's published speed is not compared ("" where it is): ``RunRecord.speed_unknown``."""
        return self.record.speed_unknown()

    @property
    def any_ratio(self) -> float | None:
        """Predicted / published tokens/s per GPU for every predicted row that ran, its speed judged or not."""
        if self.prediction is None or self.oom:
            return None
        return self.prediction.tokens_per_s / self.prediction.plan.gpus / self.published

    @property
    def ratio(self) -> float | None:
        """Predicted / published tokens/s per GPU (None for information, out-of-memory rows and rows whose speed is
        not judged, ``speed_reason``)."""
        return None if self.speed_reason else self.any_ratio

    @property
    def in_band(self) -> bool:
        return self.ratio is not None and GOAL[0] <= self.ratio <= GOAL[1]

    @property
    def memory_ratio(self) -> float | None:
        """Predicted / reported memory per GPU, where the source reports it (``comparable_memory``)."""
        if self.prediction is None or self.record.memory_gb is None:
            return None
        return comparable_memory(self.converted, self.prediction) / (self.record.memory_gb * 1e9)

    @property
    def memory_agrees(self) -> bool:
        """The memory verdict agrees with the run: a run that ran fits, a published out-of-memory does not."""
        return self.prediction is not None and self.prediction.fits != self.oom


def comparable_memory(converted: Converted, prediction: Prediction) -> float:
    """The model's bytes on the GPU the record's memory figure is from: the first pipeline stage's where the source
    prints rank 0's (``RunRecord.memory_stage``), else the fuller stage's. Whatever the figure counts
    (``memory_measure``), the model's allowance for the CUDA context, NCCL's and the framework's buffers stays in:
    how much of it lies inside PyTorch's allocator is not known."""
    record, memory = converted.record, prediction.memory
    if record.memory_stage == "first" and memory.stage != "first":
        assert converted.model is not None
        memory = stage_memory(converted.model, prediction.plan, prediction.layout, "first", memory.capacity)
    return memory.total


def memory_within_goal(ratios: Iterable[float]) -> int:
    """How many memory ratios (predicted / reported) lie within ±``MEMORY_GOAL``."""
    return sum(abs(m - 1) <= MEMORY_GOAL for m in ratios)


def memory_ratios_by_micro_batch(judgements: Iterable[Judgement]) -> dict[int, list[float]]:
    """The memory ratios of the judgements that have one, by micro-batch (ascending)."""
    groups: dict[int, list[float]] = {}
    for j in judgements:
        if (m := j.memory_ratio) is not None:
            groups.setdefault(j.record.micro_batch or 1, []).append(m)
    return dict(sorted(groups.items()))


def judge(record: RunRecord, efficiency: Efficiency = FITTED) -> Judgement:
    """The record converted and predicted, or kept as information with its reason."""
    converted = convert(record)
    if not converted.judged:
        return Judgement(converted)
    assert converted.model is not None and converted.cluster is not None and converted.plan is not None
    prediction = predict(converted.model, converted.cluster, converted.plan, efficiency)
    published = 0.0 if record.metric == "oom" else published_tokens_per_s(converted)
    return Judgement(converted, prediction, published)


def judge_all(records: Sequence[RunRecord], efficiency: Efficiency = FITTED) -> list[Judgement]:
    return [judge(r, efficiency) for r in records]


@dataclass(frozen=True)
class SourceSummary:
    """One source's rows: how many, judged or information, the ratios' median and worst (farthest from 1 either
    way), the share within ``GOAL``, and the memory checks; ``speed_info`` holds the rows predicted whose speed is not
    judged (their memory is)."""

    source: str
    use: str
    rows: int
    info: int
    ratios: tuple[float, ...]
    memory_disagrees: int
    memory_ratios: tuple[float, ...]
    speed_info: tuple[float, ...] = ()  # the model's ratios on the rows whose speed is not judged, for the record

    @property
    def median(self) -> float | None:
        return statistics.median(self.ratios) if self.ratios else None

    @property
    def worst(self) -> float | None:
        return max(self.ratios, key=lambda r: max(r, 1 / r)) if self.ratios else None

    @property
    def in_band(self) -> int:
        return sum(GOAL[0] <= r <= GOAL[1] for r in self.ratios)

    @property
    def share(self) -> float | None:
        return self.in_band / len(self.ratios) if self.ratios else None


def summarise(judgements: Sequence[Judgement]) -> list[SourceSummary]:
    """One summary per (source, use), in the order the sources first appear."""
    keys = list(dict.fromkeys((j.record.source, j.record.use) for j in judgements))
    out = []
    for source, use in keys:
        rows = [j for j in judgements if (j.record.source, j.record.use) == (source, use)]
        out.append(SourceSummary(
            source, use, len(rows), sum(j.prediction is None for j in rows),
            tuple(r for j in rows if (r := j.ratio) is not None),
            sum(j.prediction is not None and not j.memory_agrees for j in rows),
            tuple(m for j in rows if (m := j.memory_ratio) is not None),
            tuple(r for j in rows if j.speed_reason and (r := j.any_ratio) is not None)))
    return out


@dataclass(frozen=True)
class GoalCheck:
    """One goal over the validation rows: what it counts, its target, what was found, and whether it is met."""

    what: str
    target: str
    found: str
    met: bool


def goal_checks(judgements: Sequence[Judgement]) -> list[GoalCheck]:
    """The issue's goals over the validation rows that the model judges."""
    rows = [j for j in judgements if j.record.use == "validation" and j.prediction is not None]
    ratios = [r for j in rows if (r := j.ratio) is not None]
    share = sum(GOAL[0] <= r <= GOAL[1] for r in ratios) / len(ratios) if ratios else 0.0
    ran = [j for j in rows if not j.oom]
    ooms = [j for j in rows if j.oom]
    memory = [m for j in rows if (m := j.memory_ratio) is not None]
    within = memory_within_goal(memory)
    reserved = [m for j in rows if j.record.memory_measure == "reserved" and (m := j.memory_ratio) is not None]
    in_band = sum(GOAL[0] <= r <= GOAL[1] for r in ratios)
    return [
        GoalCheck(f"validation rows within {GOAL[0]}-{GOAL[1]}", f">= {SHARE_GOAL:.0%}",
                  f"{share:.1%} ({in_band} of {len(ratios)})", share >= SHARE_GOAL),
        GoalCheck("published runs that ran, the share that fits in the model's memory", ">= 100%",
                  f"{sum(j.memory_agrees for j in ran)} of {len(ran)}", all(j.memory_agrees for j in ran)),
        GoalCheck("published out-of-memory runs, the share that does not fit", ">= 100%",
                  f"{sum(j.memory_agrees for j in ooms)} of {len(ooms)}", all(j.memory_agrees for j in ooms)),
        GoalCheck("reported memory per GPU predicted", f"within ±{MEMORY_GOAL:.0%}",
                  f"{within} of {len(memory)}; {len(reserved)} of the figures are PyTorch's reserved memory, the "
                  f"allocator's cache in them and not in the model: {memory_within_goal(reserved)} of those within",
                  within == len(memory)),
    ]


@lru_cache(maxsize=1)
def model_error() -> float:
    """The model's own error: over the sources of validation rows, the median of each source's median
    ``|log(predicted / published)|`` (0.2 is about 20 %), so that each independent source counts once, however many
    rows it prints."""
    from d2lmp.model.cluster.runs import records

    judged = judge_all(records("validation"))
    per_source = []
    for source in dict.fromkeys(j.record.source for j in judged):
        logs = [abs(math.log(r)) for j in judged if j.record.source == source and (r := j.ratio) is not None]
        if logs:
            per_source.append(statistics.median(logs))
    return statistics.median(per_source)


PICK_GOAL = (0.9, 0.8)  # the pick runs within 10 % of the fastest measured configuration in 80 % of a sweep's cells
SWEEP_MIN_ROWS = 5  # configurations of one model on one cluster that make a sweep cell


@dataclass(frozen=True)
class SweepCell:
    """The configurations a source measured for one model on one number of GPUs (a cell of a sweep): the model's
    pick is the fastest predicted among those it says fit; ``score`` is the pick's measured throughput over the
    fastest measured one."""

    source: str
    label: str
    rows: tuple[Judgement, ...]

    @property
    def pick(self) -> Judgement | None:
        fitting = [j for j in self.rows if j.prediction is not None and j.prediction.fits]
        return max(fitting, key=lambda j: j.prediction.tokens_per_s if j.prediction else 0.0, default=None)

    @property
    def fastest(self) -> Judgement:
        return max(self.rows, key=lambda j: j.published)

    @property
    def score(self) -> float:
        pick = self.pick
        return 0.0 if pick is None else pick.published / self.fastest.published

    def ties(self, within: float) -> tuple[Judgement, ...]:
        """The measured configurations the model says fit and predicts within ``within`` (a log ratio, the model's
        own error: ``model_error``) of its pick: those it cannot rank, as the planner's ``PlanReport.ties``."""
        pick = self.pick
        if pick is None or pick.prediction is None:
            return ()
        limit = pick.prediction.tokens_per_s * math.exp(-within)
        return tuple(j for j in self.rows if j.prediction is not None and j.prediction.fits
                     and j.prediction.tokens_per_s >= limit)

    def tie_holds_fastest(self, within: float) -> bool:
        """Whether the fastest measured configuration is among the model's ties: measuring the tie would find it."""
        return self.fastest in self.ties(within)


def sweep_cells(judgements: Sequence[Judgement], min_rows: int = SWEEP_MIN_ROWS) -> list[SweepCell]:
    """Every cell of ``min_rows`` or more measured configurations whose speed is judged, of one model (shape and
    sequence) on one number of GPUs of one kind, from one source; validation rows only (a parameter was fitted on the
    calibration rows)."""
    cells: dict[tuple[object, ...], list[Judgement]] = {}
    for j in judgements:
        r = j.record
        if j.ratio is None or r.use != "validation":  # information, out of memory, a speed not judged, or fitted on
            continue
        key = (r.source, r.layers, r.hidden, r.heads, r.seq, r.gpu, r.gpus)
        cells.setdefault(key, []).append(j)
    return [SweepCell(str(key[0]), f"{key[1]} layers x {key[2]} on {key[6]} {key[5]}", tuple(rows))
            for key, rows in cells.items() if len(rows) >= min_rows]
