"""Per-rank event timelines: what each rank computed or communicated, and when."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Timeline:
    """Events of one rank: dicts with kind ("forward", "backward", "allreduce", ...), label, start, end.

    Times are ``time.perf_counter()`` values, which on Linux come from one system-wide
    monotonic clock, so timelines of processes on one machine line up.
    """

    rank: int = 0
    events: list[dict] = field(default_factory=list)

    def add(self, kind: str, start: float, end: float, label: str = "", **extra) -> None:
        self.events.append(dict(rank=self.rank, kind=kind, label=label, start=start, end=end, **extra))

    @contextmanager
    def span(self, kind: str, label: str = ""):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(kind, start, time.perf_counter(), label)


def align(events: list[dict]) -> list[dict]:
    """Shift all events so the earliest starts at 0 and convert times to milliseconds."""
    if not events:
        return []
    t0 = min(e["start"] for e in events)
    return [{**e, "start": (e["start"] - t0) * 1e3, "end": (e["end"] - t0) * 1e3} for e in events]


def overlap_ms(events: list[dict], rank: int, compute: str = "backward", comm: str = "allreduce") -> float:
    """Milliseconds during which ``rank`` communicated while it was still computing ``compute``."""
    comp = [(e["start"], e["end"]) for e in events if e["rank"] == rank and e["kind"] == compute]
    comms = [(e["start"], e["end"]) for e in events if e["rank"] == rank and e["kind"] == comm]
    total = 0.0
    for cs, ce in comp:
        for ms, me in comms:
            total += max(0.0, min(ce, me) - max(cs, ms))
    return total


def split_steps(events: list[dict], marker: str = "forward") -> list[list[dict]]:
    """One rank's events cut into training steps: a step begins where a ``marker`` event starts.

    Events that start before the first marker are dropped. Use on a single rank's events.
    """
    starts = sorted(e["start"] for e in events if e["kind"] == marker)
    bounds = starts + [float("inf")]
    return [sorted((e for e in events if lo <= e["start"] < hi), key=lambda e: e["start"])
            for lo, hi in zip(bounds[:-1], bounds[1:])]
