"""The three splits of one network: a box per (device, layer) exactly as the partitions given say."""

import matplotlib.pyplot as plt
import pytest
import torch

from d2lmp.model.pipeline_balance import balance
from d2lmp.parallel.data_parallel import shard
from d2lmp.views.strategies import plot_three_splits

LAYERS = ["Linear\n8→6", "ReLU", "Linear\n6→4"]
COLUMNS = [[(0, 3), (3, 6)], None, [(0, 2), (2, 4)]]


def _boxes(fig):
    """{gid: patch} of every box drawn."""
    return {p.get_gid(): p for ax in fig.axes for p in ax.patches if p.get_gid()}


def test_each_panel_draws_the_partition_it_is_given():
    idx = torch.arange(10)
    examples = [(int(x[0]), int(x[-1]) + 1) for x in (shard(idx, idx, r, 2)[0] for r in range(2))]
    assert examples == [(0, 5), (5, 10)]
    stages = balance([48, 0, 24], 2)
    fig = plot_three_splits(LAYERS, examples, stages, COLUMNS)
    boxes = _boxes(fig)
    assert len(fig.axes) == 3
    # data: every device holds every layer, and its own examples
    assert {f"data:{d}:{i}" for d in range(2) for i in range(3)} <= set(boxes)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "examples\n0–4" in texts and "examples\n5–9" in texts
    # pipeline: each layer once, coloured by the device of its stage
    assert stages == [1, 2]
    assert {g for g in boxes if g.startswith("pipeline:") and not g.endswith("input")} == \
        {"pipeline:0:0", "pipeline:1:1", "pipeline:1:2"}
    assert boxes["pipeline:1:1"].get_facecolor() == boxes["data:1:0"].get_facecolor()
    assert boxes["pipeline:0:0"].get_facecolor() != boxes["pipeline:1:2"].get_facecolor()
    # tensor: each split layer cut in proportion to the slices; the activation whole on every device
    assert {"tensor:0:0", "tensor:1:0", "tensor:all:1", "tensor:0:2", "tensor:1:2"} <= set(boxes)
    assert boxes["tensor:0:0"].get_height() == pytest.approx(boxes["tensor:1:0"].get_height())
    assert boxes["tensor:0:0"].get_y() > boxes["tensor:1:0"].get_y()  # device 0 on top
    assert "3–5" in [t.get_text() for t in fig.axes[2].texts]
    # everything lies inside its panel
    for ax in fig.axes:
        x0, x1 = ax.get_xlim()
        y0, y1 = ax.get_ylim()
        for p in ax.patches:
            assert x0 <= p.get_x() and p.get_x() + p.get_width() <= x1
            assert y0 <= p.get_y() and p.get_y() + p.get_height() <= y1
    plt.close(fig)


def test_uneven_slices_get_uneven_boxes():
    fig = plot_three_splits(["Linear\n4→3", "ReLU"], [(0, 2), (2, 3)], [1, 1], [[(0, 2), (2, 3)], None])
    boxes = _boxes(fig)
    assert boxes["tensor:0:0"].get_height() == pytest.approx(2 * boxes["tensor:1:0"].get_height())
    plt.close(fig)


@pytest.mark.parametrize("examples, stages, columns", [
    ([(0, 5), (6, 10)], [1, 2], COLUMNS),  # a gap in the batch
    ([(0, 5), (5, 10)], [3, 0], COLUMNS),  # a device with no layer
    ([(0, 5), (5, 10)], [1, 1], COLUMNS),  # stages do not cover the layers
    ([(0, 5), (5, 10)], [1, 2], COLUMNS[:2]),  # a layer without its slices
    ([(0, 5), (5, 10)], [1, 2], [[(0, 6)], None, [(0, 2), (2, 4)]]),  # one slice for two devices
])
def test_inconsistent_partitions_are_refused(examples, stages, columns):
    with pytest.raises(ValueError):
        plot_three_splits(LAYERS, examples, stages, columns)


def test_grid_places_each_rank_in_its_tensor_row_and_links_its_data_column():
    from d2lmp.views.strategies import plot_grid

    fig = plot_grid([[0, 1], [2, 3]], [[0, 2], [1, 3]])
    centres = {gid: p.center for gid, p in _boxes(fig).items()}
    assert centres == {"rank:0": (0, 0), "rank:1": (1, 0), "rank:2": (0, -1), "rank:3": (1, -1)}
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "data group [0, 2]" in texts and "data group [1, 3]" in texts
    assert any(t.startswith("tensor group [2, 3]") for t in texts)
    plt.close(fig)
    with pytest.raises(ValueError, match="must hold each rank once"):
        plot_grid([[0, 1], [2, 3]], [[0, 2], [1, 2]])
