"""What a pipeline stage holds for backward: its micro-batches in flight and their saved activations, counted exactly.

Between a micro-batch's forward and its backward, a stage keeps everything autograd saved for that
micro-batch. ``ActivationLedger`` records, during each micro-batch's forward, every storage autograd
saves (through ``torch.autograd.graph.saved_tensors_hooks``; parameters excluded, each storage once,
as ``memory.measure_saved_activations`` counts), holds those bytes until the micro-batch's backward
has run (autograd frees them then), and keeps the peaks: the most micro-batches in flight at once and
the most saved bytes held at once. GPipe runs every forward before any backward, so stage 0 holds all
m micro-batches; 1F1B starts a backward as soon as it can, so stage r holds at most p - r.
``peak_in_flight`` reads the same peak off a timeline of forward and backward events (a simulated one).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from d2lmp.model.timeline import TimelineEvent

__all__ = ["counting_saves", "storage_key", "ActivationLedger", "LedgerSummary", "Key", "peak_in_flight"]

Key = int | tuple[int, int]  # a micro-batch, or (virtual stage, micro-batch) where a rank holds several stages


def storage_key(t: torch.Tensor) -> tuple[str, int]:
    """What identifies the memory a tensor lives in: views of one storage share it, so it is counted once."""
    return (t.device.type, t.untyped_storage().data_ptr())


@dataclass(frozen=True)
class LedgerSummary:
    """An ``ActivationLedger``'s peaks: the most micro-batches in flight at once, the most saved bytes held at
    once, and each micro-batch's saved bytes (in micro-batch order)."""

    peak_in_flight: int
    peak_saved_bytes: int
    micro_batch_bytes: list[int]


@contextmanager
def counting_saves(skip: set[tuple[str, int]]) -> Iterator[dict[tuple[str, int], int]]:
    """Inside the block, every storage autograd saves for backward (except those in ``skip``, the parameters) is
    recorded once, with its bytes, in the dict the block receives."""
    saved: dict[tuple[str, int], int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        key = storage_key(t)
        if key not in skip:
            saved.setdefault(key, t.untyped_storage().nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        yield saved


class ActivationLedger:
    """Saved-activation bytes of one stage per micro-batch in flight, and their peaks: ``with ledger.forward(i):``
    around micro-batch ``i``'s forward, ``ledger.backward_done(i)`` after its backward (``i`` may be a (virtual
    stage, micro-batch) pair). Micro-batches must own their tensors: ``counting_saves`` counts storages whole."""

    def __init__(self, parameters: Iterable[torch.Tensor]) -> None:
        self._skip = {storage_key(p) for p in parameters}
        self.held: dict[Key, int] = {}  # micro-batch -> bytes saved for its backward, while in flight
        self.micro_batch_bytes: dict[Key, int] = {}
        self.peak_in_flight = self.peak_bytes = 0

    @contextmanager
    def forward(self, i: Key) -> Iterator[None]:
        """Count what autograd saves inside this block as micro-batch ``i``'s activations."""
        with counting_saves(self._skip) as saved:
            yield
        self.held[i] = self.micro_batch_bytes[i] = sum(saved.values())
        self.peak_in_flight = max(self.peak_in_flight, len(self.held))
        self.peak_bytes = max(self.peak_bytes, sum(self.held.values()))

    def backward_done(self, i: Key) -> None:
        """Micro-batch ``i``'s backward has run: its saved tensors are freed."""
        del self.held[i]

    def summary(self) -> LedgerSummary:
        """The peaks, and the saved bytes of each micro-batch."""
        return LedgerSummary(self.peak_in_flight, self.peak_bytes,
                             [self.micro_batch_bytes[i] for i in sorted(self.micro_batch_bytes)])


def peak_in_flight(events: Iterable[TimelineEvent], rank: int = 0) -> int:
    """The most micro-batches ``rank`` has run forward but not yet backward at once, from its timeline events
    (``timeline.TimelineEvent`` of kind "forward" and "backward", in order of their start)."""
    alive = peak = 0
    for e in sorted((e for e in events if e.rank == rank and e.kind in ("forward", "backward")), key=lambda e: e.start):
        alive += 1 if e.kind == "forward" else -1
        peak = max(peak, alive)
    return peak
