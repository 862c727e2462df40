"""Mixture of experts on screen: the assignments each expert got (kept and dropped) and who sends whom how many tokens.

Both figures draw computed data: an ``moe.ExpertLoad`` (``MoEOutput.load``, or ``Routing.load()``) and an
``expert_parallel.DispatchCounts`` (``dispatch_counts`` of a run's gathered counts, or of a one-device
routing cut into the ranks' parts with ``counts_per_rank``). Each takes an optional ``ax`` and returns
its Figure; ``plot_experts`` puts the two side by side.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..moe import ExpertLoad
from ..parallel.expert_parallel import DispatchCounts
from .figure import fig_ax

__all__ = ["plot_expert_load", "plot_dispatch", "plot_experts"]

KEPT, DROPPED = "#4c72b0", "#c44e52"


def plot_expert_load(load: ExpertLoad, ax: Any = None) -> Any:
    """Bars per expert: kept assignments, dropped ones on top, and the capacity as a dashed line."""
    fig, ax = fig_ax(ax, figsize=(6, 3.4))
    experts = np.arange(len(load.routed))
    ax.bar(experts, load.kept, color=KEPT, label="kept")
    ax.bar(experts, load.dropped, bottom=load.kept, color=DROPPED, label="dropped (over capacity)")
    ax.axhline(load.capacity, color="black", ls="--", lw=1, label=f"capacity {load.capacity}")
    for e, routed in zip(experts, load.routed):
        ax.text(e, routed, str(routed), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(experts)
    ax.set(xlabel="expert", ylabel="assignments routed there",
           title=f"{sum(load.routed)} assignments, {sum(load.dropped)} dropped")
    ax.set_ylim(0, max(max(load.routed, default=0), load.capacity) * 1.15 + 0.5)
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def plot_dispatch(dispatch: DispatchCounts, ax: Any = None) -> Any:
    """The dispatch all-to-all as a grid: row = sending rank, column = rank holding the expert, cell = tokens sent.

    The diagonal stays on its rank (a copy, not a message); the last column is what each rank dropped.
    """
    world = len(dispatch.sent)
    grid = np.array(dispatch.sent, dtype=float)
    fig, ax = fig_ax(ax, figsize=(1.1 * world + 2.4, 0.9 * world + 1.6))
    ax.imshow(np.column_stack([grid, np.full(world, np.nan)]), cmap="Blues", vmin=0, vmax=max(grid.max(), 1))
    for src in range(world):
        for dst in range(world):
            ax.text(dst, src, dispatch.sent[src][dst], ha="center", va="center", fontsize=9,
                    color="white" if grid[src, dst] > grid.max() / 2 else "black",
                    fontweight="bold" if src != dst else "normal")
        ax.text(world, src, dispatch.dropped[src], ha="center", va="center", fontsize=9, color=DROPPED)
    ax.set_xticks(range(world + 1))
    ax.set_xticklabels([f"rank {d}" for d in range(world)] + ["dropped"], fontsize=8)
    ax.set_yticks(range(world))
    ax.set_yticklabels([f"rank {s}" for s in range(world)], fontsize=8)
    moved = sum(n for s, row in enumerate(dispatch.sent) for d, n in enumerate(row) if s != d)
    ax.set(xlabel="to (the expert's rank)", ylabel="from (the token's rank)",
           title=f"dispatch: {moved} tokens cross ranks")
    fig.tight_layout()
    return fig


def plot_experts(load: ExpertLoad, dispatch: DispatchCounts) -> Any:
    """The load per expert and the dispatch side by side."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [3, 2]})
    plot_expert_load(load, left)
    plot_dispatch(dispatch, right)
    return fig
