"""Megatron's tensor-parallel transformer block, cut from a block of ``d2lmp.gpt``, optionally sequence-parallel.

Attention is split by heads: the fused QKV projection is column-parallel (each rank keeps the rows of its
heads, ``gpt.head_rows``), each rank attends with its own heads, and the output projection is row-parallel
(its input columns of the same heads; partial outputs summed). The MLP is column- then row-parallel. Without
sequence parallelism (Shoeybi et al. 2019) every rank holds the whole activation outside these two parts; f
(``copy_to_parallel``) enters each part and g (``reduce_from_parallel``, an all-reduce) leaves it. With
sequence parallelism (Korthikanti et al. 2022) the LayerNorms, dropouts and residual additions work on
this rank's chunk of the sequence; an all-gather enters each part and a reduce-scatter leaves it. The
column-parallel layer then keeps only its chunk of the gathered input and gathers it again in backward
(``regather=True``, as the formula's count assumes); ``regather=False`` keeps the gathered input instead.

Every split layer is cut from the full layer it replaces (a "master" weight), so the split block starts
with exactly the full block's weights; ``take_shards`` cuts any full tensor (a gradient) the same way.
Dropout follows Megatron's rule: in a region every rank of the tensor group holds whole, all ranks draw
the same mask (the global generator, which every rank seeds alike); in a split region (heads, or sequence
chunks) each rank draws its own, from a seed every rank draws alike plus its rank, so that a recomputed
segment (``torch.utils.checkpoint`` restores the global generator) draws its masks again exactly.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn
from torch.nn import functional as F

from d2lmp.gpt import MLP, AttentionCore, Block, CausalSelfAttention, GPTConfig, head_rows
from d2lmp.parallel.tensor_parallel import (
    all_gather_sequence,
    copy_to_parallel,
    gather_linear,
    reduce_from_parallel,
    reduce_scatter_sequence,
    shard_range,
)

__all__ = ["SEQ_DIM", "TPGroup", "tp_group", "check_split", "split_dropout", "RegionDropout", "ColumnLinear",
           "RowLinear", "TPAttentionCore", "TPSelfAttention", "TPMLP", "TPBlock", "Cut", "shard_cuts", "cut_like",
           "take_shards"]

SEQ_DIM = 1  # activations are (batch, seq, hidden): sequence parallelism splits dimension 1
_SEED_STRIDE = 1 << 20  # a split region's seed is the shared draw + stride·(rank + 1)


@dataclass(frozen=True)
class TPGroup:
    """The ranks that split each layer: their group, its size, this rank's place, and the mode."""

    group: dist.ProcessGroup | None
    size: int
    rank: int
    sequence_parallel: bool = False
    regather: bool = True  # under sequence parallelism: keep only the chunk, gather it again in backward


def tp_group(group: dist.ProcessGroup | None = None, sequence_parallel: bool = False,
             regather: bool = True) -> TPGroup:
    """This rank's ``TPGroup`` in ``group`` (None: all ranks)."""
    return TPGroup(group, dist.get_world_size(group), dist.get_rank(group), sequence_parallel, regather)


def check_split(config: GPTConfig, tp: int, sequence_parallel: bool = False) -> None:
    """A clear ``ValueError`` unless ``config`` splits over ``tp`` ranks (hidden, heads; the sequence under SP)."""
    if tp < 1:
        raise ValueError(f"the tensor group needs at least one rank, got {tp}")
    sizes = [("hidden", config.hidden), ("heads", config.heads)]
    for name, n in sizes + [("seq", config.seq)] * sequence_parallel:
        if n % tp:
            why = " under sequence parallelism" if name == "seq" else ""
            raise ValueError(f"{name} = {n} is not divisible by the {tp} ranks of the tensor group{why}; "
                             f"choose a multiple of {tp}")


