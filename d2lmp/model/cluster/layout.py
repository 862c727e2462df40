"""How one training step is split: tensor, pipeline, data, context and expert parallel sizes, and the step's options.

``Plan`` holds the sizes (``tp·pp·dp·cp`` GPUs), the micro-batch and the global batch (in sequences), the ZeRO stage
over the data-parallel group, the recomputation, sequence parallelism and the pipeline's interleaving. ``check_plan``
says, as a ``ValueError``, what does not fit the model and the cluster: the GPU count, heads or key/value heads that
tensor parallelism cannot split, a sequence that context parallelism cannot split, layers that the pipeline cannot
split, a batch that does not split into micro-batches, experts that expert parallelism cannot split (``ep`` must
divide the routed experts, ``etp·ep`` the ranks of a pipeline stage, ``tp·cp·dp``, and ``tp > 1`` needs sequence
parallelism: ``moe``). ``Layout`` is what a valid plan implies (micro-batches per step, layers per stage, and which
link each group's messages cross), with ranks ordered tensor, context, data, pipeline (fastest first).
"""

from __future__ import annotations

from dataclasses import dataclass

from d2lmp.model.cluster.hardware import Cluster
from d2lmp.model.cluster.moe import MoETransformer
from d2lmp.model.transformer_accounting import RECOMPUTE, Transformer
from d2lmp.model.vocabulary import (
    ATTENTION_KERNELS,
    MATMUL_PRECISIONS,
    AttentionKernel,
    ClusterLink,
    MatmulPrecision,
    Recompute,
    ZeroStage,
)

__all__ = ["Plan", "Layout", "check_plan", "group_link", "members_per_node"]


@dataclass(frozen=True)
class Plan:
    """One way to run a step.

    ``micro_batch`` and ``global_batch`` are in sequences; ``zero`` is the ZeRO stage (0-3) over the data-parallel
    group; ``recompute`` "none", "selective" (attention scores) or "full" (every block's forward); ``interleave``
    virtual pipeline stages per GPU (1: plain 1F1B). ``dp_overlap``: the once-a-step gradient reduction overlaps the
    last micro-batch's backward (bucketed DDP), not run after it (Megatron's 2021 "local" DDP). ``scatter_gather``:
    pipeline messages cross the network split over the tensor-parallel ranks and are gathered over NVLink (Narayanan
    et al. 2021, §4.1). ``attention``: "materialised" (the s×s scores kept, as Megatron-LM's 2021 kernels did) or
    "flash" (a fused kernel: no s×s tensor, the backward recomputes the scores; Dao et al. 2022). ``precision``: the
    linear layers' matrix products in "bf16" or "fp8". ``head_stages``: the embedding and the output layer each take
    one block's place on the first and the last pipeline stage (Llama 3's 126 layers over 16 stages, first and last
    one layer short: Llama Team 2024, §3.3.2). ``ep``: expert parallelism, the routed experts of an MoE block split
    over ``ep`` ranks of the data-parallel group (``moe``), each expert over ``etp`` ranks (None: ``tp``,
    Megatron-Core's default); an ``etp`` below ``tp`` folds the expert groups over the tensor ranks (MoE parallel
    folding, Liu et al. 2025, abstract: ``etp·ep`` divides ``tp·cp·dp``, each expert replicated over the ``expert_dp``
    rest). ``ep_overlap``: the all-to-alls run behind the matrix products of other micro-batches (DeepSeek-V3's
    DualPipe, §3.2.1), not exposed. ``fp8_dispatch``: the MoE dispatch (and the activation gradient's all-to-all)
    carries FP8 values, one byte each (DeepSeek-V3, §3.3.3), not 16-bit ones. ``fp32_grad_reduce``: the data-parallel
    reduction carries FP32 gradients, four bytes a parameter (FP32 gradient accumulation buffers reduced as they are,
    as nanotron's), not 16-bit ones, and memory holds those buffers (``memory.stage_memory``). ``fp32_grad_buffer``:
    an FP32 gradient buffer for every parameter of the GPU, unsharded, beside the 16-bit gradients (DeepSpeed's
    BF16_Optimizer as BLOOM ran it), four bytes a parameter more in memory; the reduction is left 16-bit.
    ``zero1_all_reduce``: ZeRO-1 reduces every gradient with an all-reduce after the backward, then all-gathers the
    16-bit weights (nanotron with FP32 accumulation: ``trainer.py`` builds no DDP and calls
    ``sync_gradients_across_dp`` with ``reduce_scatter=False``), not with a reduce-scatter. ``logit_bytes``: the bytes
    a logit takes on the last stage at the loss's peak: 4, the FP32 softmax the cross-entropy keeps for the backward;
    8 where an FP32 copy of the logits lives beside it (nanotron's cast to FP32 and its cross-entropy's subtraction
    of the maximum, out of place). The layers
    need not divide the stages: a pipeline's virtual stages hold as even a share as they can.
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    micro_batch: int = 1
    global_batch: int = 1
    zero: ZeroStage = 0
    recompute: Recompute = "none"
    sequence_parallel: bool = False
    interleave: int = 1
    dp_overlap: bool = True
    scatter_gather: bool = True
    attention: AttentionKernel = "materialised"
    precision: MatmulPrecision = "bf16"
    head_stages: bool = False
    fp32_grad_reduce: bool = False
    fp32_grad_buffer: bool = False
    zero1_all_reduce: bool = False
    ep: int = 1
    fp8_dispatch: bool = False
    etp: int | None = None
    ep_overlap: bool = False
    logit_bytes: int = 4

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    @property
    def expert_tp(self) -> int:
        """The ranks each expert's matrices are split over: ``etp``, else ``tp``."""
        return self.tp if self.etp is None else self.etp

    @property
    def expert_dp(self) -> int:
        """The ranks holding the same experts (sharing their state under ZeRO): ``tp·cp·dp / (etp·ep)``."""
        return self.tp * self.cp * self.dp // (self.expert_tp * self.ep)

    def describe(self) -> str:
        """A short label: 'tp8 pp8 dp16 cp1 mb1 full v1 zero0'."""
        sp = " sp" if self.sequence_parallel else ""
        extra = ((" flash" if self.attention == "flash" else "") + (" fp8" if self.precision == "fp8" else "")
                 + (f" ep{self.ep}" if self.ep > 1 else ""))
        return (f"tp{self.tp} pp{self.pp} dp{self.dp} cp{self.cp} mb{self.micro_batch} {self.recompute}{sp} "
                f"v{self.interleave} zero{self.zero}{extra}")


