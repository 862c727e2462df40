"""Pictures of collectives: who holds what, step by step, and the α-β model.

It draws who holds what before and after each NCCL collective, the ring and the tree all-reduce step by step
(``model.allreduce_steps`` runs the schedules the implementations follow), and the α-β model of naive, tree and ring
all-reduce (``alpha_beta.all_reduce_model``) as a figure and a widget. The library computes; these functions draw."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from d2lmp.model.allreduce_steps import AllReduceSteps
from d2lmp.model.alpha_beta import ALGORITHMS, AllReduceModel, all_reduce_model
from d2lmp.views.figure import show

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.figure import Figure

__all__ = ["plot_ring_all_reduce", "plot_tree_all_reduce", "collective_examples", "plot_collectives",
           "plot_allreduce_model", "allreduce_model_widget"]


def plot_ring_all_reduce(steps: AllReduceSteps, step: int | None = None) -> Figure:
    """Draw who holds what during a ring all-reduce (``allreduce_steps.ring_steps``): ranks × chunks per step.

    Each cell shows how many ranks' contributions that rank's copy of the chunk already sums; a chunk is
    done when it holds all ``world``. ``step`` draws one step only. Returns the Figure.
    """
    return _draw_steps(steps, step, "Ring all-reduce", arrows=False)


def plot_tree_all_reduce(steps: AllReduceSteps, step: int | None = None) -> Figure:
    """Draw the binary-tree all-reduce (``allreduce_steps.tree_steps``) as the ring is drawn, one panel per round.

    Arrows show the messages that led to each panel. Every message carries the whole buffer, so a rank's
    chunks always hold the same count. Returns the Figure.
    """
    return _draw_steps(steps, step, "Tree all-reduce", arrows=True)


def _draw_steps(steps: AllReduceSteps, step: int | None, name: str, arrows: bool) -> Figure:
    """One panel per step: each cell is how many ranks' contributions that copy of the chunk sums."""
    import matplotlib.pyplot as plt

    states, phases, world = steps.states, steps.phases, steps.world
    shown = list(range(len(states))) if step is None else [step]
    fig, axes = plt.subplots(1, len(shown), figsize=(2.2 * len(shown), 2.6), squeeze=False)
    for ax, k in zip(axes[0], shown):
        ax.imshow(states[k], cmap="Blues", vmin=0, vmax=world)
        for r in range(world):
            for c in range(world):
                ax.text(c, r, states[k][r][c], ha="center", va="center",
                        color="white" if states[k][r][c] > world / 2 else "black", fontsize=9)
        x = world // 2 - 0.5  # between two columns of numbers
        for src, dst in (steps.messages[k] if arrows else []):  # this step's messages: the whole row moves
            ax.annotate("", xy=(x, dst), xytext=(x, src),
                        arrowprops=dict(arrowstyle="-|>", color="#c44e52", lw=2, shrinkA=4, shrinkB=4))
        ax.set(title=f"step {k}: {phases[k]}", xlabel="chunk", ylabel="rank" if k == shown[0] else "")
        ax.set_xticks(range(world))
        ax.set_yticks(range(world))
    fig.suptitle(f"{name} on {world} ranks: contributions summed in each rank's copy of each chunk", y=1.02)
    fig.tight_layout()
    return fig


def collective_examples(world: int = 4) -> dict[str, tuple[list[list[str]], list[list[str]]]]:
    """Before/after contents of each rank for the five NCCL collectives and all-to-all, as text cells.

    Rank r starts with values a_r, b_r, ... (one per chunk); sums are written Σa. In all-to-all, rank r's
    chunk c is addressed to rank c, so rank r ends with every rank's chunk r.
    """
    if world < 2:
        raise ValueError(f"collectives need at least 2 ranks to show anything, got {world}")
    letters = "abcdefgh"[:world]
    start = [[f"{c}{r}" for c in letters] for r in range(world)]
    summed = [f"Σ{c}" for c in letters]
    return {
        "all-reduce": (start, [summed[:] for _ in range(world)]),
        "reduce (to rank 0)": (start, [summed[:]] + [["·"] * world for _ in range(world - 1)]),
        "broadcast (from rank 0)": ([start[0]] + [["·"] * world for _ in range(world - 1)],
                                    [start[0][:] for _ in range(world)]),
        "reduce-scatter": (start, [[summed[r] if c == r else "·" for c in range(world)] for r in range(world)]),
        "all-gather": ([[start[r][r] if c == r else "·" for c in range(world)] for r in range(world)],
                       [[f"{letters[c]}{c}" for c in range(world)] for _ in range(world)]),
        "all-to-all": (start, [[f"{letters[r]}{c}" for c in range(world)] for r in range(world)]),
    }


