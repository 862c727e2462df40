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
        for y in ys.values():
            ax.add_patch(FancyBboxPatch((i - 0.3, y - 0.22), 0.6, 0.44, boxstyle="round,pad=0.02",
                                        fc="#cfe3f7" if name.startswith("conv") else "#f7dccf", ec="k"))
            ax.text(i, y, f"{name}\n{per_gpu}", ha="center", va="center", fontsize=8)
        if i == 0:
            continue
        for y in ys.values():  # same-GPU connection
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
    rows = [r for r in rows if r.get("gflops") is not None]  # "copy only" does no arithmetic: no GFLOP/s bar
    layers = list(dict.fromkeys(r["layer"] for r in rows))
    impls = list(dict.fromkeys(r["impl"] for r in rows))
    width = 0.8 / len(impls)
    x = np.arange(len(layers))
    for k, impl in enumerate(impls):
        got = {r["layer"]: r for r in rows if r["impl"] == impl}
        ys = [got[layer]["gflops"] if layer in got else 0 for layer in layers]
        bars = ax.bar(x + (k - (len(impls) - 1) / 2) * width, ys, width, label=impl)
        if impl != "F.conv2d":
            for b, layer in zip(bars, layers):
                if layer in got:
                    ax.annotate(f"{got[layer]['ratio']:.1f}×", (b.get_x() + b.get_width() / 2, b.get_height()),
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


# ---------------------------------------------------------------------------------------
# Notebooks 04-07: memory bandwidth, interconnects, memory of training vs inference, precision

MEMORY_COLOURS = {"GDDR5": "#8c8c8c", "GDDR6": "#1f77b4", "HBM2": "#d62728", "HBM2e": "#ff7f0e",
                  "HBM3": "#9467bd", "HBM3e": "#2ca02c"}


def plot_bus_bandwidth(table, marked: tuple[int, float] | None = None, ax=None,
                       title: str = "Bandwidth = bus width × data rate per pin / 8"):
    """Known GPUs (rows from ``bandwidth.gpu_memory_table``) on bus width vs bandwidth, with lines of equal
    per-pin rate; ``marked`` = (bus bits, Gb/s per pin) adds a star for a design of your own."""
    from .bandwidth import bus_bandwidth_gbs

    fig, ax = _figure(ax, figsize=(8, 4.5))
    bits = np.logspace(np.log10(128), np.log10(10000), 50)
    for rate in (2, 4, 8, 16, 32):
        ax.plot(bits, bits * rate / 8, color="gray", lw=0.8, ls=":")
        ax.annotate(f"{rate} Gb/s per pin", (bits[0], bits[0] * rate / 8), fontsize=7, color="gray",
                    ha="left", va="bottom", rotation=22)
    for kind in dict.fromkeys(r["memory_type"] for r in table):
        rows = [r for r in table if r["memory_type"] == kind]
        ax.plot([r["bus_bits"] for r in rows], [r["bandwidth_gbs"] for r in rows], "o", ms=8,
                color=MEMORY_COLOURS.get(kind), label=kind)
        for r in rows:
            right = r["name"].startswith("A100")  # the two A100s share a bus width: label them on the right
            ax.annotate(r["name"], (r["bus_bits"], r["bandwidth_gbs"]), fontsize=7, textcoords="offset points",
                        xytext=(8, -3) if right else (-6, 6),
                        ha="left" if right or r["bus_bits"] < 3000 else "right")
    if marked is not None:
        b, rate = marked
        bw = bus_bandwidth_gbs(b, rate)
        ax.plot([b], [bw], "k*", ms=15, label=f"yours: {b}-bit × {rate:g} Gb/s = {bw:,.0f} GB/s")
    ax.set(xscale="log", yscale="log", xlabel="memory bus width (bits)", ylabel="peak bandwidth (GB/s)", title=title)
    ticks = [128, 256, 512, 1024, 2048, 4096, 8192]
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks])
    ax.minorticks_off()
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    return fig


