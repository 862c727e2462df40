"""Reading a profiler's Chrome trace: backward operators and all-reduces as spans, and their overlap, measured.

``torch.profiler`` exports a trace in the Chrome trace-event format, the JSON that ui.perfetto.dev and
chrome://tracing open (bibliography: perfetto_other_formats): a ``traceEvents`` list whose complete events
(``"ph": "X"``) have a name, a category, a start ``ts`` and a duration ``dur`` in microseconds, and a process and
thread id. Kineto adds ``baseTimeNanoseconds`` (``ts`` counts from it) and the rank under ``distributedInfo``.
``trace_spans`` keeps the events that matter to a data-parallel step: each backward operator autograd ran
(``autograd::engine::evaluate_function: …``), each all-reduce that the process group ran on its own thread
(``gloo:all_reduce``; NCCL's kernels on a GPU), the forward and optimizer annotations, and GPU kernels.
``summarise`` measures from them what a Gantt chart shows: the backward span (first backward operator's start to
the last one's end), the all-reduce spans, their overlap with the backward span and the communication left after
it. ``to_timeline`` turns the spans into the project's ``TimelineEvent`` records for the Gantt chart, and
``merge_traces`` writes every rank's events into one file, one process per rank, on a common clock. Plain JSON and
arithmetic: no torch.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from d2lmp.model.timeline import TimelineEvent

__all__ = ["BACKWARD_PREFIX", "ALLREDUCE_NAMES", "TraceSpan", "TraceSummary", "load_trace", "classify",
           "trace_spans", "union_ms", "intersection_ms", "summarise", "to_timeline", "merge_traces"]

BACKWARD_PREFIX = "autograd::engine::evaluate_function: "
ALLREDUCE_NAMES = ("gloo:all_reduce", "nccl:all_reduce")


@dataclass(frozen=True)
class TraceSpan:
    """One complete event of a trace, classified: ``kind`` is "forward", "backward", "allreduce", "optimizer" or
    "kernel"; times in milliseconds on the trace's own clock (``ts`` plus ``baseTimeNanoseconds``)."""

    rank: int
    kind: str
    name: str
    start_ms: float
    end_ms: float
    thread: int

    @property
    def duration_ms(self) -> float:
        return self.end_ms - self.start_ms


@dataclass(frozen=True)
class TraceSummary:
    """What one rank's trace says about its step, in milliseconds: the backward span, each all-reduce's duration,
    the time some all-reduce was running (their union), how much of that fell inside the backward span (overlap)
    and how much outside it (exposed), and the number of GPU kernels recorded (0 on CPU ranks)."""

    rank: int
    backward_ms: float
    allreduce_ms: tuple[float, ...]
    allreduce_busy_ms: float
    overlap_ms: float
    exposed_ms: float
    gpu_kernels: int


def load_trace(path: str | Path) -> dict[str, Any]:
    """Parse a Chrome trace file: an object with a ``traceEvents`` list (the JSON array form is wrapped into one)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(data, list):
        data = {"traceEvents": data}
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise ValueError(f"{path} is not a Chrome trace: expected an object with a 'traceEvents' list")
    return data


def classify(name: str, category: str) -> str | None:
    """The kind of span an event is, or None for the events a data-parallel step's picture leaves out."""
    if name.startswith(BACKWARD_PREFIX):
        return "backward"
    if name in ALLREDUCE_NAMES or (category == "kernel" and "allreduce" in name.lower()):
        return "allreduce"
    if category == "kernel":
        return "kernel"
    if category == "user_annotation" and name in ("forward", "optimizer"):
        return name
    return None


