"""The communication roofline counts the cost model's own FLOPs and bytes, its intensities are the closed forms its
docstring derives, its crossings sit exactly on the ridge, and its claims about GPT-3 hold (or are stated as they
come out)."""

import math
from dataclasses import replace

import pytest

from d2lmp.model.cluster import Cluster, Plan, model_preset
from d2lmp.model.cluster import steptime as S
from d2lmp.model.cluster.comm_roofline import (
    LINKS,
    STRATEGIES,
    context_parallel_point,
    crossing,
    data_parallel_point,
    expert_parallel_point,
    link_roof,
    moe_data_parallel_point,
    pipeline_point,
    plan_points,
    strategy_point,
    tensor_parallel_point,
    zero3_point,
)
from d2lmp.model.cluster.efficiency import FITTED
from d2lmp.model.cluster.layout import check_plan
from d2lmp.model.cluster.memory import stage_parameters
from d2lmp.model.transformer_accounting import (
    Transformer,
    attention_core_flops,
    narayanan_parameters,
    parameter_count,
    training_flops,
)
from d2lmp.topology import pcie_bandwidth_gbs

GPT3 = model_preset("175B").model
LLAMA = model_preset("llama3-70b").model
NVLINK, NETWORK = link_roof("A100-80GB", "nvlink"), link_roof("A100-80GB", "network")


def _every_point(model, roof):
    return [data_parallel_point(model, roof, 8, 4), data_parallel_point(model, roof, 64, 1.5, "full"),
            zero3_point(model, roof, 16, 2), zero3_point(model, roof, 16, 2, "full"),
            tensor_parallel_point(model, roof, 8, 2), tensor_parallel_point(model, roof, 4, 1, "selective"),
            tensor_parallel_point(model, roof, 8, 1, "full"), pipeline_point(model, roof, 8, 1, tp=8),
            pipeline_point(model, roof, 4, 2, tp=2, interleave=2, scatter_gather=False, recompute="full"),
            context_parallel_point(model, roof, 4, 1, tp=2), expert_parallel_point(model, roof, 8, 2, top_k=2)]


@pytest.mark.parametrize("model", [GPT3, LLAMA], ids=["gpt3", "llama3-70b"])
def test_intensity_times_bytes_is_flops_and_the_knob_law_holds(model):
    for point in _every_point(model, NETWORK):
        assert point.intensity * point.bytes == pytest.approx(point.flops, rel=1e-12)
        assert point.per_knob * point.value + point.fixed == pytest.approx(point.intensity, rel=1e-12), point.label
        assert point.attainable_flops == pytest.approx(min(NETWORK.flops_per_s, point.intensity * NETWORK.bytes_per_s))


def test_ridges_are_the_fitted_rates():
    """The A100's largest measured matmul, 271.2 TFLOP/s (Bekman's table), × the fitted share of it."""
    assert NVLINK.ridge == pytest.approx(271.2e12 * FITTED.gemm / (300e9 * FITTED.nvlink))
    assert NETWORK.ridge == pytest.approx(271.2e12 * FITTED.gemm / (25e9 * FITTED.network))
    peak = link_roof("A100-80GB", "nvlink", efficiency=None)
    assert (peak.flops_per_s, peak.bytes_per_s, peak.ridge) == (312e12, 300e9, 1040.0)
    pcie = link_roof("H100-SXM", "pcie")
    assert pcie.bytes_per_s == pcie_bandwidth_gbs(5, 16) * 1e9 and pcie.link_fraction == 1.0
    assert "fitted" in NVLINK.note and "specification" in pcie.note


