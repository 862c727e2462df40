"""Data parallelism in pictures: replicas, shards and the all-reduce, and the predicted scaling.

It draws replicas, shards and the gradient all-reduce, and the predicted scaling (efficiency against devices, link
bandwidth, bucket size and per-message latency α) as a plot and a widget.

The predictions are ``model.dp_model``'s (``scaling_curves``, ``predict_step``); this module draws them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from d2lmp.model.dp_model import DDP_BUCKET_BYTES
from d2lmp.views.figure import fig_ax, show

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["WORLDS", "plot_data_parallel", "plot_dp_scaling", "dp_scaling_widget"]

WORLDS = (1, 2, 4, 8, 16, 32, 64)  # the numbers of devices the scaling plot and widget show


def _sub(n: int) -> str:
    return str(n).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))


def plot_data_parallel(world: int = 3, batch: int = 10, ax: Axes | None = None) -> Figure:
    """Replicas, shards and the all-reduce: the minibatch cut as ``data_parallel.shard`` cuts it, one full
    model per rank, each rank's local gradient, and their sum on every rank after the all-reduce."""
    import matplotlib.pyplot as plt
    import torch
    from matplotlib.patches import FancyArrowPatch, Rectangle

    from d2lmp.parallel.data_parallel import shard

    if not 1 <= world <= batch:
        raise ValueError(f"need 1 <= world <= batch, got world={world}, batch={batch}")
    index = torch.arange(batch)
    parts = [shard(index, index, r, world)[1].tolist() for r in range(world)]
    colours = [plt.get_cmap("tab10")(r % 10) for r in range(world)]
    fig, ax = fig_ax(ax, figsize=(2.3 * world + 1.2, 5.6))
    width = 2.3 * world
    col = width / world

    def box(x: float, y: float, w: float, h: float, colour: Any, **kw: Any) -> None:
        ax.add_patch(Rectangle((x, y), w, h, facecolor=colour, edgecolor="black", linewidth=0.6, **kw))

    def arrow(x0: float, y0: float, x1: float, y1: float) -> None:
        ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), arrowstyle="-|>", mutation_scale=10, color="0.35"))

    # The minibatch, one square per example, coloured by the rank that gets it.
    side = min(0.42, (width - 0.4) / batch)
    left = (width - side * batch) / 2
    owner = {i: r for r, part in enumerate(parts) for i in part}
    for i in range(batch):
        box(left + i * side, 9.0, side, side, colours[owner[i]])
        ax.text(left + (i + 0.5) * side, 9.0 + side / 2, str(i), ha="center", va="center", fontsize=7)
    ax.text(width / 2, 9.75, f"minibatch of B = {batch} examples", ha="center", fontsize=9)
    for r, part in enumerate(parts):
        cx = (r + 0.5) * col
        first = left + (part[0] + len(part) / 2) * side
        arrow(first, 8.95, cx, 7.95)
        # The rank: a full replica of the model and its share of the loss.
        box(r * col + 0.12, 4.7, col - 0.24, 3.2, "white")
        examples = f"examples {part[0]}–{part[-1]}" if len(part) > 1 else f"example {part[0]}"
        ax.text(cx, 7.6, f"rank {r}: {examples}", ha="center", fontsize=8)
        for k, name in enumerate(("W₁", "W₂", "W₃")):
            box(cx - 0.55, 6.75 - 0.3 * k, 1.1, 0.22, "0.85")
            ax.text(cx, 6.86 - 0.3 * k, name, ha="center", va="center", fontsize=7)
        ax.text(cx, 5.7, "full replica (same W)\nloss = Σ ℓᵢ (own examples) / B", ha="center",
                va="center", fontsize=7)
        box(cx - 0.55, 4.9, 1.1, 0.3, colours[r])
        ax.text(cx, 5.05, f"local gradient g{_sub(r)}", ha="center", va="center", fontsize=7)
        arrow(cx, 4.85, cx, 4.1)
        # After the all-reduce every rank holds the sum: one stripe from every rank.
        arrow(cx, 3.2, cx, 2.55)
        for k in range(world):
            box(cx - 0.55 + 1.1 * k / world, 2.15, 1.1 / world, 0.35, colours[k])
        ax.text(cx, 1.8, " + ".join(f"g{_sub(k)}" for k in range(world)) if world <= 4 else "Σ g", ha="center",
                fontsize=7)
    box(0.12, 3.25, width - 0.24, 0.8, "#f3d9d9")
    ax.text(width / 2, 3.65, "all-reduce (sum over ranks)", ha="center", va="center", fontsize=9)
    ax.text(width / 2, 1.1, "= the full-batch gradient on every rank: every replica takes the same step",
            ha="center", fontsize=8)
    ax.set(xlim=(0, width), ylim=(0.8, 10.1), title=f"Data parallelism on {world} ranks")
    ax.axis("off")
    return fig


