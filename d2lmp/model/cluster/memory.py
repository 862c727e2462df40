"""Memory per GPU for one plan: the training state under each ZeRO stage, the activations, and buffers.

The state follows Rajbhandari et al. (2020, §3.1): mixed-precision Adam keeps 2 bytes of 16-bit weights, 2 of
gradients and 12 of optimizer state (32-bit master weights and two moments) per parameter; ZeRO stage 1 shards the
optimizer state over the data-parallel group, stage 2 the gradients too, stage 3 the weights too. Tensor parallelism
splits the matrices (LayerNorms and the row-parallel biases stay whole); a pipeline stage holds its layers, the
first stage also the embeddings, the last the output layer. Activations are those of ``transformer_accounting``
(Korthikanti et al. 2022): bytes per layer under tensor and sequence parallelism and recomputation, times the layers'
worth the schedule keeps in flight (1F1B or interleaved), plus the embedding's dropout mask and the output layer's
tensors, the logits at ``Plan.logit_bytes`` (a model without dropout, ``Transformer.dropout`` False, keeps no masks);
context parallelism divides them by ``cp``; FP8 matmuls keep their linear layers' inputs in one byte (``fp8``). Buffers,
a stated allowance: the rematerialised layer of a recomputed backward, ZeRO-3's gathered weights (the matrix in use and
the one prefetched), ``ALLOWANCE_BYTES`` for the CUDA context and communication buffers, and ``FRAGMENTATION`` of the
rest for the allocator.
Gradients accumulated in FP32 (``Plan.fp32_grad_reduce``) take four bytes, not two: nanotron's
``FP32GradientAccumulator`` (``optim/gradient_accumulator.py``) keeps an FP32 buffer for every parameter's gradient,
under ZeRO-1 too, and frees the 16-bit gradients after each backward (its FP32 master weights are sharded like the
optimizer state, which counts them). Under ZeRO-0 with ``dp > 1`` nanotron also wraps the model in DDP (``trainer.py``),
whose 16-bit gradient buckets persist: six bytes a parameter in all. DeepSpeed's BF16_Optimizer, as BLOOM ran it
(``Plan.fp32_grad_buffer``), keeps an FP32 gradient buffer for every parameter beside the 16-bit gradients, "4bytes x
params and it's not sharded across gpus" (BigScience, ``train/tr11-176B-ml/chronicles-prequel.md``, section
"Rebalancing layers"). A mixture of experts (``moe.MoETransformer``) holds
on each GPU its MoE blocks' attention, router and shared experts and ``E/ep`` routed experts (each split ``etp`` ways),
and its dense blocks (the first ones, on the first stage); ZeRO shards the routed experts' state over the
``Plan.expert_dp`` ranks that hold the same experts, the rest over ``dp``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from d2lmp.model.cluster.fp8 import fp8_saved_bytes
from d2lmp.model.cluster.layout import Layout, Plan
from d2lmp.model.cluster.moe import MoETransformer, dense_view, expert_parameters, expert_parameters_per_gpu
from d2lmp.model.terms import state_per_device
from d2lmp.model.training_state import BUFFERS
from d2lmp.model.transformer_accounting import Transformer, activation_bytes_per_layer, layer_parameters
from d2lmp.model.transformer_stage_memory import (
    embedding_activation_bytes,
    output_activation_bytes,
    pipeline_layers_in_flight,
)
from d2lmp.model.vocabulary import AttentionKernel, PipelineStage, Recompute

__all__ = ["OPTIMIZER", "ALLOWANCE_BYTES", "FRAGMENTATION", "MemoryBreakdown", "layer_parameters_per_gpu",
           "layer_activation_bytes", "kept", "whole_layer",
           "stage_parameters", "stage_expert_parameters", "state_bytes", "stage_activation_bytes", "buffer_bytes",
           "stage_memory", "memory_per_gpu"]

OPTIMIZER = "adam_mixed"  # the row of training_state.OPTIMIZERS the runs train with (Rajbhandari et al. 2020, §3.1)
ALLOWANCE_BYTES = 2e9  # CUDA context, NCCL and framework buffers: an assumption, not a sourced figure
FRAGMENTATION = 0.05  # of everything else, lost to the allocator: an assumption


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per GPU on the fuller pipeline stage (``stage``: "first" or "last"), by part."""

    stage: PipelineStage
    parameters: float
    gradients: float
    optimizer_state: float
    saved_activations: float
    buffers: float
    capacity: float

    @property
    def total(self) -> float:
        return self.parameters + self.gradients + self.optimizer_state + self.saved_activations + self.buffers

    @property
    def fits(self) -> bool:
        return self.total <= self.capacity

    def parts(self) -> dict[str, float]:
        """Bytes by part, named as ``training_state.MEMORY_PARTS`` names them, then ``buffers``."""
        return {"parameters": self.parameters, "gradients": self.gradients, "optimizer_state": self.optimizer_state,
                "saved_activations": self.saved_activations, BUFFERS: self.buffers}


