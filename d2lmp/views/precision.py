"""Low precision: gradient exponents against FP16's range, underflow against the loss scale (with a
widget), and quantized inference compared with FP32."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from d2lmp.views.figure import fig_ax, show

if TYPE_CHECKING:
    import ipywidgets
    import torch
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from d2lmp.precision import Underflow
    from d2lmp.quantize import InferenceRow

__all__ = ["plot_exponent_histogram", "loss_scale_widget", "plot_underflow_vs_scale", "plot_inference_compare"]


def plot_exponent_histogram(values: torch.Tensor, scale: float = 1.0, ax: Axes | None = None,
                            title: str = "Gradient magnitudes and FP16's range") -> Figure:
    """Histogram of log2 |value × scale| with FP16's smallest subnormal, smallest normal and max marked."""
    import torch

    from d2lmp.precision import exponent_histogram

    edges, counts = exponent_histogram(values * scale)
    fig, ax = fig_ax(ax, figsize=(8, 3.6))
    fi = torch.finfo(torch.float16)
    lo_sub, lo_norm, hi = np.log2(float(fi.tiny * fi.eps)), np.log2(float(fi.tiny)), np.log2(float(fi.max))
    centres = np.array(edges[:-1]) + 0.5
    colours = ["#d62728" if c < lo_sub else "#ff7f0e" if c < lo_norm else "#1f77b4" for c in centres]
    ax.bar(centres, counts, width=1.0, color=colours)
    for colour, text in (("#d62728", "becomes 0 in FP16"), ("#ff7f0e", "FP16 subnormal (few bits left)"),
                         ("#1f77b4", "FP16 normal")):
        ax.bar([np.nan], [np.nan], color=colour, label=text)
    ax.axvline(lo_sub, color="k", ls="--", lw=1, label="FP16 smallest subnormal 2^-24")
    ax.axvline(lo_norm, color="k", ls=":", lw=1, label="FP16 smallest normal 2^-14")
    ax.axvline(hi, color="k", ls="-.", lw=1, label="FP16 max 65,504 (≈2^16)")
    ax.set(xlabel=f"log2 |gradient × {scale:g}|", ylabel="count", title=title, yscale="log")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    return fig


def loss_scale_widget(gradients: torch.Tensor) -> ipywidgets.interactive:
    """Slide the loss scale (a power of two) and watch gradients move into FP16's range or out past its max."""
    import ipywidgets as w

    from d2lmp.precision import underflow_fractions

    def draw(log2_scale: int = 0) -> None:
        f = underflow_fractions(gradients, 2.0**log2_scale)
        print(f"scale 2^{log2_scale}: {f.zero:.2%} flushed to zero, {f.subnormal:.2%} subnormal, "
              f"{f.overflow:.2%} overflow (of {f.count:,} non-zero gradients)")
        show(plot_exponent_histogram(gradients, 2.0**log2_scale))

    return w.interactive(draw, log2_scale=w.IntSlider(0, 0, 30, 1, description="log2 scale"))


def plot_underflow_vs_scale(sweeps: Mapping[str, Sequence[Underflow]], ax: Axes | None = None,
                            title: str = "Gradients lost in FP16 against the loss scale") -> Figure:
    """Fraction of non-zero gradients that become 0 (solid) or inf (dashed) in FP16, per loss scale."""
    fig, ax = fig_ax(ax, figsize=(7, 3.6))
    for i, (label, rows) in enumerate(sweeps.items()):
        s = [r.scale for r in rows]
        ax.plot(s, [max(r.zero, 1e-7) for r in rows], "o-", color=f"C{i}", label=f"{label}: flushed to zero")
        ax.plot(s, [max(r.overflow, 1e-7) for r in rows], "x--", color=f"C{i}", label=f"{label}: overflow to inf")
    ax.set(xscale="log", yscale="log", xlabel="loss scale", ylabel="fraction of gradients (floor 1e-7)", title=title)
    ax.set_xscale("log", base=2)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return fig


def plot_inference_compare(rows: Sequence[InferenceRow], ax: Axes | None = None,
                           title: str = "Inference on this CPU") -> Figure:
    """Latency bars per precision (rows from ``quantize.compare_inference``), labelled with accuracy and size."""
    fig, ax = fig_ax(ax, figsize=(7, 3.4))
    x = np.arange(len(rows))
    base = rows[0].median_s
    bars = ax.bar(x, [r.median_s * 1e3 for r in rows], color=[f"C{i}" for i in range(len(rows))])
    for b, r in zip(bars, rows):
        ax.annotate(f"acc {r.accuracy:.1%}\n{r.weight_bytes / 2**10:,.0f} KiB\n{base / r.median_s:.2f}× speed",
                    (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x)
    ax.set_xticklabels([r.method for r in rows])
    ax.set(ylabel="ms per batch (median)", title=title)
    ax.set_ylim(0, max(r.median_s for r in rows) * 1e3 * 1.45)
    ax.grid(True, axis="y", alpha=0.3)
    return fig
