"""``predict(model, cluster, plan)``: one training step's time, throughput, FLOP rates and memory per GPU.

Model FLOPs and hardware FLOPs are kept apart (``transformer_accounting.training_flops``): the model FLOPs
of a step are three forward passes, whatever the plan recomputes; the hardware FLOPs add the recomputed
forward (``"full"``) or attention core (``"selective"``, and a fused attention kernel's backward). Published
tables report one or the other:
Narayanan et al. (2021) report hardware FLOPs with full recomputation, Korthikanti et al. (2022) both, as
MFU and HFU. ``mfu`` and ``hfu`` are fractions of the GPU's dense 16-bit peak. ``parts`` names every
second of the step (``steptime.STEP_PARTS``, and a mixture of experts' all-to-alls, ``expert_step.EXPERT_PART``,
adding up to ``step_s``) and every byte per GPU. A mixture of experts' FLOPs are its active ones and its
routers' (``moe.step_flops``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

from d2lmp.model.cluster.efficiency import FITTED, Efficiency
from d2lmp.model.cluster.expert_step import with_experts
from d2lmp.model.cluster.hardware import Cluster
from d2lmp.model.cluster.layout import Layout, Plan, check_plan
from d2lmp.model.cluster.memory import MemoryBreakdown, memory_per_gpu
from d2lmp.model.cluster.moe import step_flops
from d2lmp.model.cluster.steptime import step_seconds
from d2lmp.model.transformer_accounting import Transformer, attention_core_flops
from d2lmp.model.vocabulary import AttentionKernel, Recompute

__all__ = ["StepParts", "Prediction", "predict", "predict_checked", "hardware_flops"]


@dataclass(frozen=True)
class StepParts(Mapping[str, float]):
    """Named seconds of a step and named bytes per GPU; ``parts["tp"]`` reads either (seconds first)."""

    seconds: Mapping[str, float]
    bytes: Mapping[str, float]

    def __getitem__(self, name: str) -> float:
        if name in self.seconds:
            return self.seconds[name]
        return self.bytes[name]

    def __iter__(self) -> Iterator[str]:
        yield from self.seconds
        yield from self.bytes

    def __len__(self) -> int:
        return len(self.seconds) + len(self.bytes)


@dataclass(frozen=True)
class Prediction:
    """One step of ``plan``: times in seconds, rates per GPU in TFLOP/s, utilisations as fractions of peak."""

    plan: Plan
    layout: Layout
    step_s: float
    tokens_per_s: float
    model_flops: float
    hardware_flops: float
    model_tflops_per_gpu: float
    hardware_tflops_per_gpu: float
    mfu: float
    hfu: float
    memory: MemoryBreakdown
    parts: StepParts

    @property
    def memory_per_gpu_bytes(self) -> float:
        return self.memory.total

    @property
    def fits(self) -> bool:
        return self.memory.fits

    @property
    def exposed(self) -> str:
        """The largest part of the step other than compute: what this plan loses most to."""
        overheads = {k: v for k, v in self.parts.seconds.items() if k not in ("compute", "memory_bound")}
        return max(overheads, key=lambda k: overheads[k])


@lru_cache(maxsize=1024)
def _flops(model: Transformer, batch: int, recompute: Recompute) -> float:
    return float(step_flops(model, batch, recompute))


def hardware_flops(model: Transformer, batch: int, recompute: Recompute, attention: AttentionKernel) -> float:
    """FLOPs the GPUs compute in a step: the model FLOPs, the recomputed ones, and, for a fused attention kernel,
    the attention core its backward recomputes (already counted once by selective recomputation)."""
    flash_extra = attention == "flash" and recompute != "selective"
    extra = model.layers * attention_core_flops(model, batch) if flash_extra else 0
    return _flops(model, batch, recompute) + extra


def predict(model: Transformer, cluster: Cluster, plan: Plan, efficiency: Efficiency = FITTED) -> Prediction:
    """The predicted step of ``plan`` for ``model`` on ``cluster``; a ``ValueError`` says what is invalid."""
    layout = check_plan(model, cluster, plan)
    memory = memory_per_gpu(model, plan, layout, cluster.preset.memory_bytes)
    return predict_checked(model, cluster, plan, layout, memory, efficiency)


def predict_checked(model: Transformer, cluster: Cluster, plan: Plan, layout: Layout, memory: MemoryBreakdown,
                    efficiency: Efficiency = FITTED) -> Prediction:
    """``predict`` given what it computes first, ``check_plan``'s layout and ``memory_per_gpu``'s breakdown (a
    search that has both already need not compute them again)."""
    seconds = with_experts(step_seconds(model, cluster, plan, layout, efficiency), model, cluster, plan, layout,
                           efficiency)
    step = sum(seconds.values())
    preset = cluster.preset
    model_flops = _flops(model, plan.global_batch, "none")
    hardware = hardware_flops(model, plan.global_batch, plan.recompute, plan.attention)
    per_gpu = step * cluster.gpus
    return Prediction(
        plan=plan, layout=layout, step_s=step, tokens_per_s=plan.global_batch * model.seq / step,
        model_flops=model_flops, hardware_flops=hardware,
        model_tflops_per_gpu=model_flops / per_gpu / 1e12, hardware_tflops_per_gpu=hardware / per_gpu / 1e12,
        mfu=model_flops / per_gpu / preset.peak_flops, hfu=hardware / per_gpu / preset.peak_flops,
        memory=memory, parts=StepParts(seconds, memory.parts()))
