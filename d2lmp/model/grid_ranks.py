"""Where each rank sits in a data × pipeline × tensor grid, and the ranks of its tensor, pipeline and data groups.

Rank ``(d·P + p)·T + t`` is data replica ``d``, pipeline stage ``p`` and tensor shard ``t``: the tensor index varies
fastest, so the ranks that talk most (every layer's collectives) are neighbours. ``parallel.grid3d`` builds its
process groups from these lists; the views draw them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GridRanks", "grid3d_rank", "grid3d_ranks"]


@dataclass(frozen=True)
class GridRanks:
    """Every group of a ``data × pipe × tensor`` grid, as lists of global ranks, keyed by what the members share:
    ``tensor`` by (d, p), ``pipe`` by (d, t), ``data`` by (p, t)."""

    data_size: int
    pipe_size: int
    tensor_size: int
    tensor: dict[tuple[int, int], list[int]]
    pipe: dict[tuple[int, int], list[int]]
    data: dict[tuple[int, int], list[int]]


def grid3d_rank(d: int, p: int, t: int, pipe: int, tensor: int) -> int:
    """The global rank of data replica ``d``, pipeline stage ``p`` and tensor shard ``t``."""
    return (d * pipe + p) * tensor + t


def grid3d_ranks(data: int, pipe: int, tensor: int) -> GridRanks:
    """The ranks of every tensor, pipeline and data group of a ``data × pipe × tensor`` grid."""
    if min(data, pipe, tensor) < 1:
        raise ValueError(f"every size must be at least 1, got {data} x {pipe} x {tensor}")

    def at(d: int, p: int, t: int) -> int:
        return grid3d_rank(d, p, t, pipe, tensor)

    return GridRanks(
        data, pipe, tensor,
        tensor={(d, p): [at(d, p, t) for t in range(tensor)] for d in range(data) for p in range(pipe)},
        pipe={(d, t): [at(d, p, t) for p in range(pipe)] for d in range(data) for t in range(tensor)},
        data={(p, t): [at(d, p, t) for d in range(data)] for p in range(pipe) for t in range(tensor)})
