"""Figures for the distributed notebooks: event timelines and pictures of collectives."""

from __future__ import annotations

import numpy as np

from .timeline import align

KIND_COLOURS = {"forward": "#4c72b0", "backward": "#55a868", "allreduce": "#c44e52", "wait": "#bbbbbb",
                "step": "#8172b2", "send": "#dd8452", "recv": "#937860"}


def plot_timeline(events: list[dict], ax=None, title: str = "Per-rank timeline", lanes=("compute", "comm")):
    """A Gantt chart: one row per rank for compute and one for communication, in milliseconds.

    Communication bars that sit under a backward bar are overlap: the network works while
    the processor still computes gradients.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    events = align(events)
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 1 + 0.9 * len({e["rank"] for e in events})))
    ranks = sorted({e["rank"] for e in events})
    comm_kinds = {"allreduce", "send", "recv"}
    labels, row = [], 0
    for rank in ranks:
        for lane in lanes:
            for e in events:
                if e["rank"] != rank or (e["kind"] in comm_kinds) != (lane == "comm"):
                    continue
                ax.broken_barh([(e["start"], max(e["end"] - e["start"], 1e-3))], (row - 0.4, 0.8),
                               color=KIND_COLOURS.get(e["kind"], "#999999"), edgecolor="white", linewidth=0.3)
            labels.append(f"rank {rank} {lane}")
            row += 1
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set(xlabel="time (ms)", title=title)
    kinds = sorted({e["kind"] for e in events}, key=list(KIND_COLOURS).index)
    ax.legend(handles=[Patch(color=KIND_COLOURS[k], label=k) for k in kinds], fontsize=8,
              loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.grid(True, axis="x", alpha=0.3)
    return ax.figure


def ring_schedule(world: int) -> list[list[tuple[int, int, int, str]]]:
    """The ring all-reduce's messages per step: (sender, receiver, chunk, phase).

    The first n-1 steps reduce-scatter (the receiver adds), the next n-1 all-gather
    (the receiver copies). Mirrors ``collectives._ring_reduce_scatter_chunks`` and
    ``_ring_all_gather_chunks`` exactly.
    """
    if world < 2:
        raise ValueError(f"a ring needs at least 2 ranks, got {world}")
    steps = []
    for s in range(world - 1):
        steps.append([(r, (r + 1) % world, (r - s - 1) % world, "reduce-scatter") for r in range(world)])
    for s in range(world - 1):
        steps.append([(r, (r + 1) % world, (r - s) % world, "all-gather") for r in range(world)])
    return steps


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
