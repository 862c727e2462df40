"""A real hybrid: data parallelism × tensor parallelism on a grid of process groups.

The ``data × tensor`` ranks form a grid; rank = d · tensor + t sits in row d, column t:

    tensor groups (rows):    {0, 1}, {2, 3}   ranks that split every layer between them
    data groups (columns):   {0, 2}, {1, 3}   ranks that hold the same shard, on different data

Each row is one replica of the model, every ``Linear`` split by output features over the row
(``ColumnParallelLinear``, outputs gathered), and works on its slice of the batch. After backward
each rank sums its shard's gradient with the ranks of its column, which hold the same shard
(``allreduce_gradients`` on the data group). Every collective names its group; nothing here
uses the default group except the barrier that starts the clocks. ``hybrid_step`` is one step;
it records its phases in a ``Timeline`` so a benchmark can see where the time goes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from d2lmp.model.timeline import Timeline, TimelineEvent
from d2lmp.parallel.data_parallel import MLPSpec, allreduce_gradients, local_loss, shard
from d2lmp.parallel.tensor_parallel import ColumnParallelLinear

__all__ = ["Grid", "grid_groups", "hybrid_model", "hybrid_step", "HybridRun", "hybrid_train", "one_device_shards"]


@dataclass(frozen=True)
class Grid:
    """This rank's place in a ``data × tensor`` grid and the two groups it belongs to."""

    data: int  # replicas (rows)
    tensor: int  # ranks per replica (columns)
    data_rank: int  # which replica: the row
    tensor_rank: int  # which shard of every layer: the column
    data_group: dist.ProcessGroup  # this rank's column: same shard, other data
    tensor_group: dist.ProcessGroup  # this rank's row: the other shards of the same replica


def grid_groups(data: int, tensor: int) -> Grid:
    """Create every row and column group (call on every rank: ``new_group`` is collective, same order
    everywhere) and return this rank's ``Grid``."""
    world, rank = dist.get_world_size(), dist.get_rank()
    if data < 1 or tensor < 1 or data * tensor != world:
        raise ValueError(f"a {data} x {tensor} grid needs {data * tensor} ranks, the group has {world}")
    rows = [dist.new_group([d * tensor + t for t in range(tensor)]) for d in range(data)]
    columns = [dist.new_group([d * tensor + t for d in range(data)]) for t in range(tensor)]
    d, t = divmod(rank, tensor)
    return Grid(data, tensor, d, t, columns[t], rows[d])


def hybrid_model(spec: MLPSpec, grid: Grid) -> nn.Sequential:
    """``spec``'s MLP with every ``Linear`` split over this rank's row (outputs gathered)."""
    return nn.Sequential(*[ColumnParallelLinear(m, gather_output=True, label=f"layer {i}", group=grid.tensor_group)
                           if isinstance(m, nn.Linear) else m for i, m in enumerate(spec.build())])


def hybrid_step(model: nn.Module, optimizer: torch.optim.Optimizer, grid: Grid, x: torch.Tensor, y: torch.Tensor,
                batch: int, timeline: Timeline | None = None) -> torch.Tensor:
    """One SGD step on this rank's slice ``x, y`` of a ``batch``-example minibatch; returns the slice's loss.

    ``timeline`` (optional) records "forward+backward", one "allreduce" per parameter tensor and "optimizer".
    """
    timeline = Timeline() if timeline is None else timeline
    optimizer.zero_grad(set_to_none=True)
    with timeline.span("forward+backward"):
        loss = local_loss(model, x, y, batch)  # every layer all-gathers its output over the row
        loss.backward()  # every layer but the first all-reduces its input's gradient over the row
    allreduce_gradients(model, timeline, group=grid.data_group)  # each shard's gradient, summed over the column
    with timeline.span("optimizer"):
        optimizer.step()
    return loss


@dataclass(frozen=True)
class HybridRun:
    """What ``hybrid_train`` returns on a rank: its parameter shards, the global loss and seconds of every
    step, each step's ``Timeline`` events, and the rank's row and column in the grid."""

    parameters: list[torch.Tensor]
    losses: list[float]
    step_seconds: list[float]
    events: list[list[TimelineEvent]]
    data_rank: int
    tensor_rank: int


def hybrid_train(rank: int, world: int, spec: MLPSpec, x: torch.Tensor, y: torch.Tensor, data: int = 2,
                 tensor: int = 2, steps: int = 5, lr: float = 0.1) -> HybridRun:
    """Worker: ``steps`` SGD steps of the hybrid; returns this rank's parameter shards, global losses, step
    times and each step's ``Timeline`` events."""
    grid = grid_groups(data, tensor)
    model = hybrid_model(spec, grid)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    xs, ys = shard(x, y, grid.data_rank, data)  # one slice per replica; a row's ranks share it
    losses: list[float] = []
    seconds: list[float] = []
    events: list[list[TimelineEvent]] = []
    for _ in range(steps):
        timeline = Timeline(rank)
        dist.barrier()
        start = time.perf_counter()
        loss = hybrid_step(model, optimizer, grid, xs, ys, len(x), timeline)
        seconds.append(time.perf_counter() - start)
        timeline.add("step", start, start + seconds[-1])
        events.append(timeline.events)
        total = loss.detach().clone()
        dist.all_reduce(total, group=grid.data_group)  # the replicas' parts of the global mean loss
        losses.append(total.item())
    return HybridRun(parameters=[p.detach().clone() for p in model.parameters()], losses=losses,
                     step_seconds=seconds, events=events, data_rank=grid.data_rank, tensor_rank=grid.tensor_rank)


def one_device_shards(parameters: list[torch.Tensor], tensor_rank: int, tensor: int) -> list[torch.Tensor]:
    """The shards of one device's parameters that ``hybrid_model`` keeps on column ``tensor_rank``:
    each weight's and bias's rows (output features) ``tensor_rank``-th of ``tensor``."""
    return [p.tensor_split(tensor)[tensor_rank] for p in parameters]
