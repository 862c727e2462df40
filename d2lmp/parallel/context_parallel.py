"""Context parallelism: ring attention over a sequence split across ranks (Liu et al. 2023).

Each rank holds its chunk(s) of the sequence (``context_layout``: plain or balanced) as q, k, v of shape
[batch, heads, seq_local, head_dim], and ``ring_attention`` returns its rows of softmax(q·kᵀ/√d + mask)·v over
the whole sequence. The K/V chunks travel round the ring, one rank to the right per step, and while a chunk
is on the wire the rank attends to the one it holds, block by block (``attention_blocks``); the partial results
are merged with the online softmax: each keeps its log-sum-exp, so two partials combine exactly. No rank ever
holds more than its own queries, two K/V chunks and one block of scores. Backward follows FlashAttention's:
with the saved log-sum-exp each block's probabilities are recomputed, and the ring runs again, the K/V chunks
going round once more and their gradients going round with them, each rank adding its share, until they arrive
home. The messages are posted so that the next chunk's transfer overlaps this chunk's compute (``KVRing``).
``RingLog`` shows what the ring sent, waited for and computed (a view of the traffic log, ``p2p_log.MessageLog``).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist

from d2lmp.model.context_layout import chunks_per_rank, ring_attention_schedule
from d2lmp.parallel.agreement import agree
from d2lmp.parallel.attention_blocks import Partial, block_functions, merge, watch_scores
from d2lmp.parallel.collectives import global_rank
from d2lmp.parallel.p2p_log import Message, MessageLog, active_logs, add_seconds

__all__ = ["RingLog", "ring_forward", "ring_backward", "ring_attention", "pass_kv_round", "RingTraffic", "ring_traffic",
           "KVRing"]

Group = dist.ProcessGroup | None
KV_TAG, GRAD_TAG = 41, 42  # gloo matches messages by tag: the two rings of the backward never mix

LABELS = {KV_TAG: "K/V", GRAD_TAG: "dK/dV"}  # what each tag's messages carry
COMPUTING, WAITING = "computing", "waiting for "  # the traffic log's ``seconds`` that the ring adds


@dataclass
class RingLog:
    """While the ``with`` block runs: bytes sent and received by label ("K/V", "dK/dV"), the elements of every
    score block computed, seconds spent computing and seconds spent waiting for a message, by label.

    A view of the one traffic log, ``traffic`` (a ``p2p_log.MessageLog``): the bytes are its messages' by tag,
    the seconds what the ring added to it; only the score blocks are counted here. The seconds are the host's:
    right for gloo ranks; under NCCL a wait returns once the GPU is told to wait, so there the split between
    computing and waiting does not mean what it says.
    """

    score_blocks: list[int] = field(default_factory=list)
    traffic: MessageLog = field(default_factory=MessageLog)

    def __enter__(self) -> RingLog:
        self.traffic.__enter__()
        self._watching = watch_scores(self.score_blocks)
        self._watching.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._watching.__exit__(None, None, None)
        self.traffic.__exit__(None, None, None)

    @property
    def sent(self) -> dict[str, int]:
        """Bytes the ring sent, by label."""
        return _by_label(self.traffic.sent)

    @property
    def received(self) -> dict[str, int]:
        """Bytes the ring received, by label."""
        return _by_label(self.traffic.received)

    @property
    def compute_s(self) -> float:
        """Seconds spent computing blocks."""
        return self.traffic.seconds.get(COMPUTING, 0.0)

    @property
    def wait_s(self) -> dict[str, float]:
        """Seconds spent waiting for a message, by label."""
        return {key.removeprefix(WAITING): s for key, s in self.traffic.seconds.items() if key.startswith(WAITING)}

    def bytes_sent(self) -> int:
        """Bytes the ring sent, all labels together."""
        return sum(self.sent.values())


def _by_label(messages: list[Message]) -> dict[str, int]:
    """Bytes of the ring's messages by label, in the order the labels first appear."""
    table: dict[str, int] = {}
    for m in messages:
        if m.tag in LABELS:
            table[LABELS[m.tag]] = table.get(LABELS[m.tag], 0) + m.nbytes
    return table


# ---------------------------------------------------------------------------------------
# The transport: one message to the right neighbour and one from the left, in flight during the compute

def _post(send: torch.Tensor, recv_into: torch.Tensor, right: int, left: int, group: Group, tag: int) -> list[Any]:
    if dist.get_backend(group) == "nccl":  # NCCL: the step's send and receive in one group call, or neighbours deadlock
        ops = [dist.P2POp(dist.irecv, recv_into, left, group, tag), dist.P2POp(dist.isend, send, right, group, tag)]
        return list(dist.batch_isend_irecv(ops))
    # gloo moves a message only once its receive is posted: both are posted now, before the compute starts
    return [dist.irecv(recv_into, left, group, tag), dist.isend(send, right, group, tag)]


