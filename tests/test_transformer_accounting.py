"""The transformer accounting equals the published closed forms where they apply, and validates its shape."""

import pytest

from d2lmp.transformer_accounting import (
    Transformer,
    activation_bytes_per_layer,
    activation_parts,
    forward_flops,
    korthikanti_bytes_per_layer,
    narayanan_flops,
    narayanan_parameters,
    parameter_count,
    training_flops,
)

# GPT-3 175B and the 1.7B model of Narayanan et al. (2021), Table 1 (vocabulary 51,200, sequence 2,048).
SHAPES = [Transformer(layers=96, hidden=12288, heads=96, seq=2048, vocab=51200),
          Transformer(layers=24, hidden=2304, heads=24, seq=2048, vocab=51200),
          Transformer(layers=2, hidden=64, heads=4, seq=32, vocab=100)]


@pytest.mark.parametrize("m", SHAPES, ids=lambda m: f"l{m.layers}h{m.hidden}")
def test_parameters_equal_narayanans_formula_plus_the_final_layernorm(m):
    count = parameter_count(m)
    assert count.total - count.final_norm == pytest.approx(
        narayanan_parameters(m.layers, m.hidden, m.vocab, m.seq), rel=1e-12)
    assert count.per_layer == 12 * m.hidden**2 + 13 * m.hidden


def test_175b_has_175_billion_parameters():
    assert parameter_count(SHAPES[0]).total / 1e9 == pytest.approx(174.6, abs=0.1)


@pytest.mark.parametrize("m", SHAPES, ids=lambda m: f"l{m.layers}h{m.hidden}")
@pytest.mark.parametrize("batch", [1, 8])
def test_full_recompute_flops_equal_narayanans_formula(m, batch):
    assert training_flops(m, batch, "full") == pytest.approx(
        narayanan_flops(batch, m.seq, m.layers, m.hidden, m.vocab), rel=1e-12)
    assert training_flops(m, batch, "none") == 3 * forward_flops(m, batch)
    assert training_flops(m, batch, "none") < training_flops(m, batch, "selective") < training_flops(m, batch, "full")


@pytest.mark.parametrize("tp", [1, 2, 8])
@pytest.mark.parametrize("sp", [False, True])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_activation_bytes_equal_korthikantis_closed_forms(tp, sp, recompute):
    m = SHAPES[0]
    assert activation_bytes_per_layer(m, 1, tp, sp, recompute) == pytest.approx(
        korthikanti_bytes_per_layer(m.seq, 1, m.hidden, m.heads, tp, sp, recompute), rel=1e-12)


def test_without_dropout_the_masks_and_dropped_scores_go():
    m = SHAPES[2]
    sbh, scores = m.seq * m.hidden, m.heads * m.seq**2
    assert activation_bytes_per_layer(m, dropout=False) == 32 * sbh + 2 * scores
    assert sum(p.nbytes for p in activation_parts(m, value_bytes=4, dropout=False)) == 64 * sbh + 4 * scores


@pytest.mark.parametrize("kwargs, word", [
    (dict(layers=2, hidden=65, heads=4, seq=8, vocab=10), "divisible by heads"),
    (dict(layers=0, hidden=64, heads=4, seq=8, vocab=10), "layers"),
    (dict(layers=2, hidden=64, heads=4, seq=8, vocab=10, kv_heads=3), "kv_heads"),
])
def test_bad_shapes_are_value_errors(kwargs, word):
    with pytest.raises(ValueError, match=word):
        Transformer(**kwargs)


def test_unknown_recompute_is_a_value_error():
    with pytest.raises(ValueError, match="recompute"):
        training_flops(SHAPES[2], 1, "some")
