"""The transformer accounting equals the published closed forms where they apply, and validates its shape."""

import pytest

from d2lmp.model.transformer_accounting import (
    BLOCK_PARTS,
    Transformer,
    activation_bytes_per_layer,
    activation_parts,
    attention_core_flops,
    block_anatomy,
    forward_flops,
    korthikanti_bytes_per_layer,
    layer_flop_parts,
    layer_forward_flops,
    layernorm_statistics,
    narayanan_flops,
    narayanan_parameters,
    parameter_count,
    training_flops,
)
from d2lmp.model.transformer_stage_memory import (
    embedding_activation_bytes,
    korthikanti_first_stage_bytes,
    output_activation_bytes,
    pipeline_layers_in_flight,
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
    no_dropout = Transformer(layers=2, hidden=64, heads=4, seq=32, vocab=100, dropout=False)  # read from the model
    assert activation_bytes_per_layer(no_dropout) == activation_bytes_per_layer(m, dropout=False)
    assert activation_bytes_per_layer(no_dropout, dropout=True) == activation_bytes_per_layer(m)
    assert embedding_activation_bytes(no_dropout) == 0 < embedding_activation_bytes(m)


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
    from d2lmp.model.pipeline_schedule import schedule

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
@pytest.mark.parametrize("m", SHAPES + [Transformer(layers=2, hidden=64, heads=8, seq=16, vocab=10, kv_heads=2,
                                                    gated_mlp=True, bias=False)], ids=lambda m: f"h{m.hidden}")
@pytest.mark.parametrize("batch", [1, 3])
def test_flop_parts_add_up_to_the_block_and_to_gpts_closed_form(m, batch):
    parts = layer_flop_parts(m, batch)
    assert parts.total == layer_forward_flops(m, batch)
    assert parts.scores + parts.values == attention_core_flops(m, batch)
    if not m.gated_mlp and m.kv_heads is None:
        b, s, h = batch, m.seq, m.hidden
        assert (parts.qkv, parts.output, parts.mlp) == (6 * b * s * h * h, 2 * b * s * h * h, 16 * b * s * h * h)
        assert parts.total == 24 * b * s * h * h + 4 * b * s * s * h


@pytest.mark.parametrize("dropout", [False, True])
def test_the_anatomy_of_a_block_adds_up_to_its_totals(dropout):
    m = SHAPES[1]
    anatomy = block_anatomy(m, 2, dropout=dropout)
    assert anatomy.parts == BLOCK_PARTS
    assert sum(anatomy.parameters) == parameter_count(m).per_layer
    assert sum(anatomy.flops) == layer_forward_flops(m, 2)
    assert sum(anatomy.activation_bytes) == activation_bytes_per_layer(m, 2, dropout=dropout)
    assert anatomy.parameters[BLOCK_PARTS.index("attention core")] == 0
    assert {p.part for p in activation_parts(m, dropout=dropout)} == set(BLOCK_PARTS)


def test_layernorm_statistics_are_two_values_per_token_per_layernorm():
    m = SHAPES[2]
    stats = layernorm_statistics(m, micro_batch=3, stat_bytes=4)
    assert [s.nbytes for s in stats] == [2 * 4 * 3 * m.seq] * 2
