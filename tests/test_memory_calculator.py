"""The memory calculator: hand-worked bytes, the planner's formulas for 1F1B, ZeRO's sharding, GPipe against 1F1B."""

from dataclasses import replace

import pytest

from d2lmp.model.cluster.hardware import Cluster
from d2lmp.model.cluster.layout import Plan, check_plan
from d2lmp.model.cluster.memory import ALLOWANCE_BYTES, FRAGMENTATION, memory_per_gpu
from d2lmp.model.cluster.presets import model_preset
from d2lmp.model.memory_calculator import MemorySetting, compare, in_flight, memory_by_part
from d2lmp.model.transformer_accounting import Transformer
from d2lmp.model.transformer_stage_memory import korthikanti_first_stage_bytes

TINY = Transformer(layers=4, hidden=8, heads=2, seq=4, vocab=16)
GPT3 = model_preset("175B").model


def test_a_tiny_model_by_hand():
    got = memory_by_part(TINY, MemorySetting())
    # 4 blocks of 12h² + 13h = 872 parameters, embeddings 16·8 + 4·8, final LayerNorm 2·8: 3,664 parameters
    assert (got.parameters, got.gradients, got.optimizer_state) == (2 * 3664, 2 * 3664, 12 * 3664)
    # per block s·b·h·(34 + 5·a·s/h) = 32·39; the embedding's dropout mask s·b·h; the output layer 4·s·b·h·(1 + V/h)
    assert got.saved_activations == 4 * 32 * 39 + 32 + 4 * 32 * 3
    rest = 16 * 3664 + got.saved_activations
    assert got.buffers == pytest.approx(ALLOWANCE_BYTES + FRAGMENTATION * rest)
    assert got.total == pytest.approx(rest + got.buffers)


def test_1f1b_is_the_planners_formula():
    setting = MemorySetting(tp=8, pp=8, dp=4, zero=1, sequence_parallel=True, recompute="selective",
                            micro_batch=2, microbatches=16)
    plan = Plan(tp=8, pp=8, dp=4, micro_batch=2, global_batch=4 * 2 * 16, zero=1, recompute="selective",
                sequence_parallel=True)
    layout = check_plan(GPT3, Cluster("H100", 256), plan)
    assert memory_by_part(GPT3, setting, 80e9) == memory_per_gpu(GPT3, plan, layout, 80e9)


def test_activations_are_korthikantis_first_stage():
    for mode, bar in compare(GPT3, MemorySetting(tp=8, pp=8, sequence_parallel=True), "recompute").items():
        assert bar.stage == "first"
        assert bar.saved_activations == pytest.approx(korthikanti_first_stage_bytes(
            GPT3.seq, 1, GPT3.hidden, GPT3.heads, GPT3.vocab, GPT3.layers, 8, 8, 1, mode))


def test_each_zero_stage_shards_one_more_part():
    bars = list(compare(GPT3, MemorySetting(tp=8, pp=4, dp=4), "zero").values())
    whole = bars[0]
    assert bars[1].optimizer_state == pytest.approx(whole.optimizer_state / 4)
    assert bars[2].gradients == pytest.approx(whole.gradients / 4) and bars[1].gradients == whole.gradients
    assert bars[3].parameters == pytest.approx(whole.parameters / 4) and bars[2].parameters == whole.parameters
    assert {b.saved_activations for b in bars} == {whole.saved_activations}


def test_gpipe_holds_every_micro_batch():
    one = MemorySetting(tp=8, sequence_parallel=True, microbatches=4)  # one stage: 1F1B holds one micro-batch
    assert memory_by_part(GPT3, replace(one, schedule="gpipe")).saved_activations == pytest.approx(
        4 * memory_by_part(GPT3, one).saved_activations)
    setting = MemorySetting(tp=8, pp=8, sequence_parallel=True, microbatches=32)
    one_f_one_b = memory_by_part(GPT3, setting)
    gpipe = memory_by_part(GPT3, replace(setting, schedule="gpipe"))
    # the first stage's 8 micro-batches become 32; the last stage's one becomes 32 and, with the logits, the fuller
    assert (one_f_one_b.stage, gpipe.stage) == ("first", "last")
    assert gpipe.saved_activations > one_f_one_b.saved_activations * 32 / 8
    assert [in_flight("gpipe", 4, 6, s) for s in range(4)] == [6] * 4
    assert [in_flight("1f1b", 4, 6, s) for s in range(4)] == [4, 3, 2, 1]
    assert [in_flight("1f1b", 4, 2, s) for s in range(4)] == [2, 2, 2, 1]


@pytest.mark.parametrize("setting", [MemorySetting(tp=5), MemorySetting(pp=200), MemorySetting(microbatches=0),
                                     MemorySetting(recompute="some")])  # type: ignore[arg-type]
def test_an_impossible_setting_says_why(setting):
    with pytest.raises(ValueError):
        memory_by_part(GPT3, setting)