def test_bad_inputs_say_what_is_wrong():
    with pytest.raises(ValueError, match="link must be one of"):
        link_roof("A100-80GB", "ethernet")
    with pytest.raises(ValueError, match="no PCIe generation"):
        link_roof("V100-32GB", "pcie")
    with pytest.raises(ValueError, match="at least 2 ranks"):
        tensor_parallel_point(GPT3, NVLINK, 1)
    with pytest.raises(ValueError, match="sequences must be positive"):
        data_parallel_point(GPT3, NETWORK, 8, 0)
    with pytest.raises(ValueError, match="does not split"):
        context_parallel_point(GPT3, NVLINK, 3)
    with pytest.raises(ValueError, match="recompute"):
        zero3_point(GPT3, NVLINK, 8, 1, "some")
    with pytest.raises(ValueError, match="strategy must be one of"):
        strategy_point("xp", GPT3, NVLINK, 8)
    with pytest.raises(ValueError, match="at least 2 ranks"):
        expert_parallel_point(GPT3, NETWORK, 1)
    with pytest.raises(ValueError, match="top_k"):
        expert_parallel_point(GPT3, NETWORK, 8, top_k=3)


def test_the_gpt_closed_forms_of_the_docstring():
    h, s, layers = GPT3.hidden, GPT3.seq, GPT3.layers
    for t in (2, 8, 16):
        assert tensor_parallel_point(GPT3, NVLINK, t, 3).intensity == pytest.approx((18 * h + 3 * s) / (4 * (t - 1)))
    for p, t, v in ((8, 1, 1), (16, 8, 1), (8, 8, 3)):
        expected = layers / p * (18 * h + 3 * s) / v
        assert pipeline_point(GPT3, NETWORK, p, 2, tp=t, interleave=v).intensity == pytest.approx(expected)
        no_split = pipeline_point(GPT3, NETWORK, p, 2, tp=t, interleave=v, scatter_gather=False)
        assert no_split.intensity == pytest.approx(expected / t)
    for model in (GPT3, LLAMA):
        for c in (2, 4, 8):
            point = context_parallel_point(model, NVLINK, c, 2, tp=4)
            assert point.intensity == pytest.approx(model.seq * model.hidden / ((c - 1) * model.kv_hidden))
    for model, gated in ((GPT3, 1.0), (LLAMA, 1.5)):  # the tokens and top-k cancel: only the expert's width counts
        for n, b, k in ((2, 1, 1), (8, 4, 2), (64, 2, 1)):
            point = expert_parallel_point(model, NETWORK, n, b, top_k=k)
            assert point.intensity == pytest.approx(1.5 * gated * model.ffn_size * n / (n - 1))
            assert point.bytes == pytest.approx(4 * k * 2 * b * model.seq * model.hidden * (n - 1) / n)
    psi = parameter_count(GPT3).total
    for d, b in ((8, 192), (1024, 1.5)):
        assert zero3_point(GPT3, NETWORK, d, b).intensity == pytest.approx(
            b * training_flops(GPT3, 1) / (6 * psi * (d - 1) / d))
        assert zero3_point(GPT3, NETWORK, d, b, "full").intensity == pytest.approx(
            b * training_flops(GPT3, 1, "full") / (8 * psi * (d - 1) / d))


def test_the_data_parallel_crossing_is_narayanans_closed_form():
    """Tokens a replica needs: ridge · 4Ψ(d−1)/d over the model FLOPs per token, both in Narayanan et al.'s forms."""
    h, s, layers, vocab = GPT3.hidden, GPT3.seq, GPT3.layers, GPT3.vocab
    psi = narayanan_parameters(layers, h, vocab, s) + 2 * h  # their count leaves out the final LayerNorm
    per_token = 72 * layers * h**2 * (1 + s / (6 * h) + vocab / (12 * layers * h))  # 3/4 of eq. (3) on the layers
    for roof in (NVLINK, NETWORK):
        for d in (2, 8, 1024):
            point = data_parallel_point(GPT3, roof, d, 4)
            closed = roof.ridge * 4 * psi * (d - 1) / d / per_token
            assert point.crossing == pytest.approx(closed, rel=1e-9)
            # the rule of thumb: about two thirds of the ridge in tokens (6Ψ FLOPs a token, 4Ψ bytes)
            assert 0.6 < point.crossing / (roof.ridge * (d - 1) / d) < 2 / 3


