"""Memory-bandwidth figures: known GPUs on bus width × rate, copy bandwidth against buffer size, the widget."""

import matplotlib.pyplot as plt
import pytest

from d2lmp import bandwidth
from d2lmp.bandwidth import DeviceCopyRow
from d2lmp.views import bandwidth as bandwidth_views
from d2lmp.views.bandwidth import plot_bandwidth_sweep


def _labels(fig):
    return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def _named_lines(ax):
    """The axes' lines that carry a legend label, by label (matplotlib names the others "_child...")."""
    return {line.get_label(): line for line in ax.lines if not line.get_label().startswith("_")}


def test_bus_bandwidth_puts_each_gpu_at_its_bus_width_and_bandwidth():
    table = bandwidth.gpu_memory_table()
    ax = bandwidth_views.plot_bus_bandwidth(table, marked=(384, 14)).axes[0]
    kinds = list(dict.fromkeys(r.memory_type for r in table))
    lines = _named_lines(ax)
    assert list(lines) == kinds + ["yours: 384-bit × 14 Gb/s = 672 GB/s"]  # 384 bits × 14 Gb/s / 8 bits per byte
    for kind in kinds:
        rows = [r for r in table if r.memory_type == kind]
        assert list(lines[kind].get_xdata()) == [r.bus_bits for r in rows]
        assert list(lines[kind].get_ydata()) == pytest.approx([r.bandwidth_gbs for r in rows])
    star = lines["yours: 384-bit × 14 Gb/s = 672 GB/s"]
    assert list(star.get_xdata()) == [384] and list(star.get_ydata()) == pytest.approx([672])
    guides = [line for line in ax.lines if line.get_label().startswith("_")]
    assert len(guides) == 5, "one dotted line per data rate 2, 4, 8, 16, 32 Gb/s per pin"
    for guide, rate in zip(guides, (2, 4, 8, 16, 32)):
        assert guide.get_ydata() == pytest.approx(guide.get_xdata() * rate / 8)
    texts = [t.get_text() for t in ax.texts]
    assert [t for t in texts if "per pin" in t] == [f"{r} Gb/s per pin" for r in (2, 4, 8, 16, 32)]
    assert set(r.name for r in table) <= set(texts), "every GPU is labelled"
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")


def test_bandwidth_curves_sort_each_series_and_draw_the_specs_flat():
    rows = [DeviceCopyRow("cpu", 16, bytes_touched=2**24, gbs=5.0),  # out of order on purpose
            DeviceCopyRow("cpu", 2, bytes_touched=2**21, gbs=10.0)]
    ax = bandwidth_views.plot_bandwidth_curves({"cpu": rows, "gpu, recorded": rows[:1]}, {"spec": 20}).axes[0]
    lines = _named_lines(ax)
    assert list(lines) == ["cpu", "gpu, recorded", "spec"]
    assert list(lines["cpu"].get_xdata()) == [2, 16] and list(lines["cpu"].get_ydata()) == [10.0, 5.0]  # MiB, GB/s
    assert lines["cpu"].get_linestyle() == "-" and lines["gpu, recorded"].get_linestyle() == ":"
    assert list(lines["spec"].get_ydata()) == [20, 20]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["cpu", "gpu, recorded", "spec"]
    with pytest.raises(ValueError):
        bandwidth_views.plot_bandwidth_curves({})


def test_bandwidth_sweep_figure_marks_the_cache():
    rows = [DeviceCopyRow("cpu", megabytes=m, bytes_touched=2 * m * 2**20, gbs=100.0 / m) for m in (1, 4, 16)]
    fig = plot_bandwidth_sweep(rows, cache_bytes=32 * 2**20, cache_label="L3")
    assert _labels(fig) == ["measured copy bandwidth", "L3: 32 MiB"]
    plt.close(fig)
    with pytest.raises(ValueError):
        plot_bandwidth_sweep([])


def test_widget_draws_its_default_design(displayed, capsys):
    assert bandwidth_views.bandwidth_widget().children
    assert "384-bit bus × 14 Gb/s per pin / 8 = 672 GB/s" in capsys.readouterr().out
    (fig,) = displayed
    assert "yours: 384-bit × 14 Gb/s = 672 GB/s" in _named_lines(fig.axes[0])


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
    fig = bandwidth_views.plot_memory_capacities([("H200 SXM", 141e9, "GPU memory")], unit="GB")
    assert [t.get_text() for t in fig.axes[0].texts] == ["141 GB"] and fig.axes[0].get_xlabel().startswith("GB")
    plt.close(fig)
    with pytest.raises(ValueError, match="unit"):
        bandwidth_views.plot_memory_capacities([("x", 1e9, "y")], unit="MB")
    with pytest.raises(ValueError):
        bandwidth_views.plot_memory_capacities([])
