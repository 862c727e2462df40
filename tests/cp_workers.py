"""The rank worker of the ring-attention tests: every check of one world size in one launch."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.nn import functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from d2lmp.checks.ranks import check_context_parallel
from d2lmp.model.context_layout import LAYOUTS, workload
from d2lmp.parallel.context_parallel import RingLog, ring_attention
from d2lmp.parallel.p2p_log import Message, MessageLog
from d2lmp.parallel.sequence_chunks import split_sequence

SHAPE = (2, 3, 4)  # batch, heads, head_dim: the head is narrower than a chunk, so score blocks are the largest products
TOKENS_PER_RANK = 8


@dataclass(frozen=True)
class RingFindings:
    errors: dict[str, float]  # max |difference| from one device, by check
    sent: dict[str, dict[str, int]]  # layout -> pass -> bytes this rank handed to dist.isend
    received: dict[str, dict[str, int]]  # layout -> pass -> bytes of the dist.irecv buffers this rank posted
    logged: dict[str, dict[str, int]]  # layout -> label -> bytes sent, as RingLog counted them
    kv_chunk_bytes: int  # one rank's K (or V)
    largest_product: dict[str, int]  # layout -> elements of the largest matrix product, forward and backward
    one_device_scores: int  # elements of the whole sequence's score matrix (standard attention, one device)
    saved_bytes: dict[str, int]  # layout -> bytes autograd saved for backward on this rank
    one_device_saved_bytes: int  # F.scaled_dot_product_attention on the whole sequence
    score_elements: dict[str, int]  # layout -> score elements this rank computed forward (causal)
    expected_elements: dict[str, int]  # the same, from the schedule (context_layout.workload)


class _LargestProduct(TorchDispatchMode):
    """Records the largest output of a matrix product (bmm/mm) computed while active: measured, not derived."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        if func.overloadpacket in (torch.ops.aten.bmm, torch.ops.aten.mm):
            self.largest = max(self.largest, out.numel())
        return out


def _bytes(messages: list[Message]) -> int:
    """The bytes of the tensors handed to dist.isend/irecv (or send/recv), as ``MessageLog`` saw them."""
    return sum(m.nbytes for m in messages)


def _saved_bytes(fn, *args, **kwargs) -> tuple[torch.Tensor, int]:  # type: ignore[no-untyped-def]
    saved = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved.append(t.numel() * t.element_size())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(*args, **kwargs)
    return out, sum(saved)


def everything(rank: int, world: int) -> RingFindings:
    errors = check_context_parallel(rank, world)
    batch, heads, dim = SHAPE
    g = torch.Generator().manual_seed(3)
    whole = [torch.randn(batch, heads, TOKENS_PER_RANK * world, dim, generator=g) for _ in range(3)]
    sent, received, logged, largest, saved, elements, expected = {}, {}, {}, {}, {}, {}, {}
    for layout in LAYOUTS:
        q, k, v = (split_sequence(t, world, layout)[rank].requires_grad_(True) for t in whole)
        with RingLog() as log, _LargestProduct() as products:
            with MessageLog() as forward:
                out, saved[layout] = _saved_bytes(ring_attention, q, k, v, causal=True, layout=layout)
            elements[layout] = sum(log.score_blocks)
            with MessageLog() as backward:
                out.sum().backward()
        sent[layout] = {"forward": _bytes(forward.sent), "backward": _bytes(backward.sent)}
        received[layout] = {"forward": _bytes(forward.received), "backward": _bytes(backward.received)}
        logged[layout], largest[layout] = dict(log.sent), products.largest
        expected[layout] = workload(world, TOKENS_PER_RANK * world, layout).computed[rank] * batch * heads
    with _LargestProduct() as products:  # standard attention on one device: the whole score matrix at once
        scores = whole[0] @ whole[1].transpose(-2, -1) / dim ** 0.5
        torch.softmax(scores, dim=-1) @ whole[2]
    leaves = [t.clone().requires_grad_(True) for t in whole]
    _, one_device_saved = _saved_bytes(F.scaled_dot_product_attention, *leaves, is_causal=True)
    return RingFindings(errors, sent, received, logged, q.numel() * q.element_size(), largest, products.largest,
                        saved, one_device_saved, elements, expected)


def uneven(rank: int, world: int) -> None:
    """A rank whose part does not split into the balanced layout's two chunks: ring_attention must refuse it."""
    q = torch.randn(1, 1, 5, 4)
    ring_attention(q, q, q, layout="balanced")
