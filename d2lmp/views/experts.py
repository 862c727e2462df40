"""Mixture of experts on screen: the assignments each expert got (kept and dropped) and who sends whom how many tokens.

Both figures draw computed data: an ``moe.ExpertLoad`` (``MoEOutput.load``, or ``Routing.load()``) and an
``expert_parallel.DispatchCounts`` (``dispatch_counts`` of a run's gathered counts, or of a one-device
routing cut into the ranks' parts with ``counts_per_rank``). Each takes an optional ``ax`` and returns
its Figure; ``plot_experts`` puts the two side by side. ``capacity_widget`` routes a fixed batch through a
freshly initialised ``moe.MoE`` and draws its load as the experts, the gating and the capacity factor change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from d2lmp.moe import ExpertLoad, MoE, MoESpec
from d2lmp.parallel.expert_parallel import DispatchCounts
from d2lmp.views.figure import fig_ax, show

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_moe_layer", "plot_expert_load", "plot_dispatch", "plot_experts", "describe_load", "capacity_widget"]

KEPT, DROPPED = "#4c72b0", "#c44e52"


def plot_moe_layer(choices: Sequence[Sequence[int]], experts: int, ranks: int, ax: Axes | None = None) -> Figure:
    """A mixture-of-experts layer on ``ranks`` ranks: each token (``choices[t]``: its experts) goes from its rank
    to its experts' ranks (dispatch), through the experts, and back to its rank (combine).

    Tokens and experts are split evenly over the ranks in order; a line that changes rank is drawn bold."""
    fig, ax = fig_ax(ax, figsize=(9, 0.36 * max(len(choices), experts) + 1.4))
    tokens = len(choices)
    token_y = np.linspace(0, 1, tokens) if tokens > 1 else np.array([0.5])
    expert_y = np.linspace(0, 1, experts) if experts > 1 else np.array([0.5])
    token_rank = [t * ranks // tokens for t in range(tokens)]
    expert_rank = [e * ranks // experts for e in range(experts)]
    colours = [f"C{r}" for r in range(ranks)]
    for t, chosen in enumerate(choices):
        for e in chosen:
            crosses = token_rank[t] != expert_rank[e]
            for x0, y0, x1, y1 in ((1.0, token_y[t], 2.0, expert_y[e]), (2.0, expert_y[e], 3.3, token_y[t])):
                ax.plot([x0, x1], [y0, y1], color=colours[token_rank[t]], lw=2.2 if crosses else 0.9,
                        alpha=0.9 if crosses else 0.5)
    for x, ys, owner, name in ((0.35, token_y, token_rank, "token"), (3.65, token_y, token_rank, "out"),
                               (2.0, expert_y, expert_rank, "expert")):
        for i, y in enumerate(ys):
            ax.text(x, y, f"{name} {i}", ha="center", va="center", fontsize=8,
                    bbox={"boxstyle": "round", "fc": "white", "ec": colours[owner[i]], "lw": 1.5})
    for t, chosen in enumerate(choices):
        ax.text(0.95, token_y[t], "→ " + ", ".join(map(str, chosen)), ha="right", va="center", fontsize=7)
    for x, text in ((0.35, "1. tokens, each\non its rank"), (0.85, "2. router:\ntop-k experts"),
                    (1.5, "3. dispatch\n(all-to-all)"), (2.0, "4. experts\non their ranks"),
                    (2.65, "5. combine\n(all-to-all)"), (3.65, "6. gate-weighted\nsum per token")):
        ax.text(x, -0.08, text, ha="center", va="bottom", fontsize=8)
    ax.plot([], [], color="gray", lw=2.2, label="crosses ranks (a message)")
    ax.plot([], [], color="gray", lw=0.9, alpha=0.5, label="stays on its rank")
    for r in range(ranks):
        ax.plot([], [], color=colours[r], lw=4, label=f"rank {r}")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, 0.04), ncol=ranks + 2, frameon=False)
    ax.set(xlim=(-0.1, 4.1), ylim=(1.12, -0.3))
    ax.axis("off")
    fig.tight_layout()
    return fig


def plot_expert_load(load: ExpertLoad, ax: Axes | None = None) -> Figure:
    """Bars per expert: kept assignments, dropped ones on top, and the capacity as a dashed line."""
    fig, ax = fig_ax(ax, figsize=(6, 3.4))
    experts = np.arange(len(load.routed))
    ax.bar(experts, load.kept, color=KEPT, label="kept")
    ax.bar(experts, load.dropped, bottom=load.kept, color=DROPPED, label="dropped (over capacity)")
    ax.axhline(load.capacity, color="black", ls="--", lw=1, label=f"capacity {load.capacity}")
    for e, routed in enumerate(load.routed):
        ax.text(e, routed, str(routed), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(experts)
    ax.set(xlabel="expert", ylabel="assignments routed there",
           title=f"{sum(load.routed)} assignments, {sum(load.dropped)} dropped")
    ax.set_ylim(0, max(max(load.routed, default=0), load.capacity) * 1.15 + 0.5)
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def plot_dispatch(dispatch: DispatchCounts, ax: Axes | None = None) -> Figure:
    """The dispatch all-to-all as a grid: row = sending rank, column = rank holding the expert, cell = tokens sent.

    The diagonal stays on its rank (a copy, not a message); the last column is what each rank dropped.
    """
    world = len(dispatch.sent)
    grid = np.array(dispatch.sent, dtype=float)
    fig, ax = fig_ax(ax, figsize=(1.1 * world + 2.4, 0.9 * world + 1.6))
    ax.imshow(np.column_stack([grid, np.full(world, np.nan)]), cmap="Blues", vmin=0, vmax=max(grid.max(), 1))
    for src in range(world):
        for dst in range(world):
            ax.text(dst, src, str(dispatch.sent[src][dst]), ha="center", va="center", fontsize=9,
                    color="white" if grid[src, dst] > grid.max() / 2 else "black",
                    fontweight="bold" if src != dst else "normal")
        ax.text(world, src, str(dispatch.dropped[src]), ha="center", va="center", fontsize=9, color=DROPPED)
    ax.set_xticks(range(world + 1))
    ax.set_xticklabels([f"rank {d}" for d in range(world)] + ["dropped"], fontsize=8)
    ax.set_yticks(range(world))
    ax.set_yticklabels([f"rank {s}" for s in range(world)], fontsize=8)
    moved = sum(n for s, row in enumerate(dispatch.sent) for d, n in enumerate(row) if s != d)
    ax.set(xlabel="to (the expert's rank)", ylabel="from (the token's rank)",
           title=f"dispatch: {moved} tokens cross ranks")
    fig.tight_layout()
    return fig


def plot_experts(load: ExpertLoad, dispatch: DispatchCounts) -> Figure:
    """The load per expert and the dispatch side by side."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [3, 2]})
    plot_expert_load(load, left)
    plot_dispatch(dispatch, right)
    return fig


