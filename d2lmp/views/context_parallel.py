"""Ring attention on screen: the chunks each rank holds, the blocks it computes, its work.

It draws which K/V chunks each rank holds at each step, which score blocks it computes or skips under the causal
mask, and the work per rank, plain layout against balanced.

Everything drawn comes from ``model.context_layout``: ``ring_attention_schedule`` (the schedule that
``ring_attention`` runs) and ``workload``. ``holdings`` and ``block_map`` lay the schedule out (pure: numbers
in, lists out); the plots take an optional ``ax`` and return their Figure. ``ring_work_widget`` moves the ranks,
the sequence, the layout and the mask, and prints ``describe_workload`` of each layout.
"""

from __future__ import annotations

from typing import Any

from d2lmp.model.context_layout import LAYOUTS, Workload, ring_attention_schedule, workload
from d2lmp.views.figure import fig_ax, show

__all__ = ["holdings", "block_map", "plot_holdings", "plot_blocks", "plot_work_per_rank", "plot_ring_schedule",
           "describe_workload", "ring_work_widget"]

_STEP_COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b2", "#937860", "#da8bc3", "#8c8c8c")


def _colour(step: int) -> str:
    return _STEP_COLOURS[step % len(_STEP_COLOURS)]


def holdings(world: int, layout: str = "plain") -> list[list[tuple[int, ...]]]:
    """The K/V chunks each rank holds at each step: ``holdings(...)[step][rank]``, global chunk numbers."""
    return [[todo.keys for todo in row] for row in ring_attention_schedule(world, layout)]


def block_map(world: int, layout: str = "plain", causal: bool = True) -> list[list[tuple[int, int, str]]]:
    """Every score block of the whole sequence: ``block_map(...)[query chunk][key chunk]`` is
    (the step that reaches it, the rank that owns its queries, "full", "diagonal" or "skipped")."""
    n = world * (1 if layout == "plain" else 2)
    grid: list[list[tuple[int, int, str]]] = [[(-1, -1, "")] * n for _ in range(n)]
    for row in ring_attention_schedule(world, layout, causal):
        for todo in row:
            for block in todo.blocks:
                grid[block.query][block.key] = (todo.step, todo.rank, block.kind)
    return grid


def _frame(ax: Any, n_x: int, n_y: int) -> None:
    ax.set_xlim(-0.5, n_x - 0.5)
    ax.set_ylim(n_y - 0.5, -0.5)
    ax.set_aspect("equal")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def plot_holdings(world: int = 4, layout: str = "plain", ax: Any = None) -> Any:
    """A table of steps × ranks: the K/V chunk(s) each rank holds, coloured by the rank they came from."""
    fig, ax = fig_ax(ax, figsize=(0.9 * world + 1.5, 0.6 * world + 1.2))
    for step, row in enumerate(holdings(world, layout)):
        for rank, chunks in enumerate(row):
            owner = (rank - step) % world
            ax.add_patch(_square(rank, step, _colour(owner), opacity=0.35))
            ax.text(rank, step, ",".join(map(str, chunks)), ha="center", va="center", fontsize=9)
    _frame(ax, world, world)
    ax.set_xticks(range(world), [f"rank {r}" for r in range(world)], fontsize=8)
    ax.set_yticks(range(world), [f"step {s}" for s in range(world)], fontsize=8)
    ax.set_title(f"K/V chunks held ({layout}; colour: their rank)", fontsize=10)
    return fig


def _square(x: float, y: float, colour: str, opacity: float = 1.0, hatch: str | None = None) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((x - 0.5, y - 0.5), 1, 1, facecolor=colour, alpha=opacity, edgecolor="white", hatch=hatch)


def _triangle(x: float, y: float, colour: str) -> Any:
    from matplotlib.patches import Polygon

    return Polygon([(x - 0.5, y - 0.5), (x - 0.5, y + 0.5), (x + 0.5, y + 0.5)], facecolor=colour, edgecolor="white")


