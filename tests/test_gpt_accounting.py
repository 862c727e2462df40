"""The formulas of transformer_accounting, checked on the running GPT: parameters and FLOPs exactly, saved
bytes exactly once the few tensors the formula leaves out are itemised (and those items are checked too)."""

from dataclasses import replace

import pytest
import torch

from d2lmp.config import set_threads
from d2lmp.gpt import GPT, preset
from d2lmp.gpt_accounting import (
    Comparison,
    Extra,
    activation_comparisons,
    activation_summary,
    comparison_table,
    flop_comparisons,
    parameter_comparisons,
    saved_bytes_by_module,
    saved_extras,
)

TINY = preset("tiny")
VARIANTS = [TINY, replace(TINY, tied=False), replace(TINY, bias=False, heads=4)]


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    before = set_threads(1)
    yield
    set_threads(before)


@pytest.mark.parametrize("config", VARIANTS, ids=["tied", "untied", "no-bias"])
def test_parameters_by_part_are_exact(config):
    rows = parameter_comparisons(GPT(config))
    assert all(r.difference == 0 for r in rows), comparison_table(rows)
    assert sum(r.measured for r in rows[:-1]) == rows[-1].measured  # the parts cover the model, once each
    assert (rows[-2].measured == 0) == config.tied  # the LM head has no tensor of its own when tied


@pytest.mark.parametrize("config", VARIANTS, ids=["tied", "untied", "no-bias"])
@pytest.mark.parametrize("batch", [1, 3])
def test_flops_are_exact_for_every_product_and_recomputation_skips_what_is_itemised(config, batch):
    rows = {r.name: r for r in flop_comparisons(config, batch)}
    assert all(r.explained for r in rows.values()), comparison_table(list(rows.values()))
    exact = [r for name, r in rows.items() if "selective" not in name and "full" not in name]
    assert all(r.difference == 0 and not r.extras for r in exact)
    parts = [r.measured for name, r in rows.items() if name.startswith("block 1")]
    b, s, h, v = batch, config.seq, config.hidden, config.vocab
    assert sum(parts) == 24 * b * s * h * h + 4 * b * s * s * h  # the full square, mask or no mask
    assert rows["forward"].measured == config.layers * sum(parts) + 2 * b * s * h * v
    assert rows["training step, recompute none"].measured == 3 * rows["forward"].measured
    # checkpoint skips the last product of a recomputed segment: softmax·V (selective), the MLP's second
    # linear (full, no dropout after it); so it recomputes less than a whole forward
    assert rows["training step, recompute selective"].difference == -config.layers * 2 * b * s * s * h
    assert rows["training step, recompute full"].difference == -config.layers * 8 * b * s * h * h


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("dropout", [0.0, 0.1], ids=["no-dropout", "dropout"])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("batch", [1, 2])
def test_saved_bytes_are_the_formula_plus_the_itemised_extras_module_by_module(recompute, dropout, dtype, batch):
    config = replace(TINY, recompute=recompute, dropout=dropout)
    rows = activation_comparisons(config, batch, dtype)
    assert all(r.explained for r in rows), comparison_table(rows)
    assert all(r.difference == 0 for r in rows if not r.extras)  # exact wherever nothing is itemised
    value = torch.empty((), dtype=dtype).element_size()
    s, h = config.seq, config.hidden
    total = rows[-1]
    if recompute == "full":
        assert total.measured == value * batch * s * h and not total.extras  # only the block input
    else:  # each LayerNorm's mean and 1/σ (in the input's type on the CPU), and the mask buffer without recompute
        assert total.itemised == 2 * 2 * batch * s * value + (s * s if recompute == "none" else 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_flash_attention_keeps_no_scores_only_a_log_sum_exp(dtype):
    config = replace(TINY, flash=True, heads=4)
    rows = activation_comparisons(config, 2, dtype)
    assert all(r.explained for r in rows), comparison_table(rows)
    core = next(r for r in rows if r.name.strip() == "attn.core")
    value = torch.empty((), dtype=dtype).element_size()
    tokens, h = 2 * config.seq, config.hidden
    assert core.measured == 4 * value * tokens * h + 4 * tokens * config.heads  # Q, K, V, output; float32 lse
    with pytest.raises(ValueError, match="not itemised"):
        saved_extras(replace(config, dropout=0.1), 2, value)


def test_the_measurement_sees_the_scores_grow_with_the_square_of_the_sequence():
    """Independent of the formula: doubling seq doubles the linear parts and quadruples the scores."""
    def core_bytes(seq):
        block = GPT(replace(TINY, seq=seq)).blocks[0]
        return saved_bytes_by_module(block, torch.randn(1, seq, TINY.hidden, requires_grad=True))["attn.core"]

    heads, h = TINY.heads, TINY.hidden
    for seq in (8, 16):  # Q, K, V (3 s h values), softmax output (a s² values), the mask buffer (s² bytes)
        assert core_bytes(seq) == 4 * (3 * seq * h + heads * seq * seq) + seq * seq


def test_summary_covers_every_variant_and_prints():
    rows = activation_summary(TINY, 1)
    assert len(rows) == 14 and all(r.explained for r in rows)
    assert len({r.name for r in rows}) == 14
    text = comparison_table(rows)
    assert "recompute selective, dropout on, bfloat16" in text and "causal mask buffer" in text


def test_a_comparison_explains_itself():
    exact = Comparison("a", "bytes", 10, 10)
    off = Comparison("b", "bytes", 10, 13, (Extra("x", 3, "why"),))
    wrong = Comparison("c", "bytes", 10, 12, (Extra("x", 3, "why"),))
    assert exact.explained and exact.explanation == "exact"
    assert off.explained and off.difference == 3 and "x +3" in off.explanation
    assert not wrong.explained
