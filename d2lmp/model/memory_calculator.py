"""One memory calculator: a GPU's bytes by part for a model, its splits, ZeRO stage, recomputation and schedule.

``memory_by_part`` composes the formulas of ``cluster.memory`` (the planner's): the training state of the
fuller pipeline stage under ZeRO (Rajbhandari et al. 2020, §3.1), its activations under tensor and sequence
parallelism and recomputation (Korthikanti et al. 2022, §4), and the stated buffers. The schedule sets how
many micro-batches a stage holds at its peak (``in_flight``): GPipe all ``m``, 1F1B at most ``p − r`` on stage
``r`` (Narayanan et al. 2021). Every micro-batch a stage holds keeps the same bytes, so GPipe's activations are
1F1B's times ``m / min(p − r, m)``. In the spirit of the Ultra-Scale Playbook's memory calculator.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, get_args

from d2lmp.model.cluster.layout import Layout, Plan
from d2lmp.model.cluster.memory import MemoryBreakdown, stage_memory
from d2lmp.model.transformer_accounting import RECOMPUTE, Transformer
from d2lmp.model.vocabulary import PipelineStage, Recompute, ZeroStage

__all__ = ["MemorySchedule", "MEMORY_SCHEDULES", "COMPARISONS", "MemorySetting", "in_flight", "memory_by_part",
           "compare"]

MemorySchedule = Literal["1f1b", "gpipe"]
MEMORY_SCHEDULES: tuple[MemorySchedule, ...] = get_args(MemorySchedule)
Comparison = Literal["recompute", "zero", "schedule"]
COMPARISONS: tuple[Comparison, ...] = get_args(Comparison)


@dataclass(frozen=True)
class MemorySetting:
    """How one step is split and run: tensor, pipeline and data sizes, the ZeRO stage over the data group,
    sequence parallelism, recomputation, the pipeline schedule, the micro-batch (sequences) and the
    micro-batches per step (None: ``pp``, just enough to fill the pipeline)."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    zero: ZeroStage = 0
    sequence_parallel: bool = False
    recompute: Recompute = "none"
    schedule: MemorySchedule = "1f1b"
    micro_batch: int = 1
    microbatches: int | None = None

    @property
    def steps(self) -> int:
        """Micro-batches per optimizer step."""
        return self.pp if self.microbatches is None else self.microbatches


def in_flight(schedule: MemorySchedule, pp: int, microbatches: int, stage: int) -> int:
    """Micro-batches pipeline stage ``stage`` holds at its peak: all ``m`` under GPipe (every forward runs before
    any backward), ``min(p − stage, m)`` under 1F1B (it starts backward as soon as the last stage can)."""
    if schedule not in MEMORY_SCHEDULES:
        raise ValueError(f"schedule must be one of {MEMORY_SCHEDULES}, got {schedule!r}")
    if not 0 <= stage < pp or microbatches < 1:
        raise ValueError(f"need 0 <= stage < pp and microbatches >= 1, got stage={stage}, pp={pp}, m={microbatches}")
    return microbatches if schedule == "gpipe" else min(pp - stage, microbatches)


def _plan_layout(model: Transformer, s: MemorySetting) -> tuple[Plan, Layout]:
    for name in ("tp", "pp", "dp", "micro_batch", "steps"):
        value = getattr(s, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if s.zero not in (0, 1, 2, 3) or s.recompute not in RECOMPUTE:
        raise ValueError(f"zero must be 0-3 and recompute one of {RECOMPUTE}, got {s.zero!r}, {s.recompute!r}")
    if model.heads % s.tp or model.kv_head_count % s.tp:
        raise ValueError(f"tp ({s.tp}) must divide the heads ({model.heads}) and key/value heads "
                         f"({model.kv_head_count})")
    if model.layers < s.pp:
        raise ValueError(f"layers ({model.layers}) are too few for {s.pp} pipeline stages")
    per, extra = divmod(model.layers, s.pp)
    fullest = per + (1 if extra else 0)  # the first stage takes a remainder's block
    plan = Plan(tp=s.tp, pp=s.pp, dp=s.dp, micro_batch=s.micro_batch, global_batch=s.dp * s.micro_batch * s.steps,
                zero=s.zero, recompute=s.recompute, sequence_parallel=s.sequence_parallel)
    # Memory reads only the blocks per stage and the micro-batches; the links matter to time alone.
    layout = Layout(microbatches=s.steps, layers_per_stage=fullest, layers_per_chunk=fullest, tp_link="nvlink",
                    cp_link="nvlink", dp_link="nvlink", pp_link="nvlink", layers_first=fullest,
                    layers_last=fullest if s.pp > 1 else model.layers)
    return plan, layout


def memory_by_part(model: Transformer, setting: MemorySetting, capacity: float = 0.0) -> MemoryBreakdown:
    """Bytes per GPU by part (parameters, gradients, optimizer state, saved activations, buffers) on whichever of
    the first and last pipeline stages holds more; ``capacity`` is the GPU's memory (for ``fits``)."""
    plan, layout = _plan_layout(model, setting)
    stages: tuple[PipelineStage, ...] = ("first", "last") if plan.pp > 1 else ("first",)

    def on(stage: PipelineStage) -> MemoryBreakdown:
        rank = 0 if stage == "first" else plan.pp - 1
        held = in_flight(setting.schedule, plan.pp, layout.microbatches, rank)
        scale = held / in_flight("1f1b", plan.pp, layout.microbatches, rank)  # the planner counts 1F1B's
        return stage_memory(model, plan, layout, stage, capacity, scale)

    return max((on(stage) for stage in stages), key=lambda m: m.total)


def compare(model: Transformer, setting: MemorySetting, axis: Comparison,
            capacity: float = 0.0) -> dict[str, MemoryBreakdown]:
    """``memory_by_part`` for every value of one choice (``axis``: "recompute", "zero" or "schedule"), the rest of
    ``setting`` kept, by label ("none", "ZeRO-1", "1F1B", ...)."""
    if axis == "recompute":
        return {r: memory_by_part(model, replace(setting, recompute=r), capacity) for r in RECOMPUTE}
    if axis == "zero":
        stages: tuple[ZeroStage, ...] = (0, 1, 2, 3)
        return {f"ZeRO-{z}": memory_by_part(model, replace(setting, zero=z), capacity) for z in stages}
    if axis == "schedule":
        return {{"gpipe": "GPipe", "1f1b": "1F1B"}[k]: memory_by_part(model, replace(setting, schedule=k), capacity)
                for k in ("gpipe", "1f1b")}
    raise ValueError(f"axis must be one of {COMPARISONS}, got {axis!r}")
