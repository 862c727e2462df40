"""A mixture-of-experts MLP on one device: a router sends each token to one or two of E small MLPs.

A linear router scores each token against every expert; a softmax turns the scores into
probabilities p (Shazeer et al., 2017). Top-1 gating (Switch; Fedus et al., 2021) sends a token to
its most likely expert and scales that expert's output by p; top-2 gating (GShard; Lepikhin et al.,
2020) sends it to its two most likely and weights them by their probabilities renormalised to sum
to 1. Each expert takes at most ``capacity = ⌈capacity factor × k × tokens / E⌉`` assignments; in
GShard's order (every first choice before any second choice, then token order) the ones past
capacity are dropped: they add nothing to the output (in a transformer block the residual still
carries the token) and are counted. Switch's auxiliary loss E·Σᵢ fᵢ·Pᵢ (fᵢ the fraction of tokens
whose first choice is expert i, Pᵢ the mean probability of i) is smallest when the load is even.
``route`` takes a function that gathers every rank's counts, so ``parallel.expert_parallel``
routes a split batch exactly as this module routes the whole one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["MoESpec", "Routing", "ExpertLoad", "MoEOutput", "MoE", "make_expert", "expert_capacity", "top_k_gating",
           "queue_offsets", "queue_positions", "kept_counts", "route", "load_balancing_loss", "one_device_counts",
           "node_limited_top_k", "nodes_reached"]


@dataclass(frozen=True)
class MoESpec:
    """A mixture-of-experts layer: widths, experts, gating (1 or 2 experts per token), capacity factor and seed."""

    hidden: int = 16
    ffn: int = 32
    experts: int = 4
    top_k: int = 1
    capacity_factor: float = 1.25
    seed: int = 0

    def __post_init__(self) -> None:
        if min(self.hidden, self.ffn, self.experts) < 1:
            raise ValueError(f"hidden, ffn and experts must be >= 1, got {self.hidden}, {self.ffn}, {self.experts}")
        if self.top_k not in (1, 2) or self.top_k > self.experts:
            raise ValueError(f"top_k must be 1 or 2 and at most the {self.experts} experts, got {self.top_k}")
        if not self.capacity_factor > 0:
            raise ValueError(f"capacity_factor must be > 0, got {self.capacity_factor}")


def make_expert(hidden: int, ffn: int) -> nn.Sequential:
    """One expert: the MLP of a transformer block, hidden → ffn → GELU → hidden."""
    return nn.Sequential(nn.Linear(hidden, ffn), nn.GELU(), nn.Linear(ffn, hidden))


def expert_capacity(tokens: int, experts: int, top_k: int, capacity_factor: float) -> int:
    """The most assignments one expert takes: ⌈capacity factor × top_k × tokens / experts⌉ (at least 1)."""
    if tokens < 0 or experts < 1:
        raise ValueError(f"need tokens >= 0 and experts >= 1, got {tokens} and {experts}")
    return max(1, math.ceil(capacity_factor * top_k * tokens / experts - 1e-9))  # 1e-9: 1.25 × 16 / 4 is 5, not 6


def top_k_gating(logits: torch.Tensor, top_k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(probabilities [T, E], chosen experts [T, k], gate weights [T, k]) from router logits [T, E].

    Top-1 keeps the chosen expert's probability as its weight (Switch), so the router learns through
    it; top-2 renormalises the two probabilities to sum to 1 (GShard).
    """
    probs = logits.softmax(dim=-1)
    top, expert = probs.topk(top_k, dim=-1)
    gate = top if top_k == 1 else top / top.sum(dim=-1, keepdim=True)
    return probs, expert, gate