@lru_cache(maxsize=4096)
def layer_parameters_per_gpu(model: Transformer, tp: int) -> float:
    """One block's parameters on one tensor-parallel rank: matrices split ``tp`` ways, LayerNorms and the two
    row-parallel biases (attention output, second MLP matrix) whole."""
    attention, mlp, norms = layer_parameters(model)
    whole = norms + (2 * model.hidden if model.bias else 0)
    return (attention + mlp + norms - whole) / tp + whole


@lru_cache(maxsize=8192)
def layer_activation_bytes(model: Transformer, micro_batch: int, tp: int, sequence_parallel: bool,
                           recompute: Recompute) -> float:
    """``transformer_accounting.activation_bytes_per_layer`` (16-bit values; dropout masks where the model has
    dropout), remembered: the planner asks for the same few combinations thousands of times."""
    return activation_bytes_per_layer(model, micro_batch, tp, sequence_parallel, recompute)


def whole_layer(attention: AttentionKernel) -> Recompute:
    """What a block's forward writes before any recomputation drops it: every tensor Korthikanti et al. count
    (``"none"``), except the s×s scores, softmax and dropout a fused attention kernel never writes (as
    ``"selective"`` drops them: the kernel keeps the query, key, value and output, and two statistics a row)."""
    return "selective" if attention == "flash" else "none"


def kept(recompute: Recompute, attention: AttentionKernel) -> Recompute:
    """The activations a block keeps for its backward: those of ``recompute``, never the s×s tensors under flash."""
    return whole_layer(attention) if recompute == "none" else recompute


def stage_parameters(model: Transformer, plan: Plan, layout: Layout, stage: PipelineStage) -> float:
    """Parameters on one GPU of the ``"first"``, a ``"middle"`` or the ``"last"`` pipeline stage (the same stage when
    ``pp`` is 1)."""
    t, h = plan.tp, model.hidden
    blocks = {"first": layout.layers_first, "middle": layout.layers_per_stage, "last": layout.layers_last}[stage]
    params = _blocks_parameters(model, plan, blocks, stage)
    first, last = stage == "first" or plan.pp == 1, stage == "last" or plan.pp == 1
    if stage == "middle" and plan.pp > 1:
        return params
    if first:
        params += model.vocab * h / t + (model.seq * h if model.learned_positions else 0)
    if last:
        params += (2 if model.bias else 1) * h  # final LayerNorm
        if not model.tied_embeddings or plan.pp > 1:  # an untied head, or the tied copy on the last stage
            params += model.vocab * h / t
    return params


def _dense_blocks(model: Transformer, plan: Plan, blocks: int, stage: PipelineStage) -> int:
    """How many of a stage's ``blocks`` are dense blocks of a mixture of experts (its first blocks, on the first
    stage)."""
    if not isinstance(model, MoETransformer) or not (stage == "first" or plan.pp == 1):
        return 0
    return min(model.dense_layers, blocks)


def _blocks_parameters(model: Transformer, plan: Plan, blocks: int, stage: PipelineStage) -> float:
    """Parameters of a stage's ``blocks`` on one GPU: dense blocks whole (split ``tp`` ways), MoE blocks with their
    router and shared experts and ``E/ep`` routed experts."""
    if not isinstance(model, MoETransformer):
        return blocks * layer_parameters_per_gpu(model, plan.tp)
    dense = _dense_blocks(model, plan, blocks, stage)
    dense_block, moe_block = _moe_block_parameters(model, plan.tp, plan.expert_tp, plan.ep)
    return dense * dense_block + (blocks - dense) * moe_block


@lru_cache(maxsize=4096)
def _moe_block_parameters(model: MoETransformer, t: int, etp: int, ep: int) -> tuple[float, float]:
    """(a dense block, an MoE block) of ``model`` on one GPU, remembered: the planner asks thousands of times."""
    active_mlp = layer_parameters(model)[1]  # the MLP as wide as the active experts: not a tensor the model holds
    moe_block = (layer_parameters_per_gpu(model, t) - active_mlp / t + model.hidden * model.experts
                 + model.shared_experts * expert_parameters(model) / t + expert_parameters_per_gpu(model, etp, ep))
    return layer_parameters_per_gpu(dense_view(model), t), moe_block


def stage_expert_parameters(model: Transformer, plan: Plan, layout: Layout, stage: PipelineStage) -> float:
    """The routed experts' parameters among ``stage_parameters``: replicated over ``Plan.expert_dp`` ranks, not
    ``dp``."""
    if not isinstance(model, MoETransformer):
        return 0.0
    blocks = {"first": layout.layers_first, "middle": layout.layers_per_stage, "last": layout.layers_last}[stage]
    moe_blocks = blocks - _dense_blocks(model, plan, blocks, stage)
    return moe_blocks * expert_parameters_per_gpu(model, plan.expert_tp, plan.ep)


