import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from d2lmp.parallel.figures import plot_ring_all_reduce, plot_timeline, ring_schedule


@pytest.mark.parametrize("world", [2, 3, 4, 5])
def test_ring_schedule_ends_with_every_rank_holding_every_full_sum(world):
    _, states = plot_ring_all_reduce(world)
    assert len(states) == 2 * (world - 1) + 1
    np.testing.assert_array_equal(states[-1], np.full((world, world), world))
    # After the reduce-scatter half, rank r holds the full sum of chunk r.
    assert all(states[world - 1][r, r] == world for r in range(world))


def test_every_step_sends_one_chunk_per_rank_to_the_right():
    for messages in ring_schedule(4):
        assert sorted(m[0] for m in messages) == [0, 1, 2, 3]
        assert all(m[1] == (m[0] + 1) % 4 for m in messages)
    with pytest.raises(ValueError):
        ring_schedule(1)


def test_timeline_plot_has_a_row_per_rank_and_lane():
    events = [dict(rank=r, kind=k, label="", start=s, end=s + 0.001)
              for r in range(2) for k, s in (("forward", 1.0), ("backward", 1.001), ("allreduce", 1.0015))]
    fig = plot_timeline(events)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["rank 0 compute", "rank 0 comm", "rank 1 compute", "rank 1 comm"]


def test_collective_pictures_follow_the_definitions():
    from d2lmp.parallel.figures import collective_examples, plot_collectives

    ex = collective_examples(3)
    before, after = ex["all-reduce"]
    assert after == [["Σa", "Σb", "Σc"]] * 3
    assert ex["reduce-scatter"][1][1] == ["·", "Σb", "·"]
    assert ex["all-gather"][1] == [["a0", "b1", "c2"]] * 3
    assert ex["broadcast (from rank 0)"][1] == [["a0", "b0", "c0"]] * 3
    assert len(plot_collectives(3).axes) == 10
    with pytest.raises(ValueError):
        collective_examples(1)


def test_widgets_build():
    from d2lmp.parallel.widgets import allreduce_model_widget, dp_scaling_widget

    assert dp_scaling_widget(0.1, 60e6, 50e-6).children
    assert allreduce_model_widget(50e-6, 1e-9).children
