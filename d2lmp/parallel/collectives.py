"""Collectives built from point-to-point send/recv, and how to measure them like nccl-tests.

All functions run inside a rank (see ``launch``) and sum, like ``dist.all_reduce``'s
default. Tensors of any size work, including sizes not divisible by the world size and a
single element: a tensor is cut into ``world_size`` chunks with ``torch.tensor_split``
(the first chunks one element longer; some may be empty).

Cost per rank for S bytes on n ranks, with latency α per message and β seconds per byte:
    naive (reduce to rank 0, then broadcast):  2(n-1)·(α + S·β) on rank 0, the bottleneck
    tree (binary, reduce then broadcast):       2⌈log2 n⌉·(α + S·β)
    ring (reduce-scatter, then all-gather):     2(n-1)·(α + S/n·β)
so the ring moves the least data per rank for large S, the tree has the fewest steps.
The ring's steps are the algorithm (``ring_pass``); how their messages are posted under each backend (big
chunks cut into segments, gloo's receives posted up front, NCCL's batches) is ``ring_messages``'s job.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.distributed import ProcessGroup

from d2lmp.model.alpha_beta import bus_bandwidth
from d2lmp.model.collective_schedules import RING_PHASES, ring_send_chunk, tree_schedule
from d2lmp.parallel.all_to_all import all_to_all, torch_all_to_all_flat
from d2lmp.parallel.launch import rank_device
from d2lmp.parallel.ring_messages import RingStep, ring_messages

__all__ = ["global_rank", "ring_pass", "ring_all_reduce",
           "ring_reduce_scatter", "ring_all_gather", "naive_all_reduce",
           "tree_all_reduce", "all_to_all", "CollectiveTiming", "measure_collective"]


def global_rank(group: ProcessGroup | None, group_rank: int) -> int:
    """The global rank of ``group_rank`` in ``group`` (None: the default group), as send/recv/P2POp need."""
    return group_rank if group is None else dist.get_global_rank(group, group_rank)


def _chunks(flat: torch.Tensor, world: int) -> list[torch.Tensor]:
    return list(torch.tensor_split(flat, world))


def ring_pass(chunks: list[torch.Tensor], rank: int, world: int, phases: Sequence[str] = RING_PHASES,
              group: ProcessGroup | None = None) -> None:
    """In place, the steps of ``phases`` from ``ring_schedule``. After "reduce-scatter", ``chunks[rank]`` holds
    the sum over ranks of everyone's chunk ``rank``; "all-gather" copies rank r's ``chunks[r]`` to everyone.

    In each step a rank sends one chunk to its right neighbour and receives one from its left, which it adds
    to its own copy (reduce-scatter) or keeps (all-gather). How the messages are posted is the backend's
    business (``ring_messages``: gloo's receives up front, NCCL's one batch per step); this loop is the same.
    """
    steps = [RingStep(send=chunks[ring_send_chunk(phase, step, rank, world)],          # what this rank sends
                      recv_into=chunks[ring_send_chunk(phase, step, rank - 1, world)],  # what its left one sends
                      accumulate=phase == "reduce-scatter")                             # add it, or keep it
             for phase in phases for step in range(world - 1)]
    messages = ring_messages(steps, rank, world, group)
    for i, step in enumerate(steps):
        messages.start(i)  # send this step's chunk to the right neighbour
        for target, incoming in messages.arrivals(i):  # the left neighbour's chunk, a segment at a time
            if step.accumulate:
                target += incoming  # while this segment is added, the next ones are still on the wire
    messages.finish()


def ring_all_reduce(tensor: torch.Tensor, group: ProcessGroup | None = None) -> torch.Tensor:
    """Sum ``tensor`` over the ranks of ``group`` (None: all) in place: ring reduce-scatter, then ring all-gather."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    flat = tensor.view(-1) if tensor.is_contiguous() else tensor.reshape(-1).clone()
    ring_pass(_chunks(flat, world), rank, world, RING_PHASES, group)  # all-gather's receives posted with the rest
    if flat.data_ptr() != tensor.data_ptr():
        tensor.copy_(flat.view_as(tensor))
    return tensor


