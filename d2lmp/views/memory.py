"""What memory holds during training and inference: stacked breakdowns (with a widget) and saved
activations per layer, measured against predicted."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from d2lmp.model.training_state import MEMORY_PARTS
from d2lmp.views.figure import fig_ax, show

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from d2lmp.memory_records import LayerComparison, MemoryBar

__all__ = ["MEMORY_PART_COLOURS", "BUFFER_COLOUR", "part_label", "plot_memory_breakdown", "memory_widget",
           "plot_saved_per_layer"]

# One colour per part of memory (``training_state.MEMORY_PARTS``), in every figure that shows them.
MEMORY_PART_COLOURS = dict(zip(MEMORY_PARTS, ("#8172b2", "#937860", "#da8bc3", "#55a868", "#64b5cd")))
BUFFER_COLOUR = "#bbbbbb"  # communication buffers and allocator slack, where a figure shows them


def part_label(part: str) -> str:
    """A part of memory as a legend writes it: 'optimizer_state' -> 'optimizer state'."""
    return part.replace("_", " ")


def plot_memory_breakdown(rows: Sequence[MemoryBar], ax: Axes | None = None, title: str = "What memory holds",
                          unit: str = "MiB") -> Figure:
    """Stacked horizontal bars, one per row (``memory.breakdown_rows``), one colour per component."""
    scale = {"MiB": 2**20, "GiB": 2**30}[unit]
    fig, ax = fig_ax(ax, figsize=(8, 1.2 + 0.7 * len(rows)))
    for i, row in enumerate(rows):
        left = 0.0
        for part, colour in MEMORY_PART_COLOURS.items():
            value = getattr(row, part) / scale
            if value > 0:
                ax.barh([i], [value], left=left, color=colour, label=part_label(part) if i == 0 or
                        not any(getattr(r, part) for r in rows[:i]) else None)
                left += value
        ax.annotate(f"{left:,.1f} {unit}", (left, i), textcoords="offset points", xytext=(4, 0), va="center",
                    fontsize=8)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r.label for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set(xlabel=unit, title=title)
    ax.set_xlim(0, max(r.total for r in rows) / scale * 1.25)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def memory_widget() -> ipywidgets.interactive:
    """Batch size and optimizer → predicted memory of a training step and of inference for D2L's AlexNet."""
    import ipywidgets as w
    import torch

    from d2lmp.memory import TORCH_OPTIMIZERS, breakdown_rows
    from d2lmp.models import alexnet_d2l

    with torch.device("meta"):
        model = alexnet_d2l()

    def draw(batch: int = 128, optimizer: str = "adam") -> None:
        rows = breakdown_rows(model, (batch, 1, 224, 224), optimizer, device_type="cuda")
        t, i = (r.total for r in rows)
        print(f"D2L AlexNet (224×224, FP32), batch {batch}: training {t / 2**30:.2f} GiB, inference "
              f"{i / 2**30:.2f} GiB ({t / i:.1f}× less)")
        show(plot_memory_breakdown(rows, unit="GiB", title=f"D2L AlexNet, batch {batch}, {optimizer}"))

    return w.interactive(draw, batch=w.SelectionSlider(options=[1, 8, 32, 64, 128, 256, 512], value=128,
                                                       description="batch"),
                         optimizer=w.Dropdown(options=list(TORCH_OPTIMIZERS), value="adam",
                                              description="optimizer"))


def plot_saved_per_layer(per_layer: Iterable[LayerComparison], ax: Axes | None = None,
                         title: str = "Saved activations per layer") -> Figure:
    """Measured and predicted saved bytes per layer (rows from ``memory.compare_saved_activations``)."""
    rows = [r for r in per_layer if r.measured or r.predicted]
    fig, ax = fig_ax(ax, figsize=(8, 3.6))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r.measured / 2**10 for r in rows], 0.4, label="measured (saved-tensor hooks)")
    ax.bar(x + 0.2, [r.predicted / 2**10 for r in rows], 0.4, label="predicted (shapes × rule)")
    ax.set_xticks(x)
    ax.set_xticklabels([f"{r.name.split('.')[-1]} ({r.kind})" for r in rows], fontsize=7, rotation=40, ha="right")
    ax.set(ylabel="KiB", title=title)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
