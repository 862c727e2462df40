"""The schedules of the ring and tree all-reduce: who sends which chunk to whom at each step, as plain data.

The runtime (``d2lmp.parallel.collectives``) follows these schedules with real sends; the step-by-step
simulation (``allreduce_steps``) and the pictures of notebook 12 read them. No tensors, no process group.
"""

from __future__ import annotations

import math

__all__ = ["RING_PHASES", "ring_send_chunk", "ring_schedule", "TREE_PHASES", "tree_schedule"]


RING_PHASES = ("reduce-scatter", "all-gather")


def ring_send_chunk(phase: str, step: int, rank: int, world: int) -> int:
    """The chunk ``rank`` sends to its right neighbour at ``step`` of ``phase`` of the ring.

    Every rank receives, into the same chunk, what its left neighbour sends:
    ``ring_send_chunk(phase, step, rank - 1, world)``. Reduce-scatter starts one chunk
    behind the rank, so after n-1 steps rank r's chunk r has added every rank's copy;
    all-gather then starts at chunk r and passes the finished chunks round the ring.
    """
    if phase not in RING_PHASES:
        raise ValueError(f"unknown ring phase {phase!r}; available: {', '.join(RING_PHASES)}")
    lag = 1 if phase == "reduce-scatter" else 0
    return (rank - step - lag) % world


def ring_schedule(world: int) -> list[list[tuple[int, int, int, str]]]:
    """The ring all-reduce's messages, one list per step: (sender, receiver, chunk, phase).

    The first n-1 steps reduce-scatter (the receiver adds the chunk to its own), the next
    n-1 all-gather (the receiver copies it). ``ring_all_reduce`` follows this schedule.
    """
    if world < 2:
        raise ValueError(f"a ring needs at least 2 ranks, got {world}")
    return [[(r, (r + 1) % world, ring_send_chunk(phase, step, r, world), phase) for r in range(world)]
            for phase in RING_PHASES for step in range(world - 1)]


TREE_PHASES = ("reduce", "broadcast")


def tree_schedule(world: int) -> list[list[tuple[int, int, str]]]:
    """The binary-tree all-reduce's messages, one list per round: (sender, receiver, phase).

    Reduce: in round k (distance d = 2^k), each rank r with r mod 2d = d sends its partial sum
    to r - d, which adds it; after ⌈log2 n⌉ rounds rank 0 holds the total. Broadcast: the same
    messages reversed, in reverse order, copy the total back down. ``tree_all_reduce`` follows it.
    Ranks are positions in the group that runs it.
    """
    if world < 1:
        raise ValueError(f"a tree needs at least 1 rank, got {world}")
    distances = [1 << k for k in range(math.ceil(math.log2(world)))]  # no rounds for one rank
    up = [[(r, r - d, "reduce") for r in range(d, world, 2 * d)] for d in distances]
    down = [[(dst, src, "broadcast") for src, dst, _ in messages] for messages in reversed(up)]
    return up + down
