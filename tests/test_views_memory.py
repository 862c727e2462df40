"""Memory figures: the breakdown of a training step and of inference, saved activations per layer, the widget."""

import pytest
import torch

from d2lmp import memory
from d2lmp.models import alexnet_d2l
from d2lmp.views import memory as memory_views

MIB = 2**20


def _bars(ax):
    """(left, width, row) of every bar, in drawing order (rounded: the figures are exact in binary)."""
    return [tuple(round(v, 9) for v in (p.get_x(), p.get_width(), p.get_y() + p.get_height() / 2))
            for p in ax.patches]


def test_breakdown_stacks_each_part_and_labels_the_totals():
    rows = [dict(label="training", parameters=2 * MIB, gradients=2 * MIB, optimizer_state=4 * MIB,
                 saved_activations=1 * MIB, live_activations=0),
            dict(label="inference", parameters=2 * MIB, gradients=0, optimizer_state=0, saved_activations=0,
                 live_activations=MIB // 2)]
    ax = memory_views.plot_memory_breakdown(rows).axes[0]
    # Row 0 stacks 2 + 2 + 4 + 1 MiB; row 1 stacks 2 + 0.5 MiB; parts of 0 bytes draw no bar.
    assert _bars(ax) == [(0, 2, 0), (2, 2, 0), (4, 4, 0), (8, 1, 0), (0, 2, 1), (2, 0.5, 1)]
    assert [t.get_text() for t in ax.texts] == ["9.0 MiB", "2.5 MiB"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["training", "inference"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "parameters", "gradients", "optimizer state", "saved activations", "live activations"]
    assert ax.get_xlim() == pytest.approx((0, 9 * 1.25))
    assert ax.get_xlabel() == "MiB"


def test_saved_per_layer_pairs_measured_and_predicted_and_drops_empty_layers():
    per_layer = [dict(name="net.0", kind="Linear", measured=2048, predicted=2048),
                 dict(name="net.1", kind="ReLU", measured=0, predicted=0),
                 dict(name="net.2", kind="Conv2d", measured=1024, predicted=3072)]
    ax = memory_views.plot_saved_per_layer(per_layer).axes[0]
    heights = [p.get_height() for p in ax.patches]
    assert heights == [2, 1, 2, 3], "KiB: measured bars for both layers, then predicted"
    assert [p.get_x() + p.get_width() / 2 for p in ax.patches] == pytest.approx([-0.2, 0.8, 0.2, 1.2])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0 (Linear)", "2 (Conv2d)"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "measured (saved-tensor hooks)", "predicted (shapes × rule)"]


def test_widget_draws_batch_128_with_adam(displayed, capsys):
    assert memory_views.memory_widget().children
    with torch.device("meta"):
        rows = memory.breakdown_rows(alexnet_d2l(), (128, 1, 224, 224), "adam", device_type="cuda")
    train, infer = (sum(v for k, v in r.items() if k != "label") for r in rows)
    printed = capsys.readouterr().out
    assert f"batch 128: training {train / 2**30:.2f} GiB, inference {infer / 2**30:.2f} GiB" in printed
    (fig,) = displayed
    ax = fig.axes[0]
    assert ax.get_title() == "D2L AlexNet, batch 128, adam"
    assert [t.get_text() for t in ax.texts] == [f"{train / 2**30:,.1f} GiB", f"{infer / 2**30:,.1f} GiB"]
