"""Precision figures: gradient exponents against FP16's range, underflow per loss scale, quantized inference."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from d2lmp import precision  # noqa: E402
from d2lmp.quantize import InferenceRow  # noqa: E402
from d2lmp.views import precision as precision_views  # noqa: E402


def test_figures_build():
    figs = [
        precision_views.plot_exponent_histogram(torch.logspace(-10, 0, 100), 8),
        precision_views.plot_underflow_vs_scale({"w": precision.scale_sweep(torch.logspace(-10, 0, 100))}),
        precision_views.plot_inference_compare([InferenceRow("fp32", "cpu", accuracy=0.9, agrees_with_fp32=1.0,
                                                             weight_bytes=4096, median_s=1e-3, spread=0.0),
                                                InferenceRow("int8", "cpu", accuracy=0.9, agrees_with_fp32=1.0,
                                                             weight_bytes=1024, median_s=5e-4, spread=0.0)]),
    ]
    assert all(f.axes for f in figs)
    plt.close("all")


def test_widget_builds():
    assert precision_views.loss_scale_widget(torch.logspace(-10, 0, 100)).children
    plt.close("all")
