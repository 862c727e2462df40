"""Who holds what after each step of the ring and the tree all-reduce, from the schedules the implementations follow.

``ring_steps`` runs ``collective_schedules.ring_schedule`` on numbers and ``tree_steps`` runs
``collective_schedules.tree_schedule``:
each rank starts with a value per chunk, every message of a step is sent at once (from the values before the
step), and the receiver adds it to its own (reduce-scatter, reduce) or keeps it (all-gather, broadcast). The
default start is one contribution per rank and chunk, so each state counts how many ranks' contributions a
copy already sums; random starts check that every rank ends with the sum. Numbers only: no process group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from d2lmp.model.collective_schedules import ring_schedule, tree_schedule

__all__ = ["AllReduceSteps", "Grid", "ring_steps", "tree_steps"]

Grid = list[list[float]]  # [rank][chunk]: what each rank holds of each chunk


@dataclass(frozen=True)
class AllReduceSteps:
    """``states[k]`` is what every rank holds after step k (``states[0]``: the start), indexed [rank, chunk];
    ``phases[k]`` names step k ("start" first) and ``messages[k]`` lists its (sender, receiver) pairs."""

    world: int
    states: list[Grid]
    phases: list[str]
    messages: list[list[tuple[int, int]]]


def _start(world: int, start: Sequence[Sequence[float]] | None) -> Grid:
    if start is None:
        return [[1] * world for _ in range(world)]
    held = [list(row) for row in start]
    if len(held) != world or len({len(row) for row in held}) != 1:
        raise ValueError(f"start must be indexed [rank][chunk] with {world} ranks and equal rows, "
                         f"got {len(held)} rows of lengths {sorted({len(row) for row in held})}")
    return held


def _copy(held: Grid) -> Grid:
    return [row[:] for row in held]


def ring_steps(world: int, start: Sequence[Sequence[float]] | None = None) -> AllReduceSteps:
    """The ring all-reduce step by step: in each step every rank sends one chunk to its right neighbour.

    ``start[rank][chunk]`` (default: ones, ``world`` chunks) is each rank's value of each chunk.
    """
    held = _start(world, start)
    if len(held[0]) != world:
        raise ValueError(f"the ring cuts the buffer into {world} chunks, got {len(held[0])}")
    schedule = ring_schedule(world)
    states, phases = [_copy(held)], ["start"]
    messages: list[list[tuple[int, int]]] = [[]]
    for step in schedule:
        new = _copy(held)
        for src, dst, chunk, phase in step:
            new[dst][chunk] = held[dst][chunk] + held[src][chunk] if phase == "reduce-scatter" else held[src][chunk]
        held = new
        states.append(_copy(held))
        phases.append(step[0][3])
        messages.append([(src, dst) for src, dst, _, _ in step])
    return AllReduceSteps(world, states, phases, messages)


def tree_steps(world: int, start: Sequence[Sequence[float]] | None = None) -> AllReduceSteps:
    """The binary-tree all-reduce round by round; every message carries the whole buffer (all chunks).

    ``start[rank][chunk]`` (default: ones, ``world`` chunks) is each rank's value of each chunk.
    """
    held = _start(world, start)
    states, phases = [_copy(held)], ["start"]
    messages: list[list[tuple[int, int]]] = [[]]
    for step in tree_schedule(world):
        new = _copy(held)
        for src, dst, phase in step:
            new[dst] = [a + b for a, b in zip(held[dst], held[src])] if phase == "reduce" else held[src][:]
        held = new
        states.append(_copy(held))
        phases.append(step[0][2])
        messages.append([(src, dst) for src, dst, _ in step])
    return AllReduceSteps(world, states, phases, messages)