def plot_collectives(world: int = 4) -> Figure:
    """A before → after panel for each collective: rows are ranks, columns are chunks."""
    import matplotlib.pyplot as plt

    examples = collective_examples(world)
    fig, axes = plt.subplots(len(examples), 2, figsize=(6.5, 1.25 * world * len(examples) / 2.2))
    for row, (name, (before, after)) in enumerate(examples.items()):
        for col, (grid, when) in enumerate(((before, "before"), (after, "after"))):
            ax = axes[row, col]
            ax.imshow([[0 if cell == "·" else 1 for cell in r] for r in grid], cmap="Blues", vmin=0, vmax=2.2)
            for r, cells in enumerate(grid):
                for c, cell in enumerate(cells):
                    ax.text(c, r, cell, ha="center", va="center", fontsize=8)
            ax.set_xticks([])
            ax.set_yticks(range(world))
            ax.set_yticklabels([f"rank {r}" for r in range(world)], fontsize=7)
            ax.set_title(f"{name}: {when}", fontsize=9)
    fig.tight_layout()
    return fig


def plot_allreduce_model(model: AllReduceModel) -> Figure:
    """The α-β model's naive, tree and ring all-reduce times (``alpha_beta.all_reduce_model``): bars at its
    size, curves over its sizes. Returns the Figure."""
    import matplotlib.pyplot as plt

    colors = dict(naive="#999999", tree="#55a868", ring="#c44e52")
    fig, (bars, curves) = plt.subplots(1, 2, figsize=(10, 3.4))
    bars.bar(list(model.times), [t * 1e3 for t in model.times.values()], color=[colors[a] for a in model.times])
    bars.set(ylabel="predicted ms", title=f"{model.world} ranks, {model.size_bytes:,.0f} bytes")
    for a, seconds in model.curves.items():
        curves.plot(model.sizes, [t * 1e3 for t in seconds], color=colors[a], label=a)
    curves.axvline(model.size_bytes, color="black", lw=0.8, ls=":")
    curves.set(xscale="log", yscale="log", xlabel="bytes", ylabel="predicted ms",
               title=f"α = {model.alpha * 1e6:g} µs, 1/β = {1 / model.beta / 1e9:g} GB/s")
    curves.grid(True, which="both", alpha=0.3)
    curves.legend(fontsize=8)
    fig.tight_layout()
    return fig


def allreduce_model_widget(alpha: float, bandwidth_gbs: float) -> ipywidgets.interactive:
    """Ranks, message size, latency α and link bandwidth → predicted naive, tree and ring all-reduce times.

    ``alpha`` (seconds) and ``bandwidth_gbs`` (GB/s per direction) are the controls' starting values: a GPU's
    (the cost model's presets) or this machine's fitted pair.
    """
    import ipywidgets as w

    sizes = np.logspace(1, 10, 91)  # 10 B to 10 GB, the slider's range

    def draw(world: int = 8, log2_bytes: int = 20, alpha_us: float = alpha * 1e6,
             bandwidth: float = bandwidth_gbs) -> None:
        model = all_reduce_model(world, 2**log2_bytes, alpha_us * 1e-6, 1 / (bandwidth * 1e9), sizes)
        print(f"{world} ranks, {2**log2_bytes:,} bytes: "
              + ", ".join(f"{a} {model.times[a] * 1e3:.3f} ms" for a in ALGORITHMS) + f" -> {model.fastest} is fastest")
        show(plot_allreduce_model(model))

    style = {"description_width": "initial"}
    return w.interactive(
        draw, world=w.IntSlider(8, 2, 64, description="ranks"),
        log2_bytes=w.IntSlider(20, 4, 32, description="log2 bytes"),
        alpha_us=w.BoundedFloatText(alpha * 1e6, min=0.0, max=1e5, step=1, description="latency α (µs)", style=style),
        bandwidth=w.BoundedFloatText(bandwidth_gbs, min=0.01, max=1e4, step=10, description="link GB/s",
                                     style=style))
