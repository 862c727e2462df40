"""Tensor parallelism on screen: the split weights, the bytes each split sends, Megatron's block.

It draws which slice of a weight each rank holds, what splitting a layer buys per rank, a widget comparing how many
bytes each way of splitting a Linear layer communicates, Megatron's transformer block drawn with its split layers
and collectives (with or without sequence parallelism), and where each rank's saved bytes of a transformer block go
under tensor and sequence parallelism."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from d2lmp.parallel.tensor_parallel import shard_range
from d2lmp.parallel.tp_accounting import PARTS, BlockMeasurement
from d2lmp.views.figure import fig_ax, show
from d2lmp.views.gpt import PART_COLOURS

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_weight_slices", "plot_split_scaling", "comm_volume_widget", "tp_block_stages", "plot_tp_block",
           "saved_bar_label", "plot_saved_bytes_by_part"]

_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def plot_weight_slices(n_in: int, n_out: int, world: int, axes: Sequence[Axes] | None = None) -> Figure:
    """W of a Linear(n_in, n_out), stored (n_out × n_in) as PyTorch does, coloured by the rank holding each entry.

    Left: the column split (``ColumnParallelLinear``), rank r holds a block of rows of W, its output features.
    Right: the row split (``RowParallelLinear``), rank r holds a block of columns of W, its input features.
    Each block is labelled with its slice and shape, from ``shard_range``, the arithmetic the layers use.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    if min(n_in, n_out, world) < 1:
        raise ValueError(f"n_in, n_out and world must be positive, got {n_in}, {n_out}, {world}")
    # (x, y, width, height, label) per rank, y counted down from row 0
    blocks: dict[str, list[tuple[int, int, int, int, str]]] = {"column": [], "row": []}
    for r in range(world):
        start, size = shard_range(n_out, world, r, "out_features")
        blocks["column"].append((0, start, n_in, size, f"W[{start}:{start + size}, :]\n{size} × {n_in}"))
        start, size = shard_range(n_in, world, r, "in_features")
        blocks["row"].append((start, 0, size, n_out, f"W[:, {start}:{start + size}]\n{n_out} × {size}"))
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(9, 4.6))
    titles = {"column": "column split (ColumnParallelLinear)\nrank r: rows of W = its output features;\n"
                        "needs all of X, computes its slice of Y",
              "row": "row split (RowParallelLinear)\nrank r: columns of W = its input features;\n"
                     "needs its slice of X, computes a partial sum of all of Y"}
    for ax, (split, rects) in zip(axes, blocks.items()):
        for r, (x, y, w, h, label) in enumerate(rects):
            ax.add_patch(Rectangle((x, y), w, h, fc=_COLOURS[r % len(_COLOURS)], alpha=0.55, ec="k", lw=1.5))
            ax.text(x + w / 2, y + h / 2, f"rank {r}\n{label}", ha="center", va="center", fontsize=8,
                    rotation=90 if split == "row" and w < n_in / 3 and h > w else 0)
        if n_in <= 32 and n_out <= 32:  # the individual weights, where they are few enough to see
            for i in range(1, n_in):
                ax.axvline(i, color="k", lw=0.3, alpha=0.4)
            for j in range(1, n_out):
                ax.axhline(j, color="k", lw=0.3, alpha=0.4)
        ax.set(xlim=(0, n_in), ylim=(n_out, 0), aspect="equal", title=titles[split],
               xlabel=f"input features (columns of W), {n_in}", ylabel=f"output features (rows of W), {n_out}")
        ax.title.set_fontsize(9)
    fig = cast("Figure", axes[0].figure)
    fig.suptitle(f"Linear({n_in}, {n_out}) over {world} ranks: the slice of W (out × in) each rank holds", y=1.0)
    fig.tight_layout()
    return fig


