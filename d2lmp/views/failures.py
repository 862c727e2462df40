"""When things fail, on screen: failures, checkpoints, the waste and the best interval.

It draws how a sharded checkpoint lies in its files, a job's
timeline with failures and checkpoints, the waste against the interval, a real restart's events,
and a widget that finds the interval for a number of GPUs, a failure rate and a save.

The arithmetic is ``checkpoint_interval``'s and the events are ``parallel.resilient``'s; this module lays
them out and draws them. ``interval_report`` is the widget's pure function (numbers in, text out); every plot
takes plain data and an optional ``ax``; ``interval_widget`` is a thin ipywidgets front end over them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from d2lmp.model import checkpoint_interval as CI
from d2lmp.views.figure import fig_ax, show

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from d2lmp.parallel.checkpoint import SavedPiece
    from d2lmp.parallel.resilient import LogEvent

__all__ = ["SEGMENT_COLOURS", "plot_checkpoint_layout",
           "plot_job_timelines", "plot_waste_vs_interval", "plot_restart_events",
           "interval_report", "interval_widget"]

SEGMENT_COLOURS = {"work": "#55a868", "save": "#4c72b0", "lost": "#c44e52", "restart": "#dd8452"}


def plot_checkpoint_layout(pieces: Sequence[SavedPiece], names: Sequence[str], ax: Axes | None = None) -> Figure:
    """Tensors ``names`` of a DCP checkpoint: each drawn whole, its row blocks coloured by the file that holds
    them (one file per saving rank), and what the metadata file records for each block."""
    fig, ax = fig_ax(ax, figsize=(10, 0.75 * len(names) + 2.4))
    files = sorted({p.file for p in pieces})
    colour = {f: f"C{i}" for i, f in enumerate(files)}
    shown = [p for p in pieces if p.name in names and p.sizes]
    for row, name in enumerate(names):
        blocks = sorted((p for p in shown if p.name == name), key=lambda p: p.offsets)
        total = max((p.offsets[0] + p.sizes[0] for p in blocks), default=1)
        for p in blocks:
            ax.barh(row, p.sizes[0] / total, left=p.offsets[0] / total, color=colour[p.file], edgecolor="white")
            last = p.offsets[0] + p.sizes[0] - 1
            ax.text((p.offsets[0] + p.sizes[0] / 2) / total, row, f"rows {p.offsets[0]}–{last}",
                    ha="center", va="center", fontsize=7, color="white")
        ax.text(-0.02, row, f"{name}\n{' × '.join(map(str, (total, *blocks[0].sizes[1:])))}" if blocks else name,
                ha="right", va="center", fontsize=8)
    for i, f in enumerate(files):
        held = [p for p in pieces if p.file == f]
        ax.text(1.12, i, f"{f}\n{len(held)} records, {sum(p.length for p in held):,} bytes", ha="left", va="center",
                fontsize=8, bbox={"boxstyle": "round", "fc": "white", "ec": colour[f], "lw": 2})
    example = [p for p in shown if p.name == names[0]]
    lines = [f"({p.name}, offset {list(p.offsets)}) → {p.file} bytes {p.offset:,}+{p.length:,}" for p in example]
    ax.text(0.5, len(names) - 0.35, ".metadata (written by rank 0) maps every block to its file:\n" + "\n".join(lines),
            ha="center", va="top", fontsize=7.5, family="monospace",
            bbox={"boxstyle": "round", "fc": "#f4f4f4", "ec": "gray"})
    ax.set(xlim=(-0.55, 1.55), ylim=(len(names) + 0.35 + 0.3 * len(lines), -0.8),
           title="A sharded state on disk: each rank writes its own blocks; the metadata says where each one went")
    ax.axis("off")
    fig.tight_layout()
    return fig


def plot_job_timelines(rows: Sequence[tuple[str, CI.JobTimeline]], ax: Axes | None = None, unit: float = CI.HOUR,
                       title: str = "A job's timeline: work, checkpoints, failures") -> Figure:
    """One bar per (label, timeline): green work, blue saves, red work a failure undid, orange restarts.

    A failure is the right end of a red stretch, marked with a cross. Times are in ``unit`` seconds (hours).
    """
    from matplotlib.patches import Patch

    fig, ax = fig_ax(ax, figsize=(10, 0.9 + 0.7 * len(rows)))
    for row, (_, timeline) in enumerate(rows):
        for kind in SEGMENT_COLOURS:
            bars = [(s.start / unit, s.length / unit) for s in timeline.segments if s.kind == kind]
            ax.broken_barh(bars, (row - 0.35, 0.7), color=SEGMENT_COLOURS[kind], linewidth=0)
        ends = [(s.start + s.length) / unit for s in timeline.segments if s.kind == "lost"]
        ax.plot(ends, [row] * len(ends), "x", color="black", markersize=6, label="_failure")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([label for label, _ in rows])
    ax.invert_yaxis()
    ax.set(xlabel="wall-clock time (hours)" if unit == CI.HOUR else f"time (× {unit:g} s)", title=title)
    handles = [Patch(color=c, label=k) for k, c in SEGMENT_COLOURS.items()]
    ax.legend(handles=handles, fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_waste_vs_interval(save_s: float, mtbf_s: float, restart_s: float = 0.0, ax: Axes | None = None,
                           simulated: Sequence[tuple[float, float]] = (), title: str = "") -> Figure:
    """The waste against the checkpoint interval (Daly's exact model and the first-order one), both optima marked.

    ``simulated``: (interval in seconds, waste) points measured with ``checkpoint_interval.simulate``.
    """
    import numpy as np

    fig, ax = fig_ax(ax, figsize=(6.5, 4))
    young, daly = CI.young_interval(save_s, mtbf_s), CI.daly_interval(save_s, mtbf_s)
    taus = np.geomspace(max(young / 30, 1e-3), min(young * 30, 20 * mtbf_s), 300)
    exact = [100 * CI.waste(t, save_s, mtbf_s, restart_s) for t in taus]
    first = [100 * CI.first_order_waste(t, save_s, mtbf_s, restart_s) for t in taus]
    ax.plot(taus / 60, exact, color="#4c72b0", label="Daly's model (exact)")
    ax.plot(taus / 60, first, color="#999999", linestyle="--", label="first order: δ/τ + (τ/2 + R)/M")
    for tau, name, marker in ((young, "Young", "o"), (daly, "Daly", "s")):
        ax.plot([tau / 60], [100 * CI.waste(tau, save_s, mtbf_s, restart_s)], marker, color="black",
                label=f"{name}: {tau / 60:.3g} min")
    if simulated:
        ax.plot([t / 60 for t, _ in simulated], [100 * w for _, w in simulated], "^", color="#c44e52",
                label="simulated jobs (mean)")
    ax.set_xscale("log")
    ax.set_ylim(0, min(100.0, 4 * min(exact)))  # the optimum's neighbourhood: the curve is flat near it
    ax.set(xlabel="checkpoint interval τ (minutes of work)", ylabel="time wasted (%)",
           title=title or f"save {save_s:g} s, MTBF {mtbf_s / CI.HOUR:.3g} h, restart {restart_s:g} s")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_restart_events(events: Sequence[LogEvent], ax: Axes | None = None,
                        title: str = "The real run, step by step") -> Figure:
    """A run's event log (``parallel.resilient.read_events``) on a step axis: one row per attempt.

    Green: a step done and kept; red: a step done, then lost to the failure (the next attempt computes it
    again); a cross: the step during which, or after which in its save, a rank killed itself; blue bars:
    complete checkpoints; an orange triangle: where an attempt resumed.
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    if not events:
        raise ValueError("no events to draw")
    fig, ax = fig_ax(ax, figsize=(9, 0.9 + 0.8 * len({e.attempt for e in events})))
    attempts = sorted({e.attempt for e in events})
    resumed = {e.attempt: e.step for e in events if e.event == "resume" and e.rank == 0}
    for row, a in enumerate(attempts):
        later = [resumed[b] for b in attempts if b > a and b in resumed]
        keep_until = later[0] if later else None
        for e in (e for e in events if e.attempt == a):
            if e.event == "step":
                lost = keep_until is not None and e.step > keep_until
                ax.broken_barh([(e.step - 1, 1)], (row - 0.3, 0.6), edgecolor="white",
                               color=SEGMENT_COLOURS["lost" if lost else "work"])
            elif e.event == "saved":
                ax.plot([e.step] * 2, [row - 0.42, row + 0.42], color=SEGMENT_COLOURS["save"], linewidth=3)
            elif e.event == "kill":  # in the middle of its step, or at its end when it died saving
                ax.plot([e.step - (0.1 if e.during == "save" else 0.5)], [row], "X", color="black",
                        markersize=10)
        if a in resumed and (a > attempts[0] or resumed[a]):
            ax.plot([resumed[a]], [row], ">", color=SEGMENT_COLOURS["restart"], markersize=10)
    steps = max(e.step for e in events)
    ax.set_xticks(range(0, steps + 1))
    ax.set_yticks(range(len(attempts)))
    ax.set_yticklabels([f"attempt {a}" for a in attempts])
    ax.set_ylim(len(attempts) - 0.5, -0.5)
    ax.set(xlabel="step", title=title)
    ax.legend(handles=[Patch(color=SEGMENT_COLOURS["work"], label="step done"),
                       Patch(color=SEGMENT_COLOURS["lost"], label="step done, then lost"),
                       Line2D([], [], color=SEGMENT_COLOURS["save"], linewidth=3, label="checkpoint complete"),
                       Line2D([], [], marker="X", linestyle="", color="black", label="a rank killed itself"),
                       Line2D([], [], marker=">", linestyle="", color=SEGMENT_COLOURS["restart"], label="resumed")],
              fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def interval_report(gpus: int, per_gpu_hour: float, save_s: float, restart_s: float = 0.0) -> str:
    """The widget's text: the job's MTBF, Young's and Daly's intervals and the time each wastes."""
    s = CI.summarise(gpus, per_gpu_hour, save_s, restart_s)
    return (f"{gpus:,} GPUs failing {per_gpu_hour * 1000:.3g} times per 1000 GPU-hours each: the job fails every "
            f"{s.mtbf_s / CI.HOUR:.3g} h on average. Saving takes {save_s:g} s and a restart {restart_s:g} s: "
            f"checkpoint every {s.young_s / 60:.3g} min (Young) or {s.daly_s / 60:.3g} min (Daly), which wastes "
            f"{100 * s.waste_young:.3g} % or {100 * s.waste_daly:.3g} % of the time.")


def interval_widget(per_gpu_hour: float | None = None) -> ipywidgets.interactive:
    """GPUs, failure rate per GPU, save and restart time → the optimum interval and the waste curve.

    The failure rate starts at the one the Llama 3 report implies (``checkpoint_interval.REPORTS[0]``).
    """
    import ipywidgets as w
    import matplotlib.pyplot as plt

    rate = per_gpu_hour if per_gpu_hour is not None else CI.REPORTS[0].per_gpu_hour

    def draw(gpus: int = 16384, per_1000_gpu_hours: float = round(rate * 1000, 4), save_s: float = 60.0,
             restart_s: float = 600.0) -> None:
        print(interval_report(gpus, per_1000_gpu_hours / 1000, save_s, restart_s))
        fig, ax = plt.subplots(figsize=(6.5, 3.8))
        plot_waste_vs_interval(save_s, CI.job_mtbf(gpus, per_1000_gpu_hours / 1000), restart_s, ax)
        fig.tight_layout()
        show(fig)

    return w.interactive(
        draw,
        gpus=w.SelectionSlider(options=[8, 64, 512, 1024, 4096, 16384, 32768, 65536, 131072], value=16384,
                               description="GPUs"),
        per_1000_gpu_hours=w.FloatLogSlider(value=round(rate * 1000, 4), base=10, min=-3, max=0, step=0.05,
                                            description="fail/1000 GPU-h"),
        save_s=w.FloatLogSlider(value=60.0, base=10, min=0, max=3.5, step=0.05, description="save (s)"),
        restart_s=w.FloatLogSlider(value=600.0, base=10, min=0, max=3.5, step=0.05, description="restart (s)"),
    )
