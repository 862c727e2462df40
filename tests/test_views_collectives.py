"""Pictures of collectives: the ring all-reduce step by step, before/after grids, the α-β widget."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from d2lmp.views.collectives import (  # noqa: E402
    allreduce_model_widget,
    collective_examples,
    plot_collectives,
    plot_ring_all_reduce,
)


@pytest.mark.parametrize("world", [2, 3, 4, 5])
def test_ring_schedule_ends_with_every_rank_holding_every_full_sum(world):
    _, states = plot_ring_all_reduce(world)
    assert len(states) == 2 * (world - 1) + 1
    np.testing.assert_array_equal(states[-1], np.full((world, world), world))
    # After the reduce-scatter half, rank r holds the full sum of chunk r.
    assert all(states[world - 1][r, r] == world for r in range(world))


def test_collective_pictures_follow_the_definitions():
    ex = collective_examples(3)
    before, after = ex["all-reduce"]
    assert after == [["Σa", "Σb", "Σc"]] * 3
    assert ex["reduce-scatter"][1][1] == ["·", "Σb", "·"]
    assert ex["all-gather"][1] == [["a0", "b1", "c2"]] * 3
    assert ex["broadcast (from rank 0)"][1] == [["a0", "b0", "c0"]] * 3
    assert len(plot_collectives(3).axes) == 10
    with pytest.raises(ValueError):
        collective_examples(1)


def test_widget_builds():
    assert allreduce_model_widget(50e-6, 1e-9).children
