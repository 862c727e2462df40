"""Convolution figures: im2col's memory blow-up and its widget."""

import pytest

from d2lmp.views.conv import im2col_widget, plot_im2col_memory

KERNELS = (1, 3, 5, 7, 9, 11)


def test_im2col_blowup_is_k_squared_times_the_output_over_the_input():
    """With "same" padding a 27×27 input gives 26 // stride + 1 outputs per side, each a k×k patch of all channels."""
    ax = plot_im2col_memory(channels=64, size=27, batch=16, kernels=KERNELS, marked=(3, 1)).axes[0]
    *curves, star = ax.lines
    assert [c.get_label() for c in curves] == ["stride 1", "stride 2", "stride 4"]
    for curve, stride in zip(curves, (1, 2, 4)):
        out = 26 // stride + 1
        assert list(curve.get_xdata()) == list(KERNELS)
        assert list(curve.get_ydata()) == pytest.approx([k * k * out * out / 27**2 for k in KERNELS])
    assert list(star.get_xdata()) == [3] and list(star.get_ydata()) == pytest.approx([9])
    assert star.get_label() == "kernel 3, stride 1: 9.0×"
    assert ax.get_yscale() == "log"


def test_widget_starts_with_a_3x3_kernel(displayed, capsys):
    assert im2col_widget() is not None
    printed = capsys.readouterr().out
    # 16 × 64 × 27 × 27 float32 = 2.85 MiB; the matrix has 64·3·3 rows and 16·27·27 columns, 9× the input.
    assert "input 16×64×27×27 = 2.85 MiB; im2col matrix 576 × 11,664 = 25.63 MiB (9.0× the input)" in printed
    (fig,) = displayed
    assert fig.axes[0].lines[-1].get_label() == "kernel 3, stride 1: 9.0×"
