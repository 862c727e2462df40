"""Memory-bandwidth figures: known GPUs on bus width × rate, copy bandwidth against buffer size, the widget."""



import matplotlib.pyplot as plt
import pytest

from d2lmp import bandwidth
from d2lmp.views import bandwidth as bandwidth_views
from d2lmp.views.bandwidth import plot_bandwidth_sweep


def _labels(fig):
    return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def test_figures_build():
    figs = [
        bandwidth_views.plot_bus_bandwidth(bandwidth.gpu_memory_table(), marked=(384, 14)),
        bandwidth_views.plot_bandwidth_curves(
            {"cpu": [dict(bytes_touched=2**21, gbs=10.0), dict(bytes_touched=2**24, gbs=5.0)]}, {"spec": 20}),
    ]
    assert all(f.axes for f in figs)
    plt.close("all")


def test_bandwidth_sweep_figure_marks_the_cache():
    rows = [dict(megabytes=m, bytes_touched=2 * m * 2**20, gbs=100.0 / m) for m in (1, 4, 16)]
    fig = plot_bandwidth_sweep(rows, cache_bytes=32 * 2**20, cache_label="L3")
    assert _labels(fig) == ["measured copy bandwidth", "L3: 32 MiB"]
    plt.close(fig)
    with pytest.raises(ValueError):
        plot_bandwidth_sweep([])


def test_widget_builds():
    assert bandwidth_views.bandwidth_widget().children
    plt.close("all")


def test_memory_capacities_on_a_log_axis():
    rows = [("GTX 580", 1.5 * 2**30, "GPU memory"), ("H200 SXM", 141 * 2**30, "GPU memory"),
            ("DGX-1 host", 512 * 2**30, "host memory"), ("this machine's RAM", 25 * 2**30, "measured here")]
    fig = bandwidth_views.plot_memory_capacities(rows)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert [p.get_width() for p in ax.patches] == pytest.approx([1.5, 141, 512, 25])
    assert [t.get_text() for t in ax.texts] == ["1.5 GiB", "141 GiB", "512 GiB", "25 GiB"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["GPU memory", "host memory", "measured here"]
    plt.close(fig)
    with pytest.raises(ValueError):
        bandwidth_views.plot_memory_capacities([])
