"""Data-parallel figures: the replicas picture cuts the batch as the code does, and the scaling plot and widget
draw the model's predictions at a stated latency α."""

import pytest
import torch

from d2lmp import models, topology
from d2lmp.model import dp_model
from d2lmp.model.alpha_beta import GPU_ALPHA_S
from d2lmp.views import data_parallel as V


def test_replicas_picture_labels_the_shards_that_shard_cuts():
    fig = V.plot_data_parallel(world=4, batch=10)
    texts = [t.get_text() for t in fig.axes[0].texts]
    for label in ("rank 0: examples 0–2", "rank 1: examples 3–5", "rank 2: examples 6–7", "rank 3: examples 8–9"):
        assert label in texts
    assert [str(i) for i in range(10)] == [t for t in texts if t.isdigit()]
    assert "all-reduce (sum over ranks)" in texts
    with pytest.raises(ValueError):
        V.plot_data_parallel(world=5, batch=4)


def test_efficiency_curve_is_the_model_and_starts_at_one():
    curve = dp_model.efficiency_curve(0.1, 60e6, 20e-6, 1e-10, worlds=(1, 2, 8))
    assert curve[0] == 1.0
    assert curve[2] == pytest.approx(dp_model.predict_step(0.1, 60e6, 8, 20e-6, 1e-10).efficiency(0.1))
    slower = dp_model.efficiency_curve(0.1, 60e6, 200e-6, 1e-10, worlds=(1, 2, 8))
    assert all(s <= f for s, f in zip(slower, curve))
    curves = dp_model.scaling_curves(0.1, 60e6, {"10 GB/s": 10}, 20e-6, (1, 2, 8), overlaps=(False, True))
    assert list(curves) == [("10 GB/s", False), ("10 GB/s", True)]
    assert curves["10 GB/s", True] == dp_model.efficiency_curve(0.1, 60e6, 20e-6, 1e-10, (1, 2, 8))


def _alexnet():
    with torch.device("meta"):
        tv = models.totals(models.layer_table(models.alexnet_torchvision(), (1, 3, 224, 224)))
    return 1024 * 3 * tv.flops / 51e12, tv.params * 4


def test_scaling_plot_draws_the_curves_it_is_given():
    """The plot draws dp_model's curves as given, at the GPU α: 8 GPUs over NVLink 4 keep AlexNet's step above
    90 % efficiency, where a loopback-TCP α of 136 µs (this kind of machine's fit) would pull it below half."""
    one_gpu_s, grad_bytes = _alexnet()
    nvlink4 = topology.nvlink_bandwidth_gbs(4) / 2
    links = {"NVLink 4": nvlink4, "PCIe 3.0": topology.pcie_bandwidth_gbs(3, 16)}
    curves = dp_model.scaling_curves(one_gpu_s, grad_bytes, links, GPU_ALPHA_S, V.WORLDS)
    fig = V.plot_dp_scaling(V.WORLDS, curves, GPU_ALPHA_S)
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.get_lines()] == ["NVLink 4", "PCIe 3.0"]
    at_8 = dict(zip(ax.get_lines()[0].get_xdata(), ax.get_lines()[0].get_ydata()))[8]
    table = dp_model.predict_step(one_gpu_s, grad_bytes, 8, GPU_ALPHA_S, 1 / (nvlink4 * 1e9))
    assert at_8 == pytest.approx(table.efficiency(one_gpu_s)) and at_8 > 0.9
    assert f"α = {GPU_ALPHA_S * 1e6:.3g} µs" in ax.get_title() and "25 MiB buckets" in ax.get_title()
    tcp = dp_model.efficiency_curve(one_gpu_s, grad_bytes, 136e-6, 1 / (nvlink4 * 1e9), worlds=(8,))[0]
    assert tcp < 0.5


def test_scaling_plot_draws_both_overlap_settings_and_marks_a_size():
    curves = dp_model.scaling_curves(0.1, 60e6, {"10 GB/s": 10}, 50e-6, V.WORLDS, overlaps=(False, True))
    fig = V.plot_dp_scaling(V.WORLDS, curves, 50e-6, mark_world=8)
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert labels[:2] == ["10 GB/s, no overlap", "10 GB/s, with overlap"] and len(labels) == 3


def test_widget_builds_with_alpha_and_bandwidth_as_controls():
    widget = V.dp_scaling_widget(0.1, 60e6, GPU_ALPHA_S, 15.75)
    controls = {c.description: c for c in widget.kwargs_widgets}
    assert controls["α µs per message (assumed)"].value == pytest.approx(GPU_ALPHA_S * 1e6)
    assert controls["GB/s"].value == pytest.approx(15.75, rel=0.01)  # a log slider lands near its value
    assert controls["bucket MiB"].value == dp_model.DDP_BUCKET_BYTES / 2**20
    assert V.dp_scaling_widget(0.1, 60e6, 50e-6, 100.0).children
