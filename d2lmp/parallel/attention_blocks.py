"""One block of attention, a chunk of queries against a chunk of keys, and the rule that merges blocks exactly.

``attention_block`` returns the block's output and each query's log-sum-exp (lse) of its scores; ``merge``
combines two partial results over disjoint sets of keys into the result over both: the online softmax
(Milakov and Gimelshein 2018), as FlashAttention merges its tiles (Dao et al. 2022). ``block_grads`` is one
block's share of dq, dk, dv given the whole row's output and lse (FlashAttention's backward, Dao 2023): the
probabilities are recomputed from the lse, never stored. Two kernels compute a block: "explicit", the
formulas written out in torch (it allocates the block's scores, which ``watch_scores`` can count), and
"fused", PyTorch's own CPU flash-attention kernel, the one ``F.scaled_dot_product_attention`` runs on CPUs,
which returns the lse too and never holds the scores.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

__all__ = ["Partial", "BLOCK_KERNELS", "attention_block", "merge", "block_grads", "block_functions", "watch_scores"]

Partial = tuple[torch.Tensor, torch.Tensor]  # (attention output, log-sum-exp per query) over the keys seen so far
BLOCK_KERNELS = ("explicit", "fused")
BlockForward = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool], Partial]
BlockBackward = Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]]

_WATCHERS: list[list[int]] = []  # lists that receive the elements of every score block allocated


@contextmanager
def watch_scores(into: list[int]) -> Iterator[list[int]]:
    """While active, append to ``into`` the number of elements of every score block the explicit kernel allocates."""
    _WATCHERS.append(into)
    try:
        yield into
    finally:
        _WATCHERS.remove(into)


def _scale(q: torch.Tensor) -> float:
    return 1.0 / math.sqrt(q.shape[-1])  # 1/√d, as F.scaled_dot_product_attention


def _scores(q: torch.Tensor, k: torch.Tensor, diagonal: bool) -> torch.Tensor:
    scores = (q @ k.transpose(-2, -1)) * _scale(q)
    for watcher in _WATCHERS:
        watcher.append(scores.numel())
    if diagonal:  # the same chunk of queries and keys: query t sees keys up to t
        future = torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    return scores


def attention_block(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, diagonal: bool) -> Partial:
    """Attention of queries ``q`` to one chunk of keys: (output, log-sum-exp of each query's scores).

    ``diagonal``: queries and keys are the same chunk, so the causal mask hides each query's future.
    """
    scores = _scores(q, k, diagonal)
    lse = scores.logsumexp(dim=-1)
    return torch.exp(scores - lse.unsqueeze(-1)) @ v, lse


def merge(a: Partial | None, b: Partial) -> Partial:
    """Two partial attentions over disjoint sets of keys combined into one, exactly (the online softmax).

    Each output is its keys' softmax-weighted values; weighting each by its share of the total
    exp-sum, exp(lse − lse_total), gives the softmax over both sets.
    """
    if a is None:
        return b
    (out_a, lse_a), (out_b, lse_b) = a, b
    lse = torch.logaddexp(lse_a, lse_b)
    return out_a * torch.exp(lse_a - lse).unsqueeze(-1) + out_b * torch.exp(lse_b - lse).unsqueeze(-1), lse


def block_grads(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dout: torch.Tensor, out: torch.Tensor,
                lse: torch.Tensor, diagonal: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One block's share of dq, dk, dv, from the whole row's output ``out`` and log-sum-exp ``lse``."""
    p = torch.exp(_scores(q, k, diagonal) - lse.unsqueeze(-1))  # the true softmax, since lse is the whole row's
    delta = (dout * out).sum(dim=-1, keepdim=True)  # FlashAttention's D: rowsum(dO ∘ O)
    ds = p * (dout @ v.transpose(-2, -1) - delta)  # softmax's backward
    scale = _scale(q)
    return ds @ k * scale, ds.transpose(-2, -1) @ q * scale, p.transpose(-2, -1) @ dout


def _fused_block(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, diagonal: bool) -> Partial:
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, diagonal)
    return out, lse


def _fused_block_grads(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dout: torch.Tensor, out: torch.Tensor,
                       lse: torch.Tensor, diagonal: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    grads: Any = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
        dout, q, k, v, out, lse, 0.0, diagonal)  # the whole row's out and lse, as for the explicit kernel
    return grads[0], grads[1], grads[2]


def block_functions(kernel: str, device: torch.device) -> tuple[BlockForward, BlockBackward]:
    """(block forward, block backward) of ``kernel`` ("explicit" or "fused"; "fused" on CPU tensors only)."""
    if kernel not in BLOCK_KERNELS:
        raise ValueError(f"unknown block kernel {kernel!r}; available: {', '.join(BLOCK_KERNELS)}")
    if kernel == "fused" and device.type != "cpu":
        raise ValueError(f"the fused block kernel is PyTorch's CPU flash attention; tensors on {device.type} "
                         "need kernel='explicit'")
    return (attention_block, block_grads) if kernel == "explicit" else (_fused_block, _fused_block_grads)
