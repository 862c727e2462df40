"""The ZeRO picture and memory bars: what a rank keeps follows the stage, and the bars follow zero_memory."""

import matplotlib.pyplot as plt
import pytest

from d2lmp.model.costmodel import zero_memory, zero_memory_by_stage
from d2lmp.model.training_state import STATE_PARTS
from d2lmp.views import zero as V


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_a_rank_keeps_what_the_formula_counts(stage):
    world = 4
    for rank in range(world):
        pieces = V.held_segments(world, stage, rank)
        kept = {k: sum(length for kind, _, length, held in pieces if kind == k and held) for k in STATE_PARTS}
        assert kept == pytest.approx(zero_memory(1, world, stage))  # bytes per parameter, 2 + 2 + 12 sharded
        # every rank's pieces tile the bar without gaps: 16 bytes per parameter laid end to end
        ends = sorted((start, start + length) for _, start, length, _ in pieces)
        assert ends[0][0] == 0 and ends[-1][1] == pytest.approx(16)
        assert all(a[1] == pytest.approx(b[0]) for a, b in zip(ends, ends[1:]))
    # the ranks hold different pieces of a sharded kind: together, each piece exactly once
    if stage >= 1:
        owners = [[held for kind, _, _, held in V.held_segments(world, stage, r) if kind == "optimizer_state"]
                  for r in range(world)]
        assert [sum(col) for col in zip(*owners)] == [1] * world


def test_held_segments_refuses_bad_input():
    with pytest.raises(ValueError):
        V.held_segments(2, 4, 0)
    with pytest.raises(ValueError):
        V.held_segments(2, 1, 2)


def test_memory_by_stage_is_zero_memory_for_each_optimizer():
    per_stage = zero_memory_by_stage(7_500_000_000, 64)
    totals = [sum(parts.values()) / 1e9 for parts in per_stage.values()]
    assert totals == pytest.approx([120, 31.4, 16.6, 1.9], abs=0.05)  # the ZeRO paper's Figure 1
    fp32 = zero_memory_by_stage(1000, 4, "adam")
    assert fp32[3] == zero_memory(1000, 4, 3, "adam") == dict(parameters=1000, gradients=1000, optimizer_state=2000)
    assert zero_memory_by_stage(1000, 4, "sgd")[1]["optimizer_state"] == 0


def test_figures_draw_and_keep_bars_in_frame():
    fig = V.plot_zero_stages(world=2)
    assert fig.axes[0].get_title().startswith("What each of 2 ranks keeps")
    plt.close(fig)
    fig = V.plot_measured_vs_formula(["stage 0", "stage 3"], [10, 5], [10, 4])
    assert fig.axes[0].get_ylim()[1] >= 10
    plt.close(fig)
    with pytest.raises(ValueError):
        V.plot_measured_vs_formula(["a"], [1, 2], [1])
    per_stage = zero_memory_by_stage(7_500_000_000, 64)
    fig = V.plot_memory_per_stage(per_stage, 80e9)
    ax = fig.axes[0]
    tallest = max(sum(p.values()) for p in per_stage.values()) / 1e9
    assert ax.get_ylim()[1] > tallest and ax.get_ylim()[1] > 80
    plt.close(fig)