@dataclass(frozen=True)
class Layout:
    """What a valid plan implies: micro-batches per step, layers per stage and per virtual stage, the link
    ("nvlink" or "network") that each group's messages cross, and how many members of a tensor- or data-parallel
    group share a node (``tp_per_node``, ``dp_per_node``): a group spanning nodes sends over that many NICs."""

    microbatches: int
    layers_per_stage: int  # on the fullest stage
    layers_per_chunk: int  # on the fullest virtual stage
    tp_link: ClusterLink
    cp_link: ClusterLink
    dp_link: ClusterLink
    pp_link: ClusterLink
    tp_per_node: int = 1
    dp_per_node: int = 1
    layers_first: int = 0  # the first and the last pipeline stage's blocks
    layers_last: int = 0
    ep_link: ClusterLink = "nvlink"
    ep_per_node: int = 1
    edp_link: ClusterLink = "nvlink"  # the expert-data-parallel group (``Plan.expert_dp`` ranks, ``etp·ep`` apart)
    edp_per_node: int = 1


def _positive(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def group_link(cluster: Cluster, stride: int, size: int) -> ClusterLink:
    """The link a group of ``size`` ranks, ``stride`` ranks apart, crosses: NVLink if it lies in one node."""
    if size == 1 or stride * size <= cluster.gpus_per_node:
        return "nvlink"
    return "network"


def members_per_node(cluster: Cluster, stride: int, size: int) -> int:
    """How many of a group's ``size`` ranks, ``stride`` ranks apart, share one node."""
    return max(1, min(size, cluster.gpus_per_node // stride))


def check_plan(model: Transformer, cluster: Cluster, plan: Plan) -> Layout:
    """A ``ValueError`` that says what is wrong with ``plan``, or the ``Layout`` it implies."""
    for name in ("tp", "pp", "dp", "cp", "ep", "micro_batch", "global_batch", "interleave", "logit_bytes"):
        _positive(name, getattr(plan, name))
    if plan.gpus != cluster.gpus:
        raise ValueError(f"tp·pp·dp·cp = {plan.tp}·{plan.pp}·{plan.dp}·{plan.cp} = {plan.gpus} GPUs, "
                         f"but the cluster has {cluster.gpus}")
    if plan.zero not in (0, 1, 2, 3):
        raise ValueError(f"zero must be a ZeRO stage 0, 1, 2 or 3, got {plan.zero!r}")
    if plan.recompute not in RECOMPUTE:
        raise ValueError(f"recompute must be one of {RECOMPUTE}, got {plan.recompute!r}")
    if plan.attention not in ATTENTION_KERNELS:
        raise ValueError(f"attention must be one of {ATTENTION_KERNELS}, got {plan.attention!r}")
    if plan.precision not in MATMUL_PRECISIONS:
        raise ValueError(f"precision must be one of {MATMUL_PRECISIONS}, got {plan.precision!r}")
    if model.heads % plan.tp:
        raise ValueError(f"heads ({model.heads}) are not divisible by tp ({plan.tp})")
    if model.kv_head_count % plan.tp:
        raise ValueError(f"key/value heads ({model.kv_head_count}) are not divisible by tp ({plan.tp})")
    if plan.cp > 1 and model.seq % (2 * plan.cp):
        raise ValueError(f"the sequence ({model.seq}) does not split into 2·cp = {2 * plan.cp} equal chunks "
                         "(context parallelism balances the causal mask with two chunks per rank)")
    _check_experts(model, plan)
    units = model.layers + (2 if plan.head_stages and plan.pp > 1 else 0)
    chunks = plan.pp * plan.interleave
    if units < chunks or (plan.head_stages and plan.pp > 1 and units < 2 * plan.interleave + 2):
        raise ValueError(f"layers ({model.layers}) are too few for pp·interleave = {plan.pp}·{plan.interleave} "
                         "virtual stages of at least one block each")
    if plan.global_batch % (plan.dp * plan.micro_batch):
        raise ValueError(f"the global batch ({plan.global_batch} sequences) does not split into dp·micro_batch = "
                         f"{plan.dp}·{plan.micro_batch} = {plan.dp * plan.micro_batch} per micro-batch step")
    microbatches = plan.global_batch // (plan.dp * plan.micro_batch)
    if plan.interleave > 1:
        if plan.pp == 1:
            raise ValueError("interleave > 1 needs a pipeline (pp > 1)")
        if microbatches % plan.pp:
            raise ValueError(f"the interleaved schedule needs micro-batches per step ({microbatches}) to be a "
                             f"multiple of pp ({plan.pp})")
    t, c, d = plan.tp, plan.cp, plan.dp
    per_chunk, extra = divmod(units, chunks)  # ``extra`` virtual stages hold one block more
    per_chunk_max = per_chunk + (1 if extra else 0)
    layers_per_stage = plan.interleave * per_chunk + min(plan.interleave, extra)
    head = 1 if plan.head_stages and plan.pp > 1 else 0
    first = last = layers_per_stage - head if plan.pp > 1 else model.layers
    return Layout(microbatches=microbatches, layers_per_stage=layers_per_stage if plan.pp > 1 else model.layers,
                  layers_per_chunk=per_chunk_max,
                  layers_first=first, layers_last=last,
                  tp_link=group_link(cluster, 1, t), cp_link=group_link(cluster, t, c),
                  dp_link=group_link(cluster, t * c, d), pp_link=group_link(cluster, t * c * d, plan.pp),
                  tp_per_node=members_per_node(cluster, 1, t), dp_per_node=members_per_node(cluster, t * c, d),
                  ep_link=group_link(cluster, plan.expert_tp, plan.ep),
                  ep_per_node=members_per_node(cluster, plan.expert_tp, plan.ep),
                  edp_link=group_link(cluster, plan.expert_tp * plan.ep, plan.expert_dp),
                  edp_per_node=members_per_node(cluster, plan.expert_tp * plan.ep, plan.expert_dp))


def _check_experts(model: Transformer, plan: Plan) -> None:
    """Expert parallelism: an MoE model, experts and a stage's ranks it divides, sequence parallelism with tp."""
    if not isinstance(model, MoETransformer):
        if plan.ep > 1:
            raise ValueError(f"ep = {plan.ep} needs a mixture of experts; this model is dense")
        return
    if model.experts % plan.ep:
        raise ValueError(f"the routed experts ({model.experts}) are not divisible by ep ({plan.ep})")
    ranks = plan.tp * plan.cp * plan.dp
    if plan.etp is None and (plan.cp * plan.dp) % plan.ep:
        raise ValueError(f"ep ({plan.ep}) must divide cp·dp ({plan.cp * plan.dp}): the experts are split over ep ranks "
                         "inside the data-parallel group (or fold them over the tensor ranks with etp < tp)")
    if plan.etp is not None and (not isinstance(plan.etp, int) or plan.etp < 1 or ranks % (plan.etp * plan.ep)):
        raise ValueError(f"etp·ep = {plan.etp}·{plan.ep} must divide tp·cp·dp = {ranks}, the ranks of a pipeline stage")
    if plan.tp > 1 and not plan.sequence_parallel:
        raise ValueError("a mixture of experts with tp > 1 needs sequence parallelism (each rank routes its share "
                         "of the sequence)")
