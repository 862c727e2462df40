"""GPU memory on screen: bandwidth from the bus, measured copies, and capacity.

It draws bandwidth from bus width × data rate per pin for known GPUs (with a widget), measured copy bandwidth
against buffer size, and capacity beside the host's memory."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from d2lmp.views.figure import fig_ax, show

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from d2lmp.bandwidth import DeviceCopyRow, GPUMemoryRow

__all__ = ["MEMORY_COLOURS", "plot_bus_bandwidth", "bandwidth_widget", "plot_bandwidth_sweep", "plot_bandwidth_curves",
           "plot_memory_capacities"]


MEMORY_COLOURS = {"GDDR5": "#8c8c8c", "GDDR6": "#1f77b4", "HBM2": "#d62728", "HBM2e": "#ff7f0e",
                  "HBM3": "#9467bd", "HBM3e": "#2ca02c"}


def plot_bus_bandwidth(table: Sequence[GPUMemoryRow], marked: tuple[int, float] | None = None, ax: Axes | None = None,
                       title: str = "Bandwidth = bus width × data rate per pin / 8") -> Figure:
    """Known GPUs (rows from ``bandwidth.gpu_memory_table``) on bus width vs bandwidth, with lines of equal
    per-pin rate; ``marked`` = (bus bits, Gb/s per pin) adds a star for a design of your own."""
    from d2lmp.bandwidth import bus_bandwidth_gbs

    fig, ax = fig_ax(ax, figsize=(8, 4.5))
    bits = np.logspace(np.log10(128), np.log10(10000), 50)
    for rate in (2, 4, 8, 16, 32):
        ax.plot(bits, bits * rate / 8, color="gray", lw=0.8, ls=":")
        ax.annotate(f"{rate} Gb/s per pin", (bits[0], bits[0] * rate / 8), fontsize=7, color="gray",
                    ha="left", va="bottom", rotation=22)
    for kind in dict.fromkeys(r.memory_type for r in table):
        rows = [r for r in table if r.memory_type == kind]
        ax.plot([r.bus_bits for r in rows], [r.bandwidth_gbs for r in rows], "o", ms=8,
                color=MEMORY_COLOURS.get(kind), label=kind)
        for r in rows:
            right = r.name.startswith("A100")  # the two A100s share a bus width: label them on the right
            ax.annotate(r.name, (r.bus_bits, r.bandwidth_gbs), fontsize=7, textcoords="offset points",
                        xytext=(8, -3) if right else (-6, 6),
                        ha="left" if right or r.bus_bits < 3000 else "right")
    if marked is not None:
        b, per_pin = marked
        bw = bus_bandwidth_gbs(b, per_pin)
        ax.plot([b], [bw], "k*", ms=15, label=f"yours: {b}-bit × {per_pin:g} Gb/s = {bw:,.0f} GB/s")
    ax.set(xscale="log", yscale="log", xlabel="memory bus width (bits)", ylabel="peak bandwidth (GB/s)", title=title)
    ticks = [128, 256, 512, 1024, 2048, 4096, 8192]
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks])
    ax.minorticks_off()
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    return fig


def bandwidth_widget() -> ipywidgets.interactive:
    """Bus width and data rate per pin → peak bandwidth, with the known GPUs (sourced table) for comparison."""
    import ipywidgets as w

    from d2lmp.bandwidth import bus_bandwidth_gbs, gpu_memory_table

    table = gpu_memory_table()

    def draw(bus_bits: int = 384, gbps: float = 14.0) -> None:
        print(f"{bus_bits}-bit bus × {gbps:g} Gb/s per pin / 8 = {bus_bandwidth_gbs(bus_bits, gbps):,.0f} GB/s")
        show(plot_bus_bandwidth(table, marked=(bus_bits, gbps)))

    return w.interactive(draw,
                         bus_bits=w.SelectionSlider(options=[64, 128, 192, 256, 320, 352, 384, 512, 1024, 2048,
                                                             4096, 5120, 6144, 8192],
                                                    value=384, description="bus bits"),
                         gbps=w.FloatSlider(value=14.0, min=1.0, max=32.0, step=0.5, description="Gb/s per pin"))


def plot_bandwidth_sweep(rows: Sequence[DeviceCopyRow], cache_bytes: int | None = None,
                         cache_label: str = "last-level cache", ax: Axes | None = None,
                         title: str = "Copy bandwidth against buffer size") -> Figure:
    """GB/s against bytes one copy touches (rows from ``bandwidth.device_copy_sweep``), cache size marked."""
    if not rows:
        raise ValueError("rows is empty; pass the output of bandwidth.device_copy_sweep")
    fig, ax = fig_ax(ax)
    mib = [r.bytes_touched / 2**20 for r in rows]
    ax.plot(mib, [r.gbs for r in rows], "o-", label="measured copy bandwidth")
    if cache_bytes:
        ax.axvline(cache_bytes / 2**20, color="gray", ls="--",
                   label=f"{cache_label}: {cache_bytes / 2**20:g} MiB")
    ax.set(xscale="log", xlabel="bytes one copy touches (source + destination, MiB)", ylabel="GB/s",
           title=title, ylim=(0, None))
    ax.set_xticks(mib)
    ax.set_xticklabels([f"{m:g}" for m in mib])
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_bandwidth_curves(series: Mapping[str, Sequence[DeviceCopyRow]], specs: Mapping[str, float] | None = None,
                          ax: Axes | None = None, title: str = "Measured copy bandwidth against buffer size") -> Figure:
    """One curve per label (rows with ``bytes_touched`` and ``gbs``), dashed horizontal lines for ``specs``."""
    if not series:
        raise ValueError("series is empty; pass {label: rows}")
    fig, ax = fig_ax(ax, figsize=(8, 4.2))
    for i, (label, rows) in enumerate(series.items()):
        rows = sorted(rows, key=lambda r: r.bytes_touched)
        ax.plot([r.bytes_touched / 2**20 for r in rows], [r.gbs for r in rows],
                "o-" if "recorded" not in label else "s:", color=f"C{i}", label=label)
    for j, (label, value) in enumerate((specs or {}).items()):
        ax.axhline(value, color=f"C{j + len(series)}", ls="--", lw=1, label=label)
    ax.set(xscale="log", yscale="log", xlabel="bytes one copy touches (read + write, MiB)", ylabel="GB/s", title=title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.tight_layout()
    return fig


def plot_memory_capacities(rows: Iterable[tuple[str, float, str]], ax: Axes | None = None,
                           title: str = "Memory capacity: one GPU against a host (log scale)",
                           unit: str = "GiB") -> Figure:
    """Horizontal bars of capacity on a log axis, one per row (label, bytes, kind), coloured by kind.

    Kinds are free text (e.g. "GPU memory, vendor figure", "host memory, vendor figure", "measured here");
    each bar is labelled with its size in ``unit``: "GiB" (2^30 bytes, the unit memory is built in) or "GB"
    (10^9 bytes, the unit vendors quote).
    """
    from matplotlib.patches import Patch

    rows = list(rows)
    if not rows or any(size <= 0 for _, size, _ in rows):
        raise ValueError("need at least one (label, bytes, kind) row, every size positive")
    if unit not in ("GiB", "GB"):
        raise ValueError(f"unit must be 'GiB' or 'GB', got {unit!r}")
    per_unit = 2**30 if unit == "GiB" else 10**9
    fig, ax = fig_ax(ax, figsize=(10, 0.9 + 0.34 * len(rows)))
    colours = {kind: f"C{i}" for i, kind in enumerate(dict.fromkeys(kind for _, _, kind in rows))}
    y = np.arange(len(rows))
    sizes = [size / per_unit for _, size, _ in rows]
    ax.barh(y, sizes, color=[colours[kind] for _, _, kind in rows])
    for yi, gb in zip(y, sizes):
        ax.annotate(f"{gb:,.3g} {unit}", (gb, yi), va="center", fontsize=8, textcoords="offset points", xytext=(3, 0))
    ax.set_yticks(y)
    ax.set_yticklabels([label for label, _, _ in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set(xscale="log", xlim=(min(sizes) / 2, max(sizes) * 4), xlabel=f"{unit} (log scale)", title=title)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax.legend(handles=[Patch(color=c, label=k) for k, c in colours.items()], fontsize=8, loc="upper left",
              bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig
