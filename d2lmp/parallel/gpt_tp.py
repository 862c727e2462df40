"""The whole small GPT split over a tensor group: vocabulary-parallel embedding and cross-entropy, TP blocks.

Megatron-LM's layout (Shoeybi et al. 2019, §3): rank r of t keeps the token-embedding rows of its slice of
the vocabulary. The embedding looks up the tokens it owns (zeros for the others) and the partial sums are
all-reduced (under sequence parallelism reduce-scattered, so each rank keeps its chunk of the sequence);
the position embedding is added after the sum. The LM head is the same slice of the (tied) weight,
column-parallel, so each rank computes the logits of its slice of the vocabulary only, and the
cross-entropy (``vocab_parallel_cross_entropy``) needs three all-reduces of one number per token (the
largest logit, the sum of exponentials, the target's logit) instead of gathering ``vocab`` logits.

Under sequence parallelism the LayerNorms, the position embedding and the row-parallel biases work on a
chunk of the sequence, so each rank's gradient of these (whole) parameters is partial:
``sequence_parallel_gradients`` sums them over the group after backward. ``TensorParallelGPT.sequential``
gives the stages ``embed, block1, ..., head`` for the pipeline, named as ``GPT.sequential`` names them.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from d2lmp.gpt import GPT, Embedding, GPTConfig, Head
from d2lmp.parallel.tensor_parallel import all_reduce_logged, reduce_from_parallel, reduce_scatter_sequence, shard_range
from d2lmp.parallel.transformer_tp import (
    SEQ_DIM,
    ColumnLinear,
    RegionDropout,
    RowLinear,
    TPBlock,
    TPGroup,
    check_split,
    tp_group,
)

__all__ = ["VocabShard", "VocabParallelEmbedding", "VocabParallelHead", "VocabParallelCrossEntropy",
           "vocab_parallel_cross_entropy",
           "TensorParallelGPT", "tp_gpt_sequential", "sequence_parallel_gradients"]


class VocabShard(nn.Module):
    """Rows [start, start + size) of a token embedding: the vectors of this rank's tokens, zeros for the others."""

    def __init__(self, full: nn.Embedding, tp: TPGroup) -> None:
        super().__init__()
        self.start, self.size = shard_range(full.num_embeddings, tp.size, tp.rank, "vocab")
        self.weight = nn.Parameter(full.weight.detach()[self.start:self.start + self.size].clone())

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        outside = (idx < self.start) | (idx >= self.start + self.size)
        rows = nn.functional.embedding((idx - self.start).masked_fill(outside, 0), self.weight)
        return rows.masked_fill(outside.unsqueeze(-1), 0.0)

    def split_of(self, name: str) -> tuple[int, torch.Tensor]:
        return 0, torch.arange(self.start, self.start + self.size)


class VocabParallelEmbedding(nn.Module):
    """The first stage: token (vocabulary-parallel) + position embedding, dropout; ``(b, s)`` ids to
    ``(b, s, h)``, or under sequence parallelism to this rank's chunk ``(b, s/t, h)``."""

    def __init__(self, full: Embedding, config: GPTConfig, tp: TPGroup) -> None:
        super().__init__()
        self.seq, self.tp = config.seq, tp
        self.token = VocabShard(full.token, tp)
        self.position = copy.deepcopy(full.position)
        self.drop = RegionDropout(config.dropout, tp.sequence_parallel, tp.rank)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        s, tp = idx.size(-1), self.tp
        if s > self.seq:
            raise ValueError(f"a sequence of {s} tokens is longer than the model's context of {self.seq}")
        partial = self.token(idx)  # this rank's tokens only
        if tp.sequence_parallel:
            start, size = shard_range(s, tp.size, tp.rank, "the sequence (tokens) under sequence parallelism")
            x = reduce_scatter_sequence(partial, SEQ_DIM, "embed", tp.group)
            x = x + self.position(torch.arange(start, start + size, device=idx.device))
        else:
            x = reduce_from_parallel(partial, "embed", tp.group) + self.position(torch.arange(s, device=idx.device))
        out: torch.Tensor = self.drop(x)
        return out


