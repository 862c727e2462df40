"""The cost model on screen: a model's size and optimizer in, time and memory per device out; bars in frame."""

import matplotlib.pyplot as plt
import pytest
import torch

from d2lmp import models
from d2lmp.parallel import costmodel as CM
from d2lmp.views import costmodel as V

H100 = CM.PRESETS["8x H100 (NVSwitch)"]


@pytest.fixture(scope="module")
def rows():
    with torch.device("meta"):
        return models.layer_table(models.alexnet2012(), (1, 3, 224, 224))


def test_default_optimizer_is_the_cost_models(rows):
    preds = V.predictions(rows, H100, 1024)
    for s in CM.STRATEGIES:
        p = CM.predict(rows, s, H100, 1024, micro_batches=8)
        assert preds[s].step_s == pytest.approx(p.step_s)
        for part in p.memory:
            assert preds[s].memory[part] == pytest.approx(p.memory[part])


def test_state_per_device_follows_zero_memory(rows):
    big = V.widen(rows, 4e9)
    params = round(sum(r.params for r in big))
    preds = V.predictions(big, H100, 1024, "Adam, mixed precision")
    state = sum(preds["data"].memory[k] for k in ("parameters", "gradients", "optimizer"))
    assert state == pytest.approx(16 * params)  # 2 + 2 + 12 bytes per parameter on every device
    assert state == pytest.approx(sum(CM.zero_memory(params, 8, 0).values()))
    for s in ("pipeline", "tensor"):
        assert preds[s].memory["optimizer"] == pytest.approx(12 * params / 8)
    # tensor parallelism splits the weights but keeps the whole batch's activations on every device
    assert preds["tensor"].memory["activations"] == pytest.approx(8 * preds["data"].memory["activations"])
    fp32 = V.predictions(big, H100, 1024, "Adam")
    assert fp32["data"].memory["activations"] == pytest.approx(2 * preds["data"].memory["activations"])
    sgd = V.predictions(big, H100, 1024, "SGD")
    assert sgd["data"].memory["optimizer"] == 0


def test_widening_keeps_proportions(rows):
    big = V.widen(rows, 4 * sum(r.params for r in rows))
    assert sum(r.params for r in big) == pytest.approx(4 * sum(r.params for r in rows))
    assert sum(r.flops for r in big) == pytest.approx(4 * sum(r.flops for r in rows))
    assert sum(r.activation_bytes for r in big) == pytest.approx(2 * sum(r.activation_bytes for r in rows))
    assert big[0].output_shape[1] == 2 * rows[0].output_shape[1]
    with pytest.raises(ValueError):
        V.widen(rows, 0)


def test_data_parallelism_stops_fitting_while_others_still_fit(rows):
    small = V.predictions(rows, H100, 1024, "Adam")
    assert all(V.fits(small, H100.memory_bytes).values())
    big = V.predictions(V.widen(rows, 16e9), H100, 1024, "Adam")
    ok = V.fits(big, H100.memory_bytes)
    assert not ok["data"] and ok["pipeline"] and ok["hybrid"]


def test_bars_stay_inside_the_frame(rows):
    """The tallest stacked bar (AlexNet's tensor bar on two GTX 580) ends below the top of the axes."""
    hw = CM.PRESETS["2x GTX 580 (PCIe 2.0)"]
    preds = {s: CM.predict(rows, s, hw, 256, micro_batches=8) for s in CM.STRATEGIES}
    for legend in (True, False):
        fig = V.plot_step_time(preds, legend=legend)
        ax = fig.axes[0]
        assert max(p.get_y() + p.get_height() for p in ax.patches) < 0.9 * ax.get_ylim()[1]
        plt.close(fig)
    big = V.predictions(V.widen(rows, 16e9), H100, 1024, "Adam")
    fig = V.plot_step_time(big, fitting=V.fits(big, H100.memory_bytes))
    assert {p.get_gid() for p in fig.axes[0].patches if p.get_gid()} == {"no fit:data", "no fit:tensor"}
    plt.close(fig)
    fig = V.plot_memory(big, H100.memory_bytes)
    ax = fig.axes[0]
    assert max(p.get_y() + p.get_height() for p in ax.patches) < 0.9 * ax.get_ylim()[1]
    plt.close(fig)


def test_memory_by_size_crosses_the_device_line_where_fits_says(rows):
    sizes = [6.1e7, 1e9, 4e9, 16e9]
    curves = V.memory_by_size(rows, H100, 1024, "Adam", sizes)
    assert set(curves) == set(CM.STRATEGIES) and all(len(v) == len(sizes) for v in curves.values())
    for i, size in enumerate(sizes):
        ok = V.fits(V.predictions(V.widen(rows, size), H100, 1024, "Adam"), H100.memory_bytes)
        assert all((curves[s][i] <= H100.memory_bytes) == ok[s] for s in CM.STRATEGIES)
    assert all(a < b for a, b in zip(curves["data"], curves["data"][1:]))
    fig = V.plot_memory_by_size(sizes, curves, H100.memory_bytes)
    assert len(fig.axes[0].lines) == len(CM.STRATEGIES) + 1
    plt.close(fig)
