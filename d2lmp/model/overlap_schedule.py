"""What overlaps with what: FSDP's prefetching and asynchronous tensor parallelism as schedules of two lanes.

A schedule is a list of operations in the order a program issues them, each on one lane (``COMPUTE`` or
``COMM``, a stream each) with the operations it waits for. ``schedule`` starts each one when its lane is free
and what it waits for has ended, in issue order, as a GPU's streams run them. ``slowdown`` makes overlap cost
something: while a collective runs beside it, a computation runs ``slowdown`` times slower, as it does on a GPU
whose collective kernels take some of the SMs. Durations are in any one unit; the figures are illustrations of
the rules, not measurements.

FSDP (Zhao et al. 2023, Figure 5; PyTorch's FSDP Notes, Prefetch Nuances): each layer's parameters are
all-gathered before its forward and again before its backward, its gradients reduce-scattered after.
Prefetching issues the next layer's all-gather before the current layer computes (in backward also before its
reduce-scatter), so the gather runs beside the computation.
Asynchronous tensor parallelism (Wang et al. 2023): a matmul that needs an all-gathered input is cut into one
matmul per rank's chunk, the first on the chunk this rank has, each next one as its chunk arrives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["COMPUTE", "COMM", "Op", "Span", "schedule", "finish", "fsdp_ops", "tp_matmul_ops"]

COMPUTE, COMM = "compute", "communication"


@dataclass(frozen=True)
class Op:
    """An operation: its name, its lane, how long it takes alone, and the names of the operations it waits for."""

    name: str
    lane: str
    duration: float
    after: tuple[str, ...] = ()


@dataclass(frozen=True)
class Span:
    """An operation placed in time."""

    name: str
    lane: str
    start: float
    end: float


def _overlap(start: float, end: float, spans: Sequence[Span]) -> float:
    return sum(max(0.0, min(end, s.end) - max(start, s.start)) for s in spans if s.lane == COMM)


def schedule(ops: Sequence[Op], slowdown: float = 1.0) -> tuple[Span, ...]:
    """Place ``ops`` in issue order; a computation beside a collective already placed runs ``slowdown`` × slower."""
    if slowdown < 1.0:
        raise ValueError(f"slowdown must be at least 1 (overlap never speeds a computation up), got {slowdown}")
    free: dict[str, float] = {}
    placed: dict[str, Span] = {}
    for op in ops:
        missing = [name for name in op.after if name not in placed]
        if missing:
            raise ValueError(f"{op.name} waits for {missing}, which are issued after it or not at all")
        start = max([free.get(op.lane, 0.0), *(placed[name].end for name in op.after)])
        end = start + op.duration
        if op.lane == COMPUTE and slowdown > 1.0:
            shared = _overlap(start, end, list(placed.values()))
            end += (slowdown - 1.0) * shared  # the part that ran beside a collective took longer
        placed[op.name] = Span(op.name, op.lane, start, end)
        free[op.lane] = end
    return tuple(placed.values())


def finish(spans: Sequence[Span]) -> float:
    """When the last operation ends."""
    return max(s.end for s in spans)


def fsdp_ops(layers: int, forward: float, gather: float, prefetch: bool) -> list[Op]:
    """One FSDP step of ``layers`` layers: gather, forward; then from the last layer back: gather, backward (twice the
    forward), reduce-scatter (as long as a gather). Without ``prefetch`` a gather waits for the computation before
    it. With it, each next layer's gather is issued before the current layer computes (in backward, also before the
    current reduce-scatter), one layer ahead: it waits only for the computation two layers back."""
    ops: list[Op] = [Op("gather 1", COMM, gather)]
    done: list[str] = []  # computations in order
    for i in range(1, layers + 1):
        if i > 1 and not prefetch:
            ops.append(Op(f"gather {i}", COMM, gather, (done[-1],)))
        if prefetch and i < layers:
            ops.append(Op(f"gather {i + 1}", COMM, gather, (done[-1],) if done else ()))
        ops.append(Op(f"forward {i}", COMPUTE, forward, (f"gather {i}",)))
        done.append(f"forward {i}")
    for i in range(layers, 0, -1):
        if i == layers or not prefetch:
            ops.append(Op(f"gather {i}'", COMM, gather, (done[-1],)))
        if prefetch and i > 1:
            ops.append(Op(f"gather {i - 1}'", COMM, gather, (done[-2],)))  # ahead of this layer's reduce-scatter
        ops.append(Op(f"backward {i}", COMPUTE, 2 * forward, (f"gather {i}'",)))
        ops.append(Op(f"reduce-scatter {i}", COMM, gather, (f"backward {i}",)))
        done.append(f"backward {i}")
    return ops


def tp_matmul_ops(ranks: int, matmul: float, chunk: float, decomposed: bool) -> list[Op]:
    """A column-parallel matmul on an input gathered from ``ranks`` chunks (``chunk``: one chunk's transfer, ``matmul``
    the whole product). Plain: the all-gather ((ranks − 1) transfers), then the matmul. Decomposed: one matmul per
    chunk, the own chunk's first, each next one as its chunk arrives."""
    if not decomposed:
        return [Op("all-gather", COMM, (ranks - 1) * chunk), Op("matmul", COMPUTE, matmul, ("all-gather",))]
    ops = [Op("matmul, own chunk", COMPUTE, matmul / ranks)]
    for j in range(1, ranks):
        ops.insert(j - 1, Op(f"chunk {j}", COMM, chunk, (f"chunk {j - 1}",) if j > 1 else ()))
        ops.append(Op(f"matmul, chunk {j}", COMPUTE, matmul / ranks, (f"chunk {j}",)))
    return ops
