"""Per-rank event timelines: what each rank computed or communicated, and when (``TimelineEvent`` records)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["TimelineEvent", "Timeline", "align", "overlap_ms", "split_steps"]


@dataclass(frozen=True)
class TimelineEvent:
    """One operation of one rank: its kind ("forward", "backward", "allreduce", "wait", ...), a label,
    start and end times, and what only some events know: the micro-batch of a pipeline operation, the
    bytes a communication moved, the bytes of each parameter in a DDP bucket, and the pipeline stage
    (model chunk) an operation ran, where a rank holds several.
    """

    rank: int
    kind: str
    label: str
    start: float
    end: float
    micro_batch: int | None = None
    nbytes: int | None = None
    tensor_bytes: tuple[int, ...] | None = None
    stage: int | None = None

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass
class Timeline:
    """The events of one rank, in the order they were recorded.

    Times are ``time.perf_counter()`` values, which on Linux come from one system-wide
    monotonic clock, so timelines of processes on one machine line up.
    """

    rank: int = 0
    events: list[TimelineEvent] = field(default_factory=list)

    def add(self, kind: str, start: float, end: float, label: str = "", **fields: Any) -> None:
        """Record an event; ``fields`` are the optional ``TimelineEvent`` fields (micro_batch, nbytes, tensor_bytes,
        stage)."""
        self.events.append(TimelineEvent(self.rank, kind, label, start, end, **fields))

    @contextmanager
    def span(self, kind: str, label: str = "", **fields: Any) -> Iterator[None]:
        """Record the time the ``with`` block takes as one event."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(kind, start, time.perf_counter(), label, **fields)


def align(events: list[TimelineEvent]) -> list[TimelineEvent]:
    """New events shifted so the earliest starts at 0, with times converted to milliseconds."""
    if not events:
        return []
    if not all(isinstance(e, TimelineEvent) for e in events):
        kinds = sorted({type(e).__name__ for e in events if not isinstance(e, TimelineEvent)})
        raise TypeError(f"timeline events must be TimelineEvent records, got {', '.join(kinds)}")
    t0 = min(e.start for e in events)
    return [replace(e, start=(e.start - t0) * 1e3, end=(e.end - t0) * 1e3) for e in events]


def overlap_ms(events: list[TimelineEvent], rank: int, compute: str = "backward", comm: str = "allreduce") -> float:
    """Milliseconds during which ``rank`` communicated while it was still computing ``compute``."""
    comp = [(e.start, e.end) for e in events if e.rank == rank and e.kind == compute]
    comms = [(e.start, e.end) for e in events if e.rank == rank and e.kind == comm]
    total = 0.0
    for cs, ce in comp:
        for ms, me in comms:
            total += max(0.0, min(ce, me) - max(cs, ms))
    return total


def split_steps(events: list[TimelineEvent], marker: str = "forward") -> list[list[TimelineEvent]]:
    """One rank's events cut into training steps: a step begins where a ``marker`` event starts.

    Events that start before the first marker are dropped. Use on a single rank's events.
    """
    starts = sorted(e.start for e in events if e.kind == marker)
    bounds = starts + [float("inf")]
    return [sorted((e for e in events if lo <= e.start < hi), key=lambda e: e.start)
            for lo, hi in zip(bounds[:-1], bounds[1:])]