def split_dropout(x: torch.Tensor, p: float, rank: int) -> torch.Tensor:
    """Dropout with this rank's own mask: the seed is one draw of the global generator (alike on every rank),
    offset by the rank. Keeps the scaled mask for backward, as PyTorch's CPU dropout does."""
    if p == 0.0:
        return x
    seed = int(torch.randint(0, 1 << 62, ()))
    g = torch.Generator(device=x.device).manual_seed(seed + _SEED_STRIDE * (rank + 1))
    return x * torch.empty_like(x).bernoulli_(1 - p, generator=g).div_(1 - p)


class RegionDropout(nn.Module):
    """Dropout in a region held whole by every rank (``split=False``: the same mask everywhere) or split."""

    def __init__(self, p: float, split: bool, rank: int) -> None:
        super().__init__()
        self.p, self.split, self.rank = p, split, rank

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        return split_dropout(x, self.p, self.rank) if self.split else F.dropout(x, self.p, True)


class ColumnLinear(nn.Module):
    """The rows ``rows`` of a full ``Linear`` (output features); its input enters through f, or under sequence
    parallelism through an all-gather of the chunks (fused with the product when ``tp.regather``)."""

    def __init__(self, full: nn.Linear, rows: torch.Tensor, tp: TPGroup, label: str) -> None:
        super().__init__()
        self.rows, self.tp, self.label = rows, tp, label
        self.weight = nn.Parameter(full.weight.detach()[rows].clone())
        self.bias = nn.Parameter(full.bias.detach()[rows].clone()) if full.bias is not None else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tp = self.tp
        if tp.sequence_parallel and tp.regather:
            return gather_linear(x, self.weight, self.bias, SEQ_DIM, self.label, tp.group)
        if tp.sequence_parallel:
            x = all_gather_sequence(x, SEQ_DIM, self.label, tp.group)
        else:
            x = copy_to_parallel(x, self.label, tp.group)
        return F.linear(x, self.weight, self.bias)

    def split_of(self, name: str) -> tuple[int, torch.Tensor]:
        return 0, self.rows  # weight and bias: rows of the full tensors


class RowLinear(nn.Module):
    """This rank's block of a full ``Linear``'s input columns; the partial outputs are summed over the group by
    an all-reduce, or under sequence parallelism by a reduce-scatter that leaves each rank its chunk."""

    def __init__(self, full: nn.Linear, tp: TPGroup, label: str) -> None:
        super().__init__()
        start, size = shard_range(full.in_features, tp.size, tp.rank, "in_features")
        self.columns, self.tp, self.label = torch.arange(start, start + size), tp, label
        self.weight = nn.Parameter(full.weight.detach()[:, start:start + size].clone())
        self.bias = nn.Parameter(full.bias.detach().clone()) if full.bias is not None else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.linear(x, self.weight)
        if self.tp.sequence_parallel:
            y = reduce_scatter_sequence(y, SEQ_DIM, self.label, self.tp.group)
        else:
            y = reduce_from_parallel(y, self.label, self.tp.group)
        return y + self.bias if self.bias is not None else y  # added once, after the sum

    def split_of(self, name: str) -> tuple[int, torch.Tensor] | None:
        return (1, self.columns) if name == "weight" else None  # the bias is whole on every rank


class TPAttentionCore(AttentionCore):
    """The attention core on this rank's heads; its dropout draws this rank's own mask."""

    def __init__(self, config: GPTConfig, rank: int) -> None:
        super().__init__(config)
        if config.flash and config.dropout > 0:
            raise ValueError("flash attention draws its dropout from the global generator, alike on every rank; "
                             "split heads need masks of their own: use flash=False with dropout")
        self.rank = rank

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if self.flash:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        s = q.size(-2)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        weights = F.softmax(scores.masked_fill(self.causal_mask[:s, :s], float("-inf")), dim=-1)
        return split_dropout(weights, self.dropout if self.training else 0.0, self.rank) @ v


