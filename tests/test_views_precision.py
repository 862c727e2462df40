"""Precision figures: gradient exponents against FP16's range, underflow per loss scale, quantized inference."""



import matplotlib.pyplot as plt
import torch

from d2lmp import precision
from d2lmp.views import precision as precision_views


def test_figures_build():
    figs = [
        precision_views.plot_exponent_histogram(torch.logspace(-10, 0, 100), 8),
        precision_views.plot_underflow_vs_scale({"w": precision.scale_sweep(torch.logspace(-10, 0, 100))}),
        precision_views.plot_inference_compare([dict(method="fp32", median_s=1e-3, accuracy=0.9, weight_bytes=4096),
                                                dict(method="int8", median_s=5e-4, accuracy=0.9, weight_bytes=1024)]),
    ]
    assert all(f.axes for f in figs)
    plt.close("all")


def test_widget_builds():
    assert precision_views.loss_scale_widget(torch.logspace(-10, 0, 100)).children
    plt.close("all")
