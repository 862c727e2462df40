"""Per-rank event timelines as Gantt charts: compute and communication lanes, overlap visible, micro-batches named."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from d2lmp.model.timeline import TimelineEvent, align
from d2lmp.views.figure import fig_ax

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["KIND_COLOURS", "plot_timeline"]


KIND_COLOURS = {"forward": "#4c72b0", "backward": "#55a868", "weight": "#8c9e3a", "allreduce": "#c44e52",
                "wait": "#bbbbbb", "step": "#8172b2", "send": "#dd8452", "recv": "#937860"}


def plot_timeline(events: list[TimelineEvent], ax: Axes | None = None, title: str = "Per-rank timeline",
                  lanes: Sequence[str] = ("compute", "comm"), label_min: float = 0.012) -> Figure:
    """A Gantt chart: one row per rank for compute and one for communication, in milliseconds.

    Communication bars that sit under a backward bar are overlap: the network works while
    the processor still computes gradients. A block that belongs to a pipeline micro-batch carries
    its id when it is at least ``label_min`` of the time axis wide. When every communication event is
    a point-to-point "send" or "recv", the lane is named "send/recv" and sends fill its upper half,
    receives its lower half, so that the two directions stay visible where they overlap.
    """
    from matplotlib.patches import Patch

    events = align(events)
    ranks = sorted({e.rank for e in events})
    fig, ax = fig_ax(ax, figsize=(9, 1 + 0.9 * len(ranks)))
    comm_kinds = {"allreduce", "send", "recv"}
    found = {e.kind for e in events if e.kind in comm_kinds}
    point_to_point = bool(found) and found <= {"send", "recv"}
    span = max((e.end for e in events), default=0.0) or 1.0
    labels, row = [], 0
    for rank in ranks:
        for lane in lanes:
            for e in events:
                if e.rank != rank or (e.kind in comm_kinds) != (lane == "comm"):
                    continue
                bottom, height = row - 0.4, 0.8
                if point_to_point and lane == "comm":
                    bottom, height = (row - 0.4, 0.4) if e.kind == "send" else (row, 0.4)
                ax.broken_barh([(e.start, max(e.duration, 1e-3))], (bottom, height),
                               color=KIND_COLOURS.get(e.kind, "#999999"), edgecolor="white", linewidth=0.3)
                if e.micro_batch is not None and e.duration >= label_min * span:
                    ax.text(e.start + e.duration / 2, bottom + height / 2, str(e.micro_batch), ha="center",
                            va="center", color="white", fontsize=7 if height > 0.5 else 6, clip_on=True)
            name = "send/recv" if lane == "comm" and point_to_point else lane
            labels.append(f"rank {rank} {name}")
            row += 1
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set(xlabel="time (ms)", title=title)
    kinds = sorted({e.kind for e in events}, key=list(KIND_COLOURS).index)
    ax.legend(handles=[Patch(color=KIND_COLOURS[k], label=k) for k in kinds], fontsize=8,
              loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return fig
