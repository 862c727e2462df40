"""The code exercises of notebook 12, checked on real gloo ranks: their numbers and their messages.

A naive all-gather, a ring reduce-scatter and a ring all-reduce (given with a bug) run on 2 and 3 ranks
on tensors of odd sizes (chunks of unequal length), each rank's input (i + 1)·10^rank so that a wrong sum
shows which ranks' contributions are missing. The result is compared with torch.distributed's own
collective computed on the same ranks; then the traffic the student's function issued on each rank
(``_code.logged``) must be the algorithm's: no library collective, and the messages of a ring (or of the
naive all-gather) with their bytes. So ``dist.all_reduce`` and a slice, right in every number, fails
with a message that says what was asked. Each checker's reference answer, typical mistakes and library
shortcuts are here; the questions are in ``nccl_collectives``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any, cast, no_type_check

import torch
import torch.distributed as dist

from d2lmp.exercises._code import Logged, code_checker, logged, no_collective, on_ranks, ring_only
from d2lmp.parallel.collectives import ring_all_gather

__all__ = ["my_all_gather", "gather_checker", "GATHER_WRONG", "my_reduce_scatter", "scatter_checker",
           "SCATTER_WRONG", "my_ring_all_reduce", "given_ring_all_reduce", "all_reduce_checker", "ALL_REDUCE_WRONG"]

SHAPES = {2: ((2, 3), (9,)), 3: ((7,), (2, 5))}  # odd sizes: chunks of unequal length
FROM_MESSAGES = "the ring built from point-to-point messages (dist.isend / dist.irecv, or send / recv)"


def _rank_tensor(rank: int, shape: tuple[int, ...]) -> torch.Tensor:
    """(i + 1)·10^rank: every subset of ranks gives a different sum."""
    n = math.prod(shape)
    values: torch.Tensor = torch.arange(1, n + 1, dtype=torch.float32) * 10**rank
    return values.reshape(shape)


def _chunk_bytes(shape: tuple[int, ...], world: int) -> list[int]:
    return [c.numel() * 4 for c in torch.tensor_split(torch.empty(math.prod(shape)), world)]


def _run(worker: Callable[..., Any], fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    """``worker`` on 2 and 3 ranks: (case, Logged, (expected, shape, rank, world)) for every rank and shape."""
    results = []
    for world in (2, 3):
        for rank, per_shape in enumerate(on_ranks(worker, world, fn)):
            for shape, run, expected in per_shape:
                results.append((f"{world} ranks, a tensor of shape {shape}, rank {rank}", run,
                                (expected, shape, rank, world)))
    return results


# --------------------------------------------------------------------------------------------
# A naive all-gather from send and receive


def my_all_gather(tensor: torch.Tensor) -> torch.Tensor:
    """Every rank's ``tensor`` stacked in rank order, shape (world, *tensor.shape), from isend/irecv."""
    rank, world = dist.get_rank(), dist.get_world_size()
    out = torch.empty((world, *tensor.shape), dtype=tensor.dtype)
    out[rank] = tensor
    requests = [dist.isend(tensor.contiguous(), peer) for peer in range(world) if peer != rank]
    requests += [dist.irecv(out[peer], peer) for peer in range(world) if peer != rank]
    for request in requests:
        request.wait()  # type: ignore[union-attr]  # isend/irecv return None only off the group
    return out


def _gather_worker(rank: int, world: int, fn: Callable[..., Any]) -> list[tuple[tuple[int, ...], Logged, torch.Tensor]]:
    results = []
    for shape in SHAPES[world]:
        mine = _rank_tensor(rank, shape)
        parts = [torch.empty_like(mine) for _ in range(world)]
        dist.all_gather(parts, mine)  # torch's own all-gather: the reference, outside the log
        results.append((shape, logged(fn, mine.clone()), torch.stack(parts)))
    return results