def plot_split_scaling(rows: Sequence[Mapping[str, Any]], axes: Sequence[Axes] | None = None,
                       title: str = "One layer split over ranks: what each rank holds and waits") -> Figure:
    """Bars per number of ranks: parameter bytes, saved-activation bytes (per rank) and step time.

    ``rows``: dicts with ``ranks``, ``parameter_bytes``, ``activation_bytes`` and ``step_s`` (the first row
    is the one-device reference). A black tick on each bar marks the reference divided by the ranks:
    a perfect split.
    """
    import matplotlib.pyplot as plt

    if not rows:
        raise ValueError("plot_split_scaling needs at least one row")
    if axes is None:
        fig, axes = plt.subplots(1, 3, figsize=(10, 3.4))
    panels = (("parameter_bytes", 2**20, "MiB per rank", "parameters"),
              ("activation_bytes", 2**20, "MiB per rank", "saved activations"),
              ("step_s", 1e-3, "ms (median, slowest rank)", "forward + backward step"))
    labels = ["1 device" if r["ranks"] == 1 else f"{r['ranks']} ranks" for r in rows]
    reference = rows[0]
    for ax, (key, unit, ylabel, name) in zip(axes, panels):
        values = [r[key] / unit for r in rows]
        bars = ax.bar(labels, values, color=[_COLOURS[i % len(_COLOURS)] for i in range(len(rows))], alpha=0.8)
        for i, (bar, r) in enumerate(zip(bars, rows)):
            ideal = reference[key] / unit * reference["ranks"] / r["ranks"]
            ax.plot([i - 0.4, i + 0.4], [ideal, ideal], color="k", lw=2, label="one device ÷ ranks" if i == 0 else None)
            ax.annotate(f"{bar.get_height():.3g}", (i, bar.get_height()), textcoords="offset points", xytext=(0, 2),
                        ha="center", fontsize=8)
        ax.set_ylim(0, max(values + [reference[key] / unit]) * 1.2)
        ax.set(ylabel=ylabel, title=name)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].legend(fontsize=7, loc="upper right")
    fig = cast("Figure", axes[0].figure)
    fig.suptitle(title, y=1.02)
    fig.tight_layout()
    return fig


def comm_volume_widget() -> ipywidgets.interactive:
    """Batch, layer width and ranks → bytes per rank that each way of splitting a Linear layer communicates."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    from d2lmp.parallel.tensor_parallel import comm_volume

    def draw(batch: int = 128, width: int = 4096, world: int = 2) -> None:
        volume = comm_volume(batch, width, width, world)
        for name, v in volume.items():
            print(f"{name:<28} forward {v['forward'] / 2**20:8.2f} MiB, backward {v['backward'] / 2**20:8.2f} MiB")
        fig, ax = plt.subplots(figsize=(6, 3))
        names = list(volume)
        ax.barh(names, [v["forward"] / 2**20 for v in volume.values()], label="forward")
        ax.barh(names, [v["backward"] / 2**20 for v in volume.values()],
                left=[v["forward"] / 2**20 for v in volume.values()], label="backward")
        ax.set(xlabel="MiB per rank per step", title=f"Linear({width}, {width}), batch {batch}, {world} ranks")
        ax.legend()
        show(fig)

    return w.interactive(draw, batch=w.IntSlider(128, 1, 4096, description="batch"),
                         width=w.SelectionSlider(options=[256, 512, 1024, 2048, 4096, 8192], value=4096,
                                                 description="features"),
                         world=w.SelectionSlider(options=[2, 4, 8], value=2, description="ranks"))


# What each stage of the drawn block is: whole on every rank, split by heads or features, split along the
# sequence, or a collective; and its colour.
_KIND_COLOURS = {"whole": "#e8e8e8", "features": "#8fb8de", "sequence": "#9fd49f", "collective": "#f4b6b6"}
_KIND_NAMES = {"whole": "whole on every rank: (b, s, h)", "features": "split by heads or features: (b, s, ·/t)",
               "sequence": "split along the sequence: (b, s/t, h)", "collective": "collective"}


def tp_block_stages(sequence_parallel: bool = False) -> list[list[tuple[str, str]]]:
    """The two rows (attention, MLP) of Megatron's tensor-parallel block as (label, kind) stages, in the order
    ``transformer_tp.TPBlock`` runs them; kind is a key of the colours (whole, features, sequence, collective)."""
    outside = "sequence" if sequence_parallel else "whole"
    enter, leave = (("f_SP: all-gather\n(backward:\nreduce-scatter)", "g_SP: reduce-scatter\n(backward:\nall-gather)")
                    if sequence_parallel else
                    ("f: identity\n(backward:\nall-reduce)", "g: all-reduce\n(backward:\nidentity)"))
    rows = ((("LayerNorm 1", outside), ("QKV\ncolumn-parallel\n(its heads' rows)", "features"),
             ("attention\n(its heads)", "features"), ("output proj.\nrow-parallel\n(its heads' columns)", "features")),
            (("LayerNorm 2", outside), ("MLP h→4h\ncolumn-parallel\n(its 4h/t rows)", "features"),
             ("GeLU\n(its features)", "features"), ("MLP 4h→h\nrow-parallel\n(its 4h/t columns)", "features")))
    return [[first, (enter, "collective"), *middle, (leave, "collective"), ("dropout", outside),
             ("+ residual", outside)] for first, *middle in rows]


def plot_tp_block(sequence_parallel: bool = False, ax: Axes | None = None) -> Figure:
    """Megatron's transformer block on one rank of t: the attention row, then the MLP row (``tp_block_stages``).

    Each box is coloured by what the rank holds there; each box carries a ``gid`` "tp-block:<kind>:<row>:<i>".
    """
    from matplotlib.patches import FancyBboxPatch, Patch

    rows = tp_block_stages(sequence_parallel)
    fig, ax = fig_ax(ax, figsize=(13, 4.2))
    for r, stages in enumerate(rows):
        y = (len(rows) - 1 - r) * 1.6
        for i, (label, kind) in enumerate(stages):
            round_box = "round,pad=0.05,rounding_size=0.25" if kind == "collective" else "square,pad=0.02"
            ax.add_patch(FancyBboxPatch((i * 1.45 - 0.6, y), 1.2, 1.0, boxstyle=round_box, fc=_KIND_COLOURS[kind],
                                        ec="black", lw=0.8, gid=f"tp-block:{kind}:{r}:{i}"))
            ax.text(i * 1.45, y + 0.5, label, ha="center", va="center", fontsize=7.5)
            if i:
                ax.annotate("", xy=(i * 1.45 - 0.62, y + 0.5), xytext=(i * 1.45 - 0.83, y + 0.5),
                            arrowprops=dict(arrowstyle="->", lw=1))
    kinds = dict.fromkeys(kind for stages in rows for _, kind in stages)
    ax.legend(handles=[Patch(fc=_KIND_COLOURS[k], ec="black", label=_KIND_NAMES[k]) for k in kinds],
              loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=len(kinds), fontsize=8, frameon=False)
    ax.set_xlim(-0.8, len(rows[0]) * 1.45 - 0.6)
    ax.set_ylim(-0.15, (len(rows) - 1) * 1.6 + 1.15)
    ax.axis("off")
    mode = "with sequence parallelism" if sequence_parallel else "tensor parallel"
    ax.set_title(f"One rank of t in Megatron's transformer block, {mode}: attention (top), then the MLP", fontsize=10)
    fig.tight_layout()
    return fig


def saved_bar_label(m: BlockMeasurement) -> str:
    """A short label for one measurement's bar: the split, then the recomputation."""
    split = "1 device" if m.tp == 1 else f"TP{' + SP' if m.sequence_parallel else ''}\nt = {m.tp}"
    return f"{split}\nrecompute\n{m.config.recompute}"


