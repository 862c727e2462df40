"""3D parallelism: data × pipeline × tensor on one grid of ranks, training the small GPT.

Rank ``(d·pipe + p)·tensor + t`` sits at data replica d, pipeline stage p and tensor shard t; the tensor
index varies fastest, so the ranks that talk most (every layer's collectives) are neighbours, as on a
machine whose GPUs share the fastest links. Each rank belongs to three groups:

    tensor group:    same d and p, every t   the ranks that split each layer (``TensorParallelGPT``)
    pipeline group:  same d and t, every p   the stages, passing activations by send/recv (``pipeline_step``)
    data group:      same p and t, every d   the same shard of the same stage, on other data

``train_3d`` builds the tensor-parallel GPT's stages on every rank, runs ``pipeline_step`` over the pipeline
group on this replica's slice of the batch, sums the sequence-parallel gradients over the tensor group,
then each gradient over the data group (each replica's weighted by its share of the batch), and takes an
SGD step.
Tied embeddings would need one more sum, between the first and the last stage: build ``tied=False``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import torch
import torch.distributed as dist
from torch import nn

from d2lmp.gpt import GPTConfig
from d2lmp.model.grid_ranks import grid3d_ranks
from d2lmp.model.pipeline_balance import equal_split
from d2lmp.parallel.gpt_tp import VocabParallelHead, sequence_parallel_gradients, tp_gpt_sequential
from d2lmp.parallel.pipeline import pipeline_step
from d2lmp.parallel.transformer_tp import Cut, shard_cuts, tp_group

__all__ = ["Grid3D", "grid3d_groups", "ThreeDResult", "sgd_step", "train_3d"]


@dataclass(frozen=True)
class Grid3D:
    """This rank's place in a ``data × pipe × tensor`` grid and its three groups."""

    data: int
    pipe: int
    tensor: int
    data_rank: int
    pipe_rank: int
    tensor_rank: int
    data_group: dist.ProcessGroup
    pipe_group: dist.ProcessGroup
    tensor_group: dist.ProcessGroup


def grid3d_groups(data: int, pipe: int, tensor: int) -> Grid3D:
    """Create every tensor, pipeline and data group (call on every rank: ``new_group`` is collective, same
    order everywhere) and return this rank's ``Grid3D``."""
    world, rank = dist.get_world_size(), dist.get_rank()
    if min(data, pipe, tensor) < 1 or data * pipe * tensor != world:
        raise ValueError(f"a {data} x {pipe} x {tensor} grid needs {data * pipe * tensor} ranks, "
                         f"the group has {world}")

    ranks = grid3d_ranks(data, pipe, tensor)
    tensor_groups = {key: dist.new_group(members) for key, members in ranks.tensor.items()}
    pipe_groups = {key: dist.new_group(members) for key, members in ranks.pipe.items()}
    data_groups = {key: dist.new_group(members) for key, members in ranks.data.items()}
    dp, t = divmod(rank, tensor)
    d, p = divmod(dp, pipe)
    return Grid3D(data, pipe, tensor, d, p, t, data_groups[p, t], pipe_groups[d, t], tensor_groups[d, p])


def sgd_step(model: nn.Module, lr: float) -> None:
    """p ← p − lr·∂L/∂p for every parameter with a gradient (``torch.optim.SGD`` without momentum, written out:
    its first step imports parts of torch that take seconds on a busy machine, in every rank at once)."""
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)


@dataclass(frozen=True)
class ThreeDResult:
    """What one rank found: the global mean loss of each step, its parameters' gradients in the first step
    (summed over the data group) and its parameters after the last step, by ``GPT.sequential`` names, and
    how each is cut from the full parameter (``transformer_tp.cut_like``)."""

    losses: list[float]
    grads: dict[str, torch.Tensor]
    parameters: dict[str, torch.Tensor]
    cuts: dict[str, Cut]
    data_rank: int
    pipe_rank: int
    tensor_rank: int


def train_3d(rank: int, world: int, config: GPTConfig, x: torch.Tensor, y: torch.Tensor, data: int = 2,
             pipe: int = 2, tensor: int = 2, sequence_parallel: bool = False, steps: int = 2, lr: float = 0.1,
             micro_batches: int = 2, kind: str = "1f1b", seed: int = 0) -> ThreeDResult:
    """Worker: ``steps`` SGD steps of the GPT on the grid, tokens ``x`` and next tokens ``y`` of ``(batch, seq)``."""
    if config.tied and pipe > 1:
        raise ValueError("tied embeddings live on the first and the last stage: build the GPT with tied=False")
    grid = grid3d_groups(data, pipe, tensor)
    tp = tp_group(grid.tensor_group, sequence_parallel)
    model = tp_gpt_sequential(config, seed, grid.tensor_group, sequence_parallel)  # every stage, on every rank
    sizes = equal_split(len(model), pipe)
    start = sum(sizes[:grid.pipe_rank])
    stage = model[start:start + sizes[grid.pipe_rank]]
    head = cast(VocabParallelHead, model[-1])

    def loss_fn(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:  # summed over sequences
        return head.cross_entropy(logits, targets).sum() / logits.size(1)

    xs, ys = x.tensor_split(data)[grid.data_rank], y.tensor_split(data)[grid.data_rank]
    share = len(xs) / len(x)  # this replica's part of the global mean
    losses, first = [], {}
    for step in range(steps):
        stage.zero_grad(set_to_none=True)
        result = pipeline_step(grid.pipe_rank, pipe, lambda: model, sizes, xs, ys, kind, micro_batches, loss_fn,
                               group=grid.pipe_group)
        sequence_parallel_gradients(stage, tp)
        for p in stage.parameters():
            if p.grad is not None:
                p.grad.mul_(share)
                dist.all_reduce(p.grad, group=grid.data_group)
        loss = torch.tensor(share * result.loss if result.loss is not None else 0.0, device=head.ln.weight.device)
        dist.all_reduce(loss, group=grid.pipe_group)  # from the last stage to every stage
        dist.all_reduce(loss, group=grid.data_group)  # the replicas' parts of the global mean
        losses.append(loss.item())
        if step == 0:
            first = {k: p.grad.cpu().clone() for k, p in stage.named_parameters() if p.grad is not None}
        sgd_step(stage, lr)
    return ThreeDResult(losses, first, {k: p.detach().cpu().clone() for k, p in stage.named_parameters()},
                        shard_cuts(stage), grid.data_rank, grid.pipe_rank, grid.tensor_rank)