def _gather_judge(case: str, run: Logged, context: Any) -> str | None:
    expected, shape, rank, world = context
    got = run.result
    if not isinstance(got, torch.Tensor):
        return f"expected a tensor, got {type(got).__name__}"
    if got.shape != expected.shape:
        if got.numel() == expected.numel():
            return (f"your result has shape {tuple(got.shape)}: stack the ranks' tensors along a new first axis, "
                    f"shape {tuple(expected.shape)} = (world, *tensor.shape)")
        return f"your result has shape {tuple(got.shape)}, expected {tuple(expected.shape)} = (world, *tensor.shape)"
    if not torch.equal(got, expected):
        if all(torch.equal(got[r], expected[rank]) for r in range(world)):
            return "every row is this rank's own tensor: receive each peer's tensor into its own row"
        for order in itertools.permutations(range(world)):
            if torch.equal(got, expected[list(order)]):
                return f"the rows are not in rank order (you have ranks {list(order)}): row r must hold rank r's tensor"
        wrong = [r for r in range(world) if not torch.equal(got[r], expected[r])]
        return f"row(s) {wrong} do not hold those ranks' tensors"
    traffic = no_collective(run, "an all-gather built from point-to-point messages (dist.isend / dist.irecv)")
    peers = sorted(cast(int, m.peer) for m in run.sends)  # a message always has a peer
    size = math.prod(shape) * 4
    if traffic is None and (peers != [p for p in range(world) if p != rank] or any(m.nbytes != size
                                                                                    for m in run.sends)):
        traffic = (f"rank {rank} sent {len(peers)} message(s), to rank(s) {peers}; the naive all-gather sends its "
                   f"tensor ({size} bytes) once to each of the other {world - 1} rank(s), directly")
    return traffic


def _gather_own_only(tensor: torch.Tensor) -> torch.Tensor:
    return torch.stack([tensor] * dist.get_world_size())


def _gather_concatenated(tensor: torch.Tensor) -> torch.Tensor:
    return my_all_gather(tensor).reshape(-1)


def _gather_library(tensor: torch.Tensor) -> torch.Tensor:
    parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, tensor)
    return torch.stack(parts)


def _gather_by_ring(tensor: torch.Tensor) -> torch.Tensor:
    return ring_all_gather(tensor)


gather_checker = code_checker(lambda fn: _run(_gather_worker, fn), _gather_judge,
                              "on 2 and 3 ranks your all-gather equals dist.all_gather, and each rank sent its tensor "
                              "once to every other rank.")
GATHER_WRONG = [(_gather_own_only, "every row is this rank's own tensor"), (_gather_concatenated, "stack the ranks"),
                (_gather_library, "your function called dist.all_gather"), (_gather_by_ring, "once to each")]


# --------------------------------------------------------------------------------------------
# The ring's first half: reduce-scatter from send and receive


def my_reduce_scatter(tensor: torch.Tensor) -> torch.Tensor:
    """This rank's chunk of the sum over ranks, ``torch.tensor_split(sum.flatten(), world)[rank]``, by a ring."""
    rank, world = dist.get_rank(), dist.get_world_size()
    chunks = [c.clone() for c in torch.tensor_split(tensor.flatten(), world)]
    right, left = (rank + 1) % world, (rank - 1) % world
    for step in range(world - 1):
        send_i, recv_i = (rank - step - 1) % world, (rank - step - 2) % world
        incoming = torch.empty_like(chunks[recv_i])
        requests = [dist.isend(chunks[send_i], right), dist.irecv(incoming, left)]
        for request in requests:
            request.wait()  # type: ignore[union-attr]  # isend/irecv return None only off the group
        chunks[recv_i] += incoming  # after the last step chunk `rank` holds every rank's contribution
    return chunks[rank]


def _scatter_worker(rank: int, world: int,
                    fn: Callable[..., Any]) -> list[tuple[tuple[int, ...], Logged, torch.Tensor]]:
    results = []
    for shape in SHAPES[world]:
        mine = _rank_tensor(rank, shape)
        total = mine.clone()
        dist.all_reduce(total)  # torch's own sum, cut like a reduce-scatter (gloo's refuses unequal chunks)
        expected = torch.tensor_split(total.flatten(), world)[rank]
        results.append((shape, logged(fn, mine.clone()), expected))
    return results


def _partial_sum_reason(got: torch.Tensor, shape: tuple[int, ...], rank: int, world: int, whole: bool) -> str | None:
    """Which ranks' contributions ``got`` (this rank's chunk, or the whole tensor) lacks, if it is a partial sum."""
    for size in range(1, world):
        for subset in itertools.combinations(range(world), size):
            partial = cast(torch.Tensor, sum(_rank_tensor(r, shape) for r in subset)).flatten()
            partial = partial if whole else torch.tensor_split(partial, world)[rank]
            if got.shape == partial.shape and torch.equal(got, partial):
                missing = [r for r in range(world) if r not in subset]
                if subset == (rank,):
                    return ("your chunk holds only this rank's own values: nothing from the other ranks was added "
                            f"to chunk {rank} (check which chunk receives the incoming data in each step, and that "
                            f"the ring runs n − 1 = {world - 1} step(s))")
                return (f"your chunk lacks the contribution of rank(s) {missing}: a ring needs n − 1 = {world - 1} "
                        "steps, each adding the chunk received from the left neighbour")
    return None


