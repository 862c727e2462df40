"""The seconds of one training step, term by term: matrix products, memory-bound operations, and each message.

Per micro-batch and pipeline stage, a block's forward costs its matrix FLOPs at ``gemm`` × the rate of the largest
matmul measured on that GPU (``GPUPreset.matmul_flops``; the linear layers' in FP8 where the plan says so, the attention
core and the logits in 16 bits), its other operations ``memory_passes`` × its saved-activation bytes at HBM bandwidth,
and its tensor-parallel messages of ``2·b·s·h`` bytes (two all-reduces a pass; under sequence parallelism four
all-gathers or reduce-scatters forward and six backward, ``tensor_parallel_seconds``); the backward costs twice the
forward's compute; recomputation adds the forward again (``"full"``) or the attention core (``"selective"``). A fused
attention kernel (``Plan.attention == "flash"``) writes no s×s tensor, so its forward's memory-bound bytes leave out the
scores, softmax and dropout, and its backward recomputes the attention core (as selective recomputation does). Context
parallelism passes key/value chunks around a ring, hidden behind the attention core where it can be; what hides is
charged ``overlap.HIDDEN_COST`` of its seconds (0: free, an assumption that module states). The host launches every
block's kernels, forward and backward, in ``host_ms`` a block and micro-batch: where the GPU's work is shorter, the
stage waits for the host (``host_wait_seconds``, the part ``"host"``). The pipeline (Narayanan et al. 2021, §2.2) runs
``m`` micro-batches through its slowest stage, plus a bubble of ``(p−1)/v`` micro-batches' forward and backward, plus
the stage-to-stage messages. Data parallelism reduces the gradients once a step (hidden behind the last backward where
``dp_overlap``), ZeRO-2 once a micro-batch, and ZeRO-3 also gathers the weights for every forward, backward and
recomputed forward. Collectives are rings: ``2(n−1)/n`` of the bytes for an all-reduce, ``(n−1)/n`` for an all-gather or
reduce-scatter, at the bus bandwidth of the link the group crosses (on a cluster whose network was measured by node
count, the figure for a collective over as many ranks, at most the group's own NICs), plus the link's α per ring step
(within a node the preset's ``latency_s``, across nodes the fitted ``network_us``: ``hardware.LinkRate``); a send takes
α plus its bytes at the link's send rate (its bus bandwidth unless measured apart). The seconds of a message are the
shared ``terms.Link``'s, as in the layer-table model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from d2lmp.model.alpha_beta import ring_bytes_per_rank
from d2lmp.model.cluster.efficiency import OPTIMIZER_BYTES_PER_PARAM, Efficiency
from d2lmp.model.cluster.hardware import Cluster, LinkRate, latency_of, p2p_rate_of
from d2lmp.model.cluster.layout import Layout, Plan
from d2lmp.model.cluster.memory import (
    layer_activation_bytes,
    stage_expert_parameters,
    stage_parameters,
    whole_layer,
)
from d2lmp.model.cluster.overlap import exposed
from d2lmp.model.dp_model import DDP_BUCKET_BYTES
from d2lmp.model.terms import Link, compute_seconds
from d2lmp.model.transformer_accounting import Transformer, attention_core_flops, layer_forward_flops
from d2lmp.model.vocabulary import AttentionKernel, ClusterLink, MatmulPrecision, PipelineStage

__all__ = ["STEP_PARTS", "link_bytes_per_s", "group_bytes_per_s", "group_all_reduce_seconds",
           "all_reduce_bytes", "gather_bytes", "activation_message_bytes", "kv_chunk_bytes", "all_reduce_seconds",
           "gather_seconds", "p2p_seconds", "matmul_seconds", "memory_bound_seconds", "tensor_parallel_seconds",
           "StageCost", "stage_cost",
           "host_wait_seconds",
           "bubble_seconds", "pipeline_p2p_seconds", "DataGroup", "data_group", "expert_data_group",
           "data_parallel_seconds", "zero3_seconds", "step_seconds"]

STEP_PARTS = ("compute", "memory_bound", "tp", "cp", "host", "pp_p2p", "bubble", "dp", "zero", "embedding_sync",
              "optimizer_step")


def link_bytes_per_s(cluster: Cluster, link: ClusterLink, efficiency: Efficiency) -> float:
    """Bus bandwidth per GPU of ``link`` ("nvlink" or "network"): its sourced figure × its fitted efficiency, as a
    ``LinkRate`` that also carries the preset's α and send rate."""
    if link == "nvlink":
        return cluster.link_rate(cluster.nvlink_bytes_per_s, efficiency.nvlink)
    return _network(cluster, 1, efficiency)