def plot_dp_scaling(worlds: Sequence[int], curves: Mapping[tuple[str, bool], Sequence[float]], alpha: float,
                    bucket_bytes: float = DDP_BUCKET_BYTES, mark_world: int | None = None, ax: Axes | None = None,
                    title: str | None = None) -> Figure:
    """Predicted efficiency against devices, one curve per (link, overlap) of ``dp_model.scaling_curves`` (solid
    with overlap, dashed without), computed at latency ``alpha`` seconds per message and ``bucket_bytes`` buckets;
    ``mark_world`` draws a dotted line at that size. Returns the Figure."""
    fig, ax = fig_ax(ax, figsize=(6.5, 3.8))
    both = len({overlap for _, overlap in curves}) > 1
    for (name, overlap), efficiency in curves.items():
        label = f"{name}, {'with' if overlap else 'no'} overlap" if both else name
        ax.plot(list(worlds), efficiency, "o-" if overlap else "s--", label=label)
    if mark_world is not None:
        ax.axvline(mark_world, color="gray", ls=":")
    ax.set(xscale="log", xlabel="devices", ylabel="predicted scaling efficiency", ylim=(0, 1.05),
           title=title or f"α = {alpha * 1e6:.3g} µs per message, {bucket_bytes / 2**20:g} MiB buckets")
    ax.set_xticks(list(worlds))
    ax.set_xticklabels([str(w) for w in worlds])
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def dp_scaling_widget(single_device_s: float, grad_bytes: float, alpha: float,
                      default_gbs: float) -> ipywidgets.interactive:
    """Devices, bucket size, link bandwidth and latency α → predicted data-parallel step and efficiency, with
    and without overlap. ``alpha`` (seconds) and ``default_gbs`` (GB/s per direction) are the sliders' start."""
    import ipywidgets as w

    from d2lmp.model.dp_model import buckets_needed, predict_step, scaling_curves

    def draw(world: int = 8, bucket_mb: float = DDP_BUCKET_BYTES / 2**20, bandwidth_gbs: float = default_gbs,
             alpha_us: float = alpha * 1e6, overlap: bool = True) -> None:
        a, beta, bucket = alpha_us * 1e-6, 1 / (bandwidth_gbs * 1e9), bucket_mb * 2**20
        p = predict_step(single_device_s, grad_bytes, world, a, beta, bucket, overlap)
        print(f"{buckets_needed(grad_bytes, bucket)} bucket(s); compute {p.compute_s * 1e3:.1f} ms, "
              f"all-reduce {p.comm_s * 1e3:.1f} ms of which {p.exposed_comm_s * 1e3:.1f} ms exposed; "
              f"step {p.step_s * 1e3:.1f} ms, efficiency {p.efficiency(single_device_s):.0%}")
        curves = scaling_curves(single_device_s, grad_bytes, {f"{bandwidth_gbs:.3g} GB/s": bandwidth_gbs}, a, WORLDS,
                                bucket, overlaps=(False, True))
        show(plot_dp_scaling(WORLDS, curves, a, bucket, mark_world=world))

    return w.interactive(
        draw,
        world=w.SelectionSlider(options=list(WORLDS), value=8, description="devices"),
        bucket_mb=w.FloatLogSlider(value=DDP_BUCKET_BYTES / 2**20, base=2, min=-2, max=9, step=1,
                                   description="bucket MiB"),
        bandwidth_gbs=w.FloatLogSlider(value=default_gbs, base=10, min=-1, max=3, step=0.05, description="GB/s"),
        alpha_us=w.FloatLogSlider(value=alpha * 1e6, base=10, min=0, max=3, step=0.05,
                                  description="α µs per message (assumed)", style={"description_width": "initial"}),
        overlap=w.Checkbox(value=True, description="overlap"),
    )
