"""Megatron's tensor-parallel GPT, with and without sequence parallelism, equals one device on 2 and 4 ranks; its saved
bytes per rank are the formula's plus itemised extras; its bytes on the wire, counted from the logged collectives, are
the formula's and the same for TP and TP + SP; grouped-query attention and the vocabulary-parallel embedding and loss
equal one device, and dropout masks agree where the activation is whole and differ where it is split; the GPT
trained on a 2 x 2 x 2 data x pipeline x tensor grid equals one device. One launch per world size runs every
tensor-parallel case (``gpt_tp_workers.everything``)."""

import gpt_tp_workers as W
import pytest
import torch

from d2lmp.checks.gpt_parallel import TOLERANCE, check_3d, tiny_for
from d2lmp.gpt import GPT, preset
from d2lmp.gpt_accounting import comparison_table
from d2lmp.model.transformer_accounting import layer_communication
from d2lmp.parallel.launch import launch
from d2lmp.parallel.tensor_parallel import ring_wire_bytes
from d2lmp.parallel.tp_accounting import PARTS, closed_form


@pytest.fixture(scope="module", params=[2, 4], ids=["2 ranks", "4 ranks"])
def run(request):
    world = request.param
    # torch.utils.checkpoint's first use imports parts of torch that take seconds per process on a busy
    # machine: do it here once, and the forked ranks inherit it
    model = GPT(preset("tiny", recompute="selective"))
    model(torch.zeros(1, 4, dtype=torch.long)).sum().backward()
    return world, launch(W.everything, world)


@pytest.mark.slow
def test_tp_and_sp_blocks_and_the_whole_gpt_equal_one_device(run):
    world, per_rank = run
    for rank, result in enumerate(per_rank):
        errors = result["errors"]
        bad = {name: err for name, err in errors.items() if not err < TOLERANCE}
        assert not bad, (world, rank, bad)
    names = list(per_rank[0]["errors"])
    for mode in ("TP", "TP + SP", "TP + SP, input kept gathered"):
        for what in ("recompute none", "recompute selective", "recompute full", "flash attention"):
            assert f"{mode} block, {what}: weight gradients" in names
        assert f"{mode} GPT, tied embeddings: gradients" in names
        assert f"{mode} GPT, separate embeddings: logits" in names


