"""All-to-all from point-to-point send/recv: every rank sends a different block to every other rank.

Rank r holds ``world`` blocks, one per destination, and ends with the ``world`` blocks addressed
to it, one from each source, in rank order: block d of rank s becomes block s of rank d (a
transpose of the ranks × blocks grid). Blocks may differ in their first dimension (an expert
parallel layer sends each rank as many tokens as were routed there), so each rank first tells
every other rank how many rows to expect, then sends the rows. Cost per rank for S bytes on n
ranks, with latency α per message and β seconds per byte: (n-1)·α + (n-1)/n·S·β, every message
in flight at once, each rank sending and receiving (n-1)/n of its data. ``collectives.all_to_all``
is this module's ``all_to_all``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import torch
import torch.distributed as dist
from torch.distributed import all_gather_object as _all_gather_object
from torch.distributed import all_reduce as _all_reduce

from d2lmp.parallel.agreement import agree

__all__ = ["all_to_all", "all_to_all_sizes", "check_planned_sizes", "exchange_order", "torch_all_to_all_flat",
           "torch_all_to_all", "torch_all_to_all_equal"]

_PRIME = 2**31 - 1  # the size check's sums are taken modulo this prime

# The requests of the last exchange, dropped only when the next one ends: dropping a gloo request
# right after it completes can spin until gloo's I/O thread lets go of its buffer (see
# ``ring_messages._last_requests``, the ring's list for the same reason).
_last_exchange: list[dist.Work] = []


def _post(sends: Sequence[tuple[int, torch.Tensor]], recvs: Sequence[tuple[int, torch.Tensor]],
          group: dist.ProcessGroup | None) -> list[dist.Work]:
    """Post a send of every (peer, tensor) of ``sends`` and a receive of every (peer, buffer) of ``recvs``, all at once.

    Peers are ranks in ``group``. A message of no elements is skipped on both sides (both know its
    size). Gloo moves a message only once its receiver has posted the receive, so every receive is
    posted before the first send, as the ring does; NCCL gets all of them in one
    ``batch_isend_irecv``, one group call, so no two ranks wait for each other's send.
    """
    def peer(p: int) -> int:
        return p if group is None else dist.get_global_rank(group, p)

    sends = [(peer(p), t) for p, t in sends if t.numel()]
    recvs = [(peer(p), t) for p, t in recvs if t.numel()]
    if dist.get_backend(group) == "nccl":
        ops = [dist.P2POp(dist.irecv, t, p, group) for p, t in recvs]
        ops += [dist.P2POp(dist.isend, t, p, group) for p, t in sends]
        return dist.batch_isend_irecv(ops) if ops else []
    requests = [dist.irecv(t, p, group) for p, t in recvs] + [dist.isend(t, p, group) for p, t in sends]
    return [r for r in requests if r is not None]  # None only on a rank outside the group


def _wait(requests: list[dist.Work]) -> None:
    """Wait for every request, and keep them until the next exchange ends (see ``_last_exchange``)."""
    for request in requests:
        request.wait()
    _last_exchange[:] = requests


def exchange_order(rank: int, world: int) -> list[tuple[int, int]]:
    """(destination, source) pairs, one per other rank: at offset k send to rank + k, receive from rank - k.

    Every rank starts with a different peer, so no rank is everyone's first destination.
    """
    return [((rank + k) % world, (rank - k) % world) for k in range(1, world)]


def all_to_all_sizes(send_sizes: Sequence[int], group: dist.ProcessGroup | None = None,
                     device: torch.device | str = "cpu") -> list[int]:
    """How many rows each rank of ``group`` sends here, given how many this one sends each: an all-to-all of counts."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    mine = torch.tensor(list(send_sizes), dtype=torch.int64, device=device).view(world, 1)
    theirs = torch.empty_like(mine)
    theirs[rank] = mine[rank]
    order = exchange_order(rank, world)
    _wait(_post([(dst, mine[dst]) for dst, _ in order], [(src, theirs[src]) for _, src in order], group))
    return [int(n) for n in theirs.view(-1).tolist()]


