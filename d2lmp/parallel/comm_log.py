"""What a rank's logged collectives cost: ``CommLog`` records each one, ``ring_wire_bytes`` prices it on a ring.

Every operator of ``parallel.tensor_parallel`` (and the logged all-reduce) calls ``record`` just before its
collective; each ``CommLog`` active on this rank (a ``with`` block) appends a ``CommCall``: the operation,
the bytes of the tensor this rank handed to it, and a label ("... (backward)" for the backward ones).
``ring_wire_bytes`` turns one logged call into the bytes a rank sends when the collective runs as a ring.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["CommCall", "CommLog", "record", "ring_wire_bytes"]

_LOGS: list[CommLog] = []  # active logs; entered and left only through ``CommLog``


@dataclass(frozen=True)
class CommCall:
    """One collective a ``CommLog`` saw: the operation, the bytes of the tensor this rank put in, a label."""

    op: str
    bytes: int
    label: str


class CommLog:
    """Records (operation, bytes, label) for collectives issued while the ``with`` block runs."""

    def __init__(self) -> None:
        self.calls: list[CommCall] = []

    def __enter__(self) -> CommLog:
        _LOGS.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _LOGS.remove(self)

    def total_bytes(self) -> int:
        return sum(c.bytes for c in self.calls)

    def wire_bytes(self, world: int, backward: bool | None = None) -> int:
        """Bytes each rank sends for the logged collectives over ``world`` ranks under ring algorithms
        (``ring_wire_bytes``); ``backward`` True or False keeps only the backward (or forward) ones."""
        return sum(ring_wire_bytes(c.op, c.bytes, world) for c in self.calls
                   if backward is None or ("(backward" in c.label) == backward)


def record(op: str, tensor: torch.Tensor, label: str) -> None:
    """Log one collective of ``tensor`` in every active ``CommLog``."""
    for log in _LOGS:
        log.calls.append(CommCall(op, tensor.numel() * tensor.element_size(), label))


def ring_wire_bytes(op: str, logged_bytes: int, world: int) -> int:
    """Bytes one rank sends in a ring collective, from what ``CommLog`` logs (the tensor handed to it).

    All-reduce of n bytes: 2(t−1)/t·n (a reduce-scatter, then an all-gather); reduce-scatter of n bytes:
    (t−1)/t·n; all-gather of a rank's n/t bytes into n: (t−1)·n/t. So an all-reduce of n bytes sends
    exactly what a reduce-scatter of n bytes and an all-gather back to n bytes send together.
    """
    if world < 1:
        raise ValueError(f"world must be at least 1, got {world}")
    if op in ("all_reduce", "all_reduce_max"):
        return 2 * (world - 1) * logged_bytes // world
    if op == "reduce_scatter":
        return (world - 1) * logged_bytes // world
    if op == "all_gather":
        return (world - 1) * logged_bytes
    raise ValueError(f"unknown collective {op!r}")
