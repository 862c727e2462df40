"""What a student's rank function really sent: every point-to-point message, and any collective it called.

Inside ``with TrafficWatch() as watch:`` the messages go through ``parallel.p2p_log.MessageLog`` and every
data-moving collective of ``torch.distributed`` (``COLLECTIVES``) is wrapped so that its name is recorded before
it runs as usual; ``watch.traffic()`` is the record, ready to travel back from a rank. A checker can then say
"you called dist.all_to_all_single" instead of accepting a library collective plus slicing where the exercise
asks for the messages themselves (``collective_used``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import torch.distributed as dist

from ..parallel.p2p_log import MessageLog

__all__ = ["COLLECTIVES", "Traffic", "TrafficWatch", "collective_used"]

COLLECTIVES = ("all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "broadcast", "reduce",
               "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "scatter", "gather",
               "batch_isend_irecv")


@dataclass(frozen=True)
class Traffic:
    """One rank's record: (peer, bytes) of every message sent and received, and the collectives called, in order."""

    sent: tuple[tuple[int | None, int], ...]
    received: tuple[tuple[int | None, int], ...]
    collectives: tuple[str, ...]

    @property
    def bytes_sent(self) -> int:
        return sum(n for _, n in self.sent)


class TrafficWatch:
    """Records the point-to-point messages and the collective calls of this process while the block runs."""

    def __init__(self) -> None:
        self._log = MessageLog()
        self._called: list[str] = []
        self._originals: dict[str, Callable[..., Any]] = {}

    def __enter__(self) -> TrafficWatch:
        for name in COLLECTIVES:
            if hasattr(dist, name):
                original = self._originals[name] = getattr(dist, name)
                setattr(dist, name, self._recording(name, original))
        self._log.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._log.__exit__(kind, error, trace)
        for name, original in self._originals.items():
            setattr(dist, name, original)

    def _recording(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self._called.append(name)
            return original(*args, **kwargs)
        return call

    def traffic(self) -> Traffic:
        return Traffic(tuple((m.peer, m.nbytes) for m in self._log.sent),
                       tuple((m.peer, m.nbytes) for m in self._log.received), tuple(self._called))


def collective_used(traffic: Traffic, asked: str) -> str | None:
    """None if no collective was called, else a sentence naming it and saying what the exercise asked for."""
    if not traffic.collectives:
        return None
    names = ", ".join(f"dist.{n}" for n in dict.fromkeys(traffic.collectives))
    return (f"your function called {names}: the exercise asks you to {asked} with dist.isend and dist.irecv; a "
            "library collective sends what it chooses, not the messages asked for")
