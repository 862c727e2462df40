"""A profiler trace drawn from its file, beside the Timeline Gantt chart of the same step.

It draws each rank's backward operators and all-reduces on one time axis, beside the ``Timeline`` Gantt chart of the
same step."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from d2lmp.parallel.profiler_trace import TraceRecording
from d2lmp.parallel.trace_events import load_trace, summarise, to_timeline, trace_spans
from d2lmp.views.timeline import plot_timeline

__all__ = ["plot_trace", "plot_trace_beside_timeline"]


def plot_trace(paths: Sequence[str | Path], ax: Any = None, title: str | None = None) -> Any:
    """Parse every rank's Chrome trace file and draw its spans as a Gantt chart: a compute lane (forward, each
    backward operator, the optimizer) and a communication lane (each all-reduce the process group ran on its own
    thread), per rank, in milliseconds from the earliest event. The title gives each rank's measured overlap."""
    spans = [s for rank, path in enumerate(paths) for s in trace_spans(load_trace(path), rank)]
    if title is None:
        overlaps = ", ".join(f"rank {r}: {summarise(spans, r).overlap_ms:.1f} ms" for r in range(len(paths)))
        title = f"From the profiler's trace files: all-reduce during backward ({overlaps})"
    return plot_timeline(to_timeline(spans), ax=ax, title=title)


def plot_trace_beside_timeline(recording: TraceRecording) -> Any:
    """Two Gantt charts of the same DDP step, one above the other: drawn from the trace files, and from the
    ``Timeline`` that DDP's communication hook and the step's spans logged (whose backward span also holds
    DDP's wait for the last buckets)."""
    import matplotlib.pyplot as plt

    fig, (upper, lower) = plt.subplots(2, 1, figsize=(9, 2.5 + 1.8 * len(recording.paths)))
    plot_trace(recording.paths, ax=upper)
    plot_timeline(list(recording.timeline), ax=lower,
                  title="The same step from the Timeline (perf_counter around each span and bucket)")
    fig.tight_layout()
    return fig
