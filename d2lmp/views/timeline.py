"""Per-rank event timelines as Gantt charts: compute and communication lanes, overlap visible."""

from __future__ import annotations

from ..parallel.timeline import TimelineEvent, align
from .figure import fig_ax

__all__ = ["KIND_COLOURS", "plot_timeline"]


KIND_COLOURS = {"forward": "#4c72b0", "backward": "#55a868", "allreduce": "#c44e52", "wait": "#bbbbbb",
                "step": "#8172b2", "send": "#dd8452", "recv": "#937860"}


def plot_timeline(events: list[TimelineEvent], ax=None, title: str = "Per-rank timeline", lanes=("compute", "comm")):
    """A Gantt chart: one row per rank for compute and one for communication, in milliseconds.

    Communication bars that sit under a backward bar are overlap: the network works while
    the processor still computes gradients.
    """
    from matplotlib.patches import Patch

    events = align(events)
    ranks = sorted({e.rank for e in events})
    fig, ax = fig_ax(ax, figsize=(9, 1 + 0.9 * len(ranks)))
    comm_kinds = {"allreduce", "send", "recv"}
    labels, row = [], 0
    for rank in ranks:
        for lane in lanes:
            for e in events:
                if e.rank != rank or (e.kind in comm_kinds) != (lane == "comm"):
                    continue
                ax.broken_barh([(e.start, max(e.duration, 1e-3))], (row - 0.4, 0.8),
                               color=KIND_COLOURS.get(e.kind, "#999999"), edgecolor="white", linewidth=0.3)
            labels.append(f"rank {rank} {lane}")
            row += 1
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set(xlabel="time (ms)", title=title)
    kinds = sorted({e.kind for e in events}, key=list(KIND_COLOURS).index)
    ax.legend(handles=[Patch(color=KIND_COLOURS[k], label=k) for k in kinds], fontsize=8,
              loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.grid(True, axis="x", alpha=0.3)
    return fig