# The last two finished exchanges, kept alive a little longer. Dropping a gloo request right after its wait frees
# its buffer while gloo's I/O thread may still hold it, and the freeing thread spins until it lets go: on a busy
# machine a scheduler tick (see ``ring_messages._last_requests``). Kept here, a request is dropped two waits later;
# the price is that two messages' buffers outlive the call.
_recent: deque[_Exchange] = deque(maxlen=2)


class _Exchange:
    """``send`` on its way to the right neighbour and the left neighbour's message on its way into ``recv_into``."""

    def __init__(self, send: torch.Tensor, recv_into: torch.Tensor, label: str, tag: int, group: Group) -> None:
        rank, world = dist.get_rank(group), dist.get_world_size(group)
        self.received, self.label = recv_into, label
        if world == 1:  # a ring of one: the message is already home
            recv_into.copy_(send)
            self._requests: list[Any] = []
            return
        right, left = global_rank(group, (rank + 1) % world), global_rank(group, (rank - 1) % world)
        self._requests = _post(send, recv_into, right, left, group, tag)

    def wait(self) -> torch.Tensor:
        start = time.perf_counter()
        for request in self._requests:
            request.wait()
        add_seconds(WAITING + self.label, time.perf_counter() - start)
        _recent.append(self)
        return self.received


class KVRing:
    """One rank's K and V as one tensor, passed to the right each step while the step computes on ``current``.

    Two buffers: what this step computes on (and sends), and what arrives for the next step.
    """

    def __init__(self, kv: torch.Tensor, group: Group, label: str = "K/V") -> None:
        self.current, self._spare, self._group, self._label = kv, torch.empty_like(kv), group, label
        self._exchange: _Exchange | None = None

    def send_on(self) -> None:
        """Post ``current`` to the right neighbour and a receive from the left one into the spare buffer."""
        self._exchange = _Exchange(self.current, self._spare, self._label, KV_TAG, self._group)

    def receive(self) -> None:
        """Wait for the left neighbour's chunk; it becomes ``current``, the old one the spare buffer."""
        assert self._exchange is not None, "receive() without send_on()"
        self._spare, self.current = self.current, self._exchange.wait()


class _GradRing:
    """The visiting chunk's dK/dV: each rank adds its share and passes the sum on; after p hops it is home."""

    def __init__(self, group: Group, label: str = "dK/dV") -> None:
        self._group, self._label = group, label
        self._exchange: _Exchange | None = None

    def add_and_pass(self, share: torch.Tensor) -> None:
        if self._exchange is not None:  # what the ranks before this one added (it came while we computed)
            share += self._exchange.wait()
        self._exchange = _Exchange(share, torch.empty_like(share), self._label, GRAD_TAG, self._group)

    def finish(self) -> torch.Tensor:
        assert self._exchange is not None, "finish() before add_and_pass()"
        return self._exchange.wait()  # this rank's own chunk's gradient, summed over every rank


@contextmanager
def _computing(device: torch.device) -> Iterator[None]:
    """Time the block computations into the active traffic logs (the GPU is synchronised so the clock means
    something)."""
    if not active_logs():
        yield
        return
    start = time.perf_counter()
    yield
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    add_seconds(COMPUTING, time.perf_counter() - start)


# ---------------------------------------------------------------------------------------
# The ring, forward and backward

def _pieces(t: torch.Tensor, n: int) -> tuple[torch.Tensor, ...]:
    return torch.chunk(t, n, dim=-2)  # a rank's part of the sequence -> its chunks


def ring_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = True, layout: str = "plain",
                 group: Group = None, kernel: str = "explicit") -> Partial:
    """This rank's attention output over the whole sequence, and each query's log-sum-exp.

    Each step passes the K/V chunk this rank holds to the right and, while it travels, attends to it and
    merges the result into what the rank has so far; after p steps every query has seen every key.
    """
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    attend, _ = block_functions(kernel, q.device)  # attention_block, or PyTorch's fused CPU kernel
    queries = _pieces(q, chunks_per_rank(layout))
    partial: list[Partial | None] = [None] * len(queries)  # per query chunk, over the keys seen so far
    ring = KVRing(torch.stack([k, v]), group)  # K and V travel as one message
    for number, step in enumerate(ring_attention_schedule(world, layout, causal)):
        if number + 1 < world:
            ring.send_on()  # the chunk travels on while this step computes on it
        keys, values = (_pieces(t, len(queries)) for t in ring.current)
        with _computing(q.device):
            for i, j, diagonal in step[rank].computed():  # the blocks not entirely in the future
                partial[i] = merge(partial[i], attend(queries[i], keys[j], values[j], diagonal))
        if number + 1 < world:
            ring.receive()
    outs, lses = zip(*[p for p in partial if p is not None])  # every query chunk sees at least its own keys
    return torch.cat(outs, dim=-2), torch.cat(lses, dim=-1)