def state_bytes(params: float, zero: int, dp: int) -> tuple[float, float, float]:
    """(parameters, gradients, optimizer state) bytes of ``params`` parameters under ZeRO ``zero`` over ``dp`` ranks."""
    state = state_per_device(params, dp, zero, OPTIMIZER)
    return state["parameters"], state["gradients"], state["optimizer_state"]


def stage_activation_bytes(model: Transformer, plan: Plan, layout: Layout, stage: PipelineStage) -> float:
    """Saved activations on one GPU of the first or last stage, at the schedule's peak."""
    rank = 0 if stage == "first" else plan.pp - 1
    t, b, sp, c = plan.tp, plan.micro_batch, plan.sequence_parallel, plan.cp
    v = plan.interleave
    chunks = pipeline_layers_in_flight(plan.pp * v, plan.pp, v, layout.microbatches, rank)  # virtual stages' worth
    blocks = layout.layers_first if stage == "first" else layout.layers_last
    per_block = layer_activation_bytes(model, b, t, sp, kept(plan.recompute, plan.attention))
    if plan.precision == "fp8" and plan.recompute != "full":  # the linear layers' inputs kept in FP8
        per_block -= fp8_saved_bytes(model, b, t, sp)
    total = chunks * blocks / v * per_block
    if rank == 0:
        total += embedding_activation_bytes(model, b, t, sp, min(plan.pp, layout.microbatches))
    if rank == plan.pp - 1:
        total += output_activation_bytes(model, b, t, sp, logit_bytes=plan.logit_bytes)
    return total / c


def buffer_bytes(model: Transformer, plan: Plan, layout: Layout, rest: float) -> float:
    """The stated allowance: a recomputed layer's rematerialised activations (a fused attention kernel's
    backward holds one tile of scores, not an s×s tensor), ZeRO-3's gathered matrices, the fixed
    ``ALLOWANCE_BYTES`` and ``FRAGMENTATION`` of ``rest`` (everything else)."""
    t, b, sp = plan.tp, plan.micro_batch, plan.sequence_parallel
    working = (layer_activation_bytes(model, b, t, sp, whole_layer(plan.attention))
               - layer_activation_bytes(model, b, t, sp, kept(plan.recompute, plan.attention))) / plan.cp
    if plan.zero == 3 and plan.pp == 1:
        largest = max(model.hidden * (model.hidden + 2 * model.kv_hidden), model.hidden * model.ffn_size)
        working += 2 * 2 * largest / t  # the 16-bit matrix in use and the one prefetched
    if plan.zero == 3 and plan.pp > 1:  # the stage's 16-bit weights, gathered for the step's micro-batches
        working += 2 * _blocks_parameters(model, plan, layout.layers_per_stage, "middle")
    return working + ALLOWANCE_BYTES + FRAGMENTATION * (rest + working)


def stage_memory(model: Transformer, plan: Plan, layout: Layout, stage: PipelineStage, capacity: float,
                 activation_scale: float = 1.0) -> MemoryBreakdown:
    """Memory per GPU on one pipeline stage; ``activation_scale`` multiplies the saved activations, which are those
    of 1F1B's micro-batches in flight (a GPipe schedule holds more)."""
    params = stage_parameters(model, plan, layout, stage)
    experts = stage_expert_parameters(model, plan, layout, stage)
    weights, gradients, optimizer = state_bytes(params - experts, plan.zero, plan.dp)
    if experts:
        w, g, o = state_bytes(experts, plan.zero, plan.expert_dp)
        weights, gradients, optimizer = weights + w, gradients + g, optimizer + o
    if plan.fp32_grad_reduce:  # FP32 accumulation buffers: four bytes a gradient where 16-bit ones take two
        gradients *= 3 if plan.zero == 0 and plan.dp > 1 else 2  # and DDP's 16-bit buckets beside them under ZeRO-0
    elif plan.fp32_grad_buffer:  # an unsharded FP32 buffer beside the 16-bit gradients: four bytes more a parameter
        gradients += 4 * params
    activations = stage_activation_bytes(model, plan, layout, stage) * activation_scale
    buffers = buffer_bytes(model, plan, layout, weights + gradients + optimizer + activations)
    return MemoryBreakdown(stage, weights, gradients, optimizer, activations, buffers, capacity)


def memory_per_gpu(model: Transformer, plan: Plan, layout: Layout, capacity: float) -> MemoryBreakdown:
    """Memory per GPU on whichever of the first and last pipeline stages needs more."""
    stages: tuple[PipelineStage, ...] = ("first", "last") if plan.pp > 1 else ("first",)
    return max((stage_memory(model, plan, layout, stage, capacity) for stage in stages), key=lambda m: m.total)
