"""Rank functions that prove tensor parallelism's other layers equal one device, and its dropout rule.

Grouped-query attention split by whole groups (``gqa_tp``), the vocabulary-parallel embedding and cross-entropy
(``gpt_tp``), and dropout's masks under tensor parallelism: alike on every rank where the activation is whole,
each rank its own where it is split (Megatron-LM's ``model_parallel_cuda_manual_seed``). Each runs on every rank
of a ``launch`` and returns frozen dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from d2lmp.gpt import GPT, GPTConfig, lm_loss
from d2lmp.gqa import GroupedQueryAttention
from d2lmp.parallel.gpt_tp import VocabParallelEmbedding, VocabParallelHead, vocab_parallel_cross_entropy
from d2lmp.parallel.gqa_tp import TPGroupedQueryAttention
from d2lmp.parallel.p2p_log import MessageLog
from d2lmp.parallel.transformer_tp import RegionDropout, TPGroup, take_shards

__all__ = ["SplitCheck", "DropoutMasks", "check_gqa", "check_vocab_parallel", "dropout_masks"]


@dataclass(frozen=True)
class SplitCheck:
    """Largest |difference| from one device by name, and this rank's collectives (op, bytes, label)."""

    errors: dict[str, float]
    calls: tuple[tuple[str, int, str], ...]


@dataclass(frozen=True)
class DropoutMasks:
    """The smallest share of a rank's mask that equals the first rank's, in a whole region and in a split one."""

    whole_region_agreement: float
    split_region_agreement: float


def _grads(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: p.grad.detach().clone() for k, p in model.named_parameters() if p.grad is not None}


def _max_error(got: dict[str, torch.Tensor], want: dict[str, torch.Tensor]) -> float:
    return max(float((g - want[k]).abs().max()) for k, g in got.items())


def check_gqa(tp: TPGroup, hidden: int, heads: int, kv_heads: int, batch: int = 2, seq: int = 8,
              seed: int = 0) -> SplitCheck:
    """A ``TPGroupedQueryAttention`` against the ``GroupedQueryAttention`` it is cut from: output, input gradient
    and every weight gradient (this rank's cut of the full one)."""
    torch.manual_seed(seed)
    full = GroupedQueryAttention(hidden, heads, kv_heads)
    g = torch.Generator().manual_seed(seed + 1)
    x, probe = torch.randn(batch, seq, hidden, generator=g), torch.randn(batch, seq, hidden, generator=g)
    xf = x.clone().requires_grad_()
    want = full(xf)
    (want * probe).sum().backward()
    split = TPGroupedQueryAttention(full, tp)
    xs = x.clone().requires_grad_()
    with MessageLog() as log:
        got = split(xs)
        (got * probe).sum().backward()
    assert xs.grad is not None and xf.grad is not None
    errors = {"output": float((got.detach() - want.detach()).abs().max()),
              "input gradient": float((xs.grad - xf.grad).abs().max()),
              "weight gradients": _max_error(_grads(split), take_shards(split, _grads(full)))}
    return SplitCheck(errors, tuple((c.op, c.bytes, c.label) for c in log.calls))


def check_vocab_parallel(config: GPTConfig, tp: TPGroup, batch: int = 2, seed: int = 0) -> SplitCheck:
    """The vocabulary-parallel embedding and LM head with ``vocab_parallel_cross_entropy`` against the GPT's own
    embedding, head and ``lm_loss``: embedding output, loss, and the token-embedding and LM-head gradients."""
    full = GPT(config, seed)
    g = torch.Generator().manual_seed(seed + 2)
    idx, targets = (torch.randint(config.vocab, (batch, config.seq), generator=g) for _ in range(2))
    hidden = full.embed(idx)
    loss = lm_loss(full.head(hidden), targets)
    loss.backward()
    embed = VocabParallelEmbedding(full.embed, config, tp)
    head = VocabParallelHead(full.head, config, tp, embed.token.weight if config.tied else None)
    with MessageLog() as log:
        mine_hidden = embed(idx)
        logits = head(mine_hidden)  # (b, s, V/t): this rank's slice of the vocabulary
        mine_loss = vocab_parallel_cross_entropy(logits, targets, head.start, tp.group).mean()
        mine_loss.backward()
    want_grads = {"token": full.embed.token.weight.grad, "lm_head": full.head.lm_head.weight.grad}
    got_grads = {"token": embed.token.weight.grad, "lm_head": head.lm_head.weight.grad}
    rows = slice(head.start, head.start + config.vocab // tp.size)
    errors = {"embedding output": float((mine_hidden.detach() - hidden.detach()).abs().max()),
              "loss": abs(mine_loss.item() - loss.item()),
              **{f"{k} gradient": float((got_grads[k] - want_grads[k][rows]).abs().max())  # type: ignore[index,operator]
                 for k in want_grads}}
    return SplitCheck(errors, tuple((c.op, c.bytes, c.label) for c in log.calls))


def _agreement(mask: torch.Tensor, group: dist.ProcessGroup | None) -> float:
    """The smallest share, over the ranks of ``group``, of a rank's mask that equals the first rank's."""
    first = mask.clone()
    dist.broadcast(first, dist.get_global_rank(group, 0) if group is not None else 0, group=group)
    share = (mask == first).float().mean().reshape(1)
    dist.all_reduce(share, dist.ReduceOp.MIN, group=group)
    return float(share)


def dropout_masks(tp: TPGroup, p: float = 0.5, numel: int = 4096, seed: int = 0) -> DropoutMasks:
    """Seed every rank alike, then draw a mask in a region held whole (the residual dropout) and in a split one
    (attention's dropout on this rank's heads): the smallest share of each, over the ranks, equal to the first
    rank's."""
    ones = torch.ones(numel)
    torch.manual_seed(seed)
    whole = RegionDropout(p, split=False, rank=tp.rank)(ones) != 0
    torch.manual_seed(seed)
    split = RegionDropout(p, split=True, rank=tp.rank)(ones) != 0
    return DropoutMasks(_agreement(whole.float(), tp.group), _agreement(split.float(), tp.group))