def test_the_crossing_sits_on_the_ridge():
    dp = data_parallel_point(GPT3, NETWORK, 16, 2)
    at = data_parallel_point(GPT3, NETWORK, 16, dp.crossing / GPT3.seq)
    assert at.intensity == pytest.approx(at.ridge, rel=1e-12)
    assert data_parallel_point(GPT3, NETWORK, 16, 1.01 * dp.crossing / GPT3.seq).bound == "compute"
    assert data_parallel_point(GPT3, NETWORK, 16, 0.99 * dp.crossing / GPT3.seq).bound == "communication"
    # tensor parallelism: a GPT of the crossing's hidden size per rank (same proportions) sits on the ridge
    tp = tensor_parallel_point(GPT3, NETWORK, 8)
    wide = Transformer(layers=1, hidden=round(tp.crossing * 8), heads=1, seq=GPT3.seq, vocab=GPT3.vocab)
    assert tensor_parallel_point(wide, NETWORK, 8).intensity == pytest.approx(NETWORK.ridge, rel=1e-3)
    # a roof so low that the attention core alone clears it: any hidden size does
    assert crossing(replace(tp, roof=replace(NETWORK, flops_per_s=1.0))) == 0.0


def test_the_bytes_and_flops_are_the_cost_models(monkeypatch):
    """With no per-message latency, the cost model's seconds are the roofline's bytes over the link and FLOPs over
    the matrix rate, term by term."""
    monkeypatch.setattr(S, "latency_of", lambda bandwidth: 0.0)
    cluster = Cluster("A100-80GB", 256)
    plan = Plan(tp=8, pp=4, dp=4, cp=2, micro_batch=2, global_batch=64, interleave=2)
    layout = check_plan(GPT3, cluster, plan)
    first = S.stage_cost(GPT3, cluster, plan, layout, FITTED, "first")
    n = layout.layers_per_stage
    tp = tensor_parallel_point(GPT3, NVLINK, 8, 2)
    embedding = S.all_reduce_seconds(S.activation_message_bytes(GPT3, 2, 2), 8, NVLINK.bytes_per_s)
    assert (first.part("tp") - embedding) / n == pytest.approx(tp.bytes / 2 / NVLINK.bytes_per_s)  # cp halves both
    assert first.part("compute") / n == pytest.approx(tp.flops / 2 / NVLINK.flops_per_s)
    cp = context_parallel_point(GPT3, NETWORK, 2, 2, tp=8)
    ring = (2 - 1) * S.kv_chunk_bytes(GPT3, 2, 8, 2) / NETWORK.bytes_per_s
    core = attention_core_flops(GPT3, 2) / 16 / NETWORK.flops_per_s
    assert cp.bytes / NETWORK.bytes_per_s == pytest.approx(3 * ring) and cp.flops / NETWORK.flops_per_s == \
        pytest.approx(3 * core)
    p2p = S.pipeline_p2p_seconds(GPT3, cluster, plan, layout, FITTED)
    pp = pipeline_point(GPT3, NETWORK, 4, 2, tp=8, interleave=2)
    one = S.activation_message_bytes(GPT3, 2, 2) / 8 / NETWORK.bytes_per_s
    gather = S.gather_seconds(S.activation_message_bytes(GPT3, 2, 2), 8, NVLINK.bytes_per_s)
    per_microbatch = (p2p / (one + gather) - 2 * (plan.pp - 1)) / layout.microbatches
    assert per_microbatch * one == pytest.approx(pp.bytes / 2 / NETWORK.bytes_per_s)  # cp halves the message
    whole = Plan(dp=8, global_batch=8, zero=0, dp_overlap=False)
    whole_cluster = Cluster("A100-80GB", 8)
    whole_layout = check_plan(GPT3, whole_cluster, whole)
    params = stage_parameters(GPT3, whole, whole_layout, "first")
    assert params == parameter_count(GPT3).total
    dp_seconds, _ = S.data_parallel_seconds(GPT3, whole_cluster, whole, whole_layout, FITTED, params,
                                            S.stage_cost(GPT3, whole_cluster, whole, whole_layout, FITTED, "first"))
    assert dp_seconds * NVLINK.bytes_per_s == pytest.approx(data_parallel_point(GPT3, NVLINK, 8, 1).bytes)