def plot_blocks(world: int = 4, layout: str = "plain", causal: bool = True, ax: Any = None) -> Any:
    """The attention matrix in chunks (queries down, keys across): each block coloured by the ring step that
    computes it and labelled with the rank that does; a diagonal block is its lower triangle, a skipped one blank."""
    grid = block_map(world, layout, causal)
    n = len(grid)
    fig, ax = fig_ax(ax, figsize=(0.55 * n + 1.5, 0.55 * n + 1.2))
    for q, row in enumerate(grid):
        for k, (step, rank, kind) in enumerate(row):
            if kind == "skipped":
                ax.add_patch(_square(k, q, "#f2f2f2"))
                continue
            ax.add_patch(_triangle(k, q, _colour(step)) if kind == "diagonal" else _square(k, q, _colour(step)))
            ax.text(k - 0.15 if kind == "diagonal" else k, q + 0.15 if kind == "diagonal" else q, str(rank),
                    ha="center", va="center", fontsize=8, color="white")
    _frame(ax, n, n)
    ax.set_xticks(range(n), [str(c) for c in range(n)], fontsize=8)
    ax.set_yticks(range(n), [str(c) for c in range(n)], fontsize=8)
    ax.set_xlabel("key chunk", fontsize=9)
    ax.set_ylabel("query chunk", fontsize=9)
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color=_colour(s), label=f"step {s}") for s in range(world)], fontsize=7,
              loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.set_title(f"Blocks computed ({layout}; number: rank)", fontsize=10)
    return fig


def plot_work_per_rank(world: int = 4, seq_len: int = 4096, causal: bool = True, ax: Any = None) -> Any:
    """Score elements each rank computes, plain layout against balanced, with each layout's imbalance."""
    fig, ax = fig_ax(ax, figsize=(5.5, 3.2))
    width = 0.4
    for offset, layout in zip((-width / 2, width / 2), LAYOUTS):
        work = workload(world, seq_len, layout, causal)
        ax.bar([r + offset for r in range(world)], [e / 1e6 for e in work.computed], width,
               label=f"{layout} (busiest / mean = {work.imbalance:.2f})")
    ax.set_xticks(range(world), [f"rank {r}" for r in range(world)])
    ax.set_ylabel("score elements per head (millions)")
    ax.set_title(f"Work per rank, {'causal' if causal else 'no mask'}, {seq_len} tokens on {world} ranks", fontsize=10)
    ax.legend(fontsize=8, frameon=False)
    return fig


def plot_ring_schedule(world: int = 4, causal: bool = True) -> Any:
    """The ring step by step, plain layout (top) against balanced (bottom): what each rank holds, and the
    blocks computed or skipped. Returns the Figure."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 8.5), gridspec_kw={"width_ratios": [1, 1.4]})
    for row, layout in zip(axes, LAYOUTS):
        plot_holdings(world, layout, ax=row[0])
        plot_blocks(world, layout, causal, ax=row[1])
    fig.suptitle(f"Ring attention on {world} ranks, {'causal' if causal else 'no mask'}")
    fig.tight_layout()
    return fig


def describe_workload(work: Workload) -> str:
    """One line: a layout's score elements per rank (one head), the busiest rank's share and the imbalance."""
    total = sum(work.computed)
    busiest = max(range(work.world), key=lambda r: work.computed[r])
    return (f"{work.layout:>8}: {', '.join(f'{e / 1e6:.3g}' for e in work.computed)} M score elements per rank; "
            f"rank {busiest} computes {work.computed[busiest] / total:.1%} of them (even: {1 / work.world:.1%}), "
            f"busiest / mean = {work.imbalance:.2f}")


def ring_work_widget() -> Any:
    """Ranks, sequence length, layout and mask → the blocks each rank computes and the work per rank."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    def draw(world: int = 4, seq_len: int = 8192, layout: str = "plain", causal: bool = True) -> None:
        for name in LAYOUTS:
            print(describe_workload(workload(world, seq_len, name, causal)))
        fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1, 1.2]})
        plot_blocks(world, layout, causal, ax=left)
        plot_work_per_rank(world, seq_len, causal, ax=right)
        fig.tight_layout()
        show(fig)

    return w.interactive(
        draw, world=w.SelectionSlider(options=[2, 4, 8], value=4, description="ranks"),
        seq_len=w.SelectionSlider(options=[2**k for k in range(10, 18)], value=8192, description="tokens"),
        layout=w.Dropdown(options=list(LAYOUTS), value="plain", description="layout"),
        causal=w.Checkbox(value=True, description="causal mask"))