def _scatter_judge(case: str, run: Logged, context: Any) -> str | None:
    expected, shape, rank, world = context
    got = run.result
    if not isinstance(got, torch.Tensor):
        return f"expected a tensor, got {type(got).__name__}"
    if not (got.shape == expected.shape and torch.equal(got, expected)):
        total = cast(torch.Tensor, sum(_rank_tensor(r, shape) for r in range(world))).flatten()
        if got.numel() == total.numel() and torch.equal(got.flatten(), total):
            return "you returned the whole sum: a reduce-scatter leaves each rank only its own chunk, number `rank`"
        for j, chunk in enumerate(torch.tensor_split(total, world)):
            if j != rank and got.shape == chunk.shape and torch.equal(got, chunk):
                return (f"you returned the sum of chunk {j}, not of chunk {rank}: after n − 1 ring steps each rank "
                        "completes a different chunk; shift your chunk indices so that rank r ends with chunk r")
        partial = _partial_sum_reason(got, shape, rank, world, whole=False)
        if partial:
            return partial
        if got.shape != expected.shape:
            return f"your result has shape {tuple(got.shape)}, expected {tuple(expected.shape)} (this rank's chunk)"
        return "your chunk's values are not the sum of that chunk over the ranks"
    chunks = _chunk_bytes(shape, world)
    return no_collective(run, FROM_MESSAGES) or ring_only(
        run, rank, world, world - 1, sum(chunks) - chunks[rank],
        "a ring reduce-scatter (n − 1 steps of one chunk each: every chunk but its own)")


def _scatter_whole_sum(tensor: torch.Tensor) -> torch.Tensor:
    total = tensor.flatten().clone()
    dist.all_reduce(total)
    return total


def _scatter_one_step(tensor: torch.Tensor) -> torch.Tensor:
    """Stops after one ring step: on 3 ranks one contribution is missing."""
    rank, world = dist.get_rank(), dist.get_world_size()
    chunks = [c.clone() for c in torch.tensor_split(tensor.flatten(), world)]
    send_i, recv_i = (rank - 1) % world, (rank - 2) % world
    incoming = torch.empty_like(chunks[recv_i])
    requests = [dist.isend(chunks[send_i], (rank + 1) % world), dist.irecv(incoming, (rank - 1) % world)]
    for request in requests:
        request.wait()  # type: ignore[union-attr]  # isend/irecv return None only off the group
    chunks[recv_i] += incoming
    return chunks[rank]


def _scatter_library(tensor: torch.Tensor) -> torch.Tensor:
    total = tensor.flatten().clone()
    dist.all_reduce(total)
    return torch.tensor_split(total, dist.get_world_size())[dist.get_rank()]


def _scatter_direct(tensor: torch.Tensor) -> torch.Tensor:
    """Right numbers, not a ring: each rank sends chunk j straight to rank j and adds what it gets."""
    rank, world = dist.get_rank(), dist.get_world_size()
    chunks = torch.tensor_split(tensor.flatten(), world)
    incoming = [torch.empty_like(chunks[rank]) for _ in range(world)]
    requests = [dist.isend(chunks[j].contiguous(), j) for j in range(world) if j != rank]
    requests += [dist.irecv(incoming[j], j) for j in range(world) if j != rank]
    for request in requests:
        request.wait()  # type: ignore[union-attr]  # isend/irecv return None only off the group
    return chunks[rank] + sum(incoming[j] for j in range(world) if j != rank)


scatter_checker = code_checker(lambda fn: _run(_scatter_worker, fn), _scatter_judge,
                               "on 2 and 3 ranks, with unequal chunks, your ring reduce-scatter equals torch's sum, "
                               "and each rank sent n − 1 chunks to its right neighbour only.")
SCATTER_WRONG = [(_scatter_whole_sum, "you returned the whole sum"), (_scatter_one_step, "only this rank's own values"),
                 (_scatter_library, "your function called dist.all_reduce"), (_scatter_direct, "in a ring each rank")]


# --------------------------------------------------------------------------------------------
# Find the bug: a ring all-reduce whose all-gather starts from the wrong chunk