class VocabParallelHead(nn.Module):
    """The last stage: final LayerNorm, then the logits of this rank's slice of the vocabulary ``(b, s, V/t)``."""

    def __init__(self, full: Head, config: GPTConfig, tp: TPGroup, tied_weight: nn.Parameter | None = None) -> None:
        super().__init__()
        self.tp = tp
        self.start, size = shard_range(config.vocab, tp.size, tp.rank, "vocab")
        self.ln = copy.deepcopy(full.ln)
        self.lm_head = ColumnLinear(full.lm_head, torch.arange(self.start, self.start + size), tp, "lm_head")
        if tied_weight is not None:
            self.lm_head.weight = tied_weight  # the embedding's rows of the same tokens

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.lm_head(self.ln(x))
        return out

    def cross_entropy(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Per-token loss ``(b, s)`` of this head's logits against ``targets``."""
        return vocab_parallel_cross_entropy(logits, targets, self.start, self.tp.group)


class VocabParallelCrossEntropy(torch.autograd.Function):
    """−log softmax[target] from this rank's slice of the logits: three all-reduces of one number per token forward
    (the largest logit, the sum of exponentials, the target's logit), none backward (softmax − one-hot, locally)."""

    @staticmethod
    def forward(ctx: Any, logits: torch.Tensor, targets: torch.Tensor, start: int,
                group: dist.ProcessGroup | None) -> torch.Tensor:
        top = all_reduce_logged(logits.max(-1).values, "cross-entropy: largest logit", group, "max")
        shifted = logits - top.unsqueeze(-1)  # no exponential overflows
        exp = shifted.exp()
        total = all_reduce_logged(exp.sum(-1), "cross-entropy: sum of exponentials", group)
        local = targets - start
        outside = (local < 0) | (local >= logits.size(-1))
        local = local.masked_fill(outside, 0)
        mine = shifted.gather(-1, local.unsqueeze(-1)).squeeze(-1).masked_fill(outside, 0.0)
        picked = all_reduce_logged(mine, "cross-entropy: target logit", group)  # one rank owns each target
        ctx.save_for_backward(exp / total.unsqueeze(-1), local, outside)
        return total.log() - picked

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None, None]:
        softmax, local, outside = ctx.saved_tensors
        own = (~outside).to(softmax.dtype).unsqueeze(-1)  # 1 where this rank holds the target's logit
        grad_logits = softmax.scatter_add(-1, local.unsqueeze(-1), -own)  # softmax - one-hot, this slice
        return grad_logits * grad.unsqueeze(-1), None, None, None


def vocab_parallel_cross_entropy(logits: torch.Tensor, targets: torch.Tensor, start: int,
                                 group: dist.ProcessGroup | None = None) -> torch.Tensor:
    """−log softmax(logits)[target] per token, from each rank's logits of vocabulary ids [start, start + V/t).

    Every rank returns the same ``(b, s)`` losses; backward needs no communication (each rank's gradient
    is softmax − one-hot on its own slice of the vocabulary).
    """
    out: torch.Tensor = VocabParallelCrossEntropy.apply(logits, targets, start, group)  # type: ignore[no-untyped-call]
    return out


class TensorParallelGPT(nn.Module):
    """``GPT`` split over ``group``: ``model(idx)`` gives this rank's slice of the logits, ``model.loss`` the mean
    cross-entropy (alike on every rank). Built from a full ``GPT``, so it starts with its weights."""

    def __init__(self, full: GPT, group: dist.ProcessGroup | None = None, sequence_parallel: bool = False,
                 regather: bool = True) -> None:
        super().__init__()
        config, tp = full.config, tp_group(group, sequence_parallel, regather)
        check_split(config, tp.size, sequence_parallel)
        if config.vocab % tp.size:
            raise ValueError(f"vocab = {config.vocab} is not divisible by the {tp.size} ranks of the tensor group; "
                             f"pad the vocabulary to a multiple of {tp.size}")
        self.config, self.tp = config, tp
        self.embed = VocabParallelEmbedding(full.embed, config, tp)
        self.blocks = nn.ModuleList(TPBlock(b, config, tp) for b in full.blocks)  # type: ignore[arg-type]
        self.head = VocabParallelHead(full.head, config, tp, self.embed.token.weight if config.tied else None)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x)
        out: torch.Tensor = self.head(x)
        return out

    def loss(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The mean next-token cross-entropy over every token of the batch."""
        return self.head.cross_entropy(self(idx), targets).mean()

    def sequential(self) -> nn.Sequential:
        """This model's own modules as the stages ``embed, block1, ..., blockN, head``."""
        stages = [("embed", self.embed), *((f"block{i + 1}", b) for i, b in enumerate(self.blocks)),
                  ("head", self.head)]
        return nn.Sequential(OrderedDict(stages))


def tp_gpt_sequential(config: GPTConfig, seed: int = 0, group: dist.ProcessGroup | None = None,
                      sequence_parallel: bool = False, regather: bool = True) -> nn.Sequential:
    """``TensorParallelGPT(GPT(config, seed), ...).sequential()``: the stages for a pipeline of TP stages."""
    return TensorParallelGPT(GPT(config, seed), group, sequence_parallel, regather).sequential()


def sequence_parallel_gradients(model: nn.Module, tp: TPGroup) -> int:
    """Sum over the tensor group the gradients that sequence parallelism leaves partial (LayerNorms, position
    embedding, row-parallel biases: whole parameters used on a chunk of the sequence). Returns how many.

    Call after backward on every rank of the group; does nothing without sequence parallelism.
    """
    if not tp.sequence_parallel:
        return 0
    partial = [p for m in model.modules() for p in _chunk_parameters(m) if p.grad is not None]
    for p in partial:
        assert p.grad is not None
        p.grad.copy_(all_reduce_logged(p.grad, "sequence-parallel parameter gradients", tp.group))
    return len(partial)


def _chunk_parameters(m: nn.Module) -> list[torch.Tensor]:
    if isinstance(m, nn.LayerNorm):
        return list(m.parameters(recurse=False))
    if isinstance(m, RowLinear) and m.bias is not None:
        return [m.bias]
    if isinstance(m, VocabParallelEmbedding):
        return [m.position.weight]
    return []
