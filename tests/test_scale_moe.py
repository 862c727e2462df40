"""The cluster model's mixture of experts and FP8, checked against arithmetic written out by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from d2lmp.model.cluster.efficiency import FITTED
from d2lmp.model.cluster.expert_step import EXPERT_PART, all_to_all_seconds, with_experts
from d2lmp.model.cluster.fp8 import fp8_saved_bytes
from d2lmp.model.cluster.hardware import Cluster
from d2lmp.model.cluster.layout import Plan, check_plan
from d2lmp.model.cluster.memory import memory_per_gpu, stage_expert_parameters, stage_parameters
from d2lmp.model.cluster.moe import (
    MoETransformer,
    active_parameters,
    all_to_all_bytes,
    padding_flops,
    router_flops,
    step_flops,
    total_parameters,
)
from d2lmp.model.cluster.planner import ExpertSearch, expert_options, plan
from d2lmp.model.cluster.predict import predict
from d2lmp.model.cluster.presets import model_preset
from d2lmp.model.cluster.steptime import group_bytes_per_s, link_bytes_per_s, matmul_seconds, step_seconds
from d2lmp.model.transformer_accounting import Transformer, layer_forward_flops, training_flops

# A small Llama-style MoE: h = 64, 4 heads, 2 layers (the first dense), 8 experts of width 32, top 2, 1 shared.
SMALL = MoETransformer(layers=2, hidden=64, heads=4, seq=16, vocab=100, gated_mlp=True, bias=False,
                       tied_embeddings=False, learned_positions=False, experts=8, top_k=2, expert_ffn=32,
                       shared_experts=1, dense_layers=1, dense_ffn=96)


def test_the_active_width_is_top_k_plus_shared_experts():
    assert SMALL.ffn == (2 + 1) * 32 == 96
    dense_twin = Transformer(layers=2, hidden=64, heads=4, seq=16, vocab=100, ffn=96, gated_mlp=True, bias=False,
                             tied_embeddings=False, learned_positions=False)
    assert layer_forward_flops(SMALL, 1) == layer_forward_flops(dense_twin, 1)


def test_total_and_active_parameters_by_hand():
    attention = 4 * 64 * 64  # Q, K, V, O (multi-head)
    norms = 2 * 64  # two RMSNorm weights
    expert = 3 * 64 * 32  # SwiGLU: three matrices
    dense = attention + norms + 3 * 64 * 96
    moe = attention + norms + 64 * 8 + 1 * expert + 8 * expert  # router, shared, routed
    outside = 100 * 64 * 2 + 64  # embedding, untied head, final norm
    assert total_parameters(SMALL) == dense + moe + outside == 120_128
    active = dense + attention + norms + 64 * 8 + 1 * expert + 2 * expert + outside
    assert active_parameters(SMALL) == active == 83_264


def test_deepseek_v3_preset_counts_near_its_published_671b_and_37b():
    model = model_preset("deepseek-v3").model
    assert isinstance(model, MoETransformer)
    # §4.2: 671B total, 37B activated; plain attention for MLA and no MTP module make the count a little off
    assert total_parameters(model) / 1e9 == pytest.approx(671, rel=0.02)
    assert active_parameters(model) / 1e9 == pytest.approx(37, rel=0.06)


def test_mixtral_preset_counts_near_its_published_47b_and_13b():
    model = model_preset("Mixtral-8x7B").model
    assert isinstance(model, MoETransformer) and model.head_dim == 128
    # A block: attention Q and O 4096², K and V 4096·1024 each = 41,943,040; two RMSNorms 8,192; router 4096·8 =
    # 32,768; an expert 3·4096·14336 = 176,160,768. Embedding and untied head 2·32000·4096 = 262,144,000, norm 4,096.
    # Total: 32 × (41,943,040 + 8,192 + 32,768 + 8 × 176,160,768) + 262,148,096 = 46,702,792,704;
    # active (2 experts): 32 × 394,305,536 + 262,148,096 = 12,879,925,248.
    assert total_parameters(model) == 46_702_792_704
    assert active_parameters(model) == 12_879_925_248
    # The paper (abstract) gives whole billions, 47B and 13B: a count that rounds to them is within 0.5B
    assert abs(total_parameters(model) / 1e9 - 47) <= 0.5
    assert abs(active_parameters(model) / 1e9 - 13) <= 0.5


@pytest.mark.parametrize("plan, message", [
    (Plan(dp=8, ep=3), "not divisible by ep"),
    (Plan(dp=2, ep=4, pp=4), r"must divide cp·dp \(2\)"),
    (Plan(tp=2, dp=2, ep=4, pp=2, sequence_parallel=True, etp=2), r"etp·ep = 2·4 must divide tp·cp·dp = 4"),
    (Plan(tp=2, dp=4, ep=2), "needs sequence parallelism"),
])
def test_impossible_expert_layouts_are_value_errors(plan, message):
    with pytest.raises(ValueError, match=message):
        check_plan(SMALL, Cluster("H100-SXM", gpus=8), plan)


def test_expert_parallelism_needs_experts():
    with pytest.raises(ValueError, match="needs a mixture of experts"):
        check_plan(model_preset("1.7B").model, Cluster("A100-80GB", gpus=8), Plan(dp=8, ep=2))


def test_experts_are_sharded_over_ep_and_their_state_over_dp_over_ep():
    cluster = Cluster("H100-SXM", gpus=8)
    p = Plan(dp=8, ep=4, zero=1, global_batch=8)
    layout = check_plan(SMALL, cluster, p)
    expert = 3 * 64 * 32
    assert stage_expert_parameters(SMALL, p, layout, "first") == 8 / 4 * expert  # one MoE block, 2 experts a GPU
    params = stage_parameters(SMALL, p, layout, "first")
    assert params == 120_128 - 8 * expert + 2 * expert  # every parameter but the 6 routed experts held elsewhere
    memory = memory_per_gpu(SMALL, p, layout, cluster.preset.memory_bytes)
    others = params - 2 * expert
    # ZeRO-1: 12 bytes of optimizer state a parameter, over dp = 8 for the rest, over dp/ep = 2 for the experts
    assert memory.optimizer_state == pytest.approx(12 * others / 8 + 12 * 2 * expert / 2)


def test_expert_gradients_are_reduced_over_the_ranks_holding_the_same_experts():
    cluster = Cluster("H100-SXM", gpus=8)
    p = Plan(dp=8, ep=4, global_batch=8, dp_overlap=False)
    layout = check_plan(SMALL, cluster, p)
    # expert_dp = 8 / 4 = 2 ranks, 4 apart: both in the one node, over NVLink
    assert (p.expert_dp, layout.edp_link, layout.edp_per_node) == (2, "nvlink", 2)
    # A GPU holds 83,264 parameters (test above): 12,288 of them its 2 routed experts (2 × 3·64·32), 70,976 the rest.
    # 16-bit gradients, ring all-reduces: the rest over dp = 8 sends 2·7/8 × 141,952 = 248,416 bytes in 14 steps;
    # the experts over 2 ranks send 2·1/2 × 24,576 = 24,576 bytes in 2 steps. (All over dp = 8 it was 291,424.)
    bw, alpha = link_bytes_per_s(cluster, "nvlink", FITTED), cluster.preset.latency_s
    expected = (248_416 + 24_576) / bw + (14 + 2) * alpha
    assert predict(SMALL, cluster, p).parts["dp"] == pytest.approx(expected)
    # Across two nodes, dp = 16 and ep = 8: each expert's 2 replicas sit 8 ranks apart, one a node
    wide = Plan(dp=16, ep=8, global_batch=16)
    layout = check_plan(SMALL, Cluster("H100-SXM", gpus=16), wide)
    assert (wide.expert_dp, layout.edp_link, layout.edp_per_node) == (2, "network", 1)


def test_all_to_all_bytes_by_hand():
    # b = 2 sequences of 16 tokens, tp = cp = 1: 32 tokens × top 2 = 64 copies of 64 values, 2 bytes, 3/4 off-rank
    assert all_to_all_bytes(SMALL, 2, 1, 1, 4) == 32 * 2 * 64 * 2 * 3 / 4 == 6144
    assert all_to_all_bytes(SMALL, 2, 1, 1, 4, bytes_per_value=1) == 3072  # an FP8 dispatch: half
    assert all_to_all_bytes(SMALL, 2, 1, 1, 1) == 0


def test_all_to_all_across_nodes_takes_the_slower_of_nvlink_and_the_nic():
    cluster, model = Cluster("H100-SXM", gpus=32), replace(SMALL, experts=16)
    p = Plan(dp=32, ep=16, global_batch=32)  # 16 ranks, 8 a node: 7 peers over NVLink, 8 over the NIC
    layout = check_plan(model, cluster, p)
    assert (layout.ep_link, layout.ep_per_node) == ("network", 8)
    nbytes = 15e6
    nvlink = link_bytes_per_s(cluster, "nvlink", FITTED)
    nic = group_bytes_per_s(cluster, "network", 1, FITTED)
    expected = max(nbytes * 7 / 15 / nvlink, nbytes * 8 / 15 / nic) + FITTED.network_us * 1e-6  # the network's α
    assert all_to_all_seconds(nbytes, cluster, p, layout, FITTED) == pytest.approx(expected)
    inside = Plan(dp=32, ep=8, global_batch=32)
    layout = check_plan(model, cluster, inside)
    assert all_to_all_seconds(nbytes, cluster, inside, layout, FITTED) == pytest.approx(
        nbytes / nvlink + cluster.preset.latency_s)


def test_the_step_charges_four_all_to_alls_a_block_and_micro_batch():
    cluster = Cluster("H100-SXM", gpus=8)
    p = Plan(dp=8, ep=8, global_batch=16, micro_batch=1)
    layout = check_plan(SMALL, cluster, p)
    pred = predict(SMALL, cluster, p)
    one = all_to_all_bytes(SMALL, 1, 1, 1, 8)
    # 2 micro-batches × 1 MoE block × (dispatch + combine) × (forward + backward)
    assert pred.parts[EXPERT_PART] == pytest.approx(2 * 1 * 2 * 2 * all_to_all_seconds(one, cluster, p, layout,
                                                                                        FITTED))
    assert pred.step_s == pytest.approx(sum(pred.parts.seconds.values()))
    fp8 = predict(SMALL, cluster, Plan(dp=8, ep=8, global_batch=16, fp8_dispatch=True))
    assert fp8.parts[EXPERT_PART] < pred.parts[EXPERT_PART]


def test_a_dense_model_has_no_expert_part():
    model, cluster = model_preset("1.7B").model, Cluster("A100-80GB", gpus=8)
    p = Plan(dp=8, global_batch=8)
    seconds = {"compute": 1.0}
    assert with_experts(seconds, model, cluster, p, check_plan(model, cluster, p), FITTED) is seconds


def test_capacity_factor_pads_the_routed_mlp():
    padded = replace(SMALL, capacity_factor=1.25)
    # routed MLP forward: 2 FLOPs × 3 matrices × 16 tokens × 64 × (2 × 32); a quarter of it again
    assert padding_flops(padded, 1) == 0.25 * 2 * 3 * 16 * 64 * 64
    assert padding_flops(SMALL, 1) == 0


def test_the_router_is_a_hidden_by_experts_product_per_token():
    # One sequence of 16 tokens, each a 64-wide vector times the 64 × 8 router: 2 · 16 · 64 · 8 = 16,384 FLOPs
    assert router_flops(SMALL, 1) == 16_384
    assert router_flops(model_preset("1.7B").model, 1) == 0
    # A step on 2 sequences, one MoE block (the other is dense): forward 32,768, backward twice that: 98,304;
    # full recomputation runs the forward again: 131,072
    assert step_flops(SMALL, 2) - training_flops(SMALL, 2) == 98_304
    assert step_flops(SMALL, 2, "full") - training_flops(SMALL, 2, "full") == 131_072
    dense = model_preset("1.7B").model
    assert step_flops(dense, 2, "full") == training_flops(dense, 2, "full")


def test_the_router_is_charged_to_the_model_flops_and_the_step():
    cluster = Cluster("H100-SXM", gpus=8)
    p = Plan(dp=8, global_batch=16, micro_batch=1)  # 2 micro-batches a rank, no pipeline
    pred = predict(SMALL, cluster, p)
    # 16 sequences × 3 passes × 16,384 FLOPs of the one MoE block's router = 786,432 beyond the dense count
    assert pred.model_flops == training_flops(SMALL, 16) + 786_432
    layout = check_plan(SMALL, cluster, p)
    base = step_seconds(SMALL, cluster, p, layout, FITTED)
    # 2 micro-batches × 3 passes × 1 MoE block × one micro-batch's router (16,384 FLOPs, tp = cp = 1)
    router = 2 * 3 * 1 * matmul_seconds(16_384, cluster, FITTED)
    assert pred.parts["compute"] - base["compute"] == pytest.approx(router)


def test_fp8_keeps_the_linear_inputs_in_one_byte():
    # QKV input, output projection input, MLP input (each s·b·h) and the down projection's input (s·b·f), halved
    s, h, f = 16, 64, 96
    assert fp8_saved_bytes(SMALL, 1, 1, False) == (3 * 2 * s * h + 2 * s * f) / 2 == 4608
    cluster = Cluster("H100-SXM", gpus=8)
    bf16 = predict(SMALL, cluster, Plan(dp=8, global_batch=8))
    fp8 = predict(SMALL, cluster, Plan(dp=8, global_batch=8, precision="fp8"))
    # both blocks (the dense one's MLP is 96 wide too), one micro-batch in flight
    assert bf16.memory.saved_activations - fp8.memory.saved_activations == pytest.approx(2 * 4608)


def test_the_planner_searches_expert_parallel_sizes():
    assert expert_options(SMALL, 8) == [1, 2, 4, 8]
    assert expert_options(SMALL, 6) == [1, 2]
    assert expert_options(model_preset("1.7B").model, 8) == [1]
    report = plan(SMALL, Cluster("H100-SXM", gpus=8), 16, zero=(0,), recompute=("none",))
    assert {c.plan.ep for c in report.ranked} == {1, 2, 4, 8}
    search = ExpertSearch(ep=(2, 8), fp8_dispatch=True)
    report = plan(SMALL, Cluster("H100-SXM", gpus=8), 16, experts=search, zero=(0,), recompute=("none",))
    assert {c.plan.ep for c in report.ranked} == {2, 8} and all(c.plan.fp8_dispatch for c in report.ranked)


def test_folding_the_experts_over_the_tensor_ranks():
    """tp 2 × dp 4 = 8 ranks a stage: ep 8 cannot lie in dp, but folded (etp 1) its 8 experts take one rank each."""
    model = replace(SMALL, experts=8)
    cluster = Cluster("H100-SXM", gpus=8)
    p = Plan(tp=2, dp=4, ep=8, etp=1, sequence_parallel=True, global_batch=8)
    layout = check_plan(model, cluster, p)
    assert (p.expert_tp, p.expert_dp, layout.ep_link) == (1, 1, "nvlink")
    assert stage_expert_parameters(model, p, layout, "first") == 1 * 3 * 64 * 32  # one whole expert a GPU


def test_overlapped_all_to_alls_hide_behind_the_matrix_products():
    cluster = Cluster("H100-SXM", gpus=8)
    exposed = predict(SMALL, cluster, Plan(dp=8, ep=8, global_batch=16))
    hidden = predict(SMALL, cluster, Plan(dp=8, ep=8, global_batch=16, ep_overlap=True))
    assert hidden.parts[EXPERT_PART] == pytest.approx(max(0.0, exposed.parts[EXPERT_PART] - exposed.parts["compute"]))