def test_gpt3_tensor_parallelism_is_compute_bound_on_nvlink_not_across_nodes():
    point_nv, point_ib = tensor_parallel_point(GPT3, NVLINK, 8), tensor_parallel_point(GPT3, NETWORK, 8)
    assert point_nv.bound == "compute" and point_ib.bound == "communication"
    assert point_nv.crossing < GPT3.hidden / 8 < point_ib.crossing
    assert tensor_parallel_point(GPT3, NETWORK, 16).bound == "communication"  # 16 ranks span two nodes


def test_megatrons_gpt3_plan_is_compute_bound_on_every_link_it_crosses():
    """tp 8 in a node, pipeline and data parallelism across nodes: every point right of its ridge."""
    cluster = Cluster("A100-80GB", 1024)
    plan = Plan(tp=8, pp=16, dp=8, micro_batch=1, global_batch=1536, recompute="full", dp_overlap=False)
    points = {p.strategy: p for p in plan_points(GPT3, cluster, plan)}
    assert set(points) == {"tp", "pp", "dp"}
    assert (points["tp"].roof.link, points["pp"].roof.link, points["dp"].roof.link) == ("nvlink", "network",
                                                                                         "network")
    assert all(p.bound == "compute" for p in points.values())
    assert points["dp"].value == 1536 / 8 * GPT3.seq


def test_zero3_on_table2_is_communication_bound_and_falls_with_the_batch():
    """Narayanan et al. (2021), Table 2: ZeRO-3 without model parallelism, 4, 2, 1 sequences a GPU."""
    points = [zero3_point(GPT3, NETWORK, d, b, "full") for d, b in ((384, 4), (768, 2), (1536, 1))]
    assert all(p.bound == "communication" for p in points)
    fractions = [p.fraction for p in points]
    assert fractions[0] / fractions[1] == pytest.approx(2 * (767 / 768) / (383 / 384))
    assert math.isclose(fractions[1] / fractions[2], 2 * (1535 / 1536) / (767 / 768))


def test_every_strategy_and_link_has_a_point():
    for strategy in STRATEGIES:
        for link in LINKS:
            point = strategy_point(strategy, GPT3, link_roof("A100-80GB", link), 8, 2)
            assert point.strategy == strategy and point.roof.link == link and point.bound in ("compute",
                                                                                              "communication")
            assert point.needed.startswith(point.knob)


def test_the_exercises_formula_is_the_librarys():
    from d2lmp.exercises.training_at_scale import tp_intensity
    from d2lmp.model.cluster.published import gpt

    for h, s, t in ((12288, 2048, 8), (4096, 4096, 2), (25600, 2048, 16)):
        point = tensor_parallel_point(gpt(2, h, h // 128, seq=s), NETWORK, t)
        assert tp_intensity(h, s, t) == pytest.approx(point.intensity, rel=1e-12)


def test_experts_inflate_the_tokens_data_parallelism_needs_by_e_over_k():
    dense = moe_data_parallel_point(GPT3, NETWORK, 64, 4096, 1, 1)
    for experts, top_k in ((8, 2), (256, 8)):
        point = moe_data_parallel_point(GPT3, NETWORK, 64, 4096, experts, top_k)
        assert point.crossing == pytest.approx(dense.crossing * experts / top_k)
    # the experts' FLOPs and gradient bytes, counted by hand: 3 passes of 2·2·h·f a token, k experts; 2 bytes a weight
    h, f = GPT3.hidden, GPT3.ffn_size
    point = moe_data_parallel_point(GPT3, NETWORK, 2, 100, 8, 2)
    assert point.flops == pytest.approx(100 * 3 * 2 * 2 * 2 * h * f)
    assert point.bytes == pytest.approx(2 * (2 - 1) / 2 * 2 * 8 * (2 * h * f + h + f))
    with pytest.raises(ValueError):
        moe_data_parallel_point(GPT3, NETWORK, 64, 4096, 2, 3)
