"""Convolution: speed of each implementation per AlexNet layer, and im2col's memory blow-up (with a
widget)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from d2lmp.views.figure import fig_ax, show

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from d2lmp.bench.conv import ConvTiming
    from d2lmp.recorded import ConvSpeedRow

__all__ = ["plot_conv_speed", "plot_im2col_memory", "im2col_widget"]


def plot_conv_speed(rows: Sequence[ConvTiming | ConvSpeedRow], ax: Axes | None = None,
                    title: str = "Convolution speed on AlexNet's layers") -> Figure:
    """Grouped bars of GFLOP/s per layer and implementation (``bench.conv.ConvTiming`` rows, or the recorded
    ``recorded.ConvSpeedRow``s, which have the same fields)."""
    fig, ax = fig_ax(ax, figsize=(8, 3.8))
    rows = [r for r in rows if r.gflops is not None]  # "copy only" does no arithmetic: no GFLOP/s bar
    layers = list(dict.fromkeys(r.layer for r in rows))
    impls = list(dict.fromkeys(r.impl for r in rows))
    width = 0.8 / len(impls)
    x = np.arange(len(layers))
    for k, impl in enumerate(impls):
        got = {r.layer: r for r in rows if r.impl == impl}
        ys = [got[layer].gflops or 0 if layer in got else 0 for layer in layers]
        bars = ax.bar(x + (k - (len(impls) - 1) / 2) * width, ys, width, label=impl)
        if impl != "F.conv2d":
            for b, layer in zip(bars, layers):
                if layer in got:
                    ax.annotate(f"{got[layer].ratio:.1f}×", (b.get_x() + b.get_width() / 2, b.get_height()),
                                ha="center", va="bottom", fontsize=7)
    device = rows[0].device if rows else ""
    ax.set_xticks(x)
    ax.set_xticklabels(layers)
    ax.set(ylabel="GFLOP/s", title=f"{title} ({device}, batch {rows[0].batch if rows else '?'}); "
                                    "labels: time / F.conv2d time")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_im2col_memory(channels: int = 64, size: int = 27, batch: int = 16,
                       kernels: Sequence[int] = (1, 3, 5, 7, 9, 11), strides: Sequence[int] = (1, 2, 4),
                       marked: tuple[int, int] | None = None, ax: Axes | None = None) -> Figure:
    """How many times larger im2col's matrix is than its input, against kernel size, per stride ("same" padding)."""
    from d2lmp.conv import im2col_size

    fig, ax = fig_ax(ax, figsize=(6.5, 3.8))
    for s in strides:
        ks = [k for k in kernels if k <= size + 2 * (k // 2)]
        ax.plot(ks, [im2col_size((batch, channels, size, size), k, s, k // 2).blowup for k in ks], "o-",
                label=f"stride {s}")
    if marked is not None:
        k, s = marked
        b = im2col_size((batch, channels, size, size), k, s, k // 2).blowup
        ax.plot([k], [b], "k*", ms=14, label=f"kernel {k}, stride {s}: {b:.1f}×")
    ax.set(yscale="log", xlabel="kernel size k (k×k, padding k//2)", ylabel="im2col matrix / input size",
           title=f"im2col memory blow-up ({channels} channels, {size}×{size} input)")
    ax.set_xticks(list(kernels))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def im2col_widget() -> ipywidgets.interactive:
    """Kernel, stride, channels, input size and batch → the im2col matrix's size and its blow-up over the input."""
    import ipywidgets as w

    from d2lmp.conv import im2col_size

    def draw(kernel: int = 3, stride: int = 1, channels: int = 64, size: int = 27, batch: int = 16) -> None:
        m = im2col_size((batch, channels, size, size), kernel, stride, kernel // 2)
        print(f"input {batch}×{channels}×{size}×{size} = {m.input_elements * 4 / 2**20:,.2f} MiB; im2col matrix "
              f"{m.rows:,} × {m.cols:,} = {m.bytes / 2**20:,.2f} MiB ({m.blowup:.1f}× the input)")
        show(plot_im2col_memory(channels, size, batch, marked=(kernel, stride)))

    return w.interactive(draw,
                         kernel=w.IntSlider(3, 1, 11, 2, description="kernel"),
                         stride=w.IntSlider(1, 1, 4, 1, description="stride"),
                         channels=w.IntSlider(64, 1, 512, 1, description="channels"),
                         size=w.IntSlider(27, 11, 224, 1, description="input size"),
                         batch=w.IntSlider(16, 1, 128, 1, description="batch"))