@no_type_check  # shown to the student as written, where torch types each request as Work | None
def given_ring_all_reduce(tensor: torch.Tensor) -> torch.Tensor:
    """The sum of ``tensor`` over the ranks, by a ring: n − 1 steps of reduce-scatter, then n − 1 of all-gather."""
    rank, world = dist.get_rank(), dist.get_world_size()
    chunks = list(torch.tensor_split(tensor.flatten().clone(), world))
    right, left = (rank + 1) % world, (rank - 1) % world
    for phase in ("reduce-scatter", "all-gather"):
        for step in range(world - 1):
            send_i = (rank - step - 1) % world  # the chunk this rank sends on
            recv_i = (send_i - 1) % world  # the chunk its left neighbour sends
            incoming = torch.empty_like(chunks[recv_i])
            requests = [dist.isend(chunks[send_i], right), dist.irecv(incoming, left)]
            for request in requests:
                request.wait()
            if phase == "reduce-scatter":
                chunks[recv_i] += incoming
            else:
                chunks[recv_i] = incoming
    return torch.cat(chunks).view_as(tensor)


def my_ring_all_reduce(tensor: torch.Tensor) -> torch.Tensor:
    """The sum of ``tensor`` over the ranks, by a ring: n − 1 steps of reduce-scatter, then n − 1 of all-gather."""
    rank, world = dist.get_rank(), dist.get_world_size()
    chunks = list(torch.tensor_split(tensor.flatten().clone(), world))
    right, left = (rank + 1) % world, (rank - 1) % world
    for phase in ("reduce-scatter", "all-gather"):
        for step in range(world - 1):
            # Reduce-scatter ends with chunk `rank` complete here, so the all-gather starts by sending it.
            send_i = (rank - step - (1 if phase == "reduce-scatter" else 0)) % world
            recv_i = (send_i - 1) % world  # the chunk its left neighbour sends
            incoming = torch.empty_like(chunks[recv_i])
            requests = [dist.isend(chunks[send_i], right), dist.irecv(incoming, left)]
            for request in requests:
                request.wait()  # type: ignore[union-attr]  # isend/irecv return None only off the group
            if phase == "reduce-scatter":
                chunks[recv_i] += incoming
            else:
                chunks[recv_i] = incoming
    return torch.cat(chunks).view_as(tensor)


def _all_reduce_worker(rank: int, world: int,
                       fn: Callable[..., Any]) -> list[tuple[tuple[int, ...], Logged, torch.Tensor]]:
    results = []
    for shape in SHAPES[world]:
        mine = _rank_tensor(rank, shape)
        total = mine.clone()
        dist.all_reduce(total)  # torch's own all-reduce: the reference, outside the log
        results.append((shape, logged(fn, mine.clone()), total))
    return results


def _all_reduce_judge(case: str, run: Logged, context: Any) -> str | None:
    expected, shape, rank, world = context
    got = run.result
    if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
        return f"expected a tensor of shape {tuple(expected.shape)}, like the input, got {getattr(got, 'shape', got)}"
    if not torch.equal(got, expected):
        parts = zip(torch.tensor_split(got.flatten(), world), torch.tensor_split(expected.flatten(), world))
        wrong = [j for j, (a, b) in enumerate(parts) if not torch.equal(a, b)]
        return (f"chunk(s) {wrong} are not the sum over the ranks (compare with dist.all_reduce): after the "
                "reduce-scatter rank r holds the complete chunk r, and the all-gather must pass on complete chunks, "
                "starting with that one")
    chunks = _chunk_bytes(shape, world)
    return no_collective(run, FROM_MESSAGES) or ring_only(
        run, rank, world, 2 * (world - 1), 2 * sum(chunks) - chunks[rank] - chunks[(rank + 1) % world],
        "a ring all-reduce (2(n − 1) steps of one chunk each)")


def _all_reduce_library(tensor: torch.Tensor) -> torch.Tensor:
    total = tensor.clone()
    dist.all_reduce(total)
    return total


def _all_reduce_copy_of_given(tensor: torch.Tensor) -> torch.Tensor:
    """The given function called through another: it runs on the ranks, so the check explains its result."""
    result: torch.Tensor = given_ring_all_reduce(tensor)
    return result


all_reduce_checker = code_checker(lambda fn: _run(_all_reduce_worker, fn), _all_reduce_judge,
                                  "on 2 and 3 ranks, with unequal chunks, your ring all-reduce equals dist.all_reduce, "
                                  "in 2(n − 1) messages to the right neighbour.")
ALL_REDUCE_WRONG = [(_all_reduce_copy_of_given, "are not the sum over the ranks"),
                    (_all_reduce_library, "your function called dist.all_reduce")]
