"""Pictures of collectives: the ring and tree all-reduce step by step, before/after grids, the α-β model."""

import numpy as np
import pytest
from matplotlib.text import Annotation

from d2lmp.model.allreduce_steps import ring_steps, tree_steps
from d2lmp.model.alpha_beta import all_reduce_model
from d2lmp.views.collectives import (
    allreduce_model_widget,
    collective_examples,
    plot_allreduce_model,
    plot_collectives,
    plot_ring_all_reduce,
    plot_tree_all_reduce,
)


@pytest.mark.parametrize("world", [2, 4])
def test_ring_figure_draws_one_panel_per_step(world):
    steps = ring_steps(world)
    assert len(plot_ring_all_reduce(steps).axes) == len(steps.states) == 2 * (world - 1) + 1
    (one,) = plot_ring_all_reduce(steps, step=world - 1).axes
    assert one.get_title() == f"step {world - 1}: reduce-scatter"
    assert sorted(int(t.get_text()) for t in one.texts) == sorted(v for row in steps.states[world - 1] for v in row)
    assert not any(isinstance(t, Annotation) for t in one.texts), "the ring's picture draws no arrows"


def test_collective_pictures_follow_the_definitions():
    ex = collective_examples(3)
    before, after = ex["all-reduce"]
    assert after == [["Σa", "Σb", "Σc"]] * 3
    assert ex["reduce-scatter"][1][1] == ["·", "Σb", "·"]
    assert ex["all-gather"][1] == [["a0", "b1", "c2"]] * 3
    assert ex["broadcast (from rank 0)"][1] == [["a0", "b0", "c0"]] * 3
    assert ex["all-to-all"][1] == [["a0", "a1", "a2"], ["b0", "b1", "b2"], ["c0", "c1", "c2"]]  # the transpose
    assert len(plot_collectives(3).axes) == 12
    with pytest.raises(ValueError):
        collective_examples(1)


@pytest.mark.parametrize("world", [2, 3, 4, 5, 8])
def test_tree_figure_draws_a_panel_per_round_with_its_messages(world):
    steps = tree_steps(world)
    fig = plot_tree_all_reduce(steps)
    assert len(fig.axes) == len(steps.states)
    arrows = [sum(isinstance(t, Annotation) for t in ax.texts) for ax in fig.axes]
    assert arrows == [len(m) for m in steps.messages], "one arrow per message of the round drawn"
    assert len(plot_tree_all_reduce(steps, step=1).axes) == 1


def test_model_figure_draws_the_models_times():
    model = all_reduce_model(8, 2**20, 5e-6, 1e-11, np.logspace(1, 10, 10))
    fig = plot_allreduce_model(model)
    bars, curves = fig.axes
    assert [b.get_height() for b in bars.patches] == pytest.approx([model.times[a] * 1e3 for a in model.times])
    assert [line.get_label() for line in curves.get_lines()[:3]] == list(model.curves)
    np.testing.assert_allclose(curves.get_lines()[2].get_ydata(), np.array(model.curves["ring"]) * 1e3)


def test_widget_starts_from_the_values_given():
    measured = {c.description: c for c in allreduce_model_widget(150e-6, 2.0).kwargs_widgets}
    assert measured["latency α (µs)"].value == pytest.approx(150.0)
    assert measured["link GB/s"].value == pytest.approx(2.0)
