"""The CPU preset of the cluster model (model.cluster.cpu) and its calibration's arithmetic
(d2lmp.bench.cpu_calibration).

Made-up calibration numbers go through ``predict_cpu``, the cluster model's own ``predict``, and every part of
the step is checked against the model's formulas written out here (FLOPs, bytes and parameters from
``transformer_accounting``, their one home). No timing is asserted: the bridge's ratios are the benchmark's.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from d2lmp.bench.cpu_calibration import RankCalibration, cpu_calibration, gpt_matmuls, product_flops
from d2lmp.gpt import GPT, lm_loss, preset
from d2lmp.model import transformer_accounting as ta
from d2lmp.model.cluster import Cluster, Plan, gpu_preset
from d2lmp.model.cluster.cpu import (
    PHASES,
    CPUCalibration,
    cpu_cluster,
    cpu_preset,
    memory_passes_from,
    phases,
    predict_cpu,
)
from d2lmp.model.cluster.efficiency import FITTED, LATENCY_S, OPTIMIZER_BYTES_PER_PARAM
from d2lmp.model.cluster.hardware import LinkRate, latency_of, p2p_rate_of
from d2lmp.model.cluster.steptime import STEP_PARTS, link_bytes_per_s

MODEL = ta.Transformer(layers=2, hidden=8, heads=2, seq=4, vocab=16, tied_embeddings=False)
CAL = CPUCalibration(ranks=2, matmul_flops=1e9, memory_bytes_per_s=2e9, alpha_s=1e-4, allreduce_bytes_per_s=4e8,
                     p2p_bytes_per_s=8e8, memory_gb=4.0, memory_passes=3.0)
FLOPS, MEMORY, ALPHA, PASSES = 1e9, 2e9, 1e-4, 3.0
LINK, SEND = 4e8 * 2 / 4, 8e8 * 2 / 4  # in the model's 16-bit bytes: the ranks send float32
L, H, S, V = MODEL.layers, MODEL.hidden, MODEL.seq, MODEL.vocab


def _forward(b: int) -> float:
    return L * ta.layer_forward_flops(MODEL, b) + 2 * b * S * H * V


def _saved(b: int, t: int) -> float:
    return L * ta.activation_bytes_per_layer(MODEL, b, t) + 4 * b * S * V / t  # and the 32-bit logits of the loss


def _all_reduce(nbytes: float) -> float:  # a ring of two: 2(n-1)/n of the bytes, 2(n-1) steps of α
    return nbytes / LINK + 2 * ALPHA


def _tp_parameters() -> float:
    attention, mlp, norms = ta.layer_parameters(MODEL)
    whole = norms + 2 * H  # LayerNorms and the row-parallel biases stay whole
    return L * ((attention + mlp + norms - whole) / 2 + whole) + V * H / 2 + S * H + 2 * H + V * H / 2


def _parts(plan: Plan) -> dict[str, float]:
    parts = predict_cpu(MODEL, CAL, plan).parts.seconds
    return {k: v for k, v in parts.items() if v}


def test_data_parallelism_is_the_model_written_out():
    params = ta.parameter_count(MODEL).total
    parts = _parts(Plan(dp=2, micro_batch=2, global_batch=4, dp_overlap=False))
    assert parts == pytest.approx({"compute": 3 * _forward(2) / FLOPS,
                                   "memory_bound": 3 * PASSES * _saved(2, 1) / MEMORY, "dp": _all_reduce(2 * params),
                                   "optimizer_step": params * OPTIMIZER_BYTES_PER_PARAM / MEMORY}, rel=1e-12)


def test_tensor_parallelism_is_the_model_written_out():
    parts = _parts(Plan(tp=2, micro_batch=4, global_batch=4))
    messages = 4 * L + 2  # two all-reduces a block and pass, the embedding's forward, the head's backward
    assert parts == pytest.approx({"compute": 3 * _forward(4) / 2 / FLOPS,
                                   "memory_bound": 3 * PASSES * _saved(4, 2) / MEMORY,
                                   "tp": messages * _all_reduce(2 * 4 * S * H),
                                   "optimizer_step": _tp_parameters() * OPTIMIZER_BYTES_PER_PARAM / MEMORY}, rel=1e-12)


def test_the_pipeline_is_the_model_written_out():
    m = 4
    parts = _parts(Plan(pp=2, micro_batch=1, global_batch=4))
    # the last stage (a block, the logits and the loss) is the slower: m micro-batches, then one more of bubble
    per_micro_batch = 3 * (ta.layer_forward_flops(MODEL, 1) + 2 * S * H * V) / FLOPS + 3 * PASSES * (
        ta.activation_bytes_per_layer(MODEL, 1, 1) + 4 * S * V) / MEMORY
    first_stage = sum(ta.layer_parameters(MODEL)) + V * H + S * H
    assert parts == pytest.approx({
        "compute": m * 3 * (ta.layer_forward_flops(MODEL, 1) + 2 * S * H * V) / FLOPS,
        "memory_bound": m * 3 * PASSES * (ta.activation_bytes_per_layer(MODEL, 1, 1) + 4 * S * V) / MEMORY,
        "bubble": per_micro_batch, "pp_p2p": (2 * m + 2) * (ALPHA + 2 * S * H / SEND),  # a send at the send rate
        "optimizer_step": first_stage * OPTIMIZER_BYTES_PER_PARAM / MEMORY}, rel=1e-12)


def test_data_by_tensor_is_the_model_written_out():
    parts = _parts(Plan(tp=2, dp=2, micro_batch=2, global_batch=4, dp_overlap=False))
    assert parts == pytest.approx({"compute": 3 * _forward(2) / 2 / FLOPS,
                                   "memory_bound": 3 * PASSES * _saved(2, 2) / MEMORY,
                                   "tp": (4 * L + 2) * _all_reduce(2 * 2 * S * H),
                                   "dp": _all_reduce(2 * _tp_parameters()),
                                   "optimizer_step": _tp_parameters() * OPTIMIZER_BYTES_PER_PARAM / MEMORY}, rel=1e-12)


def test_the_preset_maps_each_measured_number_onto_a_gpu_figure():
    p = cpu_preset(CAL)
    assert (p.peak_flops, p.hbm_GBps, p.nvlink_GBps, p.network_GBps_per_gpu) == (1e9, 2.0, 0.2, 0.2)
    assert (p.latency_s, p.p2p_GBps, p.gpus_per_node, p.source) == (1e-4, 0.4, 2, ())
    cluster = cpu_cluster(CAL, 4)
    assert cluster.preset is cluster.custom and cluster.gpus == cluster.gpus_per_node == 4
    rate = link_bytes_per_s(cluster, "nvlink", FITTED)  # the fitted fractions scale the send rate alike
    assert isinstance(rate, LinkRate) and rate == pytest.approx(0.2e9 * FITTED.nvlink)
    assert latency_of(rate) == 1e-4 and p2p_rate_of(rate) == pytest.approx(0.4e9 * FITTED.nvlink)


def test_gpu_presets_keep_the_assumed_latency_and_a_send_at_the_bus_bandwidth():
    """NVLink keeps the presets' assumed α; across nodes the fitted one (``network_us``), or the presets' where a set
    of parameters has none (the CPU's)."""
    cluster = Cluster("A100-80GB", 16)
    rate = link_bytes_per_s(cluster, "network", FITTED)
    assert rate == cluster.network_bytes_per_s * FITTED.network
    assert latency_of(rate) == pytest.approx(FITTED.network_us * 1e-6) and p2p_rate_of(rate) == rate
    assert latency_of(link_bytes_per_s(cluster, "network", replace(FITTED, network_us=None))) == LATENCY_S
    assert latency_of(link_bytes_per_s(cluster, "nvlink", FITTED)) == LATENCY_S
    assert latency_of(1e9) == LATENCY_S and p2p_rate_of(1e9) == 1e9  # a plain float is a link of the defaults
    assert gpu_preset("A100").latency_s == LATENCY_S and gpu_preset("A100").p2p_GBps is None
    with pytest.raises(ValueError, match="unknown GPU"):
        Cluster("CPU rank", 2)  # a name alone is still looked up


def test_memory_passes_invert_the_models_own_term():
    one_rank = Plan(micro_batch=2, global_batch=2)
    target = phases(predict_cpu(MODEL, replace(CAL, memory_passes=2.5), one_rank))["forward+backward"]
    assert memory_passes_from(MODEL, CAL, one_rank, target) == pytest.approx(2.5, rel=1e-12)
    assert memory_passes_from(MODEL, CAL, one_rank, 1e-12) == 0.0  # faster than the products alone: no passes


def test_phases_take_every_part_of_the_step_once():
    assert sorted(p for parts in PHASES.values() for p in parts) == sorted(STEP_PARTS)
    prediction = predict_cpu(MODEL, CAL, Plan(tp=2, dp=2, micro_batch=2, global_batch=4, dp_overlap=False))
    assert sum(phases(prediction).values()) == pytest.approx(prediction.step_s, rel=1e-12)


@pytest.mark.parametrize("change, message", [({"ranks": 0}, "ranks"), ({"matmul_flops": 0.0}, "matmul_flops"),
                                             ({"alpha_s": -1e-6}, "alpha_s"), ({"memory_passes": -1.0}, "passes")])
def test_a_calibration_rejects_impossible_numbers(change, message):
    with pytest.raises(ValueError, match=message):
        replace(CAL, **change)


def test_the_calibrations_products_are_the_flops_the_model_counts():
    for name in ("tiny", "small"):
        config = preset(name, tied=False)
        block, logits = gpt_matmuls(config, 3)
        counted = config.layers * product_flops(block) + product_flops(logits)
        assert counted == 3 * ta.forward_flops(config.shape(), 3)


def test_the_calibration_is_read_off_the_measurements():
    """Records made from known α, β, send rate and passes give those numbers back: nothing is typed in."""
    config = preset("tiny", tied=False)
    sizes, alpha, beta, send = (2**14, 2**18, 2**22), 50e-6, 1 / 1e9, 2e9
    params = sum(p.numel() for p in GPT(config).parameters())
    true = CPUCalibration(ranks=2, matmul_flops=4e9, memory_bytes_per_s=OPTIMIZER_BYTES_PER_PARAM * params / 0.01,
                          alpha_s=alpha, allreduce_bytes_per_s=1e9, p2p_bytes_per_s=send, memory_gb=1.0,
                          memory_passes=1.5)
    forward_backward = phases(predict_cpu(config.shape(), true, Plan(micro_batch=2, global_batch=2)))[
        "forward+backward"]
    flops = 3 * ta.forward_flops(config.shape(), 2)

    def rank(slow: float) -> RankCalibration:
        return RankCalibration(flops, flops / 4e9 * slow, forward_backward * slow, 0.01 * slow, params,
                               tuple(2 * alpha + s * beta for s in sizes), sizes,
                               tuple(20e-6 + s / send for s in sizes), sizes)

    cal = cpu_calibration([rank(1.0), rank(0.5)], config, 2)  # the slower rank's rates
    assert cal.ranks == 2 and cal.matmul_flops == pytest.approx(4e9) and cal.alpha_s == pytest.approx(alpha)
    assert cal.allreduce_bytes_per_s == pytest.approx(1e9) and cal.p2p_bytes_per_s == pytest.approx(send)
    assert cal.memory_bytes_per_s == pytest.approx(true.memory_bytes_per_s)
    assert cal.memory_passes == pytest.approx(1.5)


def test_the_bridges_gradients_live_in_one_flat_buffer():
    from d2lmp.bench.cpu_calibration import flat_gradients

    config = preset("tiny", tied=False)
    model, reference = GPT(config), GPT(config)
    params = list(model.parameters())
    flat = flat_gradients(params)
    x, y = (torch.randint(0, config.vocab, (2, config.seq), generator=torch.Generator().manual_seed(i))
            for i in range(2))
    torch.autograd.backward(lm_loss(model(x), y))
    torch.autograd.backward(lm_loss(reference(x), y))
    expected = torch.cat([p.grad.reshape(-1) for p in reference.parameters()])
    torch.testing.assert_close(flat, expected)  # backward wrote into the buffer, not into new tensors
    flat.zero_()
    assert all(p.grad.abs().sum() == 0 for p in params)