def _size_term(source: int, destination: int, rows: int) -> int:
    """A 31-bit digest of "``source`` sends ``rows`` rows to ``destination``"."""
    digest = hashlib.blake2b(f"{source}>{destination}:{rows}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "little") % _PRIME


def check_planned_sizes(send_sizes: Sequence[int], output_sizes: Sequence[int],
                        group: dist.ProcessGroup | None = None, device: torch.device | str = "cpu") -> None:
    """Return when every rank of ``group`` expects from each other rank as many rows as that one sends it; else raise
    the same ``ValueError`` on every rank, naming each pair that disagrees. Every rank of ``group`` must call it.

    Rank r knows row r of the sizes matrix (what it sends) and column r (what it expects). Each rank adds a digest
    of every entry it sends and subtracts one of every entry it expects; the sum over the ranks (one all-reduce of
    one integer, not counted by the traffic log) is 0 modulo a prime when the two views of the matrix agree. Only
    then the real counts are exchanged, to name the pairs. Without it, a receiver expecting fewer rows than are
    sent aborts inside gloo (SIGABRT), and one expecting more waits until the timeout."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    if world == 1:
        return
    sent = sum(_size_term(rank, d, n) for d, n in enumerate(send_sizes))
    expected = sum(_size_term(s, rank, n) for s, n in enumerate(output_sizes))
    balance = torch.tensor([(sent - expected) % _PRIME], dtype=torch.int64, device=device)
    _all_reduce(balance, group=group)
    if int(balance.item()) % _PRIME == 0:
        return
    arriving = all_to_all_sizes(send_sizes, group, device)
    mine = [f"rank {s} sends {a} rows to rank {rank}, which expects {e}"
            for s, (a, e) in enumerate(zip(arriving, output_sizes)) if a != e]
    everyone: list[list[str] | None] = [None] * world
    _all_gather_object(everyone, mine, group=group)
    pairs = "; ".join(line for lines in everyone for line in lines or [])
    raise ValueError(f"all_to_all: the receive sizes given do not match what the ranks send ({pairs})")


def _check_inputs(inputs: Sequence[torch.Tensor], world: int) -> None:
    if len(inputs) != world:
        raise ValueError(f"all_to_all needs one tensor per rank: got {len(inputs)} for {world} ranks")
    first = inputs[0]
    for d, t in enumerate(inputs):
        if t.dim() == 0:
            raise ValueError(f"all_to_all sends blocks of rows: input {d} is a 0-dimensional tensor")
        if t.shape[1:] != first.shape[1:] or t.dtype != first.dtype or t.device != first.device:
            raise ValueError(f"input {d} is {t.dtype} {tuple(t.shape)} on {t.device}, input 0 is {first.dtype} "
                             f"{tuple(first.shape)} on {first.device}: only the first dimension may differ")


def _check_outputs(out: Sequence[torch.Tensor], inputs: Sequence[torch.Tensor], rank: int) -> None:
    first = inputs[0]
    for s, o in enumerate(out):
        if o.shape[1:] != first.shape[1:] or o.dtype != first.dtype or o.device != first.device:
            raise ValueError(f"out[{s}] is {o.dtype} {tuple(o.shape)} on {o.device}: it must hold rows of the inputs' "
                             f"{first.dtype} {tuple(first.shape[1:])} on {first.device}")
        if not o.is_contiguous():
            raise ValueError(f"out[{s}] must be contiguous: messages are received into it as they are")
    if len(out) != len(inputs) or out[rank].shape[0] != inputs[rank].shape[0]:
        raise ValueError(f"out must give {len(inputs)} blocks, with {inputs[rank].shape[0]} rows (this rank's block "
                         f"to itself) at index {rank}; got {[o.shape[0] for o in out]}")


def _receive_sizes(inputs: Sequence[torch.Tensor], output_sizes: Sequence[int] | None,
                   out: Sequence[torch.Tensor] | None, group: dist.ProcessGroup | None) -> Sequence[int]:
    """How many rows arrive from each rank: ``out``'s buffer sizes or ``output_sizes``, checked against what the
    ranks send (``check_planned_sizes``), else the senders' own counts (``all_to_all_sizes``)."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    sending = [t.shape[0] for t in inputs]  # shape[0]: len() of a tensor costs microseconds
    if out is not None:
        _check_outputs(out, inputs, rank)
        output_sizes = [o.shape[0] for o in out]
    if output_sizes is None:
        return all_to_all_sizes(sending, group, inputs[0].device)
    if len(output_sizes) != world or output_sizes[rank] != inputs[rank].shape[0]:
        raise ValueError(f"output_sizes {list(output_sizes)} must give {world} sizes, with "
                         f"{inputs[rank].shape[0]} (this rank's block to itself) at index {rank}")
    check_planned_sizes(sending, output_sizes, group, inputs[0].device)
    return output_sizes


def all_to_all(inputs: Sequence[torch.Tensor], group: dist.ProcessGroup | None = None,
               output_sizes: Sequence[int] | None = None,
               out: Sequence[torch.Tensor] | None = None) -> list[torch.Tensor]:
    """Send ``inputs[d]`` to rank d of ``group`` (None: all ranks); return the block each rank sent here, in rank order.

    ``inputs``: one tensor per rank, of one dtype, device and trailing shape (on every rank); first dimensions
    may differ. Equal to ``dist.all_to_all`` (equal blocks) and ``dist.all_to_all_single`` with split sizes.
    Received sizes are exchanged first unless the caller knows them: ``output_sizes`` (an expert-parallel
    layer knows them from its routing counts), or ``out``, one buffer per source to receive into and return
    (reused buffers save allocating, and the page faults of fresh memory, on every call). Sizes the caller gives
    are checked against what the ranks send (``check_planned_sizes``: one all-reduce of one integer).
    """
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    _check_inputs(inputs, world)
    agree("all_to_all", group, rows=tuple(inputs[0].shape[1:]), dtype=inputs[0].dtype)  # all but the row counts
    output_sizes = _receive_sizes(inputs, output_sizes, out, group)
    rows = inputs[0].shape[1:]
    outputs = list(out) if out is not None else [inputs[0].new_empty((n, *rows)) for n in output_sizes]
    order = exchange_order(rank, world)
    requests = _post([(dst, inputs[dst].contiguous()) for dst, _ in order], [(src, outputs[src]) for _, src in order],
                     group)
    outputs[rank].copy_(inputs[rank])  # the block a rank keeps never leaves it: copied while the others travel
    _wait(requests)
    return outputs


def torch_all_to_all_flat(flat: torch.Tensor, send_sizes: Sequence[int],
                         group: dist.ProcessGroup | None = None) -> tuple[torch.Tensor, list[int]]:
    """torch's own all-to-all of the rows of ``flat``, ``send_sizes[d]`` of them to rank d, when the receivers do not
    know how many to expect: the counts, then the rows, each by ``dist.all_to_all_single``. Returns the rows
    received, in rank order, and how many came from each rank."""
    world = dist.get_world_size(group)
    if len(send_sizes) != world or sum(send_sizes) != len(flat):
        raise ValueError(f"send_sizes {list(send_sizes)} must give {world} sizes adding up to the {len(flat)} rows")
    sent = torch.tensor(list(send_sizes), dtype=torch.int64, device=flat.device)
    counts = torch.empty_like(sent)
    dist.all_to_all_single(counts, sent, group=group)
    sizes = counts.tolist()
    received = flat.new_empty((sum(sizes), *flat.shape[1:]))
    dist.all_to_all_single(received, flat, sizes, list(send_sizes), group=group)
    return received, sizes


def torch_all_to_all(inputs: Sequence[torch.Tensor], group: dist.ProcessGroup | None = None) -> list[torch.Tensor]:
    """``torch_all_to_all_flat`` of a list of blocks, the reference for ours where blocks differ in size
    (gloo's ``dist.all_to_all`` refuses blocks of different sizes)."""
    _check_inputs(inputs, dist.get_world_size(group))
    received, sizes = torch_all_to_all_flat(torch.cat(list(inputs)), [len(t) for t in inputs], group)
    return list(torch.split(received, sizes))


def torch_all_to_all_equal(inputs: Sequence[torch.Tensor], group: dist.ProcessGroup | None = None,
                           use_single: bool = False) -> list[torch.Tensor]:
    """torch's all-to-all of equal blocks, the reference for ours: ``dist.all_to_all``, or, where the backend lacks it
    (gloo before torch 2.12 raises "does not support alltoall") or ``use_single`` asks, the same exchange as one
    ``dist.all_to_all_single`` of the blocks laid end to end, which gloo has on every torch d2lmp supports."""
    _check_inputs(inputs, dist.get_world_size(group))
    if any(t.shape != inputs[0].shape for t in inputs):
        raise ValueError(f"equal blocks only: got shapes {[tuple(t.shape) for t in inputs]} (torch_all_to_all takes "
                         "uneven ones)")
    if not use_single:
        outputs = [torch.empty_like(t) for t in inputs]
        try:
            dist.all_to_all(outputs, [t.contiguous() for t in inputs], group=group)
            return outputs
        except RuntimeError as error:  # raised on every rank before anything is sent, so all fall back together
            if "does not support alltoall" not in str(error):
                raise
    flat = torch.cat([t.reshape(-1) for t in inputs])
    received = torch.empty_like(flat)
    dist.all_to_all_single(received, flat, group=group)
    return [block.view(inputs[0].shape) for block in received.chunk(len(inputs))]
