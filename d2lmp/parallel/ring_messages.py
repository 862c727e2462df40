"""How a ring pass's messages are posted: the transport side of ``collectives.ring_pass``, per backend.

A ring pass is a list of ``RingStep``: in each, a rank sends one chunk to its right neighbour and receives one from
its left. ``ring_messages`` returns the object that posts those messages the way the backend needs, with one
interface, so the pass itself reads the same for every backend: ``start(i)`` sends step i's chunk, ``arrivals(i)``
yields the left neighbour's chunk one segment at a time as it arrives (a chunk over ``SEGMENT_ELEMENTS`` is cut into
segments, so adding one overlaps receiving the next), ``finish()`` waits for the last sends.

- ``ReceivesUpFront`` (gloo, on CPUs). A gloo send moves data only once the receiver has posted its receive, so a
  receive posted when its step begins costs one more trip between neighbours per step: every receive of the pass
  is posted before the first step, each into a buffer of its own (reduce-scatter's into a kept spare buffer, to add
  from; all-gather's into the chunk itself). The last pass's requests are kept until the next pass ends, because
  dropping a gloo request can spin until gloo's I/O thread lets go of its buffer.
- ``BatchPerStep`` (NCCL, and any backend in ``BATCHED_BACKENDS``). NCCL cannot take a receive queued ahead of its
  send: two neighbours would each wait for the other. Each step's receive and send go as one ``batch_isend_irecv``,
  a single group call, when the step starts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

import torch
import torch.distributed as dist

__all__ = ["SEGMENT_ELEMENTS", "BATCHED_BACKENDS", "RingStep", "ReceivesUpFront", "BatchPerStep", "ring_messages"]

SEGMENT_ELEMENTS = 2**20  # 4 MiB of float32: big messages are cut so that adding overlaps sending
BATCHED_BACKENDS = ("nccl",)  # the backends whose ring posts each step's send and receive as one batch

Request = dist.Work | None  # isend and irecv return None only on a rank outside the group


class RingStep(NamedTuple):
    """One step of a ring pass on one rank: send ``send`` to the right neighbour, receive the left neighbour's
    chunk for ``recv_into``, and add it to ``recv_into`` (``accumulate``: reduce-scatter) or keep it (all-gather).

    A named tuple, not a dataclass: a pass makes 2(n-1) of them per call, and small all-reduces feel every µs."""

    send: torch.Tensor
    recv_into: torch.Tensor
    accumulate: bool


def _segments(t: torch.Tensor) -> list[torch.Tensor]:
    if t.numel() <= SEGMENT_ELEMENTS:
        return [t] if t.numel() else []  # the common case, without torch.split's cost
    return list(torch.split(t, SEGMENT_ELEMENTS))


def _wait(requests: Sequence[Request]) -> None:
    for request in requests:
        if request is not None:
            request.wait()


# Gloo's spare receive buffers, kept between calls per (dtype, device): a fresh one costs page
# faults on every call, since big allocations come straight from the operating system.
_kept_spares: dict[tuple[torch.dtype, torch.device], torch.Tensor] = {}


def _spares(like: list[torch.Tensor]) -> list[torch.Tensor]:
    """Receive buffers shaped like the (1-D) tensors ``like``, cut one after another from the kept buffer."""
    if not like:
        return []
    sizes, key = [t.numel() for t in like], (like[0].dtype, like[0].device)
    kept = _kept_spares.get(key)
    if kept is None or kept.numel() < sum(sizes):
        kept = _kept_spares[key] = torch.empty(sum(sizes), dtype=key[0], device=key[1])
    ends = [sum(sizes[:i + 1]) for i in range(len(sizes))]
    return [kept[end - size:end] for size, end in zip(sizes, ends)]


# The requests of the last gloo ring pass, dropped only when the next pass ends. Dropping a gloo
# request frees its buffer, and gloo makes the freeing thread spin until its I/O thread has let
# go of that buffer; right after a pass the I/O thread often has not run yet, and on a busy
# machine the spin lasts a scheduler tick (milliseconds, more than a whole small all-reduce).
_last_requests: list[Request] = []


class ReceivesUpFront:
    """Gloo: the first send and every receive of the pass posted at once; each later send once its data is in."""

    def __init__(self, steps: Sequence[RingStep], right: int, left: int, group: dist.ProcessGroup | None) -> None:
        self.steps, self.right, self.group = steps, right, group
        spares = iter(_spares([s.recv_into for s in steps if s.accumulate]))
        self.buffers = [_segments(next(spares) if s.accumulate else s.recv_into) for s in steps]
        # the first send goes out before the receives are posted: the right neighbour waits for it
        self.sent: list[Request] = [dist.isend(seg, right, group) for seg in _segments(steps[0].send)] if steps else []
        self.received = [[dist.irecv(buf, left, group) for buf in bufs] for bufs in self.buffers]

    def start(self, i: int) -> None:
        if i > 0:  # step 0's send went out with the receives
            self.sent += [dist.isend(seg, self.right, self.group) for seg in _segments(self.steps[i].send)]

    def arrivals(self, i: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for target, buf, request in zip(_segments(self.steps[i].recv_into), self.buffers[i], self.received[i]):
            if request is not None:
                request.wait()  # later segments are still on the wire
            yield target, buf

    def finish(self) -> None:
        _wait(self.sent)
        _last_requests[:] = self.sent + [r for requests in self.received for r in requests]  # see _last_requests


class BatchPerStep:
    """NCCL: each step's receive and send posted together, as one ``batch_isend_irecv``, when the step starts."""

    def __init__(self, steps: Sequence[RingStep], right: int, left: int, group: dist.ProcessGroup | None) -> None:
        self.steps, self.right, self.left, self.group = steps, right, left, group
        self.incoming: list[torch.Tensor] = []
        self.requests: list[dist.Work] = []

    def start(self, i: int) -> None:
        step = self.steps[i]
        self.incoming = [torch.empty_like(s) for s in _segments(step.recv_into)] if step.accumulate \
            else _segments(step.recv_into)
        ops = [dist.P2POp(dist.irecv, buf, self.left, self.group) for buf in self.incoming]
        ops += [dist.P2POp(dist.isend, seg, self.right, self.group) for seg in _segments(step.send.contiguous())]
        # one batch: NCCL runs it as a single group call, so the two neighbours cannot deadlock
        self.requests = dist.batch_isend_irecv(ops) if ops else []

    def arrivals(self, i: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for buf, target, request in zip(self.incoming, _segments(self.steps[i].recv_into), self.requests):
            request.wait()
            yield target, buf
        _wait(self.requests[len(self.incoming):])  # this step's sends, before the next step starts

    def finish(self) -> None:
        pass  # every step waited for its own sends


def ring_messages(steps: Sequence[RingStep], rank: int, world: int,
                  group: dist.ProcessGroup | None = None) -> ReceivesUpFront | BatchPerStep:
    """The messages of a ring pass of ``steps`` on ``rank`` of ``group`` (None: all), posted as its backend needs."""
    right, left = (rank + 1) % world, (rank - 1) % world
    if group is not None:  # send and recv take global ranks
        right, left = dist.get_global_rank(group, right), dist.get_global_rank(group, left)
    posting = BatchPerStep if dist.get_backend(group) in BATCHED_BACKENDS else ReceivesUpFront
    return posting(steps, right, left, group)
