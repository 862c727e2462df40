"""Figure helpers shared by the notebooks. Each takes plain data and returns a matplotlib Figure."""

from __future__ import annotations

import numpy as np


def _figure(ax, figsize=(6.5, 4)):
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
    return ax.figure, ax


def plot_matmul_sweep(rows: list[dict], ax=None, title: str = "Matrix multiplication throughput",
                      recorded_rows=(), recorded_label: str | None = None):
    """GFLOP/s against matrix size, one line per (device, dtype), with dashed peak lines.

    ``recorded_rows`` (e.g. an H200 sweep from ``d2lmp.recorded``) are drawn apart from the
    live ``rows``: hollow markers, dotted lines, every legend entry carrying ``recorded_label``.
    """
    if not rows and not recorded_rows:
        raise ValueError("nothing to plot: rows and recorded_rows are both empty")
    if recorded_rows and not recorded_label:
        raise ValueError("recorded_rows need a recorded_label saying where they were measured")
    fig, ax = _figure(ax)
    series = [(rows, None), (recorded_rows, recorded_label)]
    for data, source in series:
        groups: dict[tuple[str, str], list[dict]] = {}
        for r in data:
            groups.setdefault((r["device"], r["dtype"]), []).append(r)
        for (device, dtype), rs in groups.items():
            rs = sorted(rs, key=lambda r: r["size"])
            xs, ys = [r["size"] for r in rs], [r["gflops"] for r in rs]
            if source is None:
                line, = ax.plot(xs, ys, "o-", label=f"{device} {dtype} (measured here)")
                peak_label = f"{device} {dtype} peak {{:,.0f}}"
            else:
                line, = ax.plot(xs, ys, "o:", mfc="none", label=f"{dtype}, {source}")
                peak_label = f"{dtype} peak {{:,.0f}} (recorded GPU)"
            peak = rs[0]["peak_gflops"]
            if peak:
                ax.axhline(peak, ls="--", color=line.get_color(), alpha=0.7, label=peak_label.format(peak))
    sizes = sorted({r["size"] for r in list(rows) + list(recorded_rows)})
    ax.set(xscale="log", yscale="log", xlabel="matrix size n (n×n @ n×n)", ylabel="GFLOP/s", title=title)
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(s) for s in sizes])
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_roofline(peak_gflops: float, bandwidth_gbs: float, points=(), ax=None, label: str = "this machine",
                  peak_estimate: float | None = None, bandwidth_estimate: float | None = None,
                  estimate_label: str = "estimate", title: str = "Roofline"):
    """A log-log roofline with measured operations (``OpPoint``s) placed on it.

    The solid roof is drawn from ``peak_gflops`` and ``bandwidth_gbs`` (measured). Give
    ``peak_estimate`` and/or ``bandwidth_estimate`` (a formula, a vendor figure) to draw a
    second, dashed roof, so measured and quoted figures are never confused. Points are
    named in the legend (beside the axes) rather than on the plot, where labels collide.
    """
    from .roofline import attainable_gflops, ridge_point

    fig, ax = _figure(ax, figsize=(9, 4.5))
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
        if parallel_fraction < 1:
            ax.plot([marked], [r.speedup], "o", color="C1", mec="k")
            ax.annotate(f"{r.speedup:.2f}× speedup", (marked, r.speedup),
                        textcoords="offset points", xytext=(6, -14))
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


def plot_bandwidth_sweep(rows: list[dict], cache_bytes: int | None = None, cache_label: str = "last-level cache",
                         ax=None, title: str = "Copy bandwidth against buffer size"):
    """GB/s against bytes one copy touches (rows from ``roofline.bandwidth_sweep``), cache size marked."""
    if not rows:
        raise ValueError("rows is empty; pass the output of roofline.bandwidth_sweep")
    fig, ax = _figure(ax)
    mib = [r["bytes_touched"] / 2**20 for r in rows]
    ax.plot(mib, [r["gbs"] for r in rows], "o-", label="measured copy bandwidth")
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


