"""Memory figures: the breakdown of a training step and of inference, saved activations per layer, the widget."""



import matplotlib.pyplot as plt
import torch

from d2lmp import memory, models
from d2lmp.views import memory as memory_views


def test_figures_build():
    figs = [
        memory_views.plot_memory_breakdown(memory.breakdown_rows(models.mlp(64, (256, 256), 10), (8, 64))),
        memory_views.plot_saved_per_layer(
            memory.compare_saved_activations(models.mlp(64, (256, 256), 10), torch.randn(4, 64))["per_layer"]),
    ]
    assert all(f.axes for f in figs)
    plt.close("all")


def test_widget_builds():
    assert memory_views.memory_widget().children
    plt.close("all")
