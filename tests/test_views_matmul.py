"""Matmul sweep figure: live rows and a recorded sweep drawn apart, peaks dashed."""

import matplotlib.pyplot as plt
import pytest

from d2lmp import recorded
from d2lmp.timing import MatmulRow
from d2lmp.views.matmul import plot_matmul_sweep


def _rows(device="cpu", peak=100.0):
    return [MatmulRow(size=n, dtype="float32", device=device, median_s=1.0, spread=0.0, gflops=n / 10,
                      peak_gflops=peak, fraction_of_peak=n / 10 / peak) for n in (64, 128)]


def _labels(fig):
    return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def test_live_rows_and_dashed_peak():
    fig = plot_matmul_sweep(_rows(), title="CPU only (no GPU here)")
    ax = fig.axes[0]
    assert ax.get_title() == "CPU only (no GPU here)"
    assert _labels(fig) == ["cpu float32 (measured here)", "cpu float32 peak 100"]
    assert ax.lines[1].get_linestyle() == "--"
    plt.close(fig)


def test_recorded_rows_are_a_separate_labelled_series():
    rec = recorded.matmul_rows("float32")
    fig = plot_matmul_sweep(_rows(), recorded_rows=rec, recorded_label=recorded.H200_LABEL)
    labels = _labels(fig)
    assert labels[:2] == ["cpu float32 (measured here)", "cpu float32 peak 100"]
    assert labels[2] == f"float32, {recorded.H200_LABEL}"
    assert labels[3].startswith("float32 peak 67,000")
    assert "vendor figure" in labels[3] and "(not recorded)" in labels[3]
    ax = fig.axes[0]
    assert ax.lines[2].get_linestyle() == ":" and ax.lines[2].get_markerfacecolor() == "none"
    assert [int(t) for t in ax.get_xticks()] == [64, 128, 1024, 2048, 4096, 8192]
    plt.close(fig)


def test_recorded_rows_without_rows_or_peak():
    rec = [MatmulRow(size=256, dtype="float32", device="cuda:0", median_s=1.0, spread=0.0, gflops=1.0, peak_gflops=None,
                     fraction_of_peak=None)]
    fig = plot_matmul_sweep([], recorded_rows=rec, recorded_label="recorded elsewhere")
    assert _labels(fig) == ["float32, recorded elsewhere"]
    plt.close(fig)


def test_bad_input():
    with pytest.raises(ValueError, match="recorded_label"):
        plot_matmul_sweep(_rows(), recorded_rows=_rows("cuda:0"))
    with pytest.raises(ValueError, match="empty"):
        plot_matmul_sweep([])

