"""Precision figures: gradient exponents against FP16's range, underflow per loss scale, quantized inference."""

import math

import pytest
import torch
from matplotlib.colors import to_rgba

from d2lmp import precision
from d2lmp.views import precision as precision_views

RED, ORANGE, BLUE = (to_rgba(c) for c in ("#d62728", "#ff7f0e", "#1f77b4"))  # zero, subnormal, normal in FP16
VALUES = torch.tensor([2.0**-30, 2.0**-20, 2.0**-20, 2.0**-5])


def _bars_drawn(ax):
    """{bar centre: (height, colour)} of the histogram's non-empty bins."""
    return {round(p.get_x() + p.get_width() / 2, 6): (p.get_height(), p.get_facecolor())
            for p in ax.patches if p.get_height() > 0}


@pytest.mark.parametrize("log2_scale", [0, 10])
def test_exponent_histogram_counts_each_power_of_two_coloured_by_fp16_range(log2_scale):
    ax = precision_views.plot_exponent_histogram(VALUES, 2.0**log2_scale).axes[0]
    s = log2_scale
    # 2^-30 and 2^-20 (twice) and 2^-5, each in the bin [e, e + 1) of its exponent, shifted by the scale.
    expected = {-29.5 + s: 1, -19.5 + s: 2, -4.5 + s: 1}
    colour = {c: RED if c < -24 else ORANGE if c < -14 else BLUE for c in expected}
    assert _bars_drawn(ax) == {c: (n, colour[c]) for c, n in expected.items()}
    assert [line.get_xdata()[0] for line in ax.lines] == pytest.approx([-24, -14, math.log2(65504)])
    assert ax.get_xlabel() == f"log2 |gradient × {2**s:g}|"
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {
        "becomes 0 in FP16", "FP16 subnormal (few bits left)", "FP16 normal", "FP16 smallest subnormal 2^-24",
        "FP16 smallest normal 2^-14", "FP16 max 65,504 (≈2^16)"}


def test_underflow_plot_draws_zero_and_overflow_per_sweep_with_a_floor():
    rows = [dict(scale=1, zero=0.5, overflow=0.0), dict(scale=8, zero=0.1, overflow=0.02)]
    ax = precision_views.plot_underflow_vs_scale({"weights": rows}).axes[0]
    zero, overflow = ax.lines
    assert (zero.get_label(), overflow.get_label()) == ("weights: flushed to zero", "weights: overflow to inf")
    assert list(zero.get_xdata()) == [1, 8] and list(zero.get_ydata()) == [0.5, 0.1]
    assert list(overflow.get_ydata()) == [1e-7, 0.02], "a fraction of 0 is drawn at the 1e-7 floor of the log axis"
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")


def test_inference_bars_give_latency_and_label_accuracy_size_and_speed():
    rows = [dict(method="fp32", median_s=1e-3, accuracy=0.9, weight_bytes=4096),
            dict(method="int8", median_s=5e-4, accuracy=0.875, weight_bytes=1024)]
    ax = precision_views.plot_inference_compare(rows).axes[0]
    assert [p.get_height() for p in ax.patches] == pytest.approx([1.0, 0.5])  # ms
    assert [t.get_text() for t in ax.get_xticklabels()] == ["fp32", "int8"]
    assert [t.get_text() for t in ax.texts] == ["acc 90.0%\n4 KiB\n1.00× speed", "acc 87.5%\n1 KiB\n2.00× speed"]
    assert ax.get_ylim() == pytest.approx((0, 1.45))


def test_widget_starts_at_scale_one(displayed, capsys):
    gradients = torch.logspace(-10, 0, 100)
    assert precision_views.loss_scale_widget(gradients).children
    f = precision.underflow_fractions(gradients, 1.0)
    assert f"scale 2^0: {f['zero']:.2%} flushed to zero, {f['subnormal']:.2%} subnormal" in capsys.readouterr().out
    (fig,) = displayed
    assert fig.axes[0].get_xlabel() == "log2 |gradient × 1|"