def describe_load(load: ExpertLoad, tokens: int, top_k: int, capacity_factor: float) -> str:
    """One line: the capacity rule with its numbers, and how many assignments were dropped."""
    experts, routed, dropped = len(load.routed), sum(load.routed), sum(load.dropped)
    return (f"capacity = ⌈{capacity_factor:g} × {top_k} × {tokens} tokens / {experts} experts⌉ = {load.capacity}; "
            f"{dropped} of {routed} assignments dropped ({dropped / max(routed, 1):.1%}), "
            f"busiest expert {max(load.routed)} (even share {routed / experts:g})")


def capacity_widget() -> ipywidgets.interactive:
    """Experts, top-k, capacity factor and tokens → the load of a freshly initialised MoE layer on a fixed batch."""
    import ipywidgets as w
    import torch

    def draw(experts: int = 8, top_k: int = 2, capacity_factor: float = 1.0, tokens: int = 256) -> None:
        spec = MoESpec(hidden=16, ffn=32, experts=experts, top_k=top_k, capacity_factor=capacity_factor)
        x = torch.randn(tokens, spec.hidden, generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            load = MoE(spec).run(x).load
        print(describe_load(load, tokens, top_k, capacity_factor))
        show(plot_expert_load(load))

    return w.interactive(
        draw, experts=w.SelectionSlider(options=[2, 4, 8, 16, 32], value=8, description="experts"),
        top_k=w.SelectionSlider(options=[1, 2], value=2, description="top-k"),
        capacity_factor=w.FloatSlider(value=1.0, min=0.5, max=2.5, step=0.25, description="capacity ×"),
        tokens=w.SelectionSlider(options=[64, 256, 1024, 4096], value=256, description="tokens"))