def plot_bandwidth_curves(series: dict, specs: dict | None = None, ax=None,
                          title: str = "Measured copy bandwidth against buffer size"):
    """One curve per label (rows with ``bytes_touched`` and ``gbs``), dashed horizontal lines for ``specs``."""
    if not series:
        raise ValueError("series is empty; pass {label: rows}")
    fig, ax = _figure(ax, figsize=(8, 4.2))
    for i, (label, rows) in enumerate(series.items()):
        rows = sorted(rows, key=lambda r: r["bytes_touched"])
        ax.plot([r["bytes_touched"] / 2**20 for r in rows], [r["gbs"] for r in rows],
                "o-" if "recorded" not in label else "s:", color=f"C{i}", label=label)
    for j, (label, value) in enumerate((specs or {}).items()):
        ax.axhline(value, color=f"C{j + len(series)}", ls="--", lw=1, label=label)
    ax.set(xscale="log", yscale="log", xlabel="bytes one copy touches (read + write, MiB)", ylabel="GB/s", title=title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.tight_layout()
    return fig


def plot_link_bandwidth(pcie_rows, nvlink_rows, ax=None, title: str = "Link bandwidth per GPU (both directions)"):
    """Bars: PCIe ×16 and NVLink per generation (rows from ``topology.pcie_table`` / ``nvlink_table``)."""
    fig, ax = _figure(ax, figsize=(8, 3.8))
    names = [f"PCIe {r['generation']}.0\n×16" for r in pcie_rows] + [f"NVLink {r['generation']}\n({r['gpu']})"
                                                                     for r in nvlink_rows]
    values = [r["both_directions_gbs"] for r in pcie_rows] + [r["total_gbs"] for r in nvlink_rows]
    colours = ["#1f77b4"] * len(pcie_rows) + ["#2ca02c"] * len(nvlink_rows)
    bars = ax.bar(range(len(names)), values, color=colours)
    for b, v in zip(bars, values):
        ax.annotate(f"{v:,.0f}", (b.get_x() + b.get_width() / 2, v), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, fontsize=7)
    ax.set(yscale="log", ylabel="GB/s (both directions)", title=title)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    return fig


def plot_topology(topology, ax=None):
    """Draw a ``topology.Topology``: GPUs as boxes, switches and CPUs as grey boxes, NVLink green, PCIe blue."""
    fig, ax = _figure(ax, figsize=(4.5, 3.6))
    colours = {"nvlink": "#2ca02c", "pcie": "#1f77b4"}
    for a, b, kind in topology.edges:
        (x1, y1), (x2, y2) = topology.nodes[a], topology.nodes[b]
        ax.plot([x1, x2], [y1, y2], color=colours.get(kind, "k"), lw=2, alpha=0.8, zorder=1)
    for name, (x, y) in topology.nodes.items():
        gpu = name.startswith("GPU")
        ax.text(x, y, name, ha="center", va="center", fontsize=7 if gpu else 6, zorder=2,
                bbox=dict(boxstyle="round,pad=0.3", fc="#fde0b6" if gpu else "#dddddd", ec="k"))
    for kind, c in colours.items():
        if any(k == kind for *_, k in topology.edges):
            ax.plot([], [], color=c, lw=2, label="NVLink" if kind == "nvlink" else "PCIe")
    ax.set_title(topology.name, fontsize=10)
    ax.margins(0.15)
    ax.axis("off")
    ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, -0.15), ncol=2)
    return fig


def plot_power_budget(budget: dict, ax=None):
    """One stacked bar of the load (GPUs, CPU, rest) against the supply and its usable part."""
    fig, ax = _figure(ax, figsize=(7, 2.4))
    left = 0.0
    for label, value, colour in (("GPUs", budget["gpu_total"], "#2ca02c"), ("CPU", budget["cpu"], "#1f77b4"),
                                 ("rest", budget["other"], "#8c8c8c")):
        ax.barh([0], [value], left=left, color=colour, label=f"{label}: {value:,.0f} W")
        left += value
    ax.axvline(budget["usable"], color="orange", ls="--", label=f"usable ({budget['usable']:,.0f} W)")
    ax.axvline(budget["psu"], color="red", lw=2, label=f"power supply {budget['psu']:,.0f} W")
    verdict = "fits" if budget["fits"] else "does NOT fit"
    ax.set(yticks=[], xlabel="watts", xlim=(0, max(budget["psu"], budget["load"]) * 1.1),
           title=f"{budget['gpus']} GPU(s): load {budget['load']:,.0f} W {verdict}")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.tight_layout()
    return fig