def _network(cluster: Cluster, per_node: int, efficiency: Efficiency, gather: bool = False,
             ranks: int | None = None) -> float:
    """Across nodes, a group of ``ranks`` with ``per_node`` members a node (an all-reduce, or with ``gather`` an
    all-gather or reduce-scatter). Where the bus bandwidth was measured by node count (eight GPUs a node), the group
    reads the measurement over as many ranks (at least two nodes' worth), at most its own NICs (``per_node`` × the
    network per GPU × ``network``) if it has fewer members a node than GPUs: a reading chosen on the Ultra-Scale
    sweep's rows, not derived. ``ranks`` None (a send): its share of the whole cluster's figure. Elsewhere the NICs'
    rate × ``network``. α is ``network_us`` where fitted, else the preset's."""
    alpha = None if efficiency.network_us is None else efficiency.network_us * 1e-6
    gpus_per_node = cluster.gpus_per_node
    if not cluster.network_measured:
        return cluster.link_rate(cluster.network_bytes_per_s * per_node, efficiency.network, alpha)
    measured = cluster.measured_network(cluster.nodes if ranks is None else max(2, ranks // gpus_per_node))
    assert measured is not None
    rate = (measured.gather_GBps if gather else measured.all_reduce_GBps) * 1e9
    if ranks is None:
        rate *= per_node / gpus_per_node
    elif per_node < gpus_per_node:
        rate = min(rate, cluster.network_bytes_per_s * per_node * efficiency.network)
    return cluster.link_rate(rate, 1.0, alpha)


def group_bytes_per_s(cluster: Cluster, link: ClusterLink, per_node: int, efficiency: Efficiency,
                      gather: bool = False, ranks: int | None = None) -> float:
    """Bus bandwidth per GPU of a collective (``gather``: an all-gather or reduce-scatter) over ``link`` by a group of
    ``ranks`` (None: a send) with ``per_node`` members a node. Across nodes NCCL runs a channel per NIC, so the
    group's ``per_node`` NICs carry it at once (``_network``), at most at NVLink's rate (α stays the network's)."""
    if link == "nvlink":
        return link_bytes_per_s(cluster, link, efficiency)
    if per_node == 1:
        return _network(cluster, 1, efficiency, gather, ranks)
    nvlink = link_bytes_per_s(cluster, "nvlink", efficiency)
    network = _network(cluster, per_node, efficiency, gather, ranks)
    if network < nvlink:
        return network
    return LinkRate(float(nvlink), latency_of(network), p2p_rate_of(nvlink))  # NVLink's rate, the network's α


def group_all_reduce_seconds(nbytes: float, ranks: int, bandwidth: float, per_node: int, link: ClusterLink) -> float:
    """An all-reduce over a group with ``per_node`` members a node: within a node a ring; across nodes NCCL's tree
    (Jeaugey 2019), so the α steps are ``2(k−1) + 2⌈log₂ N⌉`` for ``N`` nodes of ``k`` members, not ``2(n−1)``."""
    if link == "nvlink" or ranks <= per_node:
        return all_reduce_seconds(nbytes, ranks, bandwidth)
    nodes = ranks // per_node
    steps = 2 * (per_node - 1) + 2 * math.ceil(math.log2(nodes))
    return all_reduce_bytes(nbytes, ranks) / bandwidth + steps * latency_of(bandwidth)


def all_reduce_bytes(nbytes: float, ranks: int) -> float:
    """Bytes each rank sends in a ring all-reduce of ``nbytes``: ``2(n−1)/n · nbytes`` (0 for one rank)."""
    return ring_bytes_per_rank("all_reduce", nbytes, ranks)


def gather_bytes(nbytes: float, ranks: int) -> float:
    """Bytes each rank sends in a ring all-gather (or reduce-scatter) of a full result of ``nbytes``:
    ``(n−1)/n · nbytes``."""
    return ring_bytes_per_rank("all_gather", nbytes, ranks)


def activation_message_bytes(model: Transformer, micro_batch: int, cp: int = 1) -> float:
    """One micro-batch's 16-bit activations at a block boundary, ``2·b·s·h`` bytes (a context-parallel rank holds
    ``1/cp`` of the sequence): what a tensor-parallel all-reduce sums and what a pipeline stage sends on."""
    return 2 * micro_batch * model.seq * model.hidden / cp


def kv_chunk_bytes(model: Transformer, micro_batch: int, tp: int, cp: int) -> float:
    """The 16-bit keys and values of one context-parallel chunk, ``2·2·b·(s/cp)·kv_hidden / tp`` bytes: what a
    rank passes round the ring at each of its ``cp − 1`` steps."""
    return 2 * 2 * micro_batch * (model.seq // cp) * model.kv_hidden / tp


def _link(bandwidth: float) -> Link:
    """The link whose bus bandwidth this is, with its α and send rate (``hardware.LinkRate``; a plain float: the
    GPU presets' α, a send at the bandwidth)."""
    return Link(float(bandwidth), latency_of(bandwidth), p2p_rate_of(bandwidth))


def all_reduce_seconds(nbytes: float, ranks: int, bandwidth: float) -> float:
    """Ring all-reduce of ``nbytes``: ``2(n−1)/n · nbytes / bandwidth + 2(n−1)·α`` (``terms.Link``)."""
    return _link(bandwidth).all_reduce_seconds(nbytes, ranks)


def gather_seconds(nbytes: float, ranks: int, bandwidth: float) -> float:
    """Ring all-gather (or reduce-scatter) of a full result of ``nbytes``: ``(n−1)/n · nbytes / bw + (n−1)·α``."""
    return _link(bandwidth).gather_seconds(nbytes, ranks)


def p2p_seconds(nbytes: float, bandwidth: float) -> float:
    """One point-to-point message: ``α + nbytes / (the link's send rate)``."""
    return _link(bandwidth).p2p_seconds(nbytes)


def matmul_seconds(flops: float, cluster: Cluster, efficiency: Efficiency,
                   precision: MatmulPrecision = "bf16") -> float:
    """Matrix products at ``gemm`` × the largest matmul's measured rate in ``precision`` (``matmul_flops``)."""
    return compute_seconds(flops, cluster.preset.matmul_flops(precision) * efficiency.gemm)


def memory_bound_seconds(activation_bytes: float, cluster: Cluster, efficiency: Efficiency) -> float:
    """The non-matmul operations of a forward whose saved activations are ``activation_bytes``: ``memory_passes``
    × those bytes through HBM."""
    return efficiency.memory_passes * activation_bytes / (cluster.preset.hbm_GBps * 1e9)


@lru_cache(maxsize=8192)
def _layer(model: Transformer, b: int, t: int, c: int, sp: bool,
           attention: AttentionKernel) -> tuple[float, float, float, float, float]:
    """One block, one micro-batch, one GPU: (forward FLOPs, attention-core FLOPs, bytes the forward writes
    (``memory.whole_layer``: no s×s tensor under a fused kernel), attention-score bytes (0 under a fused kernel),
    key/value bytes a context-parallel rank passes on)."""
    flops = layer_forward_flops(model, b) / (t * c)
    core = attention_core_flops(model, b) / (t * c)
    saved = layer_activation_bytes(model, b, t, sp, whole_layer(attention)) / c
    scores = saved - layer_activation_bytes(model, b, t, sp, "selective") / c
    return flops, core, saved, scores, kv_chunk_bytes(model, b, t, c)


def tensor_parallel_seconds(model: Transformer, cluster: Cluster, plan: Plan, layout: Layout,
                            efficiency: Efficiency) -> tuple[float, float, float]:
    """A block's tensor-parallel messages for one micro-batch: (forward seconds, backward seconds, one boundary
    message: the embedding's or the logits'). Each carries ``2·b·s·h`` bytes. Without sequence parallelism a block
    all-reduces twice a pass (Shoeybi et al. 2019, §3). With it, a forward and backward pass take four all-gathers
    and four reduce-scatters, and each rank keeps only its shard of a column-parallel linear's input and gathers it
    again in the backward (Korthikanti et al. 2022, §4.2.2; Megatron-LM's
    ``LinearWithGradAccumulationAndAsyncCommunication`` and nanotron's column linear do so): 4 collectives forward, 6
    backward, rings at the all-gather's bus bandwidth, all charged as exposed (the paper overlaps the extra gather
    with the backward's products). The group's bandwidth is the one measured for a collective over as many
    ranks (``group_bytes_per_s``)."""
    t, per_node, link = plan.tp, layout.tp_per_node, layout.tp_link
    if t == 1:
        return 0.0, 0.0, 0.0
    message = activation_message_bytes(model, plan.micro_batch, plan.cp)
    if plan.sequence_parallel:
        one = gather_seconds(message, t, group_bytes_per_s(cluster, link, per_node, efficiency, True, t))
        return 4 * one, 6 * one, 2 * one
    bandwidth = group_bytes_per_s(cluster, link, per_node, efficiency, ranks=t)
    one = group_all_reduce_seconds(message, t, bandwidth, per_node, link)
    return 2 * one, 2 * one, one


@dataclass(frozen=True)
class StageCost:
    """Seconds of one micro-batch's forward and backward (recomputation included) on one pipeline stage, by part."""

    forward: dict[str, float]
    backward: dict[str, float]

    @property
    def total(self) -> float:
        return sum(self.forward.values()) + sum(self.backward.values())

    def part(self, name: str) -> float:
        return self.forward.get(name, 0.0) + self.backward.get(name, 0.0)


def stage_cost(model: Transformer, cluster: Cluster, plan: Plan, layout: Layout, efficiency: Efficiency,
               stage: PipelineStage) -> StageCost:
    """One micro-batch through the ``"first"``, a ``"middle"`` (the fullest) or the ``"last"`` stage's blocks (and
    the first's embedding, the last's output layer)."""
    n = {"first": layout.layers_first, "middle": layout.layers_per_stage, "last": layout.layers_last}[stage]
    t, c, b = plan.tp, plan.cp, plan.micro_batch
    flops, core, saved, scores, kv = _layer(model, b, t, c, plan.sequence_parallel, plan.attention)
    tp_forward, tp_backward, tp_one = tensor_parallel_seconds(model, cluster, plan, layout, efficiency)
    ring = (c - 1) * p2p_seconds(kv, link_bytes_per_s(cluster, layout.cp_link, efficiency)) if c > 1 else 0.0
    core_s = (compute_seconds(core, cluster.preset.flash_flops * efficiency.gemm) if plan.attention == "flash"
              else matmul_seconds(core, cluster, efficiency))  # the attention core stays in 16 bits, as the logits
    mm = core_s + matmul_seconds(flops - core, cluster, efficiency, plan.precision)
    mem = memory_bound_seconds(saved, cluster, efficiency)
    forward = {"compute": n * mm, "memory_bound": n * mem, "tp": n * tp_forward, "cp": n * exposed(ring, core_s)}
    backward = {"compute": 2 * n * mm, "memory_bound": 2 * n * mem, "tp": n * tp_backward,
                "cp": n * exposed(2 * ring, 2 * core_s)}
    if plan.recompute == "full":
        for name in forward:
            backward[name] += forward[name]
    if plan.attention == "flash":  # the fused kernel's backward recomputes the scores, tile by tile, on chip
        backward["compute"] += n * core_s
    elif plan.recompute == "selective":
        backward["compute"] += n * core_s
        backward["memory_bound"] += n * memory_bound_seconds(scores, cluster, efficiency)
    tokens = b * model.seq / c
    if stage == "first" or plan.pp == 1:  # the vocabulary-parallel embedding sums its partial lookups
        forward["tp"] += tp_one
    if stage == "last" or plan.pp == 1:  # logits and the 32-bit cross-entropy, never recomputed
        logits = matmul_seconds(2 * tokens * model.hidden * model.vocab / t, cluster, efficiency)
        loss = memory_bound_seconds(4 * tokens * model.vocab / t, cluster, efficiency)
        forward["compute"] += logits
        forward["memory_bound"] += loss
        backward["compute"] += 2 * logits
        backward["memory_bound"] += 2 * loss
        backward["tp"] += tp_one
    busy = sum(forward.values()) + sum(backward.values())
    forward["host"], backward["host"] = 0.0, host_wait_seconds(n, busy, efficiency)
    return StageCost(forward, backward)


def host_wait_seconds(blocks: int, gpu_seconds: float, efficiency: Efficiency) -> float:
    """What the GPU waits for the host in one micro-batch of a stage: the host launches each of its ``blocks``
    blocks' kernels in ``host_ms``, forward and backward, and the GPU cannot finish before the host has launched; 0
    where the GPU's own ``gpu_seconds`` are longer. The wait is booked to the backward, which the host launches last
    and which the gradient reduction overlaps; launches of a recomputed forward are not counted (no calibration run
    recomputes)."""
    return max(0.0, blocks * efficiency.host_ms * 1e-3 - gpu_seconds)


class DataGroup(NamedTuple):
    """The ranks that hold the same weights and reduce their gradients: how many, how many a node, the link."""

    ranks: int
    per_node: int
    link: ClusterLink


def data_group(plan: Plan, layout: Layout) -> DataGroup:
    """The data-parallel group: ``dp`` ranks, which hold the same dense weights."""
    return DataGroup(plan.dp, layout.dp_per_node, layout.dp_link)


def expert_data_group(plan: Plan, layout: Layout) -> DataGroup:
    """The expert-data-parallel group: the ``Plan.expert_dp`` ranks (``dp/ep`` unfolded) that hold the same routed
    experts, ``etp·ep`` ranks apart (Megatron-Core's expert layout, ``moe``)."""
    return DataGroup(plan.expert_dp, layout.edp_per_node, layout.edp_link)


def data_parallel_seconds(model: Transformer, cluster: Cluster, plan: Plan, layout: Layout, efficiency: Efficiency,
                          params: float, slowest: StageCost, group: DataGroup | None = None) -> tuple[float, float]:
    """(gradient reduction, ZeRO-3 weight gathering) seconds exposed a step for ``params`` on ``group`` (None: dp).
    Overlapped reductions run in buckets behind the backward: what it cannot hide is exposed, and never less than the
    last bucket (PyTorch DDP's 25 MiB, ``dp_model.DDP_BUCKET_BYTES``), which starts once the backward ends."""
    d, k, link = group or data_group(plan, layout)
    m = layout.microbatches
    if d == 1:
        return 0.0, 0.0
    bw = group_bytes_per_s(cluster, link, k, efficiency, ranks=d)
    gather_bw = group_bytes_per_s(cluster, link, k, efficiency, gather=True, ranks=d)
    grads = 2 * params  # 16-bit gradients (and 16-bit weights to gather back)
    reduced = (4 if plan.fp32_grad_reduce else 2) * params  # the gradients the reduction carries
    per_microbatch, backward = slowest.total, sum(slowest.backward.values())
    if plan.zero <= 1:  # one reduction a step; ZeRO-1 also gathers the 16-bit weights back
        all_reduce = plan.zero == 0 or plan.zero1_all_reduce  # else a reduce-scatter and the gather, as one all-reduce
        carried, rate = (reduced, bw) if all_reduce else ((reduced + grads) / 2, gather_bw)
        once = group_all_reduce_seconds(carried, d, rate, k, link)
        last = group_all_reduce_seconds(min(carried, DDP_BUCKET_BYTES), d, rate, k, link)
        back = gather_seconds(grads, d, gather_bw) if plan.zero == 1 and plan.zero1_all_reduce else 0.0
        return (exposed(once, backward, last) if plan.dp_overlap else once) + back, 0.0
    reduce = gather_seconds(reduced, d, gather_bw)  # ZeRO-2 and 3 reduce-scatter every micro-batch's gradients
    if plan.zero == 2:
        gather_back = gather_seconds(grads, d, gather_bw)
        exposed_once = exposed(gather_back, backward) if plan.dp_overlap else gather_back
        return m * exposed(reduce, per_microbatch) + exposed_once, 0.0
    return 0.0, zero3_seconds(plan, layout, grads, gather_bw, per_microbatch, d)


def zero3_seconds(plan: Plan, layout: Layout, grads: float, bw: float, per_microbatch: float,
                  ranks: int | None = None) -> float:
    """ZeRO-3's gathers and reduce-scatters over ``ranks`` (None: ``dp``) exposed per step: per layer and pass,
    behind a micro-batch's compute but for the first gather and the last reduce-scatter; with a pipeline, the
    stage's weights once a step."""
    d, m, layers = ranks or plan.dp, layout.microbatches, layout.layers_per_stage
    if plan.pp > 1:  # with a pipeline the stage's weights are gathered once a step and kept for its micro-batches
        once = gather_seconds(grads, d, bw)
        return exposed(2 * once, per_microbatch, 2 * once / layers)
    passes = 3 if plan.recompute == "full" else 2  # forward, backward, and the recomputed forward
    one_layer = gather_seconds(grads / layers, d, bw)  # one bucketed gather (or reduce-scatter) per layer and pass
    return m * exposed(gather_seconds(grads, d, bw) + passes * one_layer * layers, per_microbatch, 2 * one_layer)


def bubble_seconds(plan: Plan, slowest: StageCost) -> float:
    """The pipeline's fill and drain: ``(p−1)/v`` micro-batches' forward and backward on the slowest stage."""
    return (plan.pp - 1) / plan.interleave * slowest.total


def pipeline_p2p_seconds(model: Transformer, cluster: Cluster, plan: Plan, layout: Layout,
                         efficiency: Efficiency) -> float:
    """Stage-to-stage messages: each micro-batch's activations forward and gradients back, on every virtual stage,
    plus the fill and drain; split over the tensor-parallel ranks where sequence parallelism or scatter-gather do."""
    if plan.pp == 1:
        return 0.0
    message = activation_message_bytes(model, plan.micro_batch, plan.cp)
    bw = link_bytes_per_s(cluster, layout.pp_link, efficiency)
    split = plan.tp if (plan.sequence_parallel or (plan.scatter_gather and layout.pp_link == "network")) else 1
    one = p2p_seconds(message / split, bw)
    if split > 1 and not plan.sequence_parallel:  # gather the split message back over NVLink
        one += gather_seconds(message, plan.tp, link_bytes_per_s(cluster, layout.tp_link, efficiency))
    m, p, v = layout.microbatches, plan.pp, plan.interleave
    return (2 * v * m + 2 * (p - 1)) * one


def _embedding_sync_seconds(model: Transformer, cluster: Cluster, plan: Plan, layout: Layout,
                            efficiency: Efficiency) -> float:
    """The first and last stages sum their copies of a tied embedding's gradient."""
    if plan.pp == 1 or not model.tied_embeddings:
        return 0.0
    return all_reduce_seconds(2 * model.vocab * model.hidden / plan.tp, 2,
                              link_bytes_per_s(cluster, layout.pp_link, efficiency))


def step_seconds(model: Transformer, cluster: Cluster, plan: Plan, layout: Layout,
                 efficiency: Efficiency) -> dict[str, float]:
    """Seconds of one step by part (``STEP_PARTS``); they add up to the step time."""
    first = stage_cost(model, cluster, plan, layout, efficiency, "first")
    last = stage_cost(model, cluster, plan, layout, efficiency, "last") if plan.pp > 1 else first
    middle = stage_cost(model, cluster, plan, layout, efficiency, "middle") if plan.pp > 2 else first
    slowest = max(first, middle, last, key=lambda cost: cost.total)
    m = layout.microbatches  # the slowest stage runs every micro-batch, then waits out the bubble
    parts = {name: m * slowest.part(name) for name in ("compute", "memory_bound", "tp", "cp", "host")}
    parts["bubble"] = bubble_seconds(plan, slowest)
    parts["pp_p2p"] = pipeline_p2p_seconds(model, cluster, plan, layout, efficiency)
    stages: tuple[PipelineStage, ...] = ("first", "middle", "last")
    params, fullest = max((stage_parameters(model, plan, layout, stage), stage) for stage in stages)
    experts = stage_expert_parameters(model, plan, layout, fullest)  # its routed experts, held by fewer ranks
    parts["dp"], parts["zero"] = data_parallel_seconds(model, cluster, plan, layout, efficiency, params - experts,
                                                       slowest)
    if experts:  # the routed experts' gradients over the ranks that hold the same experts
        expert_dp, expert_zero = data_parallel_seconds(model, cluster, plan, layout, efficiency, experts, slowest,
                                                       expert_data_group(plan, layout))
        parts["dp"] += expert_dp
        parts["zero"] += expert_zero
    parts["embedding_sync"] = _embedding_sync_seconds(model, cluster, plan, layout, efficiency)
    local = (params - experts) / plan.dp + experts / plan.expert_dp if plan.zero >= 1 else params
    parts["optimizer_step"] = local * OPTIMIZER_BYTES_PER_PARAM / (cluster.preset.hbm_GBps * 1e9)
    return {name: parts[name] for name in STEP_PARTS}