def plot_saved_bytes_by_part(rows: Sequence[BlockMeasurement], ax: Axes | None = None,
                             title: str = "What one rank saves for one block's backward") -> Figure:
    """One stacked bar per measurement (``tp_accounting.measure_block``): the bytes a rank saved, by part of the
    block (``tp_accounting.PARTS``, the LayerNorms' own statistics counted with them); a black tick marks the
    formula's total for that rank."""
    if not rows:
        raise ValueError("no measurements to draw")
    fig, ax = fig_ax(ax, figsize=(1.25 * len(rows) + 2.5, 4.2))
    colours = (*PART_COLOURS, "#937860")
    unit = 2**10
    bottoms = [0.0] * len(rows)
    for i, (part, colour) in enumerate(zip(PARTS, colours)):
        heights = [r.saved_by_part[i] / unit for r in rows]
        if any(heights):
            ax.bar(range(len(rows)), heights, bottom=bottoms, color=colour, edgecolor="white", width=0.6, label=part)
        bottoms = [b + h for b, h in zip(bottoms, heights)]
    for x, r in enumerate(rows):
        ax.plot([x - 0.36, x + 0.36], [r.total.formula / unit] * 2, color="k", lw=2,
                label="formula + itemised extras (per rank)" if x == 0 else None)
        ax.annotate(f"{r.total.measured / unit:.3g}", (x, bottoms[x]), textcoords="offset points", xytext=(0, 3),
                    ha="center", fontsize=8)
    ax.set_xticks(range(len(rows)), [saved_bar_label(r) for r in rows], fontsize=8)
    ax.set_ylabel("KiB per rank")
    ax.set_ylim(0, max(bottoms + [r.total.formula / unit for r in rows]) * 1.15)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.set_title(title)
    fig.tight_layout()
    return fig