def plot_speedups(names, ratios, kinds=None, references: dict[str, float] | None = None, ax=None,
                  title: str = "Speed-up per operation", ylabel: str = "speed-up (×)"):
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
    fig, ax = _figure(ax, figsize=(9.5, 4.5))
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colours = {k: palette[i % len(palette)] for i, k in enumerate(dict.fromkeys(kinds))}
    x = np.arange(len(names))
    ax.bar(x, ratios, color=[colours[k] for k in kinds])
    for xi, r in zip(x, ratios):
        ax.annotate(f"{r:,.0f}×" if r >= 10 else f"{r:.1f}×", (xi, r), ha="center", va="bottom", fontsize=8,
                    textcoords="offset points", xytext=(0, 2))
    handles = [Patch(color=c, label=k) for k, c in colours.items() if k]
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


# ---------------------------------------------------------------------------------------
# Notebooks 08-09: training curves, AlexNet's layers and its two GPUs, convolution speed


def plot_history(history, axes=None, epochs: int | None = None):
    """Training loss (left) and train/test accuracy (right) per epoch from a ``train.History``."""
    import matplotlib.pyplot as plt

    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    ax_loss, ax_acc = axes
    ax_loss.plot(history.epoch, history.train_loss, "o-", label="training loss")
    ax_acc.plot(history.epoch, history.train_acc, "o-", label="train accuracy")
    ax_acc.plot(history.epoch, history.test_acc, "s-", label="test accuracy")
    from matplotlib.ticker import MaxNLocator

    last = epochs or (history.epoch[-1] if history.epoch else 1)
    for ax in axes:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlim(0.5, last + 0.5)
        ax.set_xlabel("epoch")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    ax_loss.set(ylabel="cross-entropy", title="loss")
    ax_acc.set(ylabel="accuracy", ylim=(0, 1.02), title=f"accuracy on {history.device}")
    ax_loss.figure.tight_layout()
    return ax_loss.figure


