"""Grouped-query attention on one device: ``heads`` query heads share ``kv_heads`` key and value heads.

Ainslie et al. (2023) group the query heads: the ``heads / kv_heads`` query heads of group g all attend with
key and value head g, so the keys and values (and the KV cache at inference) shrink by that factor. One key and
value head per query head is ordinary multi-head attention; one for all is multi-query attention. The layout
here keeps three projections, ``q`` (hidden → heads·d), ``kv`` (hidden → 2·kv_heads·d: the K rows, then the V
rows) and ``proj`` (heads·d → hidden), and a causal mask.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["GroupedQueryAttention", "check_groups"]


def check_groups(heads: int, kv_heads: int) -> None:
    """A clear ``ValueError`` unless ``kv_heads`` divides ``heads``."""
    if kv_heads < 1 or heads % kv_heads:
        raise ValueError(f"kv_heads = {kv_heads} must divide heads = {heads}: each group of query heads shares "
                         f"one key and value head")


class GroupedQueryAttention(nn.Module):
    """Causal self-attention whose ``heads`` query heads share ``kv_heads`` key/value heads; ``(b, s, h)`` in, out."""

    def __init__(self, hidden: int, heads: int, kv_heads: int) -> None:
        super().__init__()
        check_groups(heads, kv_heads)
        if hidden % heads:
            raise ValueError(f"hidden = {hidden} must be a multiple of heads = {heads}")
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.q = nn.Linear(hidden, heads * self.head_dim)
        self.kv = nn.Linear(hidden, 2 * kv_heads * self.head_dim)  # rows: K of every KV head, then V
        self.proj = nn.Linear(heads * self.head_dim, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        d = self.head_dim
        q = self.q(x).view(b, s, -1, d).transpose(1, 2)  # (b, query heads, s, d)
        k, v = (t.view(b, s, -1, d).transpose(1, 2) for t in self.kv(x).chunk(2, dim=-1))  # (b, KV heads, s, d)
        group = q.size(1) // k.size(1)  # query heads per KV head
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out: torch.Tensor = self.proj(y.transpose(1, 2).reshape(b, s, -1))
        return out
