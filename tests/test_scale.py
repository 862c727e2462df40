"""d2lmp.model.cluster's interface, its presets, its bad-input errors, and the identities its step and memory obey."""

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from d2lmp.bibliography import SOURCES
from d2lmp.model import transformer_accounting as ta
from d2lmp.model import transformer_stage_memory as tsm
from d2lmp.model.cluster import (
    GPU_PRESETS,
    MODEL_PRESETS,
    Cluster,
    Plan,
    Transformer,
    gpu_preset,
    model_preset,
    predict,
)
from d2lmp.model.cluster.layout import check_plan
from d2lmp.model.cluster.memory import memory_per_gpu, stage_activation_bytes, stage_parameters, state_bytes
from d2lmp.model.cluster.predict import predict_checked
from d2lmp.model.cluster.steptime import STEP_PARTS
from d2lmp.model.training_state import OPTIMIZERS, STATE_PARTS

ROOT = Path(__file__).resolve().parents[1]
GPT3 = Transformer(layers=96, hidden=12288, heads=96, seq=2048, vocab=51200, ffn=None, kv_heads=None,
                   gated_mlp=False)
A100 = Cluster(gpu="A100-80GB", gpus=1024, gpus_per_node=8, nvlink_GBps=None, network_GBps_per_gpu=None)
MEGATRON = Plan(tp=8, pp=8, dp=16, cp=1, micro_batch=1, global_batch=1536, zero=0, recompute="full",
                sequence_parallel=False, interleave=1)


def test_predict_checked_is_predict_given_the_layout_and_memory_it_computes_first():
    plans = [MEGATRON, replace(MEGATRON, zero=1, recompute="selective", sequence_parallel=True, interleave=2)]
    for p in plans:
        layout = check_plan(GPT3, A100, p)
        memory = memory_per_gpu(GPT3, p, layout, A100.preset.memory_bytes)
        assert predict_checked(GPT3, A100, p, layout, memory) == predict(GPT3, A100, p)


def test_gpu_preset_remembers_a_name_and_still_refuses_an_unknown_one():
    assert gpu_preset("a100 80gb") is gpu_preset("A100-80GB") is GPU_PRESETS["A100-80GB"]
    for _ in range(2):
        with pytest.raises(ValueError, match="unknown GPU"):
            gpu_preset("no-such-gpu")


