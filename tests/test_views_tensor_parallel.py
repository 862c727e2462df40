"""Tensor-parallel figures: W's slices per rank come from the layers' own shard arithmetic."""

import matplotlib.pyplot as plt
import pytest

from d2lmp.parallel.tensor_parallel import shard_range
from d2lmp.views import tensor_parallel as tp_views


def _texts(ax):
    return [t.get_text() for t in ax.texts]


def test_shard_range_splits_evenly_and_refuses_a_remainder():
    assert [shard_range(12, 4, r) for r in range(4)] == [(0, 3), (3, 3), (6, 3), (9, 3)]
    with pytest.raises(ValueError, match="not divisible"):
        shard_range(10, 4, 0, "out_features")
    with pytest.raises(ValueError, match="rank"):
        shard_range(12, 4, 4)


def test_weight_slices_label_each_rank_with_its_slice_and_shape():
    fig = tp_views.plot_weight_slices(8, 12, 4)
    column, row = fig.axes
    assert _texts(column) == [f"rank {r}\nW[{3 * r}:{3 * r + 3}, :]\n3 × 8" for r in range(4)]
    assert _texts(row) == [f"rank {r}\nW[:, {2 * r}:{2 * r + 2}]\n12 × 2" for r in range(4)]
    assert len(column.patches) == len(row.patches) == 4
    plt.close("all")


def test_weight_slices_refuse_what_the_layers_refuse():
    with pytest.raises(ValueError, match="not divisible"):
        tp_views.plot_weight_slices(8, 10, 4)
    with pytest.raises(ValueError):
        tp_views.plot_weight_slices(8, 12, 0)


def test_split_scaling_marks_the_perfect_split():
    rows = [dict(ranks=1, parameter_bytes=8 * 2**20, activation_bytes=4 * 2**20, step_s=0.2),
            dict(ranks=2, parameter_bytes=4 * 2**20, activation_bytes=3 * 2**20, step_s=0.12),
            dict(ranks=4, parameter_bytes=2 * 2**20, activation_bytes=2.5 * 2**20, step_s=0.15)]
    fig = tp_views.plot_split_scaling(rows)
    params, acts, time = fig.axes
    assert [b.get_height() for b in params.patches] == [8, 4, 2]
    assert [line.get_ydata()[0] for line in acts.lines] == [4, 2, 1]  # one device ÷ ranks
    assert [b.get_height() for b in time.patches] == pytest.approx([200, 120, 150])
    with pytest.raises(ValueError):
        tp_views.plot_split_scaling([])
    plt.close("all")


def test_widget_builds():
    assert tp_views.comm_volume_widget().children
    plt.close("all")


def test_saved_bytes_by_part_stacks_each_measurement_and_marks_the_formula():
    from dataclasses import replace

    from d2lmp.gpt import preset
    from d2lmp.parallel.tp_accounting import PARTS, measure_full_block

    one = measure_full_block(preset("tiny", dropout=0.1))
    half = replace(one, tp=2, sequence_parallel=True, saved_by_part=tuple(n // 2 for n in one.saved_by_part))
    fig = tp_views.plot_saved_bytes_by_part([one, half])
    ax = fig.axes[0]
    drawn = [p for p in ax.patches]  # one rectangle per part with bytes, per bar
    parts = [i for i, n in enumerate(one.saved_by_part) if n]
    assert len(drawn) == 2 * len(parts)
    assert [round(p.get_height() * 1024) for p in drawn[::2]] == [one.saved_by_part[i] for i in parts]
    assert [round(p.get_height() * 1024) for p in drawn[1::2]] == [half.saved_by_part[i] for i in parts]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["formula + itemised extras (per rank)", *(PARTS[i] for i in parts)]
    assert ax.lines[0].get_ydata()[0] * 1024 == one.total.formula
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1 device\nrecompute\nnone",
                                                            "TP + SP\nt = 2\nrecompute\nnone"]
    with pytest.raises(ValueError):
        tp_views.plot_saved_bytes_by_part([])


def test_tp_block_marks_what_sequence_parallelism_splits():
    for sp, outside, enter, leave in ((False, "whole", "f: identity", "g: all-reduce"),
                                      (True, "sequence", "f_SP: all-gather", "g_SP: reduce-scatter")):
        stages = tp_views.tp_block_stages(sp)
        assert [len(row) for row in stages] == [8, 8]
        for row in stages:
            kinds = [kind for _, kind in row]
            assert kinds == [outside, "collective", "features", "features", "features", "collective", outside,
                             outside]
            assert row[1][0].startswith(enter) and row[5][0].startswith(leave)
        fig = tp_views.plot_tp_block(sp)
        gids = [p.get_gid() for p in fig.axes[0].patches]
        assert sum(g.startswith(f"tp-block:{outside}:") for g in gids) == 6
        assert sum(g.startswith("tp-block:collective:") for g in gids) == 4
        plt.close("all")