class TPSelfAttention(nn.Module):
    """Causal self-attention split by heads: QKV column-parallel, the output projection row-parallel."""

    def __init__(self, full: CausalSelfAttention, config: GPTConfig, tp: TPGroup) -> None:
        super().__init__()
        start, self.heads = shard_range(config.heads, tp.size, tp.rank, "heads")
        self.head_dim, self.width = config.head_dim, self.heads * config.head_dim
        self.qkv = ColumnLinear(full.qkv, head_rows(config, range(start, start + self.heads)), tp, "attn.qkv")
        self.core = TPAttentionCore(config, tp.rank)
        self.proj = RowLinear(full.proj, tp, "attn.proj")  # input columns of the same heads
        self.drop = RegionDropout(config.dropout, tp.sequence_parallel, tp.rank)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        qkv = self.qkv(x)  # (b, s, 3·h/t): Q, K, V of this rank's heads over the whole sequence
        b, s, _ = qkv.shape
        q, k, v = (t.view(b, s, self.heads, self.head_dim).transpose(1, 2) for t in qkv.split(self.width, dim=2))
        y = self.core(q, k, v).transpose(1, 2).contiguous().view(b, s, self.width)
        out: torch.Tensor = self.drop(self.proj(y))  # proj sums the heads' parts over the group
        return out


class TPMLP(MLP):
    """The MLP, column- then row-parallel: rank r keeps features [r·4h/t, (r+1)·4h/t) of the 4h; forward as ``MLP``."""

    def __init__(self, full: MLP, config: GPTConfig, tp: TPGroup) -> None:
        nn.Module.__init__(self)
        start, size = shard_range(full.fc.out_features, tp.size, tp.rank, "MLP features")
        self.fc = ColumnLinear(full.fc, torch.arange(start, start + size), tp, "mlp.fc")  # type: ignore[assignment]
        self.act = copy.deepcopy(full.act)
        self.proj = RowLinear(full.proj, tp, "mlp.proj")  # type: ignore[assignment]
        self.drop = RegionDropout(config.dropout, tp.sequence_parallel, tp.rank)  # type: ignore[assignment]


class TPBlock(Block):
    """A ``gpt.Block`` with its attention and MLP split over the tensor group; the forward is ``Block``'s own.

    Under sequence parallelism it takes and returns this rank's chunk of the sequence, ``(b, s/t, h)``.
    """

    def __init__(self, full: Block, config: GPTConfig, tp: TPGroup) -> None:
        nn.Module.__init__(self)
        check_split(config, tp.size, tp.sequence_parallel)
        self.ln1, self.ln2 = copy.deepcopy(full.ln1), copy.deepcopy(full.ln2)
        self.attn = TPSelfAttention(full.attn, config, tp)  # type: ignore[assignment]
        self.mlp = TPMLP(full.mlp, config, tp)
        self.recompute = config.recompute == "full"


Cut = tuple[int, torch.Tensor] | None  # (dimension, indices) of the full tensor, or None: the whole tensor


def shard_cuts(model: nn.Module) -> dict[str, Cut]:
    """How each parameter of the split ``model`` is cut from the full parameter of the same name."""
    out: dict[str, Cut] = {}
    for name, _ in model.named_parameters():
        owner, _, leaf = name.rpartition(".")
        split = getattr(model.get_submodule(owner), "split_of", None)
        out[name] = split(leaf) if split is not None else None
    return out


def cut_like(cuts: Mapping[str, Cut], full: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Each full tensor of ``full`` cut as ``cuts`` says (the names of ``cuts``)."""
    return {name: full[name] if cut is None else full[name].index_select(cut[0], cut[1].to(full[name].device))
            for name, cut in cuts.items()}


def take_shards(model: nn.Module, full: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """For each parameter of the split ``model``, the same cut of the full tensor of that name in ``full``
    (a full model's weights or gradients): what this rank's parameter must equal."""
    return cut_like(shard_cuts(model), full)
