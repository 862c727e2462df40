"""The seconds a mixture of experts adds to a step: expert parallelism's all-to-alls and the busiest expert's load.

Each MoE block runs two all-to-alls a pass: forward, the dispatch of its tokens to their
experts and the combine of the results; backward, the same two in reverse; a fully recomputed forward runs the
forward's again. A rank sends ``moe.all_to_all_bytes`` of each: the dispatch (and the backward all-to-all into the
down-projection) in FP8 where ``Plan.fp8_dispatch``, the combines in 16 bits. Of the ``ep − 1`` other ranks, ``k − 1``
share its node (``Layout.ep_per_node``) and take their share over NVLink; the rest over the GPU's own NIC (one rail a
GPU: ``steptime.group_bytes_per_s`` with one member a node); both at once, so an all-to-all lasts the longer of the
two, plus one α (the sends leave together). The all-to-alls are exposed (Megatron's 1F1B schedule), or, where
``Plan.ep_overlap`` (DeepSeek-V3's DualPipe, §3.2.1: "both all-to-all and PP communication can be fully hidden"),
hidden behind the step's matrix products, only what exceeds them exposed. They run on the slowest stage's MoE
blocks for every micro-batch and through the pipeline's fill and drain, ``m + (p − 1)/v`` micro-batches. A capacity
factor above 1 makes the busiest rank's routed MLP run that much longer (``moe.padding_flops``), and every MoE
block runs its router (``moe.router_flops``, on the rank's ``1/(tp·cp)`` of the tokens, in 16 bits), both charged
to ``compute`` and the bubble the same way.
"""

from __future__ import annotations

from d2lmp.model.cluster.efficiency import Efficiency
from d2lmp.model.cluster.hardware import Cluster, latency_of
from d2lmp.model.cluster.layout import Layout, Plan
from d2lmp.model.cluster.moe import MoETransformer, all_to_all_bytes, moe_layers, padding_flops, router_flops
from d2lmp.model.cluster.steptime import group_bytes_per_s, link_bytes_per_s, matmul_seconds
from d2lmp.model.transformer_accounting import Transformer

__all__ = ["EXPERT_PART", "all_to_all_seconds", "block_all_to_all_seconds", "stage_moe_blocks", "with_experts"]

EXPERT_PART = "ep"  # the step part the all-to-alls are charged to


def all_to_all_seconds(nbytes: float, cluster: Cluster, plan: Plan, layout: Layout, efficiency: Efficiency) -> float:
    """One all-to-all in which each rank sends ``nbytes`` to the ``ep − 1`` others, evenly: the node's share over
    NVLink and the rest over the GPU's NIC at once, plus one α."""
    ep, k = plan.ep, layout.ep_per_node
    if ep == 1 or nbytes == 0:
        return 0.0
    nvlink = link_bytes_per_s(cluster, "nvlink", efficiency)
    inside = nbytes * (k - 1) / (ep - 1) / nvlink
    if layout.ep_link == "nvlink" or k >= ep:
        return inside + latency_of(nvlink)
    network = group_bytes_per_s(cluster, "network", 1, efficiency)
    across = nbytes * (ep - k) / (ep - 1) / network
    return max(inside, across) + latency_of(network)


def block_all_to_all_seconds(model: MoETransformer, cluster: Cluster, plan: Plan, layout: Layout,
                             efficiency: Efficiency) -> float:
    """One MoE block's all-to-alls for one micro-batch: dispatch and combine forward and backward (and forward
    again under full recomputation)."""
    dispatch = all_to_all_bytes(model, plan.micro_batch, plan.tp, plan.cp, plan.ep, 1 if plan.fp8_dispatch else 2)
    combine = all_to_all_bytes(model, plan.micro_batch, plan.tp, plan.cp, plan.ep, 2)
    one_pass = (all_to_all_seconds(dispatch, cluster, plan, layout, efficiency)
                + all_to_all_seconds(combine, cluster, plan, layout, efficiency))
    passes = 3 if plan.recompute == "full" else 2
    return passes * one_pass


def stage_moe_blocks(model: Transformer, plan: Plan, layout: Layout) -> int:
    """MoE blocks on the fullest pipeline stage (the dense blocks sit on the first)."""
    return min(layout.layers_per_stage if plan.pp > 1 else model.layers, moe_layers(model))


def with_experts(seconds: dict[str, float], model: Transformer, cluster: Cluster, plan: Plan, layout: Layout,
                 efficiency: Efficiency) -> dict[str, float]:
    """``steptime.step_seconds``'s parts, plus ``EXPERT_PART`` (the all-to-alls), and the routers and the busiest
    expert rank's extra matrix products in ``compute`` and ``bubble``; a dense model's parts unchanged (no
    ``EXPERT_PART``)."""
    if not isinstance(model, MoETransformer):
        return seconds
    out = dict(seconds)
    n = stage_moe_blocks(model, plan, layout)
    m, fill = layout.microbatches, (plan.pp - 1) / plan.interleave
    passes = 4 if plan.recompute == "full" else 3  # forward, backward twice its FLOPs, the recomputed forward
    share = plan.tp * plan.cp  # a rank's part of the micro-batch's tokens
    extra = passes * n * (matmul_seconds(padding_flops(model, plan.micro_batch) / share, cluster, efficiency,
                                         plan.precision)
                          + matmul_seconds(router_flops(model, plan.micro_batch) / share, cluster, efficiency))
    out["compute"] += m * extra
    out["bubble"] += fill * extra
    out[EXPERT_PART] = (m + fill) * n * block_all_to_all_seconds(model, cluster, plan, layout, efficiency)
    if plan.ep_overlap:  # hidden behind the step's matrix products, what they cannot hide exposed
        out[EXPERT_PART] = max(0.0, out[EXPERT_PART] - out["compute"])
    return out