def trace_spans(trace: dict[str, Any], rank: int | None = None) -> list[TraceSpan]:
    """The classified complete events of one rank's trace, sorted by start. ``rank`` defaults to the trace's own
    (``distributedInfo``), else 0. On a GPU the all-reduces are NCCL's kernels, not its CPU-side launches."""
    if rank is None:
        rank = int(trace.get("distributedInfo", {}).get("rank", 0))
    base_us = float(trace.get("baseTimeNanoseconds", 0)) / 1e3
    spans = []
    for e in trace["traceEvents"]:
        if e.get("ph") != "X" or "dur" not in e:
            continue
        kind = classify(str(e.get("name", "")), str(e.get("cat", "")))
        if kind is None:
            continue
        start = (float(e["ts"]) + base_us) / 1e3
        spans.append(TraceSpan(rank, kind, str(e["name"]), start, start + float(e["dur"]) / 1e3, int(e.get("tid", 0))))
    if any(s.kind == "allreduce" and s.name not in ALLREDUCE_NAMES for s in spans):
        spans = [s for s in spans if not (s.kind == "allreduce" and s.name in ALLREDUCE_NAMES)]
    return sorted(spans, key=lambda s: s.start_ms)


def _merged(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def union_ms(intervals: Iterable[tuple[float, float]]) -> float:
    """The length of the union of (start, end) intervals."""
    return sum(end - start for start, end in _merged(intervals))


def intersection_ms(intervals: Iterable[tuple[float, float]], window: tuple[float, float]) -> float:
    """The length of the union of ``intervals`` that lies inside ``window``."""
    lo, hi = window
    return sum(max(0.0, min(end, hi) - max(start, lo)) for start, end in _merged(intervals))


def summarise(spans: Sequence[TraceSpan], rank: int) -> TraceSummary:
    """``rank``'s ``TraceSummary`` from its spans (a ``ValueError`` if the trace holds no backward operator)."""
    mine = [s for s in spans if s.rank == rank]
    backward = [s for s in mine if s.kind == "backward"]
    if not backward:
        raise ValueError(f"rank {rank}'s trace has no backward operator ({BACKWARD_PREFIX}...)")
    window = (min(s.start_ms for s in backward), max(s.end_ms for s in backward))
    comms = [(s.start_ms, s.end_ms) for s in mine if s.kind == "allreduce"]
    busy, inside = union_ms(comms), intersection_ms(comms, window)
    return TraceSummary(rank, window[1] - window[0], tuple(e - s for s, e in comms), busy, inside, busy - inside,
                        sum(s.kind == "kernel" for s in mine))


_TIMELINE_KIND = {"forward": "forward", "backward": "backward", "allreduce": "allreduce", "optimizer": "step"}


def to_timeline(spans: Sequence[TraceSpan]) -> list[TimelineEvent]:
    """The spans as ``TimelineEvent`` records (times in seconds, as a ``Timeline`` keeps them), so that
    ``views.timeline.plot_timeline`` draws them; GPU kernels other than all-reduces are left out."""
    return [TimelineEvent(s.rank, _TIMELINE_KIND[s.kind], s.name.removeprefix(BACKWARD_PREFIX), s.start_ms / 1e3,
                          s.end_ms / 1e3) for s in spans if s.kind in _TIMELINE_KIND]


def merge_traces(paths: Sequence[str | Path], out: str | Path) -> Path:
    """One trace holding every rank's events: rank r becomes process r (named "rank r"), all on the clock of the
    earliest ``baseTimeNanoseconds``, so Perfetto shows the ranks one above the other on one time axis. Flow
    arrows (launch to kernel, forward to backward) are left out: their ids are numbered per file."""
    traces = [load_trace(p) for p in paths]
    base_ns = min(int(t.get("baseTimeNanoseconds", 0)) for t in traces)
    events: list[dict[str, Any]] = []
    for i, trace in enumerate(traces):
        rank = int(trace.get("distributedInfo", {}).get("rank", i))
        shift_us = (int(trace.get("baseTimeNanoseconds", 0)) - base_ns) / 1e3
        events.append({"ph": "M", "name": "process_name", "pid": rank, "tid": 0, "args": {"name": f"rank {rank}"}})
        for e in trace["traceEvents"]:
            if (e.get("ph") == "M" and e.get("name") == "process_name") or e.get("ph") in ("s", "t", "f"):
                continue  # our own process names instead; flow arrows' ids are per file and would collide
            moved = dict(e, pid=rank)
            if "ts" in moved:
                moved["ts"] = float(moved["ts"]) + shift_us
            events.append(moved)
    out = Path(out)
    out.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ms", "baseTimeNanoseconds": base_ns}),
                   encoding="utf-8")
    return out
