"""AlexNet figures: parameters vs FLOPs per layer, learned filters, the two-GPU split, and the widget."""

import torch

from d2lmp.models import alexnet2012, layer_table, params_vs_flops
from d2lmp.views.models import alexnet_widget, plot_filters, plot_params_vs_flops, plot_two_gpu_split


def test_figures_and_widget_build():
    with torch.device("meta"):
        model = alexnet2012(init="torch")
    rows = layer_table(model, (1, 3, 224, 224))
    assert len(plot_params_vs_flops(params_vs_flops(rows)).axes) == 1
    assert plot_two_gpu_split().axes
    assert len(plot_filters(torch.randn(16, 1, 5, 5)).axes) == 16
    assert len(plot_filters(torch.randn(5, 3, 11, 11), columns=4).axes) == 8
    assert alexnet_widget() is not None
