"""The cluster model's physics against hand-worked examples: the attention kernel, the GPU generation's rates, the
node's network, uneven pipelines, mixtures of experts and FP8."""

import pytest

from d2lmp.model.cluster import Cluster, Plan, Transformer, predict

# Two blocks of a small GPT on one A100: b = 1, s = 512, h = 256, a = 4 heads.
SMALL = Transformer(layers=2, hidden=256, heads=4, seq=512, vocab=1000)
ONE = Cluster(gpu="A100-80GB", gpus=1)


def test_a_fused_attention_kernel_keeps_no_scores_and_recomputes_them():
    """Korthikanti et al.'s s×s tensors per block, 5·a·s²·b bytes (scores and softmax 2 bytes each, the dropout
    mask 1), are never written; the backward computes the attention core, 4·b·s²·h FLOPs a block, once more."""
    plan = Plan(micro_batch=1, global_batch=8)
    materialised, flash = predict(SMALL, ONE, plan), predict(SMALL, ONE, Plan(micro_batch=1, global_batch=8,
                                                                              attention="flash"))
    scores_per_block = 5 * 4 * 512**2 * 1
    assert materialised.memory.saved_activations - flash.memory.saved_activations == 2 * scores_per_block
    assert flash.hardware_flops - materialised.hardware_flops == 2 * 4 * 8 * 512**2 * 256
    assert flash.model_flops == materialised.model_flops
    assert flash.parts["memory_bound"] < materialised.parts["memory_bound"]
    assert flash.parts["compute"] > materialised.parts["compute"]


def test_full_recomputation_with_a_fused_kernel_rematerialises_no_scores():
    """The recompute buffer is one block's activations less what full recomputation keeps (its input, 2·s·b·h):
    with the fused kernel that leaves out the same 5·a·s²·b bytes."""
    full = Plan(micro_batch=1, global_batch=8, recompute="full")
    materialised = predict(SMALL, ONE, full).memory
    flash = predict(SMALL, ONE, Plan(micro_batch=1, global_batch=8, recompute="full", attention="flash")).memory
    assert materialised.saved_activations == flash.saved_activations
    assert materialised.buffers - flash.buffers == pytest.approx(5 * 4 * 512**2 * 1.05)  # and the allocator's 5 %


def test_an_unknown_attention_kernel_is_an_error():
    with pytest.raises(ValueError, match="attention must be one of"):
        predict(SMALL, ONE, Plan(global_batch=1, attention="tiled"))  # type: ignore[arg-type]
