"""Pipeline parallelism on screen: a schedule's timeline and its bubble.

It draws a simulated schedule's timeline and its bubble (a widget), and 1F1B, interleaved 1F1B and zero-bubble ZB-H1
drawn one above the other on the same time axis."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, cast

from d2lmp.model.pipeline_schedule import (
    COMPUTE_KINDS,
    SCHEDULES,
    bubble_fraction,
    bubble_time_fraction,
    measured_bubble,
    measured_bubble_time,
    micro_batch_count,
    simulate,
)
from d2lmp.model.timeline import TimelineEvent
from d2lmp.pipeline_memory import peak_in_flight
from d2lmp.views.figure import fig_ax, show
from d2lmp.views.timeline import KIND_COLOURS, plot_timeline

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["pipeline_widget", "plot_schedule_comparison"]


def pipeline_widget() -> ipywidgets.interactive:
    """Schedule, stages, micro-batches and message time → the simulated pipeline's timeline and its bubble."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    def draw(kind: str = "gpipe", stages: int = 4, micro_batches: int = 4, message: float = 0.0) -> None:
        events = simulate(kind, stages, micro_batches, message=message)
        bubble = measured_bubble(events, stages)
        m = micro_batch_count(kind, micro_batches)
        print(f"{kind}: idle share of the step {bubble:.3f} (formula (p-1)/(m+p-1) = "
              f"{bubble_fraction(stages, m):.3f}); peak micro-batches held by stage 0: {peak_in_flight(events)}")
        lanes = ("compute", "comm") if message > 0 else ("compute",)
        fig, ax = plt.subplots(figsize=(9, 0.6 + 0.45 * stages * len(lanes)))
        plot_timeline([replace(e, start=e.start / 1e3, end=e.end / 1e3) for e in events], ax=ax,
                      title=f"{kind}, {stages} stages, {m} micro-batch(es); forward 1 unit, backward 2, "
                            f"message {message:g}", lanes=lanes)
        ax.set_xlabel("time (units)")
        show(fig)

    return w.interactive(draw,
                         kind=w.Dropdown(options=list(SCHEDULES), value="gpipe", description="schedule"),
                         stages=w.IntSlider(4, 2, 8, description="stages"),
                         micro_batches=w.IntSlider(4, 1, 16, description="micro-batches"),
                         message=w.FloatSlider(0.0, min=0.0, max=2.0, step=0.25, description="message"))



def plot_schedule_comparison(stages: int = 4, micro_batches: int = 8, chunks: int = 2,
                             axes: Sequence[Axes] | None = None,
                             kinds: Sequence[str] = ("1f1b", "interleaved", "zero-bubble")) -> Figure:
    """1F1B, interleaved 1F1B (``chunks`` per rank; Narayanan et al. 2021a) and zero-bubble ZB-H1 (Qi et al. 2024),
    or those of them in ``kinds``, one above the other, simulated with forward 1 unit and backward 2 (ZB-H1: B 1
    and W 1), each titled with its bubble over the busy time against its formula. A later chunk's blocks are
    lighter; each block carries its micro-batch."""
    import matplotlib.pyplot as plt

    p, m, v = stages, micro_batches, chunks
    known = {"1f1b": (1, "1F1B", bubble_time_fraction(p, m), "(p-1)/m"),
             "interleaved": (v, f"interleaved 1F1B, v = {v}", bubble_time_fraction(p, m, v), "(p-1)/(v·m)"),
             "zero-bubble": (1, "zero-bubble ZB-H1", (p - 1) / (3 * m), "(p-1)/(3m) with F = B = W")}
    if not kinds or any(k not in known for k in kinds):
        raise ValueError(f"kinds must be some of {', '.join(known)}, got {tuple(kinds)}")
    if axes is None:
        _, made = plt.subplots(len(kinds), 1, figsize=(10, 1.2 + 1.5 * len(kinds) * p / 4), sharex=True,
                               squeeze=False)
        axes = list(made[:, 0])
    for ax, kind in zip(axes, kinds):
        c, name, formula, written = known[kind]
        events = simulate(kind, p, m, chunks=c)
        bubble = measured_bubble_time(events, p)
        _draw_compute(ax, events, p)
        ax.set_title(f"{name}: bubble overhead {bubble:.3f}, formula {written} = {formula:.3f}", fontsize=9)
    axes[-1].set_xlabel("time (units)")
    fig = cast("Figure", axes[0].figure)
    fig.suptitle(f"{p} stages, {m} micro-batches (simulated)")
    fig.tight_layout()
    return fig


def _draw_compute(ax: Axes | None, events: list[TimelineEvent], stages: int) -> Figure:
    """One row per rank: F, B and W blocks coloured by kind, lighter from the second chunk on, numbered."""
    from matplotlib.patches import Patch

    fig, ax = fig_ax(ax)
    for e in events:
        if e.kind not in COMPUTE_KINDS:
            continue
        later_chunk = (e.stage or 0) >= stages
        ax.broken_barh([(e.start, e.duration)], (e.rank - 0.4, 0.8), color=KIND_COLOURS[e.kind],
                       alpha=0.55 if later_chunk else 1.0, edgecolor="white", linewidth=0.5)
        ax.text(e.start + e.duration / 2, e.rank, str(e.micro_batch), ha="center", va="center", color="white",
                fontsize=6, clip_on=True)
    ax.set_yticks(range(stages))
    ax.set_yticklabels([f"rank {r}" for r in range(stages)])
    ax.invert_yaxis()
    kinds = [k for k in COMPUTE_KINDS if any(e.kind == k for e in events)]
    ax.legend(handles=[Patch(color=KIND_COLOURS[k], label=k) for k in kinds], fontsize=7,
              loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.grid(True, axis="x", alpha=0.3)
    return fig
