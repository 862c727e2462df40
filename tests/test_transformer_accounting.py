"""The transformer accounting equals the published closed forms where they apply, and validates its shape."""

import pytest

from d2lmp.transformer_accounting import (
    Transformer,
    activation_bytes_per_layer,
    activation_parts,
    embedding_activation_bytes,
    forward_flops,
    korthikanti_bytes_per_layer,
    korthikanti_first_stage_bytes,
    narayanan_flops,
    narayanan_parameters,
    output_activation_bytes,
    parameter_count,
    pipeline_layers_in_flight,
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


def _peak_in_flight(ops):
    held = peak = 0
    for kind, _ in ops:
        held += 1 if kind == "F" else -1
        peak = max(peak, held)
    return peak


@pytest.mark.parametrize("pp, m", [(1, 1), (4, 2), (4, 8), (8, 64)])
def test_1f1b_layers_in_flight_follow_the_schedule(pp, m):
    """Each stage of 1F1B holds as many micro-batches as the project's own 1F1B schedule keeps in flight."""
    from d2lmp.parallel.pipeline_schedule import schedule

    layers = 8 * pp
    for stage in range(pp):
        in_flight = _peak_in_flight(schedule("1f1b", pp, stage, m))
        assert pipeline_layers_in_flight(layers, pp, 1, m, stage) == in_flight * layers / pp


@pytest.mark.parametrize("pp, v", [(2, 2), (4, 2), (8, 3), (35, 3)])
def test_interleaved_first_stage_holds_korthikantis_factor(pp, v):
    layers = pp * v * 2
    assert pipeline_layers_in_flight(layers, pp, v) == pytest.approx(layers * (1 + (pp - 1) / (pp * v)), rel=1e-12)
    assert pipeline_layers_in_flight(layers, pp, v, microbatches=1) == v * 2  # one micro-batch: its own chunks


def test_layers_in_flight_rejects_a_pipeline_that_does_not_split():
    with pytest.raises(ValueError, match="divisible"):
        pipeline_layers_in_flight(10, 4)
    with pytest.raises(ValueError, match="stage"):
        pipeline_layers_in_flight(8, 4, stage=4)


@pytest.mark.parametrize("pp, v", [(1, 1), (8, 1), (8, 2), (35, 3)])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_first_stage_activations_equal_korthikantis_closed_form(pp, v, recompute):
    """Layers in flight × bytes per layer + embedding dropout (+ the output layer when p = 1), with sequence
    parallelism, is Korthikanti et al.'s eq. (5) with §4.2.3's interleaving factor and §4.4's extra layers."""
    m, t = Transformer(layers=pp * v * 3, hidden=20480, heads=128, seq=2048, vocab=51200), 8
    total = (pipeline_layers_in_flight(m.layers, pp, v) * activation_bytes_per_layer(m, 1, t, True, recompute)
             + embedding_activation_bytes(m, 1, t, True, in_flight=pp))
    if pp == 1:
        total += output_activation_bytes(m, 1, t, True)
    assert total == pytest.approx(korthikanti_first_stage_bytes(m.seq, 1, m.hidden, m.heads, m.vocab, m.layers,
                                                                t, pp, v, recompute), rel=1e-12)


def test_output_layer_keeps_the_32_bit_logits():
    m = SHAPES[2]
    assert output_activation_bytes(m, 2, 1, False) == 4 * m.seq * 2 * m.hidden + 4 * m.seq * 2 * m.vocab
    assert embedding_activation_bytes(m, 2, 4, False, in_flight=3) == m.seq * 2 * m.hidden * 3
    assert embedding_activation_bytes(m, 2, 4, True, in_flight=3, dropout=False) == 0
