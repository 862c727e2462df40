"""Pictures of collectives: who holds what before and after each NCCL collective, the ring
all-reduce step by step, and a widget for the α-β model of naive, tree and ring all-reduce."""

from __future__ import annotations

import numpy as np

from ..parallel.collectives import ring_schedule
from .figure import show

__all__ = ["plot_ring_all_reduce", "collective_examples", "plot_collectives", "allreduce_model_widget"]


def plot_ring_all_reduce(world: int = 4, step: int | None = None):
    """Draw who holds what during a ring all-reduce: a grid of ranks × chunks per step.

    Each cell shows how many ranks' contributions that rank's copy of the chunk already
    sums; a chunk is done when it holds all ``world``.
    """
    import matplotlib.pyplot as plt

    schedule = ring_schedule(world)
    counts = np.ones((world, world), dtype=int)  # counts[rank, chunk]
    states = [counts.copy()]
    for messages in schedule:
        new = counts.copy()
        for src, dst, chunk, phase in messages:
            new[dst, chunk] = (counts[src, chunk] + counts[dst, chunk] if phase == "reduce-scatter"
                               else counts[src, chunk])
        counts = new
        states.append(counts.copy())
    shown = range(len(states)) if step is None else [step]
    fig, axes = plt.subplots(1, len(shown), figsize=(2.2 * len(shown), 2.6), squeeze=False)
    for ax, k in zip(axes[0], shown):
        ax.imshow(states[k], cmap="Blues", vmin=0, vmax=world)
        for r in range(world):
            for c in range(world):
                ax.text(c, r, states[k][r, c], ha="center", va="center",
                        color="white" if states[k][r, c] > world / 2 else "black", fontsize=9)
        phase = "start" if k == 0 else schedule[k - 1][0][3]
        ax.set(title=f"step {k}: {phase}", xlabel="chunk", ylabel="rank" if k == shown[0] else "")
        ax.set_xticks(range(world))
        ax.set_yticks(range(world))
    fig.suptitle(f"Ring all-reduce on {world} ranks: contributions summed in each rank's copy of each chunk", y=1.02)
    fig.tight_layout()
    return fig, states


def collective_examples(world: int = 4) -> dict[str, tuple[list[list[str]], list[list[str]]]]:
    """Before/after contents of each rank for the five NCCL collectives, as text cells.

    Rank r starts with values a_r, b_r, ... (one per chunk); sums are written Σa.
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
    }


def plot_collectives(world: int = 4):
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


def allreduce_model_widget(alpha: float, beta: float):
    """Ranks and message size → predicted naive, tree and ring all-reduce times under the α-β model."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    from ..parallel.alpha_beta import predicted_all_reduce_time

    def draw(world=8, log2_bytes=20):
        size = 2**log2_bytes
        times = {a: predicted_all_reduce_time(a, world, size, alpha, beta) for a in ("naive", "tree", "ring")}
        best = min(times, key=times.get)
        print(f"{world} ranks, {size:,} bytes: " + ", ".join(f"{a} {t * 1e3:.3f} ms" for a, t in times.items())
              + f" -> {best} is fastest")
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.bar(list(times), [t * 1e3 for t in times.values()], color=["#999999", "#55a868", "#c44e52"])
        ax.set(ylabel="predicted ms", title=f"α = {alpha * 1e6:.1f} µs, 1/β = {1 / beta / 1e9:.2f} GB/s")
        show(fig)

    return w.interactive(draw, world=w.IntSlider(8, 2, 64, description="ranks"),
                         log2_bytes=w.IntSlider(20, 4, 32, description="log2 bytes"))
