"""Schedules of computation and communication side by side: what overlaps with what, and when the step ends."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from d2lmp.model.overlap_schedule import COMM, COMPUTE, Span, finish

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_schedules"]

_COLOURS = {"forward": "#4c72b0", "backward": "#55a868", "matmul": "#4c72b0", "gather": "#dd8452",
            "reduce-scatter": "#c44e52", "all-gather": "#dd8452", "chunk": "#dd8452"}


def _colour(name: str) -> str:
    return next((c for key, c in _COLOURS.items() if name.startswith(key)), "#999999")


def plot_schedules(schedules: Mapping[str, Sequence[Span]], title: str = "", unit: str = "time") -> Figure:
    """One panel per schedule, a compute lane over a communication lane, each bar named; a dashed line where the
    schedule ends, so that panels on one time axis compare at a glance."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(schedules), 1, figsize=(10, 1.5 * len(schedules) + 0.6), sharex=True,
                             squeeze=False)
    end = max(finish(spans) for spans in schedules.values())
    for ax, (name, spans) in zip(axes[:, 0], schedules.items()):
        for row, lane in enumerate((COMPUTE, COMM)):
            for s in (s for s in spans if s.lane == lane):
                ax.broken_barh([(s.start, s.end - s.start)], (row - 0.4, 0.8), color=_colour(s.name),
                               edgecolor="white", linewidth=0.8)
                if s.end - s.start > 0.06 * end:
                    ax.text((s.start + s.end) / 2, row, s.name, ha="center", va="center", color="white", fontsize=7,
                            clip_on=True)
        ax.axvline(finish(spans), color="black", linestyle="--", linewidth=1)
        ax.set_yticks([0, 1], [COMPUTE, COMM])
        ax.set_ylim(1.6, -0.6)
        ax.set_title(f"{name}: ends at {finish(spans):.3g}", fontsize=9, loc="left")
        ax.grid(True, axis="x", alpha=0.3)
    from matplotlib.patches import Patch

    names = {s.name.split(" ")[0].rstrip(",") for spans in schedules.values() for s in spans}
    kinds = [k for k in _COLOURS if k in names or any(n.startswith(k) for n in names)]
    axes[0, 0].legend(handles=[Patch(color=_COLOURS[k], label=k) for k in kinds], fontsize=8, loc="upper left",
                      bbox_to_anchor=(1.01, 1.0))
    axes[-1, 0].set_xlabel(unit)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