def node_limited_top_k(scores: torch.Tensor, top_k: int, experts_per_node: int, max_nodes: int) -> torch.Tensor:
    """Each token's ``top_k`` experts [T, k] from scores [T, E], taken from at most ``max_nodes`` nodes.

    Experts sit on nodes in order, ``experts_per_node`` each. A token's nodes are those with the largest sum of
    its ``top_k // max_nodes`` best scores there (DeepSeek-V3's node-limited routing); its experts are its best
    ``top_k`` on those nodes. With ``max_nodes`` as large as the number of nodes this is plain top-k.
    """
    tokens, experts = scores.shape
    if experts % experts_per_node or not 1 <= max_nodes <= experts // experts_per_node:
        raise ValueError(f"{experts} experts, {experts_per_node} a node: max_nodes {max_nodes} does not fit")
    if not 1 <= top_k <= max_nodes * experts_per_node:
        raise ValueError(f"top_k {top_k} does not fit on {max_nodes} node(s) of {experts_per_node} experts")
    per_node = scores.reshape(tokens, experts // experts_per_node, experts_per_node)
    node_score = per_node.topk(max(1, top_k // max_nodes), dim=-1).values.sum(dim=-1)  # [T, nodes]
    allowed = torch.zeros_like(node_score, dtype=torch.bool).scatter_(1, node_score.topk(max_nodes).indices, True)
    masked = scores.masked_fill(~allowed.repeat_interleave(experts_per_node, dim=1), float("-inf"))
    return masked.topk(top_k, dim=-1).indices


def nodes_reached(expert: torch.Tensor, experts_per_node: int) -> torch.Tensor:
    """How many nodes each token's chosen experts [T, k] sit on: [T]."""
    node = expert // experts_per_node
    return (node.unsqueeze(-1) == node.unsqueeze(-2)).triu(1).any(dim=-2).logical_not().sum(dim=-1)


def queue_offsets(counts: torch.Tensor) -> torch.Tensor:
    """Where each rank's assignments start in each expert's queue: [world, k, E] from counts [world, k, E].

    ``counts[r, s, e]`` is how many of rank r's tokens chose expert e as their choice s. Queues hold
    every first choice before any second choice, and within one slot the ranks' tokens in rank order,
    as if the ranks' batches were concatenated.
    """
    total = counts.sum(dim=0)  # [k, E]
    earlier_slots = total.cumsum(dim=0) - total
    earlier_ranks = counts.cumsum(dim=0) - counts
    return earlier_slots + earlier_ranks


def queue_positions(expert: torch.Tensor, experts: int, offsets: torch.Tensor) -> torch.Tensor:
    """Each assignment's place [T, k] in its expert's queue: its slot's offset plus earlier tokens' same choices."""
    chosen = F.one_hot(expert, experts)  # [T, k, E]
    return ((chosen.cumsum(dim=0) - chosen + offsets) * chosen).sum(dim=-1)


def kept_counts(counts: torch.Tensor, capacity: int) -> torch.Tensor:
    """How many of ``counts[r, s, e]`` fit within ``capacity``, given the queue order of ``queue_offsets``."""
    return (capacity - queue_offsets(counts)).clamp(min=0).minimum(counts)


@dataclass(frozen=True)
class ExpertLoad:
    """Assignments per expert in one batch: routed there, kept (within capacity) and dropped.

    A top-2 token counts once at each of its two experts.
    """

    capacity: int
    routed: tuple[int, ...]
    kept: tuple[int, ...]

    @property
    def dropped(self) -> tuple[int, ...]:
        return tuple(r - k for r, k in zip(self.routed, self.kept))

    def table(self) -> str:
        """The load as plain text, one row per expert."""
        rows = [f"{'expert':>6} {'routed':>7} {'kept':>6} {'dropped':>8}   (capacity {self.capacity})"]
        rows += [f"{e:>6} {r:>7} {k:>6} {d:>8}"
                 for e, (r, k, d) in enumerate(zip(self.routed, self.kept, self.dropped))]
        rows.append(f"{'all':>6} {sum(self.routed):>7} {sum(self.kept):>6} {sum(self.dropped):>8}")
        return "\n".join(rows)


@dataclass(frozen=True)
class Routing:
    """How this rank's T tokens are routed: slot 0 of each [T, k] tensor is the token's first choice.

    ``counts`` holds every rank's [k, E] choice counts (one rank on one device), ``rank`` this rank's index.
    """

    probs: torch.Tensor     # [T, E] router probabilities (differentiable)
    expert: torch.Tensor    # [T, k] chosen experts
    gate: torch.Tensor      # [T, k] their weights (differentiable)
    position: torch.Tensor  # [T, k] place in the expert's queue over all ranks' tokens
    kept: torch.Tensor      # [T, k] position < capacity
    counts: torch.Tensor    # [world, k, E]
    rank: int
    capacity: int

    def load(self) -> ExpertLoad:
        """Every rank's assignments per expert: routed, kept and dropped."""
        routed = self.counts.sum(dim=(0, 1))
        kept = kept_counts(self.counts, self.capacity).sum(dim=(0, 1))
        return ExpertLoad(self.capacity, tuple(int(n) for n in routed), tuple(int(n) for n in kept))


def one_device_counts(counts: torch.Tensor) -> tuple[torch.Tensor, int]:
    """The ``gather_counts`` of one device: its own counts are everyone's, and it is rank 0."""
    return counts.unsqueeze(0), 0


def route(logits: torch.Tensor, top_k: int, capacity_factor: float,
          gather_counts: Callable[[torch.Tensor], tuple[torch.Tensor, int]] = one_device_counts) -> Routing:
    """Route T tokens from their router logits [T, E]: choose experts, weigh them, and cut each queue at capacity.

    ``gather_counts`` maps this rank's [k, E] choice counts to every rank's [world, k, E] and this
    rank's index; the capacity counts every rank's tokens, so a split batch routes as the whole one.
    """
    experts = logits.shape[-1]
    probs, expert, gate = top_k_gating(logits, top_k)
    counts, rank = gather_counts(F.one_hot(expert, experts).sum(dim=0))
    capacity = expert_capacity(int(counts[:, 0].sum()), experts, top_k, capacity_factor)
    position = queue_positions(expert, experts, queue_offsets(counts)[rank])
    return Routing(probs, expert, gate, position, position < capacity, counts, rank, capacity)


def load_balancing_loss(routing: Routing) -> torch.Tensor:
    """This rank's share of Switch's auxiliary loss E·Σᵢ fᵢ·Pᵢ over all ranks' tokens (the whole loss on one device).

    fᵢ, the fraction of tokens whose first choice is expert i, comes from every rank's counts;
    Pᵢ's sum splits over the ranks, so the shares add up to the loss of the whole batch, gradients
    included. It is 1 when the load is even; Switch adds it to the loss scaled by a small α.
    """
    experts = routing.probs.shape[-1]
    first_choices = routing.counts[:, 0].sum(dim=0)  # [E]
    tokens = first_choices.sum()
    return experts * (first_choices / tokens * routing.probs.sum(dim=0) / tokens).sum()


@dataclass(frozen=True)
class MoEOutput:
    """One forward pass: the output (the input's shape), this rank's share of the auxiliary loss, the routing."""

    output: torch.Tensor
    aux_loss: torch.Tensor
    routing: Routing

    @property
    def load(self) -> ExpertLoad:
        return self.routing.load()


class MoE(nn.Module):
    """A mixture-of-experts MLP for inputs [..., hidden] (e.g. [batch, seq, hidden]); usable as a block's MLP.

    ``forward`` returns the output; ``run`` also returns the auxiliary loss and the routing, and
    ``last`` keeps the last ``run``'s record for a training loop to read.
    """

    def __init__(self, spec: MoESpec) -> None:
        super().__init__()
        self.spec = spec
        with torch.random.fork_rng():  # a fixed initialisation that leaves the caller's random state alone
            torch.manual_seed(spec.seed)
            self.router = nn.Linear(spec.hidden, spec.experts, bias=False)
            self.experts = nn.ModuleList(make_expert(spec.hidden, spec.ffn) for _ in range(spec.experts))
        self.last: MoEOutput | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.run(x).output

    def run(self, x: torch.Tensor) -> MoEOutput:
        """Each token of ``x`` through its top-k experts, their outputs added with the gates' weights; returns (and
        keeps in ``last``) the output, the load-balancing loss and the routing."""
        if x.shape[-1] != self.spec.hidden:
            raise ValueError(f"expected inputs [..., {self.spec.hidden}], got {tuple(x.shape)}")
        tokens = x.reshape(-1, self.spec.hidden)
        routing = route(self.router(tokens), self.spec.top_k, self.spec.capacity_factor)
        out = torch.zeros_like(tokens)
        for e, expert in enumerate(self.experts):
            token, slot = torch.nonzero((routing.expert == e) & routing.kept, as_tuple=True)
            if len(token):
                out = out.index_add(0, token, expert(tokens[token]) * routing.gate[token, slot, None])
        self.last = MoEOutput(out.view_as(x), load_balancing_loss(routing), routing)
        return self.last
