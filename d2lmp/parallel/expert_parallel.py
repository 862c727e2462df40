"""Expert parallelism: E experts spread over the ranks, tokens sent to their experts with two all-to-alls.

Rank q holds experts q·E/n … (q+1)·E/n - 1 and a copy of the router. Each rank routes its own
tokens (``moe.route``, with every rank's choice counts gathered so that capacity and dropping
follow the concatenated batch), sends each kept assignment's token to the rank holding its expert
(the dispatch all-to-all), runs its experts on what arrives, and sends the results back (the combine
all-to-all), where they are weighted by the gates and summed per token. The gathered counts tell
every rank how many rows each peer will send, so neither all-to-all exchanges sizes. Backward runs
the two all-to-alls in reverse; the router's gradients are summed over ranks like data parallelism's
(``all_reduce_router_grads``). Equal to ``moe.MoE`` on the concatenated batch, gradients included.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn import functional as F

from d2lmp.moe import MoE, MoEOutput, MoESpec, Routing, kept_counts, load_balancing_loss, route
from d2lmp.parallel.collectives import all_to_all, ring_all_gather, ring_all_reduce

__all__ = ["experts_per_rank", "expert_owner", "DispatchCounts", "dispatch_counts", "counts_per_rank",
           "ExpertParallelMoE"]


def experts_per_rank(experts: int, world: int) -> int:
    """E / n, the experts each rank holds; a ValueError when they do not divide evenly."""
    if world < 1 or experts % world:
        raise ValueError(f"{experts} experts cannot be split evenly over {world} ranks: "
                         f"choose a number of experts divisible by the number of ranks")
    return experts // world


def expert_owner(expert: int, experts: int, world: int) -> int:
    """The rank that holds ``expert``."""
    return expert // experts_per_rank(experts, world)


@dataclass(frozen=True)
class DispatchCounts:
    """Tokens each rank sends each rank in the dispatch all-to-all: ``sent[src][dst]`` (kept assignments only).

    ``dropped[src]`` is how many of rank src's assignments were over capacity and never sent.
    """

    sent: tuple[tuple[int, ...], ...]
    dropped: tuple[int, ...]


def dispatch_counts(counts: torch.Tensor, capacity: int, world: int) -> DispatchCounts:
    """The dispatch from every rank's choice counts [n, k, E] (``Routing.counts``), for ``world`` ranks holding experts.

    Pure arithmetic: a notebook can draw it from a single-device routing of a batch cut in n parts.
    """
    experts = counts.shape[-1]
    kept = kept_counts(counts, capacity).sum(dim=1)  # [n, E]
    per_rank = kept.view(len(counts), world, experts_per_rank(experts, world)).sum(dim=-1)
    dropped = counts.sum(dim=(1, 2)) - kept.sum(dim=1)
    return DispatchCounts(tuple(tuple(int(n) for n in row) for row in per_rank), tuple(int(n) for n in dropped))


def counts_per_rank(routing: Routing, tokens_per_rank: Sequence[int]) -> torch.Tensor:
    """Choice counts [n, k, E] of a one-device routing as if its tokens were cut into consecutive parts of these sizes.

    ``dispatch_counts`` of them is what ``ExpertParallelMoE`` would send on n ranks given those parts.
    """
    if sum(tokens_per_rank) != len(routing.expert):
        raise ValueError(f"parts of {list(tokens_per_rank)} tokens do not add up to the {len(routing.expert)} routed")
    experts = routing.probs.shape[-1]
    parts = torch.split(routing.expert, list(tokens_per_rank))
    return torch.stack([F.one_hot(part, experts).sum(dim=0) for part in parts])


class _AllToAll(torch.autograd.Function):
    """``all_to_all`` of blocks whose received sizes are known; backward sends the gradients back the same way."""

    @staticmethod
    def forward(ctx: Any, group: dist.ProcessGroup | None, output_sizes: list[int],
                *blocks: torch.Tensor) -> tuple[torch.Tensor, ...]:
        ctx.group, ctx.input_sizes = group, [len(b) for b in blocks]
        return tuple(all_to_all([b.detach() for b in blocks], group, output_sizes))

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[Any, ...]:
        return (None, None, *all_to_all([g.contiguous() for g in grads], ctx.group, ctx.input_sizes))


def _all_to_all(blocks: list[torch.Tensor], output_sizes: list[int],
                group: dist.ProcessGroup | None) -> list[torch.Tensor]:
    return list(_AllToAll.apply(group, output_sizes, *blocks))  # type: ignore[no-untyped-call]


class ExpertParallelMoE(nn.Module):
    """``moe.MoE`` with its experts split over the ranks of ``group`` (None: all), built from the full layer.

    Every rank starts with the full layer's router and its own block of experts, so it computes exactly
    what the full layer computes on the concatenation of every rank's batch, each rank in rank order.
    """

    def __init__(self, full: MoE, group: dist.ProcessGroup | None = None) -> None:
        super().__init__()
        self.spec: MoESpec = full.spec
        self.group = group
        self.rank, self.world = dist.get_rank(group), dist.get_world_size(group)
        self.local = experts_per_rank(self.spec.experts, self.world)
        self.first = self.rank * self.local  # the first expert this rank holds
        self.router = copy.deepcopy(full.router)
        self.experts = nn.ModuleList(copy.deepcopy(full.experts[self.first + i]) for i in range(self.local))
        self.last: MoEOutput | None = None
        self.sent: tuple[int, ...] = ()  # rows the last run sent each rank in its dispatch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.run(x).output

    def _gather_counts(self, counts: torch.Tensor) -> tuple[torch.Tensor, int]:
        return ring_all_gather(counts, self.group), self.rank

    def run(self, x: torch.Tensor) -> MoEOutput:
        """``MoE.run`` over the ranks: each kept token goes to the rank holding its expert (all-to-all), this rank's
        experts compute, and the results come back (all-to-all) to be added with the gates' weights."""
        if x.shape[-1] != self.spec.hidden:
            raise ValueError(f"expected inputs [..., {self.spec.hidden}], got {tuple(x.shape)}")
        tokens = x.reshape(-1, self.spec.hidden)
        routing = route(self.router(tokens), self.spec.top_k, self.spec.capacity_factor, self._gather_counts)
        token, slot, expert, send_sizes = self._kept_assignments(routing)
        self.sent = tuple(send_sizes)
        recv_sizes, recv_experts = self._incoming(routing)
        received = torch.cat(_all_to_all(list(torch.split(tokens[token], send_sizes)), recv_sizes, self.group))
        results = torch.zeros_like(received)
        for i, module in enumerate(self.experts):
            rows = torch.nonzero(recv_experts == self.first + i).view(-1)
            if len(rows):
                results = results.index_copy(0, rows, module(received[rows]))
        returned = torch.cat(_all_to_all(list(torch.split(results, recv_sizes)), send_sizes, self.group))
        out = torch.zeros_like(tokens).index_add(0, token, returned * routing.gate[token, slot, None])
        self.last = MoEOutput(out.view_as(x), load_balancing_loss(routing), routing)
        return self.last

    def _kept_assignments(self, routing: Routing) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[int]]:
        """This rank's kept (token, slot, expert), in the order they travel, and how many go to each rank.

        Sorted by expert, then slot, then token: each rank's block is contiguous, and the receiver
        can tell which of its experts each row is for from the gathered counts alone.
        """
        token, slot = torch.nonzero(routing.kept, as_tuple=True)
        expert = routing.expert[token, slot]
        order = torch.sort(expert * self.spec.top_k + slot, stable=True).indices
        token, slot, expert = token[order], slot[order], expert[order]
        sizes = torch.bincount(expert // self.local, minlength=self.world)
        return token, slot, expert, [int(n) for n in sizes]

    def _incoming(self, routing: Routing) -> tuple[list[int], torch.Tensor]:
        """How many rows each rank sends here, and the expert of every row received, in arrival order."""
        mine = kept_counts(routing.counts, routing.capacity)[:, :, self.first:self.first + self.local]  # [n, k, L]
        per_row = mine.transpose(1, 2).reshape(self.world, -1)  # [n, L·k]: expert-major, as _kept_assignments sends
        ids = torch.arange(self.first, self.first + self.local, device=mine.device).repeat_interleave(self.spec.top_k)
        return [int(n) for n in per_row.sum(dim=1)], ids.repeat(self.world).repeat_interleave(per_row.reshape(-1))

    def all_reduce_router_grads(self) -> None:
        """Sum the router's gradients over the ranks (each rank's covers its own tokens); call after backward."""
        for p in self.router.parameters():
            if p.grad is not None:
                ring_all_reduce(p.grad, self.group)
