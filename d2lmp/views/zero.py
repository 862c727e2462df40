"""ZeRO on screen: what each rank holds per stage, measured against the formula, and memory per device by stage.

The arithmetic is ``model.costmodel``'s (``zero_memory``, ``zero_memory_by_stage``, and ``ZERO_SHARDED``
for what each stage shards); this module only lays it out and draws it. ``held_segments`` lays out one
rank's bar; the plots take computed numbers and an optional ``ax``. The interactive calculator, the state with
the activations on top, is ``views.memory_calculator``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from d2lmp.model.costmodel import ZERO_SHARDED, ZERO_STAGES
from d2lmp.model.training_state import STATE_PARTS, OptimizerBytes, optimizer_bytes
from d2lmp.views.figure import fig_ax
from d2lmp.views.memory import MEMORY_PART_COLOURS, part_label

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["held_segments", "plot_zero_stages", "plot_measured_vs_formula", "plot_memory_per_stage"]


def held_segments(world: int, stage: int, rank: int, optimizer: str | OptimizerBytes = "adam_mixed"
                  ) -> list[tuple[str, float, float, bool]]:
    """The pieces of one rank's bar in the ZeRO picture: (part, start, length, held), lengths in bytes per parameter.

    The bar lays out parameters, gradients and optimizer state end to end, each as long as its bytes per
    parameter under ``optimizer``. A part that ``stage`` shards (``ZERO_SHARDED``) is cut into ``world`` equal
    pieces, of which the rank holds piece ``rank``; a part it does not shard is held whole.
    """
    if not isinstance(world, int) or world < 1 or not 0 <= rank < world:
        raise ValueError(f"need world >= 1 and 0 <= rank < world, got world={world!r}, rank={rank!r}")
    if stage not in ZERO_STAGES:
        raise ValueError(f"stage must be one of {ZERO_STAGES}, got {stage!r}")
    out, start = [], 0.0
    for kind, size in optimizer_bytes(optimizer).state_per_parameter.items():
        if kind in ZERO_SHARDED[stage] and world > 1:
            piece = size / world
            for r in range(world):
                out.append((kind, start + r * piece, piece, r == rank))
        else:
            out.append((kind, start, float(size), True))
        start += size
    return out


def plot_zero_stages(world: int = 4, optimizer: str | OptimizerBytes = "adam_mixed", ax: Axes | None = None) -> Figure:
    """One row per ZeRO stage, one bar per rank: coloured what the rank keeps, grey what other ranks keep.

    Each bar is parameters | gradients | optimizer state, as long as their bytes per parameter under
    ``optimizer`` (the default: mixed-precision Adam). Returns the Figure.
    """
    fig, ax = fig_ax(ax, figsize=(9, 3.8))
    sizes = list(optimizer_bytes(optimizer).state_per_parameter.values())
    total = float(sum(sizes))
    gap = 0.12 * total
    for stage in ZERO_STAGES:
        y = 3 - stage
        for rank in range(world):
            x0 = rank * (total + gap)
            for kind, start, length, held in held_segments(world, stage, rank, optimizer):
                colour = MEMORY_PART_COLOURS[kind] if held else "#eeeeee"
                ax.barh(y, length, left=x0 + start, height=0.6, color=colour, edgecolor="white", lw=0.8)
            if stage == 0:
                ax.text(x0 + total / 2, 3.45, f"rank {rank}", ha="center", va="bottom", fontsize=9)
        kept = sum(length for _, _, length, held in held_segments(world, stage, 0, optimizer) if held)
        ax.text(world * (total + gap) - gap / 2, y, f"{kept:.3g} B/param", va="center", fontsize=9)
    ax.set_yticks(range(4), [f"stage {s}" for s in (3, 2, 1, 0)])
    ax.set_xticks([])
    ax.set_xlim(-gap / 2, world * (total + gap) + 1.5 * total)
    ax.set_ylim(-0.6, 3.9)
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    from matplotlib.patches import Patch

    handles = ([Patch(color=MEMORY_PART_COLOURS[k], label=part_label(k)) for k in STATE_PARTS]
               + [Patch(color="#eeeeee", label="kept by another rank")])
    ax.legend(handles=handles, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=4, frameon=False)
    ax.set_title(f"What each of {world} ranks keeps (bytes per parameter: {' + '.join(f'{b:g}' for b in sizes)})")
    return fig


def plot_measured_vs_formula(labels: Sequence[str], measured: Sequence[float], formula: Sequence[float],
                             ax: Axes | None = None, ylabel: str = "bytes per rank", title: str = "") -> Figure:
    """Side-by-side bars of measured and predicted values for each label (a stage, say). Returns the Figure."""
    if not len(labels) == len(measured) == len(formula):
        raise ValueError("labels, measured and formula need the same length")
    fig, ax = fig_ax(ax, figsize=(5, 3.2))
    xs = range(len(labels))
    ax.bar([x - 0.2 for x in xs], measured, width=0.4, color="#4c72b0", label="measured")
    ax.bar([x + 0.2 for x in xs], formula, width=0.4, color="#dddddd", edgecolor="#555555", hatch="//",
           label="formula")
    ax.set_xticks(list(xs), labels)
    ax.set_ylim(0, 1.25 * max(list(measured) + list(formula) + [1]))
    ax.set(ylabel=ylabel, title=title)
    ax.legend(fontsize=8)
    return fig


def plot_memory_per_stage(per_stage: Mapping[int, Mapping[str, float]], memory_bytes: float | None = None,
                          ax: Axes | None = None, title: str = "") -> Figure:
    """Stacked bars (GB, 1e9 bytes) of each stage's training state per device; the device's memory dashed.

    A stage whose bar rises above the line does not fit (activations come on top). Returns the Figure.
    """
    fig, ax = fig_ax(ax, figsize=(5, 3.2))
    names = [f"stage {s}" for s in per_stage]
    bottom = [0.0] * len(names)
    for kind in STATE_PARTS:
        values = [per_stage[s][kind] / 1e9 for s in per_stage]
        ax.bar(names, values, bottom=bottom, color=MEMORY_PART_COLOURS[kind], label=part_label(kind))
        bottom = [b + v for b, v in zip(bottom, values)]
    for i, b in enumerate(bottom):
        ax.text(i, b, f"{b:.3g}", ha="center", va="bottom", fontsize=8)
    top = max(bottom + [1e-9])
    if memory_bytes is not None:
        ax.axhline(memory_bytes / 1e9, color="k", ls="--", label="device memory")
        top = max(top, memory_bytes / 1e9)
    ax.set_ylim(0, 1.3 * top)
    ax.set(ylabel="GB per device", title=title)
    ax.legend(fontsize=7, loc="upper right")
    return fig
