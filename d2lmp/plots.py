"""Figure helpers shared by the notebooks. Each takes plain data and returns a matplotlib Figure."""

from __future__ import annotations

import numpy as np


def _figure(ax, figsize=(6.5, 4)):
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
    return ax.figure, ax


def plot_matmul_sweep(rows: list[dict], ax=None):
    """GFLOP/s against matrix size, one line per (device, dtype), with dashed peak lines."""
    fig, ax = _figure(ax)
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["device"], r["dtype"]), []).append(r)
    for (device, dtype), rs in groups.items():
        rs = sorted(rs, key=lambda r: r["size"])
        line, = ax.plot([r["size"] for r in rs], [r["gflops"] for r in rs], "o-", label=f"{device} {dtype} (measured)")
        peak = rs[0]["peak_gflops"]
        if peak:
            ax.axhline(peak, ls="--", color=line.get_color(), alpha=0.7, label=f"{device} {dtype} peak {peak:,.0f}")
    ax.set(xscale="log", yscale="log", xlabel="matrix size n (n×n @ n×n)", ylabel="GFLOP/s",
           title="Matrix multiplication throughput")
    ax.set_xticks(sorted({r["size"] for r in rows}))
    ax.set_xticklabels([str(s) for s in sorted({r["size"] for r in rows})])
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_roofline(peak_gflops: float, bandwidth_gbs: float, points=(), ax=None, label: str = "this machine"):
    """A log-log roofline with measured operations (``OpPoint``s) placed on it."""
    from .roofline import attainable_gflops, ridge_point

    fig, ax = _figure(ax, figsize=(7, 4.5))
    ridge = ridge_point(peak_gflops, bandwidth_gbs)
    intensities = [p.intensity for p in points] + [ridge]
    lo, hi = min(intensities) / 4, max(intensities) * 4
    ai = np.logspace(np.log10(lo), np.log10(hi), 200)
    ax.plot(ai, attainable_gflops(ai, peak_gflops, bandwidth_gbs), "k-", lw=2,
            label=f"{label}: {bandwidth_gbs:,.0f} GB/s, {peak_gflops:,.0f} GFLOP/s")
    ax.axvline(ridge, color="gray", ls=":", label=f"ridge point {ridge:.1f} FLOP/byte")
    for p in points:
        ax.plot(p.intensity, p.gflops, "o")
        ax.annotate(p.name, (p.intensity, p.gflops), textcoords="offset points", xytext=(5, -10), fontsize=8)
    ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOP / byte)",
           ylabel="GFLOP/s", title="Roofline")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return fig


def plot_power_model(exponent: int, parallel_fraction: float = 1.0, marked: float | None = None, ax=None):
    """Throughput of one power budget spent on cores at each relative clock."""
    from .power import EXPONENTS, many_slow_cores

    fig, ax = _figure(ax)
    clocks = np.linspace(0.1, 1.0, 91)
    results = [many_slow_cores(f, exponent, parallel_fraction=parallel_fraction) for f in clocks]
    ax.plot(clocks, [r.throughput for r in results], label="throughput, perfectly parallel work")
    if parallel_fraction < 1:
        ax.plot(clocks, [r.speedup for r in results], label=f"speedup with {parallel_fraction:.0%} parallel work")
    if marked is not None:
        r = many_slow_cores(marked, exponent, parallel_fraction=parallel_fraction)
        ax.plot([marked], [r.throughput], "ko")
        ax.annotate(f"{r.cores:.1f} cores → {r.throughput:.1f}×", (marked, r.throughput),
                    textcoords="offset points", xytext=(6, 6))
    ax.set(yscale="log", xlabel="clock of each core (fraction of the fast core)",
           ylabel="relative to one fast core", title=f"Same power budget, {EXPONENTS[exponent]}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_wireframe(points_2d, edges, ax=None, title: str = ""):
    """Draw a projected wireframe (e.g. the rotating cube of notebook 01)."""
    fig, ax = _figure(ax, figsize=(4, 4))
    pts = np.asarray(points_2d)
    for i, j in edges:
        ax.plot(pts[[i, j], 0], pts[[i, j], 1], "b-")
    ax.plot(pts[:, 0], pts[:, 1], "ro", ms=4)
    ax.set(xlim=(-3, 3), ylim=(-3, 3), aspect="equal", title=title)
    ax.axis("off")
    return fig