MEMORY_PARTS = (("parameters", "#1f77b4"), ("gradients", "#ff7f0e"), ("optimizer_state", "#2ca02c"),
                ("saved_activations", "#d62728"), ("live_activations", "#9467bd"))


def plot_memory_breakdown(rows, ax=None, title: str = "What memory holds", unit: str = "MiB"):
    """Stacked horizontal bars, one per row (``memory.breakdown_rows``), one colour per component."""
    scale = {"MiB": 2**20, "GiB": 2**30}[unit]
    fig, ax = _figure(ax, figsize=(8, 1.2 + 0.7 * len(rows)))
    for i, row in enumerate(rows):
        left = 0.0
        for part, colour in MEMORY_PARTS:
            value = row.get(part, 0) / scale
            if value > 0:
                ax.barh([i], [value], left=left, color=colour, label=part.replace("_", " ") if i == 0 or
                        not any(r.get(part, 0) for r in rows[:i]) else None)
                left += value
        ax.annotate(f"{left:,.1f} {unit}", (left, i), textcoords="offset points", xytext=(4, 0), va="center",
                    fontsize=8)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r["label"] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set(xlabel=unit, title=title)
    ax.set_xlim(0, max(sum(r.get(p, 0) for p, _ in MEMORY_PARTS) for r in rows) / scale * 1.25)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_saved_per_layer(per_layer, ax=None, title: str = "Saved activations per layer"):
    """Measured and predicted saved bytes per layer (rows from ``memory.compare_saved_activations``)."""
    rows = [r for r in per_layer if r["measured"] or r["predicted"]]
    fig, ax = _figure(ax, figsize=(8, 3.6))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["measured"] / 2**10 for r in rows], 0.4, label="measured (saved-tensor hooks)")
    ax.bar(x + 0.2, [r["predicted"] / 2**10 for r in rows], 0.4, label="predicted (shapes × rule)")
    ax.set_xticks(x)
    ax.set_xticklabels([f"{r['name'].split('.')[-1]} ({r['kind']})" for r in rows], fontsize=7, rotation=40, ha="right")
    ax.set(ylabel="KiB", title=title)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_exponent_histogram(values, scale: float = 1.0, ax=None, title: str = "Gradient magnitudes and FP16's range"):
    """Histogram of log2 |value × scale| with FP16's smallest subnormal, smallest normal and max marked."""
    import torch

    from .precision import exponent_histogram

    edges, counts = exponent_histogram(values * scale)
    fig, ax = _figure(ax, figsize=(8, 3.6))
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


def plot_underflow_vs_scale(sweeps: dict, ax=None, title: str = "Gradients lost in FP16 against the loss scale"):
    """Fraction of non-zero gradients that become 0 (solid) or inf (dashed) in FP16, per loss scale."""
    fig, ax = _figure(ax, figsize=(7, 3.6))
    for i, (label, rows) in enumerate(sweeps.items()):
        s = [r["scale"] for r in rows]
        ax.plot(s, [max(r["zero"], 1e-7) for r in rows], "o-", color=f"C{i}", label=f"{label}: flushed to zero")
        ax.plot(s, [max(r["overflow"], 1e-7) for r in rows], "x--", color=f"C{i}", label=f"{label}: overflow to inf")
    ax.set(xscale="log", yscale="log", xlabel="loss scale", ylabel="fraction of gradients (floor 1e-7)", title=title)
    ax.set_xscale("log", base=2)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return fig


def plot_inference_compare(rows, ax=None, title: str = "Inference on this CPU"):
    """Latency bars per precision (rows from ``quantize.compare_inference``), labelled with accuracy and size."""
    fig, ax = _figure(ax, figsize=(7, 3.4))
    x = np.arange(len(rows))
    base = rows[0]["median_s"]
    bars = ax.bar(x, [r["median_s"] * 1e3 for r in rows], color=[f"C{i}" for i in range(len(rows))])
    for b, r in zip(bars, rows):
        ax.annotate(f"acc {r['accuracy']:.1%}\n{r['weight_bytes'] / 2**10:,.0f} KiB\n{base / r['median_s']:.2f}× speed",
                    (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x)
    ax.set_xticklabels([r["method"] for r in rows])
    ax.set(ylabel="ms per batch (median)", title=title)
    ax.set_ylim(0, max(r["median_s"] for r in rows) * 1e3 * 1.45)
    ax.grid(True, axis="y", alpha=0.3)
    return fig
