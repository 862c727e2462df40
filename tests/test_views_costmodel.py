"""The cost model on screen: the bars stay in frame, strategies that do not fit are marked, every part of memory
is drawn in its one colour."""

import matplotlib
import matplotlib.pyplot as plt
import pytest
import torch

from d2lmp import models
from d2lmp.model import costmodel as CM
from d2lmp.model import model_size as MS
from d2lmp.views import costmodel as V
from d2lmp.views.memory import MEMORY_PART_COLOURS

H100 = CM.PRESETS["8x H100 (NVSwitch)"]


@pytest.fixture(scope="module")
def rows():
    with torch.device("meta"):
        return models.layer_table(models.alexnet2012(), (1, 3, 224, 224))


def test_bars_stay_inside_the_frame(rows):
    """The tallest stacked bar (AlexNet's tensor bar on two GTX 580) ends below the top of the axes."""
    hw = CM.PRESETS["2x GTX 580 (PCIe 2.0)"]
    preds = {s: CM.predict(rows, s, hw, 256, micro_batches=8) for s in CM.STRATEGIES}
    for legend in (True, False):
        fig = V.plot_step_time(preds, legend=legend)
        ax = fig.axes[0]
        assert max(p.get_y() + p.get_height() for p in ax.patches) < 0.9 * ax.get_ylim()[1]
        plt.close(fig)
    big = MS.predictions(MS.widen(rows, 16e9), H100, 1024, "adam")
    fig = V.plot_step_time(big, fitting=MS.fits(big, H100.memory_bytes))
    assert {p.get_gid() for p in fig.axes[0].patches if p.get_gid()} == {"no fit:data", "no fit:tensor"}
    plt.close(fig)
    fig = V.plot_memory(big, H100.memory_bytes)
    ax = fig.axes[0]
    assert max(p.get_y() + p.get_height() for p in ax.patches) < 0.9 * ax.get_ylim()[1]
    bars = {label: h for h, label in zip(*ax.get_legend_handles_labels()) if label != "device memory"}
    assert list(bars) == ["parameters", "gradients", "optimizer state", "saved activations"]
    assert [matplotlib.colors.to_hex(h.patches[0].get_facecolor()) for h in bars.values()] == \
        list(MEMORY_PART_COLOURS.values())[:4]
    plt.close(fig)


def test_memory_by_size_plot_draws_a_curve_per_strategy_and_the_device_line(rows):
    sizes = [6.1e7, 1e9, 4e9]
    fig = V.plot_memory_by_size(sizes, MS.memory_by_size(rows, H100, 1024, "adam", sizes), H100.memory_bytes)
    assert len(fig.axes[0].lines) == len(CM.STRATEGIES) + 1
    plt.close(fig)