def ring_reduce_scatter(tensor: torch.Tensor, group: ProcessGroup | None = None) -> torch.Tensor:
    """This rank's chunk of the sum over ranks: ``torch.tensor_split(sum.flatten(), n)[rank]``.

    ``tensor`` is left unchanged. Equal to ``dist.reduce_scatter_tensor`` when the size divides.
    Over ``group``'s ranks (None: all), ``rank`` being the rank in the group.
    """
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    chunks = _chunks(tensor.detach().reshape(-1).clone(), world)
    ring_pass(chunks, rank, world, ("reduce-scatter",), group)
    return chunks[rank]


def ring_all_gather(tensor: torch.Tensor, group: ProcessGroup | None = None) -> torch.Tensor:
    """Every rank's ``tensor`` stacked in rank order: shape (world_size, *tensor.shape), like ``dist.all_gather``.

    Over ``group``'s ranks (None: all), in their order in the group.
    """
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    out = torch.empty((world, *tensor.shape), dtype=tensor.dtype, device=tensor.device)
    out[rank] = tensor
    ring_pass(list(out.view(world, -1)), rank, world, ("all-gather",), group)
    return out


def naive_all_reduce(tensor: torch.Tensor, group: ProcessGroup | None = None) -> torch.Tensor:
    """Sum in place by sending everything to rank 0 (of ``group``), which adds and sends the total back to each rank."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    if rank == 0:
        incoming = torch.empty_like(tensor)
        for src in range(1, world):
            dist.recv(incoming, global_rank(group, src), group)
            tensor += incoming
        for dst in range(1, world):
            dist.send(tensor, global_rank(group, dst), group)
    else:
        dist.send(tensor, global_rank(group, 0), group)
        dist.recv(tensor, global_rank(group, 0), group)
    return tensor


def tree_all_reduce(tensor: torch.Tensor, group: ProcessGroup | None = None) -> torch.Tensor:
    """Sum in place along a binary tree: partial sums flow to rank 0 (of ``group``) in ⌈log2 n⌉ rounds, then back down.

    Every message carries the whole tensor (this tree is not pipelined).
    """
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    incoming = torch.empty_like(tensor)
    for messages in tree_schedule(world):
        for src, dst, phase in messages:
            if rank == src:
                dist.send(tensor, global_rank(group, dst), group)
            elif rank == dst and phase == "reduce":
                dist.recv(incoming, global_rank(group, src), group)
                tensor += incoming
            elif rank == dst:
                dist.recv(tensor, global_rank(group, src), group)
    return tensor


# ---------------------------------------------------------------------------------------
# Measuring like nccl-tests

def _collective_call(name: str, impl: str, tensor: torch.Tensor) -> Callable[[], object]:
    world = dist.get_world_size()
    ours = {"ring": ring_all_reduce, "naive": naive_all_reduce, "tree": tree_all_reduce}
    if name == "all_reduce":
        if impl == "torch":
            return lambda: dist.all_reduce(tensor)
        if impl in ours:
            return lambda: ours[impl](tensor)
    elif name == "all_gather":
        chunk = tensor[: tensor.numel() // world]
        if impl == "torch":
            outs = [torch.empty_like(chunk) for _ in range(world)]
            return lambda: dist.all_gather(outs, chunk)
        if impl == "ring":
            return lambda: ring_all_gather(chunk)
    elif name == "reduce_scatter":
        if impl == "ring":
            return lambda: ring_reduce_scatter(tensor)
    elif name == "broadcast":
        if impl == "torch":
            return lambda: dist.broadcast(tensor, 0)
    elif name == "all_to_all":  # equal blocks of numel // world elements, one per rank, into buffers made once
        flat = tensor[: tensor.numel() // world * world]
        received, blocks = torch.empty_like(flat), list(flat.view(world, -1))
        if impl == "torch":  # all_to_all_single: the flat form, which takes uneven splits (gloo's all_to_all does not)
            return lambda: dist.all_to_all_single(received, flat)
        if impl == "pairwise":
            outs = list(received.view(world, -1))
            return lambda: all_to_all(blocks, out=outs)
        if impl == "torch+sizes":  # as if the sizes were unknown: exchange them, allocate, send
            return lambda: torch_all_to_all_flat(flat, [len(blocks[0])] * world)
        if impl == "pairwise+sizes":
            return lambda: all_to_all(blocks)
    raise ValueError(f"no implementation {impl!r} of {name!r}")


@dataclass(frozen=True)
class CollectiveTiming:
    """One size of ``measure_collective``: S bytes took ``seconds`` on ``world`` ranks, as nccl-tests reports it.

    algbw = S / seconds; busbw = algbw × the collective's bus factor (2(n-1)/n for all-reduce).
    """

    collective: str
    impl: str
    world: int
    size_bytes: int
    seconds: float
    algbw_gbs: float
    busbw_gbs: float


def measure_collective(name: str = "all_reduce", impl: str = "torch", sizes_bytes: Sequence[int] = (1024, 2**20),
                       repeats: int = 5, min_time: float = 0.05, device: str = "auto") -> list[CollectiveTiming]:
    """Time a collective at each size on the current group, like nccl-tests.

    Call on every rank. ``impl`` is "torch" (the backend's own) or one of ours ("ring",
    "naive", "tree"). ``device`` "auto" is the rank's GPU under NCCL, else the CPU. Each
    call is timed on its own and a size's time is the median call, taken as the slowest rank's:
    on shared CPUs a few calls wait a whole scheduler tick (milliseconds), and a mean over a
    block would report that tail instead of the typical call. S is the tensor's bytes (for
    all_gather, the gathered total: each rank contributes ``numel // world`` elements, so S is
    that times ``world`` times 4 bytes; for all_to_all, every block a rank sends, itself included,
    ``numel // world`` elements each; for reduce_scatter, the full input). Our all_to_all is "pairwise";
    "torch+sizes" and "pairwise+sizes" also exchange the sizes, as an all-to-all of unknown sizes must. Returns one
    ``CollectiveTiming`` per size.
    """
    world = dist.get_world_size()
    rows: list[CollectiveTiming] = []
    for size in sizes_bytes:
        if size < 4 * world:
            raise ValueError(f"size {size} B is too small for {world} ranks of float32 (need >= {4 * world})")
        dev = rank_device(device)
        tensor = torch.ones(size // 4, device=dev)
        fn = _collective_call(name, impl, tensor)
        fn()  # warm-up
        calls = _calls_per_block(fn, min_time / repeats, dev)
        samples: list[float] = []
        for _ in range(repeats):
            dist.barrier()
            for _ in range(calls):
                start = time.perf_counter()
                fn()
                if dev.type == "cuda":
                    torch.cuda.synchronize(dev)  # NCCL calls return before the GPU has finished
                samples.append(time.perf_counter() - start)
        slowest = torch.tensor([statistics.median(samples)], dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        seconds = slowest.item()
        # all_gather gathers world chunks of numel // world elements: fewer than the tensor when that does not divide
        blocks = name in ("all_gather", "all_to_all")
        nbytes = (tensor.numel() // world) * world * 4 if blocks else tensor.numel() * 4
        algbw = nbytes / seconds / 1e9
        rows.append(CollectiveTiming(name, impl, world, nbytes, seconds, algbw, bus_bandwidth(algbw, name, world)))
    return rows


def _calls_per_block(fn: Callable[[], object], block_seconds: float, dev: torch.device) -> int:
    """Double the number of calls until one block takes ``block_seconds`` on the slowest rank.

    One timed call is not enough: a block of a few calls also times how far apart the ranks left
    the barrier. Every rank must make the same number of calls, or they deadlock, so the decision
    uses the slowest rank's time, which all ranks share.
    """
    calls = 1
    while True:
        dist.barrier()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        if elapsed.item() >= block_seconds or calls >= 2**20:
            return calls
        calls *= 2
