"""Roofline and speed-up figures: measured and estimated figures kept apart; the widget marks the bound."""

import matplotlib.pyplot as plt
import pytest

from d2lmp.roofline import OpPoint
from d2lmp.views import roofline as roofline_views
from d2lmp.views.roofline import plot_roofline, plot_speedups


def _labels(fig):
    return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def test_roofline_with_dashed_estimate_and_named_points():
    points = [OpPoint.from_rates("add", 1 / 12, 5.0), OpPoint.from_rates("matmul n=512", 85.0, 200.0)]
    fig = plot_roofline(200.0, 70.0, points, label="cpu (measured)", peak_estimate=332.0,
                        estimate_label="estimated peak", title="CPU")
    ax = fig.axes[0]
    labels = _labels(fig)
    assert labels[0] == "cpu (measured): 70 GB/s, 200 GFLOP/s"
    assert labels[1] == "estimated peak: 332 GFLOP/s"
    assert labels[-2:] == ["add", "matmul n=512"]
    assert ax.lines[1].get_linestyle() == "--"
    assert ax.get_title() == "CPU"
    plt.close(fig)


def test_roofline_without_estimate_has_one_roof():
    fig = plot_roofline(100.0, 10.0, [OpPoint("x", 1, 1, 1e-9)])
    assert not any("estimate" in t for t in _labels(fig))
    plt.close(fig)


def test_speedup_bars():
    fig = plot_speedups(["add", "matmul"], [50.0, 250.0], kinds=["memory-bound", "compute-bound"],
                        references={"bandwidth ratio": 58.0})
    assert _labels(fig) == ["memory-bound", "compute-bound", "bandwidth ratio: 58×"]
    assert len(fig.axes[0].patches) == 2
    plt.close(fig)
    with pytest.raises(ValueError):
        plot_speedups(["a"], [1.0, 2.0])
    with pytest.raises(ValueError):
        plot_speedups(["a"], [1.0], kinds=["x", "y"])


def test_roofline_widget_places_the_chosen_operation(monkeypatch, capsys):
    pytest.importorskip("ipywidgets")

    shown = []
    monkeypatch.setattr(roofline_views, "show", shown.append)
    w = roofline_views.roofline_widget(100.0, 10.0, [OpPoint("x", 1, 1, 1e-9)], title="test",
                                       dtype_peaks={"float32": 100.0, "float64": 50.0})
    operation, size, dtype = w.children[:3]
    operation.value, size.value = "elementwise add", 4096  # 1/12 FLOP/byte: memory-bound at 10/12 GFLOP/s
    fig = shown[-1]
    marker = fig.axes[0].lines[-1]
    assert marker.get_label() == "elementwise add, n=4096, float32"
    assert (marker.get_xdata()[0], marker.get_ydata()[0]) == (pytest.approx(1 / 12), pytest.approx(10 / 12))
    assert fig.axes[0].get_title() == "test"
    assert "memory-bound" in capsys.readouterr().out
    operation.value, dtype.value = "matmul", "float64"  # n/12 FLOP/byte in FP64: compute-bound under the FP64 roof
    marker = shown[-1].axes[0].lines[-1]
    assert (marker.get_xdata()[0], marker.get_ydata()[0]) == (pytest.approx(4096 / 12), pytest.approx(50.0))
    assert "float64 roof" in shown[-1].axes[0].get_title()
    for f in shown:
        plt.close(f)


def test_format_roofs_draw_one_roof_per_format_and_the_layer_on_its_own():
    from d2lmp.roofline import place_linear_layer

    roofs = {"FP32": 8100.0, "FP16 tensor": 65000.0, "INT8 tensor": 130000.0}
    p = place_linear_layer(16, 4096, "FP16 tensor", roofs, 320.0)
    fig = roofline_views.plot_format_roofs(roofs, 320.0, p, "FP16 tensor", label="T4")
    ax = fig.axes[0]
    labels = _labels(fig)
    assert [lb.split(":")[0] for lb in labels[:3]] == list(roofs) and "ridge 203" in labels[1]
    assert labels[3].startswith("linear 4096→4096, batch 16, FP16 tensor") and "memory-bound" in labels[3]
    assert ax.lines[1].get_linewidth() > ax.lines[0].get_linewidth()  # the chosen format is drawn bold
    star = ax.lines[3]
    assert star.get_xdata()[0] == pytest.approx(p.intensity)
    assert star.get_ydata()[0] == pytest.approx(p.attainable_gflops)
    plt.close(fig)
    with pytest.raises(ValueError, match="at least one roof"):
        roofline_views.plot_format_roofs({}, 320.0)
