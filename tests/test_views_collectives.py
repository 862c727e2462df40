"""Pictures of collectives: the ring and tree all-reduce step by step, before/after grids, the α-β model."""

import numpy as np
import pytest

from d2lmp.parallel.alpha_beta import predicted_all_reduce_time
from d2lmp.parallel.collectives import tree_schedule
from d2lmp.views.collectives import (
    ASSUMED_GPU_ALPHA,
    ASSUMED_GPU_LINK_GBS,
    allreduce_model_widget,
    collective_examples,
    plot_allreduce_model,
    plot_collectives,
    plot_ring_all_reduce,
    plot_tree_all_reduce,
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


@pytest.mark.parametrize("world", [2, 3, 4, 5, 8])
def test_tree_figure_follows_the_schedule_tree_all_reduce_runs(world):
    fig, states = plot_tree_all_reduce(world)
    schedule = tree_schedule(world)
    assert len(states) == len(schedule) + 1 == 2 * int(np.ceil(np.log2(world))) + 1
    assert len(fig.axes) == len(states)
    rounds = len(schedule) // 2
    assert states[rounds][0, 0] == world, "after the reduce rounds rank 0 holds every contribution"
    np.testing.assert_array_equal(states[-1], np.full((world, world), world))
    for state in states:  # the whole buffer travels: a rank's chunks always agree
        assert (state == state[:, :1]).all()
    assert len(plot_tree_all_reduce(world, step=1)[0].axes) == 1


def test_model_figure_gives_the_model_times():
    fig, times = plot_allreduce_model(8, 2**20, 5e-6, 1e-11)
    assert times == {a: predicted_all_reduce_time(a, 8, 2**20, 5e-6, 1e-11) for a in ("naive", "tree", "ring")}
    assert len(fig.axes) == 2


def test_widget_starts_from_a_gpu_typical_alpha_and_takes_another():
    controls = {c.description: c for c in allreduce_model_widget().kwargs_widgets}
    assert controls["latency α (µs)"].value == pytest.approx(ASSUMED_GPU_ALPHA * 1e6)
    assert controls["link GB/s"].value == pytest.approx(ASSUMED_GPU_LINK_GBS)
    assert 1 <= ASSUMED_GPU_ALPHA * 1e6 <= 10, "a few µs per message, as on NVLink with NCCL"
    measured = {c.description: c for c in allreduce_model_widget(150e-6, 2.0).kwargs_widgets}
    assert measured["latency α (µs)"].value == pytest.approx(150.0)
    assert measured["link GB/s"].value == pytest.approx(2.0)
