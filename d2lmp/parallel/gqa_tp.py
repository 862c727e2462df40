"""Grouped-query attention split over a tensor group: each rank keeps whole groups, its query heads and their KV head.

Megatron-LM splits the attention by heads (Shoeybi et al. 2019, §3); with grouped-query attention a rank must
also hold the key and value head that its query heads share, so it keeps ``kv_heads / t`` whole groups:
the ``q`` rows of its query heads and the ``kv`` rows of its KV heads (column-parallel), and the matching input
columns of ``proj`` (row-parallel). Megatron's ``Attention`` divides ``num_query_groups`` by the tensor-parallel
size (``megatron/core/transformer/attention.py``), so ``t`` must divide ``kv_heads``: with more ranks than KV
heads, a KV head would be needed on several ranks, as copies whose gradients must then be summed.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from d2lmp.gqa import GroupedQueryAttention
from d2lmp.parallel.transformer_tp import ColumnLinear, RowLinear, TPGroup

__all__ = ["check_kv_split", "kv_rows", "TPGroupedQueryAttention"]


def check_kv_split(heads: int, kv_heads: int, tp: int) -> None:
    """A clear ``ValueError`` unless ``tp`` ranks can each hold whole groups (``tp`` divides ``kv_heads``)."""
    if tp < 1 or kv_heads % tp or heads % tp:
        raise ValueError(f"kv_heads = {kv_heads} is not divisible by the {tp} ranks of the tensor group: a rank "
                         f"must hold the key/value head its query heads share, so the tensor-parallel degree is at "
                         f"most kv_heads and divides it")


def kv_rows(kv_heads: int, head_dim: int, first: int, count: int) -> torch.Tensor:
    """Rows of the ``kv`` weight (K rows, then V rows) that belong to KV heads ``first .. first + count - 1``."""
    rows = torch.arange(first * head_dim, (first + count) * head_dim)
    return torch.cat([rows, rows + kv_heads * head_dim])


class TPGroupedQueryAttention(nn.Module):
    """This rank's ``kv_heads / t`` groups of a ``GroupedQueryAttention``: f before ``q`` and ``kv``, g after
    ``proj``."""

    def __init__(self, full: GroupedQueryAttention, tp: TPGroup) -> None:
        super().__init__()
        check_kv_split(full.heads, full.kv_heads, tp.size)
        d, kv_mine = full.head_dim, full.kv_heads // tp.size
        q_mine = full.heads // tp.size
        self.head_dim = d
        self.q = ColumnLinear(full.q, torch.arange(tp.rank * q_mine * d, (tp.rank + 1) * q_mine * d), tp, "attn.q")
        self.kv = ColumnLinear(full.kv, kv_rows(full.kv_heads, d, tp.rank * kv_mine, kv_mine), tp, "attn.kv")
        self.proj = RowLinear(full.proj, tp, "attn.proj")  # input columns of this rank's query heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        d = self.head_dim
        q = self.q(x).view(b, s, -1, d).transpose(1, 2)  # this rank's query heads
        k, v = (t.view(b, s, -1, d).transpose(1, 2) for t in self.kv(x).chunk(2, dim=-1))  # and their KV heads
        group = q.size(1) // k.size(1)
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out: torch.Tensor = self.proj(y.transpose(1, 2).reshape(b, s, -1))  # g: the heads' parts summed
        return out
