"""The roofline on screen: operations under a machine's roofs, and one roof per number format.

It draws measured operations under a machine's roofs, speed-ups per operation, a widget that places a chosen
operation (matmul, add, reduction, conv layer; size and dtype) under the roof, and one roof per number format (a
GPU's FP32, FP16 and INT8 figures) with a linear layer whose point moves with its batch."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from d2lmp.views.figure import fig_ax, show

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from d2lmp.roofline import OpPoint, Placement

__all__ = ["plot_roofline", "roofline_widget", "plot_speedups", "plot_format_roofs", "linear_layer_roofline_widget"]


def plot_roofline(peak_gflops: float, bandwidth_gbs: float, points: Sequence[OpPoint] = (), ax: Axes | None = None,
                  label: str = "this machine", peak_estimate: float | None = None,
                  bandwidth_estimate: float | None = None, estimate_label: str = "estimate",
                  title: str = "Roofline") -> Figure:
    """A log-log roofline with measured operations (``OpPoint``s) placed on it.

    The solid roof is drawn from ``peak_gflops`` and ``bandwidth_gbs`` (measured). Give
    ``peak_estimate`` and/or ``bandwidth_estimate`` (a formula, a vendor figure) to draw a
    second, dashed roof, so measured and quoted figures are never confused. Points are
    named in the legend (beside the axes) rather than on the plot, where labels collide.
    """
    from d2lmp.roofline import attainable_gflops, ridge_point

    fig, ax = fig_ax(ax, figsize=(9, 4.5))
    ridge = ridge_point(peak_gflops, bandwidth_gbs)
    intensities = [p.intensity for p in points] + [ridge]
    estimated = peak_estimate is not None or bandwidth_estimate is not None
    if estimated:
        est_peak = peak_estimate if peak_estimate is not None else peak_gflops
        est_bw = bandwidth_estimate if bandwidth_estimate is not None else bandwidth_gbs
        intensities.append(ridge_point(est_peak, est_bw))
    lo, hi = min(intensities) / 4, max(intensities) * 4
    ai = np.logspace(np.log10(lo), np.log10(hi), 200)
    ax.plot(ai, attainable_gflops(ai, peak_gflops, bandwidth_gbs), "k-", lw=2,
            label=f"{label}: {bandwidth_gbs:,.0f} GB/s, {peak_gflops:,.0f} GFLOP/s")
    if estimated:
        parts = ([f"{bandwidth_estimate:,.0f} GB/s"] if bandwidth_estimate is not None else []) + \
                ([f"{peak_estimate:,.0f} GFLOP/s"] if peak_estimate is not None else [])
        ax.plot(ai, attainable_gflops(ai, est_peak, est_bw), "k--", lw=1, alpha=0.6,
                label=f"{estimate_label}: {', '.join(parts)}")
    ax.axvline(ridge, color="gray", ls=":", label=f"ridge point {ridge:.1f} FLOP/byte")
    markers = "osD^vP*Xh<>p"
    for i, p in enumerate(points):
        ax.plot(p.intensity, p.gflops, markers[i % len(markers)], ms=7, ls="none", label=p.name)
    ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOP / byte)",
           ylabel="GFLOP/s", title=title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.tight_layout()
    return fig


def roofline_widget(peak_gflops: float, bandwidth_gbs: float, points: Sequence[OpPoint] = (),
                    dtype_peaks: Mapping[str, float] | None = None, **plot_kwargs: Any) -> ipywidgets.interactive:
    """Choose an operation, its size and its number type, and see where it lands on this roofline.

    The operation's FLOPs and bytes are counted (``roofline.place_operation``), not measured, and it is
    drawn at its bound. ``dtype_peaks`` maps each dtype offered to its compute roof in GFLOP/s; the
    first is the dtype the roof and ``points`` were measured in (default: float32 at ``peak_gflops``).
    ``plot_kwargs`` (label, peak_estimate, title, ...) go to ``plot_roofline`` for that first dtype.
    """
    import ipywidgets as w

    from d2lmp.roofline import OPERATIONS, place_operation

    peaks = dict(dtype_peaks or {"float32": peak_gflops})
    measured_dtype = next(iter(peaks))

    def draw(operation: str = "matmul", n: int = 1024, dtype: str = measured_dtype) -> None:
        peak = peaks[dtype]
        p = place_operation(operation, n, dtype, peak, bandwidth_gbs)
        print(f"{OPERATIONS[operation].format(n=n)} ({dtype}): {p.flops:.3g} FLOPs, {p.bytes:.3g} bytes → "
              f"{p.intensity:,.4g} FLOP/byte → at most {p.attainable_gflops:,.1f} GFLOP/s ({p.bound}-bound), "
              f"{p.seconds * 1e3:,.3g} ms at best")
        if dtype == measured_dtype:
            fig = plot_roofline(peak, bandwidth_gbs, list(points) + [p.point()], **plot_kwargs)
        else:  # another dtype's roof: the measured points and estimates belong to the first one
            fig = plot_roofline(peak, bandwidth_gbs, [p.point()], label=f"{dtype} roof",
                                title=f"{plot_kwargs.get('title', 'Roofline')} ({dtype} roof)")
        show(fig)

    sizes = [2**k for k in range(4, 14)]
    return w.interactive(draw, operation=w.Dropdown(options=list(OPERATIONS), value="matmul", description="operation"),
                         n=w.SelectionSlider(options=sizes, value=1024, description="size n"),
                         dtype=w.Dropdown(options=list(peaks), value=measured_dtype, description="dtype"))


def plot_speedups(names: Iterable[str], ratios: Iterable[float], kinds: Iterable[str] | None = None,
                  references: Mapping[str, float] | None = None, ax: Axes | None = None,
                  title: str = "Speed-up per operation", ylabel: str = "speed-up (×)") -> Figure:
    """Bars of one speed-up per operation (log scale), coloured by ``kinds``, with dashed reference lines."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter, NullFormatter

    names, ratios = list(names), list(ratios)
    if not names or len(names) != len(ratios):
        raise ValueError(f"need one ratio per name, got {len(names)} names and {len(ratios)} ratios")
    kinds = list(kinds) if kinds is not None else [""] * len(names)
    if len(kinds) != len(names):
        raise ValueError(f"need one kind per name, got {len(kinds)} kinds for {len(names)} names")
    fig, ax = fig_ax(ax, figsize=(9.5, 4.5))
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colours = {k: palette[i % len(palette)] for i, k in enumerate(dict.fromkeys(kinds))}
    x = np.arange(len(names))
    ax.bar(x, ratios, color=[colours[k] for k in kinds])
    for xi, r in zip(x, ratios):
        ax.annotate(f"{r:,.0f}×" if r >= 10 else f"{r:.1f}×", (xi, r), ha="center", va="bottom", fontsize=8,
                    textcoords="offset points", xytext=(0, 2))
    handles: list[Artist] = [Patch(color=c, label=k) for k, c in colours.items() if k]
    styles = ["--", ":", "-."]
    for i, (text, value) in enumerate((references or {}).items()):
        handles.append(ax.axhline(value, color="k", ls=styles[i % len(styles)], lw=1, label=f"{text}: {value:,.0f}×"))
    ax.set_xticks(x)
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set(yscale="log", ylabel=ylabel, title=title)
    # Bars grow from 1× (no change), not from an arbitrary floor; leave room above for the labels.
    ax.set_ylim(min([1.0] + [r / 2 for r in ratios]), max(ratios + list((references or {}).values())) * 2)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, axis="y", which="both", alpha=0.3)
    if handles:
        ax.legend(handles=handles, fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.tight_layout()
    return fig


def plot_format_roofs(roofs: Mapping[str, float], bandwidth_gbs: float, placement: Placement | None = None,
                      number_format: str | None = None, ax: Axes | None = None, label: str = "vendor figures",
                      title: str = "One memory, one roof per number format") -> Figure:
    """One roofline per number format over one bandwidth (``roofline.vendor_roofs``), and a placed operation.

    Every format shares the sloped roof (bytes per second are bytes, whatever they hold) and has its own flat
    roof and ridge point; ``placement`` (from ``roofline.place_linear_layer``) is drawn at its bound, on the
    roof of ``number_format``, which is drawn bold.
    """
    from d2lmp.roofline import attainable_gflops, ridge_point

    if not roofs:
        raise ValueError("need at least one roof")
    fig, ax = fig_ax(ax, figsize=(9, 4.5))
    ridges = [ridge_point(peak, bandwidth_gbs) for peak in roofs.values()]
    lo = min(ridges + ([placement.intensity] if placement else [])) / 20
    hi = max(ridges + ([placement.intensity] if placement else [])) * 8
    ai = np.logspace(np.log10(lo), np.log10(hi), 200)
    palette = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple"]
    for i, (name, peak) in enumerate(roofs.items()):
        chosen = name == number_format
        ax.plot(ai, attainable_gflops(ai, peak, bandwidth_gbs), color=palette[i % len(palette)],
                lw=2.5 if chosen else 1.2, alpha=1 if chosen else 0.7,
                label=f"{name}: {peak:,.0f} G(FL)OP/s, ridge {ridge_point(peak, bandwidth_gbs):,.0f} op/byte")
    if placement is not None:
        ax.plot(placement.intensity, placement.attainable_gflops, "k*", ms=14, ls="none",
                label=f"{placement.name}: {placement.intensity:,.1f} op/byte, {placement.bound}-bound")
    ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (operations / byte)",
           ylabel="G(FL)OP/s at most", title=f"{title}\n({label}, {bandwidth_gbs:,.0f} GB/s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.tight_layout()
    return fig


def linear_layer_roofline_widget(roofs: Mapping[str, float], bandwidth_gbs: float, features: int,
                                 **plot_kwargs: Any) -> ipywidgets.interactive:
    """Move the batch of a ``features`` → ``features`` linear layer and pick its number format: the layer's point
    moves along the roofs of ``plot_format_roofs`` (counted by ``roofline.place_linear_layer``, not measured)."""
    import ipywidgets as w

    from d2lmp.roofline import place_linear_layer

    formats = list(roofs)

    def draw(batch: int = 1, number_format: str = formats[-1]) -> None:
        p = place_linear_layer(batch, features, number_format, roofs, bandwidth_gbs)
        print(f"{p.name}: {p.flops:.3g} operations on {p.bytes:.3g} bytes → {p.intensity:,.1f} op/byte → at most "
              f"{p.attainable_gflops:,.0f} G(FL)OP/s ({p.bound}-bound), {p.seconds * 1e6:,.1f} µs at best")
        show(plot_format_roofs(roofs, bandwidth_gbs, p, number_format, **plot_kwargs))

    batches = [2**k for k in range(13)]
    return w.interactive(draw, batch=w.SelectionSlider(options=batches, value=1, description="batch b"),
                         number_format=w.Dropdown(options=formats, value=formats[-1], description="format"))