def test_the_interface_imports_and_predicts_without_torch():
    code = ("import sys\n"
            "from d2lmp.model.cluster import Transformer, Cluster, Plan, predict, plan\n"
            "import d2lmp.model.cluster.report, d2lmp.model.cluster.calibration\n"
            "m = Transformer(layers=4, hidden=256, heads=4, seq=512, vocab=1000)\n"
            "c = Cluster(gpu='H100-SXM', gpus=8)\n"
            "r = predict(m, c, Plan(tp=2, pp=2, dp=2, micro_batch=1, global_batch=16))\n"
            "assert r.step_s > 0 and plan(m, c, 16).best is not None\n"
            "assert 'torch' not in sys.modules, sorted(k for k in sys.modules if k.startswith('torch'))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_transformer_is_the_accounting_class():
    assert Transformer is ta.Transformer


def test_the_issues_example_is_self_consistent():
    r = predict(GPT3, A100, MEGATRON)
    assert r.step_s == pytest.approx(sum(r.parts.seconds.values()), rel=1e-12)
    assert set(r.parts.seconds) == set(STEP_PARTS) and r.parts["tp"] > 0 and r.parts["bubble"] > 0
    assert r.tokens_per_s == pytest.approx(1536 * 2048 / r.step_s)
    assert r.hardware_flops == pytest.approx(ta.narayanan_flops(1536, 2048, 96, 12288, 51200), rel=1e-12)
    assert r.model_flops == ta.training_flops(GPT3, 1536, "none") < r.hardware_flops
    assert r.model_tflops_per_gpu == pytest.approx(r.model_flops / r.step_s / 1024 / 1e12)
    assert r.mfu == pytest.approx(r.model_tflops_per_gpu / 312)
    assert r.hfu == pytest.approx(r.hardware_tflops_per_gpu / 312)
    assert r.memory_per_gpu_bytes == pytest.approx(sum(r.parts.bytes.values())) and r.fits
    assert 0.3 < r.hfu < 0.6  # Narayanan et al. report 44-52 % of peak for this family of runs


def test_recomputation_costs_time_but_not_model_flops():
    steps = {r: predict(GPT3, A100, replace(MEGATRON, recompute=r)) for r in ta.RECOMPUTE}
    assert steps["none"].step_s < steps["selective"].step_s < steps["full"].step_s
    assert len({round(s.model_tflops_per_gpu * s.step_s, 6) for s in steps.values()}) == 1
    assert steps["none"].memory.saved_activations > steps["selective"].memory.saved_activations
    assert steps["selective"].memory.saved_activations > steps["full"].memory.saved_activations


@pytest.mark.parametrize("changes, words", [
    (dict(dp=8), "tp·pp·dp·cp"),
    (dict(tp=16, dp=16, pp=8), "the cluster has 1024"),
    (dict(global_batch=1000), "global batch"),
    (dict(micro_batch=5), "does not split"),
    (dict(interleave=13), "layers \\(96\\) are too few"),
    (dict(zero=4), "ZeRO stage"),
    (dict(recompute="some"), "recompute"),
    (dict(tp=8, pp=1, dp=128, zero=3, interleave=2), "needs a pipeline"),
    (dict(global_batch=1544, dp=8, pp=16, interleave=2), "multiple of pp"),
])
def test_bad_plans_say_what_is_wrong(changes, words):
    with pytest.raises(ValueError, match=words):
        predict(GPT3, A100, replace(MEGATRON, **changes))


def test_heads_and_sequences_that_do_not_split_are_value_errors():
    m = Transformer(layers=8, hidden=768, heads=12, seq=1000, vocab=1000, kv_heads=3)
    c = Cluster(gpu="A100-40GB", gpus=8)
    with pytest.raises(ValueError, match=r"heads \(12\) are not divisible by tp \(8\)"):
        predict(m, c, Plan(tp=8, global_batch=8))
    with pytest.raises(ValueError, match="key/value heads"):
        predict(m, c, Plan(tp=4, dp=2, global_batch=8))
    with pytest.raises(ValueError, match="sequence"):
        predict(m, c, Plan(cp=8, global_batch=8))
    with pytest.raises(ValueError, match="unknown GPU"):
        Cluster(gpu="B300", gpus=8)
    with pytest.raises(ValueError, match="multiple of gpus_per_node"):
        Cluster(gpu="H200", gpus=12)


def test_gpu_presets_are_sourced():
    assert {"V100-32GB", "A100-40GB", "A100-80GB", "H100-SXM", "H200"} <= set(GPU_PRESETS)
    for preset in GPU_PRESETS.values():
        assert preset.source and all(k in SOURCES for k in preset.source), preset.name
    a100 = gpu_preset("a100 80gb")
    assert (a100.peak_tflops, a100.nvlink_GBps, a100.network_GBps_per_gpu) == (312, 300, 25)
    assert gpu_preset("H100").network_GBps_per_gpu == 50 and gpu_preset("H200").memory_gb == 141
    assert gpu_preset("V100").memory_gb == 32 and gpu_preset("V100-32GB").network_GBps_per_gpu == 6.25


def test_cluster_overrides_change_the_links():
    slow = Cluster(gpu="A100-80GB", gpus=1024, network_GBps_per_gpu=5.0)
    assert predict(GPT3, slow, MEGATRON).parts["dp"] > predict(GPT3, A100, MEGATRON).parts["dp"]
    fast = Cluster(gpu="A100-80GB", gpus=1024, nvlink_GBps=3000.0)
    assert predict(GPT3, fast, MEGATRON).parts["tp"] < predict(GPT3, A100, MEGATRON).parts["tp"] / 2


def test_model_presets_have_their_published_sizes():
    sizes = {"1.7B": 1.7, "18B": 18.4, "1T": 1008.0, "175B": 174.6, "llama3-8b": 8.0, "llama3-70b": 70.6,
             "llama3-405b": 405.8}
    for name, billions in sizes.items():
        assert ta.parameter_count(MODEL_PRESETS[name].model).total / 1e9 == pytest.approx(billions, abs=0.06)
    assert model_preset("GPT-3") is MODEL_PRESETS["175B"] and model_preset("529.6b") is MODEL_PRESETS["530B"]
    assert all(k in SOURCES for p in MODEL_PRESETS.values() for k in p.source)
    with pytest.raises(ValueError, match="unknown model"):
        model_preset("7T")


def test_model_presets_keep_dropout_masks_only_where_the_model_definition_has_dropout():
    # Megatron's GPTs train with dropout 0.1; the released Llama 3, DeepSeek-V3 and Mixtral definitions have no
    # dropout layer (meta-llama/llama3 llama/model.py, deepseek-ai/DeepSeek-V3 inference/model.py, mistral-inference)
    without = {"llama3-8b", "llama3-70b", "llama3-405b", "deepseek-v3", "mixtral-8x7b"}
    assert {name for name, p in MODEL_PRESETS.items() if not p.model.dropout} == without
    repos = {"llama3-405b": "meta_llama3_repo", "deepseek-v3": "deepseek_v3_repo",
             "mixtral-8x7b": "mistral_inference_repo"}
    assert all(key in MODEL_PRESETS[name].source for name, key in repos.items())
    llama = MODEL_PRESETS["llama3-405b"].model
    with_masks = ta.activation_bytes_per_layer(replace(llama, dropout=True), tp=8, sequence_parallel=True)
    assert ta.activation_bytes_per_layer(llama, tp=8, sequence_parallel=True) < with_masks


def test_pipeline_bubble_is_p_minus_1_over_v_m_of_the_steady_state():
    for v in (1, 2, 3):
        plan = replace(MEGATRON, pp=16, tp=8, dp=8, interleave=v)
        r = predict(GPT3, A100, plan)
        steady = sum(r.parts[k] for k in ("compute", "memory_bound", "tp", "cp"))
        assert r.parts["bubble"] == pytest.approx(steady * 15 / (v * r.layout.microbatches), rel=1e-12)


def test_zero_stages_shard_the_state():
    params = stage_parameters(GPT3, MEGATRON, check_plan(GPT3, A100, MEGATRON), "first")
    whole = [params * OPTIMIZERS["adam_mixed"].state_per_parameter[k] for k in STATE_PARTS]
    for zero, sharded in ((0, ()), (1, (2,)), (2, (1, 2)), (3, (0, 1, 2))):
        got = state_bytes(params, zero, 16)
        assert got == pytest.approx([w / 16 if i in sharded else w for i, w in enumerate(whole)])


def test_parameters_per_gpu_add_up_to_the_model():
    m = GPT3
    for tp in (1, 8):
        plan = Plan(tp=tp, dp=8 // tp, global_batch=8)
        cluster = Cluster(gpu="A100-80GB", gpus=8)
        got = stage_parameters(m, plan, check_plan(m, cluster, plan), "first")
        count = ta.parameter_count(m)
        whole = m.layers * (count.norms + 2 * m.hidden) + count.position_embedding + count.final_norm
        assert got == pytest.approx((count.total - whole) / tp + whole, rel=1e-12)


@pytest.mark.parametrize("recompute", ta.RECOMPUTE)
def test_activation_memory_is_korthikantis_closed_form(recompute):
    m = MODEL_PRESETS["530B"].model
    for pp, v in ((1, 1), (35, 1), (35, 3)):
        plan = Plan(tp=8, pp=pp, dp=1, micro_batch=1, global_batch=pp * 8, recompute=recompute,
                    sequence_parallel=True, interleave=v)
        cluster = Cluster(gpu="A100-80GB", gpus=8 * pp)
        got = stage_activation_bytes(m, plan, check_plan(m, cluster, plan), "first")
        assert got == pytest.approx(tsm.korthikanti_first_stage_bytes(m.seq, 1, m.hidden, m.heads, m.vocab, m.layers,
                                                                     8, pp, v, recompute), rel=1e-12)


def test_the_logits_at_the_losss_peak_take_logit_bytes_each_on_the_last_stage_only():
    """Four more bytes a logit (an FP32 copy beside the kept softmax, as nanotron's loss holds them) add
    4·s·b·V/t to the last stage's activations, nothing to the first stage's; zero bytes are refused."""
    m = MODEL_PRESETS["530B"].model
    plan = Plan(tp=8, pp=35, dp=1, micro_batch=2, global_batch=70, sequence_parallel=True)
    cluster = Cluster(gpu="A100-80GB", gpus=8 * 35)
    layout = check_plan(m, cluster, plan)
    eight = replace(plan, logit_bytes=8)
    extra = 4 * m.seq * 2 * m.vocab / 8
    assert (stage_activation_bytes(m, eight, layout, "last") - stage_activation_bytes(m, plan, layout, "last")
            == pytest.approx(extra, rel=1e-12))
    assert stage_activation_bytes(m, eight, layout, "first") == stage_activation_bytes(m, plan, layout, "first")
    with pytest.raises(ValueError, match="logit_bytes"):
        check_plan(m, cluster, replace(plan, logit_bytes=0))


def test_more_of_a_link_or_a_gpu_never_slows_a_step():
    base = predict(GPT3, A100, MEGATRON)
    for changes in (dict(nvlink_GBps=600.0), dict(network_GBps_per_gpu=50.0)):
        assert predict(GPT3, replace(A100, **changes), MEGATRON).step_s < base.step_s
    h100 = predict(GPT3, replace(A100, gpu="H100-SXM"), MEGATRON)
    assert h100.step_s < base.step_s / 2 and h100.mfu < base.mfu  # three times the FLOP/s, twice the bandwidth