def ring_backward(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
                  lse: torch.Tensor, causal: bool = True, layout: str = "plain", group: Group = None,
                  kernel: str = "explicit") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dq, dk, dv of this rank's chunks: the ring again, each visiting K/V chunk's gradients travelling with it."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    _, grads_of = block_functions(kernel, q.device)  # block_grads, or the fused kernel's backward
    n = chunks_per_rank(layout)
    qs, dos, outs, lses = _pieces(q, n), _pieces(dout, n), _pieces(out, n), torch.chunk(lse, n, dim=-1)
    dq = torch.zeros_like(q)
    kv_ring, grad_ring = KVRing(torch.stack([k, v]), group), _GradRing(group)
    for number, step in enumerate(ring_attention_schedule(world, layout, causal)):
        if number + 1 < world:
            kv_ring.send_on()
        keys, values = (_pieces(t, n) for t in kv_ring.current)
        dkv = torch.zeros_like(kv_ring.current)  # this rank's share of the visiting chunk's dK, dV
        with _computing(q.device):
            for i, j, diagonal in step[rank].computed():
                grads = grads_of(qs[i], keys[j], values[j], dos[i], outs[i], lses[i], diagonal)
                for total, share in zip((_pieces(dq, n)[i], _pieces(dkv[0], n)[j], _pieces(dkv[1], n)[j]), grads):
                    total += share  # views: adds into dq and dkv in place
        grad_ring.add_and_pass(dkv)  # + the ranks before this one, on to the next
        if number + 1 < world:
            kv_ring.receive()
    dk, dv = grad_ring.finish()
    return dq, dk, dv


class _RingAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, layout: str,
                group: Group, kernel: str) -> torch.Tensor:
        out, lse = ring_forward(q, k, v, causal, layout, group, kernel)
        ctx.save_for_backward(q, k, v, out, lse)  # this rank's chunks only: no score matrix is kept
        ctx.causal, ctx.layout, ctx.group, ctx.kernel = causal, layout, group, kernel
        return out

    @staticmethod
    def backward(ctx: Any, dout: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = ring_backward(dout.contiguous(), q, k, v, out, lse, ctx.causal, ctx.layout, ctx.group,
                                   ctx.kernel)
        return dq, dk, dv, None, None, None, None


def _check(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layout: str, kernel: str) -> None:
    if q.dim() != 4 or k.shape != q.shape or v.shape != q.shape:
        raise ValueError("q, k and v must have the same shape [batch, heads, seq_local, head_dim], got "
                         f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)} (grouped heads are not supported)")
    n = chunks_per_rank(layout)
    if q.shape[2] % n or q.shape[2] == 0:
        raise ValueError(f"the {layout} layout holds {n} equal chunks per rank, but this rank has {q.shape[2]} "
                         f"tokens: split the whole sequence with sequence_chunks.split_sequence(x, world, {layout!r})")
    block_functions(kernel, q.device)  # an unknown kernel, or the fused one off the CPU, is refused here


def ring_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = True, group: Group = None,
                   layout: str = "plain", kernel: str = "explicit") -> torch.Tensor:
    """This rank's rows of softmax(q·kᵀ/√d + mask)·v over the whole sequence, differentiable.

    q, k, v: this rank's part of the sequence, [batch, heads, seq_local, head_dim], as
    ``sequence_chunks.split_sequence(x, world, layout)`` cuts it; every rank of ``group`` (None: all) calls it
    with the same shapes. ``causal`` masks the future. ``kernel`` computes each block: "explicit" (the
    formulas of ``attention_blocks``) or "fused" (PyTorch's CPU flash kernel). Equal to
    ``F.scaled_dot_product_attention`` on the whole sequence, then split the same way.
    """
    _check(q, k, v, layout, kernel)
    agree("ring_attention", group, shape=tuple(q.shape), dtype=q.dtype, causal=causal, layout=layout)
    out: torch.Tensor = _RingAttention.apply(  # type: ignore[no-untyped-call]
        q.contiguous(), k.contiguous(), v.contiguous(), causal, layout, group, kernel)
    return out


def pass_kv_round(k: torch.Tensor, v: torch.Tensor, group: Group = None) -> torch.Tensor:
    """The forward's messages alone: K/V passed p−1 steps round the ring as ``ring_forward`` passes them, nothing
    computed. Returns the K/V this rank holds at the end (its right neighbour's); its time is what overlap hides."""
    ring = KVRing(torch.stack([k, v]), group)
    for _ in range(dist.get_world_size(group) - 1):
        ring.send_on()
        ring.receive()
    return ring.current


@dataclass(frozen=True)
class RingTraffic:
    """Bytes one rank sends in one pass of ring attention (it receives as many)."""

    forward: int
    backward: int


def ring_traffic(world: int, kv_chunk_bytes: int) -> RingTraffic:
    """Bytes one rank sends: K and V (2 × ``kv_chunk_bytes``, one rank's K or V) to the right p−1 times forward;
    backward, the K/V again p−1 times and their gradients p times (the last hop brings them home)."""
    kv = 2 * kv_chunk_bytes
    return RingTraffic(forward=(world - 1) * kv, backward=(world - 1) * kv + (world if world > 1 else 0) * kv)
