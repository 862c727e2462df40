"""Learned against hand-designed features: one linear classifier's test accuracy on each kind of feature."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_feature_accuracies"]


def _bars(ax: Axes, accuracies: Mapping[str, float], title: str) -> None:
    names, values = list(accuracies), [100 * a for a in accuracies.values()]
    colours = ["#8c8c8c" if "pixel" in n.lower() else "#1f77b4" if "learned" in n.lower() else "#ff7f0e"
               for n in names]
    x = np.arange(len(names))
    ax.bar(x, values, color=colours)
    for xi, v in zip(x, values):
        ax.annotate(f"{v:.1f} %", (xi, v), ha="center", va="bottom", fontsize=9, textcoords="offset points",
                    xytext=(0, 2))
    ax.set_xticks(x)
    ax.set_xticklabels(names, fontsize=8, rotation=15, ha="right")
    ax.set(ylim=(0, 108), ylabel="test accuracy (%)", title=title)
    ax.grid(True, axis="y", alpha=0.3)


def plot_feature_accuracies(measured: Mapping[str, float], measured_title: str,
                            reported: Mapping[str, float] | None = None, reported_title: str = "") -> Figure:
    """Bars of test accuracy (fractions, 0 to 1) per kind of feature: measured here, and beside it
    ``reported`` figures from a source (e.g. the AlexNet paper's ImageNet results), in a second panel.

    Bars are grey for names with "pixel", blue for names with "learned", orange for the rest (designed features).
    """
    import matplotlib.pyplot as plt

    if not measured or any(not 0 <= a <= 1 for a in [*measured.values(), *(reported or {}).values()]):
        raise ValueError("accuracies must be fractions between 0 and 1, and at least one must be measured")
    panels = [(measured, measured_title)] + ([(reported, reported_title)] if reported else [])
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for ax, (accuracies, title) in zip(axes[0], panels):
        _bars(ax, accuracies, title)
    fig.tight_layout()
    return fig
