"""The three ways to split one network over devices, drawn from the partitions the code computes.

``plot_three_splits`` takes plain data: the layers in order, the examples each device holds under data
parallelism (``data_parallel.shard``), the layers per device under network partitioning
(``pipeline_balance.balance``), and the output features of each layer each device holds under layerwise
partitioning (the tensor-parallel layers). It draws nothing it is not given. ``plot_grid`` draws the
process groups of a data × tensor hybrid (``parallel.hybrid.grid_groups``) from their rank lists, ``plot_grid3d``
those of a data × pipeline × tensor grid (``model.grid_ranks``, the lists ``parallel.grid3d`` builds its groups from).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from d2lmp.model.grid_ranks import GridRanks

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

__all__ = ["plot_three_splits", "plot_grid", "plot_grid3d"]

_BOX_W, _BOX_H, _ROW = 0.8, 1.0, 1.3  # layer box width and height, distance between rows (data units)


def _check(layers: Sequence[str], examples: Sequence[tuple[int, int]], stages: Sequence[int],
           columns: Sequence[Sequence[tuple[int, int]] | None]) -> int:
    n, n_layers = len(examples), len(layers)
    if n < 1 or n_layers < 1:
        raise ValueError("need at least one layer and one device")
    starts = [0] + [stop for _, stop in examples[:-1]]
    if any(start != s or stop <= start for (start, stop), s in zip(examples, starts)):
        raise ValueError(f"examples must be consecutive, non-empty (start, stop) ranges from 0, got {examples}")
    if len(stages) != n or any(s < 1 for s in stages) or sum(stages) != n_layers:
        raise ValueError(f"stages {stages} must give each of the {n} devices at least one of the {n_layers} layers")
    if len(columns) != n_layers:
        raise ValueError(f"columns needs one entry per layer ({n_layers}), got {len(columns)}")
    for name, slices in zip(layers, columns):
        if slices is None:
            continue
        starts = [0] + [stop for _, stop in slices[:-1]]
        if len(slices) != n or any(start != s or stop <= start for (start, stop), s in zip(slices, starts)):
            raise ValueError(f"{name}: need {n} consecutive (start, stop) output ranges from 0, got {slices}")
    return n


def _box(ax: Axes, x: float, y: float, colour: Any, label: str, gid: str, height: float = _BOX_H,
         width: float = _BOX_W, fontsize: float = 8) -> Rectangle:
    from matplotlib.patches import Rectangle

    patch = Rectangle((x - width / 2, y), width, height, facecolor=colour, edgecolor="black", lw=0.8,
                      gid=gid)
    ax.add_patch(patch)
    ax.text(x, y + height / 2, label, ha="center", va="center", fontsize=fontsize)
    return patch


def plot_three_splits(layers: list[str], examples: list[tuple[int, int]], stages: list[int],
                      columns: list[list[tuple[int, int]] | None], colours: tuple[str, ...] | None = None) -> Figure:
    """One panel per strategy: data, network (pipeline) and layerwise (tensor) partitioning of ``layers``.

    * ``examples``: for each device, the (start, stop) examples of the minibatch it holds;
    * ``stages``: for each device, how many consecutive layers it holds;
    * ``columns``: for each layer, each device's (start, stop) output features, or None for a layer that
      every device runs whole (an activation function).
    Each box carries a ``gid`` ("data:<device>:<layer>", "pipeline:<device>:<layer>",
    "tensor:<device>:<layer>", "tensor:all:<layer>"; inputs "<panel>:<device or all>:input").
    Returns the Figure.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    n = _check(layers, examples, stages, columns)
    colours = colours or tuple(plt.get_cmap("tab10").colors)  # type: ignore[attr-defined]  # a ListedColormap
    colour = [colours[d % len(colours)] for d in range(n)]
    batch = examples[-1][1]
    n_layers = len(layers)
    fig, axes = plt.subplots(3, 1, figsize=(1.3 * (n_layers + 3), 1.6 * n + 3.8),
                             gridspec_kw={"height_ratios": [n * _ROW + 0.3, 1.7, 1.7]})
    x_input = -1.2

    ax = axes[0]  # data parallelism: a replica per device, each with its slice of the batch
    for d, (start, stop) in enumerate(examples):
        y = (n - 1 - d) * _ROW
        _box(ax, x_input, y, "white", f"examples\n{start}–{stop - 1}", f"data:{d}:input", width=1.0)
        for i, name in enumerate(layers):
            _box(ax, i, y, colour[d], name, f"data:{d}:{i}")
    if n > 1:
        ax.annotate("", xy=(n_layers - 0.2, 0.2), xytext=(n_layers - 0.2, (n - 1) * _ROW + _BOX_H - 0.2),
                    arrowprops=dict(arrowstyle="<->", color="#c44e52", lw=1.5))
        ax.text(n_layers, (n - 1) * _ROW / 2 + _BOX_H / 2, "all-reduce\ngradients", va="center", fontsize=8,
                color="#c44e52")
    ax.set_title("Data parallelism: every device holds the whole network and a slice of the batch", fontsize=10)

    ax = axes[1]  # network partitioning: consecutive layers per device
    _box(ax, x_input, 0, "white", f"examples\n0–{batch - 1}", "pipeline:all:input", width=1.0)
    first = 0
    for d, size in enumerate(stages):
        for i in range(first, first + size):
            _box(ax, i, 0, colour[d], layers[i], f"pipeline:{d}:{i}")
        if first + size < n_layers:
            x = first + size - 0.5
            ax.plot([x, x], [-0.1, _BOX_H + 0.1], color="#c44e52", ls="--", lw=1.2)
            ax.text(x, -0.15, "activations →\n← gradients", ha="center", va="top", fontsize=7, color="#c44e52")
        first += size
    ax.set_title("Network partitioning (pipeline): each device holds consecutive layers; every example passes "
                 "through all of them", fontsize=10)

    ax = axes[2]  # layerwise partitioning: a slice of every layer's outputs per device
    _box(ax, x_input, 0, "white", f"examples\n0–{batch - 1}", "tensor:all:input", width=1.0)
    for i, (name, slices) in enumerate(zip(layers, columns)):
        if slices is None:
            _box(ax, i, 0, "#e8e8e8", f"{name}\n(whole, on\nevery device)", f"tensor:all:{i}")
            continue
        width, y = slices[-1][1], _BOX_H
        for d, (start, stop) in enumerate(slices):
            h = _BOX_H * (stop - start) / width
            y -= h
            _box(ax, i, y, colour[d], f"{start}–{stop - 1}", f"tensor:{d}:{i}", height=h, fontsize=7)
        ax.text(i, _BOX_H + 0.08, name.replace("\n", " "), ha="center", va="bottom", fontsize=7)
    ax.text(n_layers - 0.4, _BOX_H / 2, "outputs\ncombined\ninside\neach layer", va="center", fontsize=8,
            color="#c44e52")
    ax.set_title("Layerwise partitioning (tensor): each device holds a slice of every layer's outputs, "
                 "for every example", fontsize=10)

    for ax, rows in zip(axes, (n, 1, 1)):
        ax.set_xlim(x_input - 0.7, n_layers + 1.0)
        ax.set_ylim(-0.75 if ax is not axes[0] else -0.2, (rows - 1) * _ROW + _BOX_H + 0.45)
        ax.set_aspect("auto")
        ax.axis("off")
    fig.legend(handles=[Patch(facecolor=colour[d], edgecolor="black", label=f"device {d}") for d in range(n)],
               loc="lower center", ncol=n, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def plot_grid(tensor_groups: list[list[int]], data_groups: list[list[int]], ax: Axes | None = None) -> Figure:
    """The ranks of a data × tensor grid, each tensor group (a model replica, split layer by layer) boxed in
    one row and each data group (the ranks holding the same shard) linked down one column.

    ``tensor_groups`` and ``data_groups`` are the groups' global ranks, as the process groups hold them; a
    rank's place is (its tensor group, its place in it). Each rank's circle carries ``gid`` "rank:<rank>".
    Returns the Figure.
    """
    from matplotlib.patches import Circle, FancyBboxPatch

    from d2lmp.views.figure import fig_ax

    ranks = sorted(r for g in tensor_groups for r in g)
    if ranks != sorted(r for g in data_groups for r in g) or len(set(ranks)) != len(ranks):
        raise ValueError(f"tensor groups {tensor_groups} and data groups {data_groups} must hold each rank once")
    place = {r: (col, row) for row, g in enumerate(tensor_groups) for col, r in enumerate(g)}
    fig, ax = fig_ax(ax, figsize=(1.9 * max(len(g) for g in tensor_groups) + 2.6, 1.5 * len(tensor_groups) + 0.8))
    for row, g in enumerate(tensor_groups):
        ax.add_patch(FancyBboxPatch((-0.45, -row - 0.35), len(g) - 0.1, 0.7, boxstyle="round,pad=0.05",
                                    facecolor="#dbe9f6", edgecolor="#1f77b4", lw=1.2))
        ax.text(len(g) - 0.35, -row, f"tensor group {g}\n(one replica, layers split)", va="center", fontsize=8,
                color="#1f77b4")
    for g in data_groups:
        xs, ys = zip(*(place[r] for r in g))
        ax.plot(xs, [-y for y in ys], color="#d62728", lw=3, alpha=0.6, zorder=1)
        ax.text(xs[-1], -ys[-1] - 0.55, f"data group {g}", ha="center", va="top", fontsize=8, color="#d62728")
    for r, (col, row) in place.items():
        ax.add_patch(Circle((col, -row), 0.22, facecolor="white", edgecolor="black", zorder=2, gid=f"rank:{r}"))
        ax.text(col, -row, f"rank {r}", ha="center", va="center", fontsize=8, zorder=3)
    ax.set_xlim(-0.7, max(len(g) for g in tensor_groups) + 1.6)
    ax.set_ylim(-len(tensor_groups) - 0.2, 0.6)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("A data × tensor grid: rows split every layer, columns sum the same shard's gradient", fontsize=9)
    return fig


def plot_grid3d(grid: GridRanks, ax: Axes | None = None) -> Figure:
    """The ranks of a data × pipeline × tensor grid: one panel per data replica, one column per pipeline stage, one
    row per tensor shard. A blue box holds each tensor group, a green arrow joins each pipeline group's stages, and
    a red arc links each data group (the same shard of the same stage on every replica). Each rank's circle
    carries ``gid`` "rank:<rank>". Returns the Figure."""
    from matplotlib.patches import Circle, FancyBboxPatch, Rectangle

    from d2lmp.views.figure import fig_ax

    D, P, T = grid.data_size, grid.pipe_size, grid.tensor_size
    step = 1.6  # between stages; replicas sit one more step and a half apart
    width = (P - 1) * step
    fig, ax = fig_ax(ax, figsize=(2.2 * D * P + 1.0, 1.1 * T + 2.0))

    def xy(d: int, p: int, t: int) -> tuple[float, float]:
        return d * (width + 1.875 * step) + p * step, -1.0 * t

    for d in range(D):
        x0 = xy(d, 0, 0)[0]
        ax.add_patch(Rectangle((x0 - 0.75, -T + 0.25), width + 1.5, T + 0.55, facecolor="#f7f7f7", edgecolor="#999999",
                               lw=0.8, zorder=0))
        ax.text(x0 + width / 2, 0.62, f"data replica {d}", ha="center", va="bottom", fontsize=9)
        for p in range(P):
            ax.text(xy(d, p, 0)[0], -T + 0.3, f"stage {p}", ha="center", va="bottom", fontsize=8, color="#2ca02c")
    place = {r: xy(d, p, t) for (d, p), members in grid.tensor.items() for t, r in enumerate(members)}
    for members in grid.tensor.values():
        x, _ = place[members[0]]
        ax.add_patch(FancyBboxPatch((x - 0.35, -(T - 1) - 0.35), 0.7, (T - 1) + 0.7, boxstyle="round,pad=0.04",
                                    facecolor="#dbe9f6", edgecolor="#1f77b4", lw=1.2, zorder=1))
    for members in grid.pipe.values():
        for a, b in zip(members, members[1:]):
            ax.annotate("", place[b], place[a], zorder=1,
                        arrowprops=dict(arrowstyle="-|>", color="#2ca02c", lw=1.6, shrinkA=12, shrinkB=12))
    for members in grid.data.values():
        for a, b in zip(members, members[1:]):
            rad = -0.25 if place[a][1] > -(T - 1) / 2 else 0.25  # upper rows arc up, lower rows down
            ax.annotate("", place[b], place[a], zorder=1,
                        arrowprops=dict(arrowstyle="-", color="#d62728", lw=1.2, ls="--", alpha=0.7, shrinkA=12,
                                        shrinkB=12, connectionstyle=f"arc3,rad={rad}"))
    for r, (x, y) in place.items():
        ax.add_patch(Circle((x, y), 0.24, facecolor="white", edgecolor="black", zorder=2, gid=f"rank:{r}"))
        ax.text(x, y, f"rank {r}", ha="center", va="center", fontsize=7, zorder=3)
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Patch(facecolor="#dbe9f6", edgecolor="#1f77b4", label="tensor group (splits every layer)"),
               Line2D([], [], color="#2ca02c", marker=">", label="pipeline group (activations, stage to stage)"),
               Line2D([], [], color="#d62728", ls="--", label="data group (sums the same shard's gradient)")]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=3, fontsize=7, frameon=False)
    ax.set_xlim(-1.0, xy(D - 1, P - 1, 0)[0] + 1.0)
    ax.set_ylim(-T - 0.2, 1.5)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"A {D} × {P} × {T} data × pipeline × tensor grid: rank (d·{P} + p)·{T} + t", fontsize=9)
    return fig