def test_bytes_on_the_wire_are_the_formulas_and_the_same_for_tp_and_sp(run):
    world, per_rank = run
    config = tiny_for(world)
    n = 4 * 2 * config.seq * config.hidden  # float32 bytes of the block's activation, two sequences
    for result in per_rank:
        tp, sp, kept = (result["blocks"][m] for m in ("TP", "TP + SP", "TP + SP, input kept gathered"))
        assert [c[0] for c in tp.calls] == ["all_reduce"] * 4
        assert all(c[1] == n for c in tp.calls)
        assert sorted(c[0] for c in kept.calls) == ["all_gather"] * 4 + ["reduce_scatter"] * 4
        assert all(c[1] == (n if c[0] == "reduce_scatter" else n // world) for c in kept.calls)
        # a ring all-reduce of n bytes is a reduce-scatter of n bytes and an all-gather back to n bytes
        assert tp.wire_bytes == kept.wire_bytes == 8 * (world - 1) * n // world == tp.formula_wire_bytes
        assert kept.formula_wire_bytes == kept.wire_bytes
        # keeping only the chunk costs one more all-gather per column-parallel layer, in backward
        again = [c for c in sp.calls if "gathered again" in c[2]]
        assert [c[2] for c in again] == ["mlp.fc (backward, gathered again)", "attn.qkv (backward, gathered again)"]
        assert sp.wire_bytes == tp.wire_bytes + 2 * (world - 1) * n // world == sp.formula_wire_bytes


def test_ring_wire_bytes_are_what_our_ring_collectives_send(run):
    world, per_rank = run
    for result in per_rank:
        for op, (sent, formula) in result["ring bytes"].items():
            assert sent == formula, (op, sent, formula)
    assert ring_wire_bytes("all_reduce", 1200, 4) == ring_wire_bytes("reduce_scatter", 1200, 4) + \
        ring_wire_bytes("all_gather", 300, 4)
    with pytest.raises(ValueError, match="unknown collective"):
        ring_wire_bytes("broadcast", 8, 2)


@pytest.mark.slow
def test_saved_bytes_per_rank_are_the_formula_plus_itemised_extras(run):
    world, per_rank = run
    for result in per_rank:
        for block in [*result["blocks"].values(), *result["table"]]:
            rows = list(block.comparisons)
            assert all(r.explained for r in rows), comparison_table(rows)
            assert all(r.difference == 0 for r in rows if not r.extras), comparison_table(rows)
            assert sum(block.saved_by_part) == block.total.measured and len(block.saved_by_part) == len(PARTS)
        kept = result["blocks"]["TP + SP, input kept gathered"]
        assert sum(e.amount for e in kept.total.extras if e.name == "whole gathered input") == \
            2 * 4 * 2 * tiny_for(world).seq * tiny_for(world).hidden * (world - 1) // world
        table = {(r.tp, r.sequence_parallel, r.config.recompute): r for r in result["table"]}
        measured = {k: r.total.measured for k, r in table.items()}
        assert measured[1, False, "none"] > measured[world, False, "none"] > measured[world, True, "none"]
        assert measured[world, False, "selective"] > measured[world, True, "selective"] > measured[world, True, "full"]


def test_saved_bytes_against_korthikantis_closed_forms(run):
    world, per_rank = run
    c = tiny_for(world)
    s, b, h, a, t = c.seq, 2, c.hidden, c.heads, world
    sbh = s * b * h
    expected = {(1, False, "none"): sbh * (34 + 5 * a * s / h), (1, False, "selective"): sbh * 34,
                (t, False, "none"): sbh * (10 + 24 / t + 5 * a * s / (h * t)),
                (t, False, "selective"): sbh * (10 + 24 / t),
                (t, True, "none"): sbh * (34 / t + 5 * a * s / (h * t)), (t, True, "selective"): sbh * 34 / t,
                (t, True, "full"): 2 * sbh / t}
    for result in per_rank:
        rows = [closed_form(r) for r in result["table"]]
        assert all(r.explained for r in rows), comparison_table(rows)
        for r, block in zip(rows, result["table"]):
            assert r.formula == expected[block.tp, block.sequence_parallel, block.config.recompute], r.name


def test_dropout_agrees_where_replicated_and_is_recomputed_exactly(run):
    world, per_rank = run
    for result in per_rank:
        found = result["dropout"]
        assert found["replicas disagree by"] == 0.0
        assert found["dropout changes the output by"] > 1e-3
        assert found["split masks agree on"] < 0.75  # about half: independent masks of p = 0.5
        assert found["SP=False: recomputed masks differ by"] == 0.0
        assert found["SP=True: recomputed masks differ by"] == 0.0


def test_grouped_query_attention_split_by_groups_equals_one_device(run):
    world, per_rank = run
    for result in per_rank:
        found = result["gqa"]
        assert all(err < TOLERANCE for err in found.errors.values()), found.errors
        # g after the output projection forward; f before the query and key/value projections backward
        assert [(op, label) for op, _, label in found.calls] == [
            ("all_reduce", "attn.proj"), ("all_reduce", "attn.kv (backward)"), ("all_reduce", "attn.q (backward)")]
    assert "tensor-parallel degree is at most kv_heads" in per_rank[0]["refusals"]["kv heads"]


def test_vocabulary_parallel_embedding_and_loss_equal_one_device(run):
    world, per_rank = run
    config = tiny_for(world)
    for result in per_rank:
        found = result["vocab"]
        assert all(err < TOLERANCE for err in found.errors.values()), found.errors
        loss_calls = [(op, nbytes) for op, nbytes, label in found.calls if label.startswith("cross-entropy")]
        assert loss_calls == [("all_reduce_max", 4 * 2 * config.seq), ("all_reduce", 4 * 2 * config.seq),
                              ("all_reduce", 4 * 2 * config.seq)], loss_calls  # one float32 a token, 2 sequences


def test_dropout_masks_match_in_whole_regions_and_differ_in_split_ones(run):
    world, per_rank = run
    for result in per_rank:
        masks = result["dropout masks"]
        assert masks.whole_region_agreement == 1.0
        assert 0.4 < masks.split_region_agreement < 0.6  # independent masks of p = 0.5 agree on about half


def test_sizes_that_do_not_split_are_refused_with_a_clear_message(run):
    world, per_rank = run
    found = per_rank[0]["refusals"]
    assert found["hidden"].startswith(f"hidden = {3 * (world + 1)} is not divisible by the {world} ranks")
    assert found["heads"].startswith(f"heads = {world + 1} is not divisible by the {world} ranks")
    assert found["seq"].startswith(f"seq = {world + 1} is not divisible") and "sequence parallelism" in found["seq"]
    assert "pad the vocabulary" in found["vocab"]
    assert "under sequence parallelism" in found["short sequence"]


def test_layer_communication_counts_the_collectives():
    m = tiny_for(2).shape()
    tp = layer_communication(m, 2, 4, value_bytes=4)
    sp = layer_communication(m, 2, 4, sequence_parallel=True, regather=False, value_bytes=4)
    again = layer_communication(m, 2, 4, sequence_parallel=True, value_bytes=4)
    assert (tp.all_reduces, sp.all_gathers, sp.reduce_scatters, again.all_gathers) == (4, 4, 4, 6)
    assert tp.wire_bytes == sp.wire_bytes == 8 * 3 * tp.activation_bytes // 4
    assert layer_communication(m, 1, 1).wire_bytes == 0
    with pytest.raises(ValueError):
        layer_communication(m, 1, 0)


def test_3d_grid_of_8_ranks_trains_equal_to_one_device():
    per_rank = launch(check_3d, 8)
    for rank, errors in enumerate(per_rank):
        bad = {name: err for name, err in errors.items() if not err < TOLERANCE}
        assert not bad, (rank, bad)
    assert len(per_rank[0]) == 6  # TP and TP + SP: losses, first-step gradients, parameters after the steps
