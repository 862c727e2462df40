"""Figures and widgets of notebooks 04-07 build from their pure functions."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from d2lmp import bandwidth, memory, models, plots, precision, topology, widgets  # noqa: E402


def test_figures_build():
    figs = [
        plots.plot_bus_bandwidth(bandwidth.gpu_memory_table(), marked=(384, 14)),
        plots.plot_bandwidth_curves({"cpu": [dict(bytes_touched=2**21, gbs=10.0), dict(bytes_touched=2**24, gbs=5.0)]},
                                    {"spec": 20}),
        plots.plot_link_bandwidth(topology.pcie_table(), topology.nvlink_table()),
        plots.plot_topology(topology.hybrid_cube_mesh()),
        plots.plot_power_budget(topology.power_budget(2, 250)),
        plots.plot_memory_breakdown(memory.breakdown_rows(models.mlp(64, (256, 256), 10), (8, 64))),
        plots.plot_saved_per_layer(
            memory.compare_saved_activations(models.mlp(64, (256, 256), 10), torch.randn(4, 64))["per_layer"]),
        plots.plot_exponent_histogram(torch.logspace(-10, 0, 100), 8),
        plots.plot_underflow_vs_scale({"w": precision.scale_sweep(torch.logspace(-10, 0, 100))}),
        plots.plot_inference_compare([dict(method="fp32", median_s=1e-3, accuracy=0.9, weight_bytes=4096),
                                      dict(method="int8", median_s=5e-4, accuracy=0.9, weight_bytes=1024)]),
    ]
    assert all(f.axes for f in figs)
    plt.close("all")


def test_widgets_build():
    for w in (widgets.bandwidth_widget(), widgets.power_budget_widget(), widgets.memory_widget(),
              widgets.loss_scale_widget(torch.logspace(-10, 0, 100))):
        assert w.children
    plt.close("all")