def plot_params_vs_flops(shares, ax=None, title: str = "Where AlexNet's parameters and compute live"):
    """Side-by-side bars: each layer's share of parameters and of FLOPs (from ``models.params_vs_flops``)."""
    fig, ax = _figure(ax, figsize=(8, 3.8))
    names = [s["name"].split(".")[-1] for s in shares]
    x = np.arange(len(names))
    ax.bar(x - 0.2, [100 * s["param_share"] for s in shares], 0.4, label="share of parameters")
    ax.bar(x + 0.2, [100 * s["flop_share"] for s in shares], 0.4, label="share of FLOPs (one forward pass)")
    ax.set_xticks(x)
    ax.set_xticklabels(names)
    ax.set(ylabel="% of the network", title=title)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_filters(weight, ax=None, title: str = "First-layer filters", columns: int = 8):
    """Show conv filters (out, in, kh, kw) as a grid of images (first input channel, or RGB if 3)."""
    import matplotlib.pyplot as plt

    w = weight.detach().float().cpu()
    count = w.shape[0]
    rows = -(-count // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(columns * 0.9, rows * 0.9 + 0.4))
    axes = np.atleast_1d(axes).ravel()
    for i, ax in enumerate(axes):
        ax.axis("off")
        if i >= count:
            continue
        f = w[i]
        if f.shape[0] == 3:
            img = ((f - f.min()) / (f.max() - f.min() + 1e-12)).permute(1, 2, 0).numpy()
            ax.imshow(img)
        else:
            ax.imshow(f[0].numpy(), cmap="gray")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_two_gpu_split(ax=None):
    """AlexNet's two-GPU split (paper §3.2, Fig. 2): each layer's half per GPU and where they talk."""
    from matplotlib.patches import FancyBboxPatch

    fig, ax = _figure(ax, figsize=(10, 3.6))
    layers = [("conv1", "48", False), ("conv2", "128", False), ("conv3", "192", True), ("conv4", "192", False),
              ("conv5", "128", False), ("fc6", "2048", True), ("fc7", "2048", True), ("fc8", "500", True)]
    ys = {0: 1.0, 1: 0.0}
    for i, (name, per_gpu, cross) in enumerate(layers):
        for gpu, y in ys.items():
            ax.add_patch(FancyBboxPatch((i - 0.3, y - 0.22), 0.6, 0.44, boxstyle="round,pad=0.02",
                                        fc="#cfe3f7" if name.startswith("conv") else "#f7dccf", ec="k"))
            ax.text(i, y, f"{name}\n{per_gpu}", ha="center", va="center", fontsize=8)
        if i == 0:
            continue
        for gpu, y in ys.items():  # same-GPU connection
            ax.annotate("", (i - 0.3, y), (i - 0.7, y), arrowprops=dict(arrowstyle="->", color="k"))
        if cross:  # cross-GPU connections: every kernel sees both halves
            ax.annotate("", (i - 0.3, 0.15), (i - 0.7, 0.85), arrowprops=dict(arrowstyle="->", color="crimson", lw=1.5))
            ax.annotate("", (i - 0.3, 0.85), (i - 0.7, 0.15), arrowprops=dict(arrowstyle="->", color="crimson", lw=1.5))
    ax.text(-0.9, 1.0, "GPU 1", ha="right", va="center", fontweight="bold")
    ax.text(-0.9, 0.0, "GPU 2", ha="right", va="center", fontweight="bold")
    ax.plot([], [], color="crimson", label="crosses between the GPUs")
    ax.plot([], [], color="k", label="stays on one GPU")
    ax.set(xlim=(-1.6, len(layers) - 0.4), ylim=(-0.5, 1.5),
           title="AlexNet on two GTX 580s: half of each layer's kernels or neurons per GPU")
    ax.axis("off")
    ax.legend(loc="lower center", ncol=2, fontsize=8, bbox_to_anchor=(0.5, -0.12))
    return fig


def plot_conv_speed(rows, ax=None, title: str = "Convolution speed on AlexNet's layers"):
    """Grouped bars of GFLOP/s per layer and implementation (rows from ``conv.benchmark_conv``)."""
    fig, ax = _figure(ax, figsize=(8, 3.8))
    layers = list(dict.fromkeys(r["layer"] for r in rows))
    impls = list(dict.fromkeys(r["impl"] for r in rows))
    width = 0.8 / len(impls)
    x = np.arange(len(layers))
    for k, impl in enumerate(impls):
        got = {r["layer"]: r for r in rows if r["impl"] == impl}
        ys = [got[l]["gflops"] if l in got else 0 for l in layers]
        bars = ax.bar(x + (k - (len(impls) - 1) / 2) * width, ys, width, label=impl)
        if impl != "F.conv2d":
            for b, l in zip(bars, layers):
                if l in got:
                    ax.annotate(f"{got[l]['ratio']:.1f}×", (b.get_x() + b.get_width() / 2, b.get_height()),
                                ha="center", va="bottom", fontsize=7)
    device = rows[0]["device"] if rows else ""
    ax.set_xticks(x)
    ax.set_xticklabels(layers)
    ax.set(ylabel="GFLOP/s", title=f"{title} ({device}, batch {rows[0]['batch'] if rows else '?'}); "
                                    "labels: time / F.conv2d time")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_im2col_memory(channels: int = 64, size: int = 27, batch: int = 16, kernels=(1, 3, 5, 7, 9, 11),
                       strides=(1, 2, 4), marked: tuple[int, int] | None = None, ax=None):
    """How many times larger im2col's matrix is than its input, against kernel size, per stride ("same" padding)."""
    from .conv import im2col_size

    fig, ax = _figure(ax, figsize=(6.5, 3.8))
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
    return fig
