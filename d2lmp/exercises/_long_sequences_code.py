"""The code exercises of notebook 18: each reference answer, the run that checks it and its judge, and wrong answers.

The merge is checked against softmax attention over all the blocks' keys, on blocks whose scores would overflow a
naive exp. The rank exercises (one ring step, causal ring attention in the plain layout, the balanced layout's
ring given with a bug, the all-to-all) run the student's function on 2, 3 and 4 real gloo ranks inside a
``p2p_log.MessageLog`` (``_code.logged``) and judge each rank's messages as well as its result: no library
collective, and a ring's messages (or an all-to-all's), with their bytes. So a library collective plus slicing,
right in every number, fails with a sentence that says what was asked. ``long_sequences_and_experts`` holds
the questions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, no_type_check

import torch
import torch.distributed as dist
from torch.nn import functional as F

from d2lmp.checks.experts import all_to_all_block
from d2lmp.exercises._code import Logged, code_checker, logged, max_error, no_collective, on_ranks, ring_only
from d2lmp.parallel.attention_blocks import Partial, attention_block, merge
from d2lmp.parallel.p2p_log import MessageLog
from d2lmp.parallel.sequence_chunks import split_sequence

__all__ = ["my_merge", "my_pass_right", "my_ring_forward", "given_balanced_ring_forward", "my_balanced_ring_forward",
           "my_all_to_all", "merge_checker", "pass_checker", "ring_checker", "balanced_checker", "all_to_all_checker",
           "WRONG"]

WORLDS = (2, 3, 4)
Cases = list[tuple[str, Any, Any]]  # (case, what the student's code gave, what the judge needs to judge it)
FROM_MESSAGES = "a ring built from point-to-point messages (dist.isend / dist.irecv)"


def _close(a: Any, b: torch.Tensor) -> bool:
    return isinstance(a, torch.Tensor) and a.shape == b.shape and torch.allclose(a, b, atol=1e-5, rtol=1e-5)


# --------------------------------------------------------------------------------------------
# The online-softmax merge, on one process


def my_merge(a: Partial | None, b: Partial) -> Partial:
    """(output, lse) over the keys of both blocks, from each block's (output, lse); ``a`` None: nothing yet."""
    if a is None:
        return b
    (out_a, lse_a), (out_b, lse_b) = a, b
    lse = torch.logaddexp(lse_a, lse_b)  # log(e^lse_a + e^lse_b), without overflowing
    return out_a * torch.exp(lse_a - lse)[..., None] + out_b * torch.exp(lse_b - lse)[..., None], lse


def _merge_run(fn: Callable[..., Any]) -> Cases:
    g = torch.Generator().manual_seed(5)
    results = []
    for scale, sizes in ((1.0, [3, 5]), (40.0, [4, 4]), (1.0, [2, 3, 6])):  # 40: scores in the hundreds
        q = torch.randn(2, 2, 4, 8, generator=g) * scale
        keys, values = (torch.randn(2, 2, sum(sizes), 8, generator=g) for _ in range(2))
        blocks = [attention_block(q, k, v, False) for k, v in zip(torch.split(keys, sizes, dim=2),
                                                                   torch.split(values, sizes, dim=2))]
        merged = None
        for block in blocks:
            merged = fn(merged, block)
        scores = q @ keys.transpose(-2, -1) / 8 ** 0.5
        expected = (F.scaled_dot_product_attention(q, keys, values), scores.logsumexp(dim=-1))
        results.append((f"{len(sizes)} blocks of {sizes} keys, scores × {scale:g}", merged, (expected, blocks)))
    return results


def _merge_judge(case: str, got: Any, context: Any) -> str | None:
    (out, lse), blocks = context
    if not (isinstance(got, (tuple, list)) and len(got) == 2 and all(isinstance(t, torch.Tensor) for t in got)):
        return f"return a pair (output, lse) of tensors, got {type(got).__name__}"
    got_out, got_lse = got
    if _close(got_out, out) and _close(got_lse, lse):
        return None
    if not torch.isfinite(got_out).all() or not torch.isfinite(got_lse).all():
        return ("your result holds inf or NaN: exp of a log-sum-exp in the hundreds overflows float32. Combine "
                "them as torch.logaddexp(lse_a, lse_b), and weigh each output by exp(lse_block − lse)")
    if _close(got_out, sum(o for o, _ in blocks) / len(blocks)):
        return ("a plain average weighs every block alike; each block's output counts as much as its share of the "
                "exp-sum, exp(lse_block − lse) with lse the merged log-sum-exp")
    if _close(got_out, out):
        return "the output is right, the lse is not: the merged lse is log(exp(lse_a) + exp(lse_b))"
    return f"your output differs from softmax attention over all the keys by up to {max_error(got_out, out):.3g}"


def _merge_average(a: Partial | None, b: Partial) -> Partial:
    return b if a is None else ((a[0] + b[0]) / 2, torch.logaddexp(a[1], b[1]))


def _merge_naive(a: Partial | None, b: Partial) -> Partial:
    if a is None:
        return b
    total = torch.exp(a[1]) + torch.exp(b[1])
    return ((a[0] * torch.exp(a[1])[..., None] + b[0] * torch.exp(b[1])[..., None]) / total[..., None],
            torch.log(total))


# --------------------------------------------------------------------------------------------
# One ring step: pass the K/V this rank holds to the right, receive the left neighbour's


def my_pass_right(kv: torch.Tensor) -> torch.Tensor:
    """Send ``kv`` to rank + 1 and return what rank − 1 sent here (the ring wraps round)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    incoming = torch.empty_like(kv)
    requests: list[Any] = [dist.irecv(incoming, (rank - 1) % world), dist.isend(kv.contiguous(), (rank + 1) % world)]
    for request in requests:
        request.wait()
    return incoming


def _chunk(rank: int) -> torch.Tensor:
    """Rank ``rank``'s K and V stacked: [2, batch, heads, tokens, head dim], different on every rank."""
    return torch.randn(2, 1, 2, 3, 4, generator=torch.Generator().manual_seed(rank))


def _pass_worker(rank: int, world: int, fn: Callable[..., Any]) -> Logged:
    held, seen = _chunk(rank), []
    with MessageLog() as log:  # a whole round: p − 1 steps
        for _ in range(world - 1):
            held = fn(held)
            seen.append(held.detach().clone() if isinstance(held, torch.Tensor) else held)
    dist.barrier()
    return Logged(seen, tuple(log.messages))


def _pass_run(fn: Callable[..., Any]) -> Cases:
    return [(f"{world} ranks, rank {rank}", run, (rank, world)) for world in WORLDS
            for rank, run in enumerate(on_ranks(_pass_worker, world, fn))]


def _pass_judge(case: str, run: Logged, context: Any) -> str | None:
    rank, world = context
    nbytes = _chunk(0).numel() * _chunk(0).element_size()
    traffic = no_collective(run, f"one step of {FROM_MESSAGES}") or ring_only(
        run, rank, world, world - 1, (world - 1) * nbytes, "a round of the ring (the chunk once a step)")
    if traffic:
        return traffic
    for step, held in enumerate(run.result, 1):
        if not _close(held, _chunk((rank - step) % world)):
            if _close(held, _chunk((rank + step) % world)):
                return (f"after {step} step(s) rank {rank} holds rank {(rank + step) % world}'s chunk: the ring passes "
                        f"to the right, so after s steps rank r holds rank r − s's")
            return f"after {step} step(s) rank {rank} does not hold rank {(rank - step) % world}'s chunk"
    return None


def _pass_by_all_gather(kv: torch.Tensor) -> torch.Tensor:
    parts = [torch.empty_like(kv) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, kv)
    return parts[(dist.get_rank() - 1) % dist.get_world_size()]


def _pass_left(kv: torch.Tensor) -> torch.Tensor:
    rank, world = dist.get_rank(), dist.get_world_size()
    incoming = torch.empty_like(kv)
    requests: list[Any] = [dist.irecv(incoming, (rank + 1) % world), dist.isend(kv, (rank - 1) % world)]
    for request in requests:
        request.wait()
    return incoming


# --------------------------------------------------------------------------------------------
# Causal ring attention's forward: the plain layout, and the balanced one (given with a bug)


def my_ring_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """This rank's rows of causal attention over the whole sequence; rank r holds chunk r of q, k and v."""
    rank, world = dist.get_rank(), dist.get_world_size()
    kv, result = torch.stack([k, v]), None
    for step in range(world):
        holder = (rank - step) % world  # whose chunk of keys this rank holds now
        if holder <= rank:  # a later chunk's keys are all in the future: skip them
            result = merge(result, attention_block(q, kv[0], kv[1], diagonal=holder == rank))
        if step < world - 1:
            kv = my_pass_right(kv)
    assert result is not None  # every rank attends at least to its own chunk
    return result[0]


@no_type_check  # shown to the student as written, where mypy cannot type the partial results
def given_balanced_ring_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """This rank's rows of causal attention; it holds chunks r and 2p − 1 − r of q, k and v, in that order."""
    rank, world = dist.get_rank(), dist.get_world_size()
    kv, partial = torch.stack([k, v]), [None, None]  # one partial result per query chunk
    for step in range(world):
        holder = (rank - step) % world  # whose two K/V chunks this rank holds now
        mine, theirs = (rank, 2 * world - 1 - rank), (holder, 2 * world - 1 - holder)
        for i, (query_chunk, queries) in enumerate(zip(mine, q.chunk(2, dim=2))):
            for key_chunk, keys, values in zip(theirs, kv[0].chunk(2, dim=2), kv[1].chunk(2, dim=2)):
                if key_chunk <= query_chunk:  # keys entirely in the future are skipped
                    block = attention_block(queries, keys, values, diagonal=step == 0)
                    partial[i] = merge(partial[i], block)
        if step < world - 1:  # pass the chunks on: to the right, from the left
            incoming = torch.empty_like(kv)
            for request in (dist.irecv(incoming, (rank - 1) % world), dist.isend(kv, (rank + 1) % world)):
                request.wait()
            kv = incoming
    return torch.cat([out for out, _ in partial], dim=2)


@no_type_check  # shown to the student as written, where mypy cannot type the partial results
def my_balanced_ring_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """This rank's rows of causal attention; it holds chunks r and 2p − 1 − r of q, k and v, in that order."""
    rank, world = dist.get_rank(), dist.get_world_size()
    kv, partial = torch.stack([k, v]), [None, None]  # one partial result per query chunk
    for step in range(world):
        holder = (rank - step) % world  # whose two K/V chunks this rank holds now
        mine, theirs = (rank, 2 * world - 1 - rank), (holder, 2 * world - 1 - holder)
        for i, (query_chunk, queries) in enumerate(zip(mine, q.chunk(2, dim=2))):
            for key_chunk, keys, values in zip(theirs, kv[0].chunk(2, dim=2), kv[1].chunk(2, dim=2)):
                if key_chunk <= query_chunk:  # keys entirely in the future are skipped
                    # the mask belongs where a chunk's queries meet its own keys, not to all of step 0
                    block = attention_block(queries, keys, values, diagonal=key_chunk == query_chunk)
                    partial[i] = merge(partial[i], block)
        if step < world - 1:  # pass the chunks on: to the right, from the left
            incoming = torch.empty_like(kv)
            for request in (dist.irecv(incoming, (rank - 1) % world), dist.isend(kv, (rank + 1) % world)):
                request.wait()
            kv = incoming
    return torch.cat([out for out, _ in partial], dim=2)


SHAPE = (1, 2, 6, 4)  # batch, heads, tokens per rank (two chunks of 3 in the balanced layout), head dim


def _whole(world: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(world)
    return [torch.randn(SHAPE[0], SHAPE[1], SHAPE[2] * world, SHAPE[3], generator=g) for _ in range(3)]


def _ring_worker(rank: int, world: int, fn: Callable[..., Any], layout: str) -> Logged:
    q, k, v = (split_sequence(t, world, layout)[rank] for t in _whole(world))
    run = logged(fn, q, k, v)
    dist.barrier()
    return run


def _ring_run(fn: Callable[..., Any], layout: str) -> Cases:
    results = []
    for world in WORLDS:
        q, k, v = _whole(world)
        causal = split_sequence(F.scaled_dot_product_attention(q, k, v, is_causal=True), world, layout)
        unmasked = split_sequence(F.scaled_dot_product_attention(q, k, v), world, layout)
        for rank, run in enumerate(on_ranks(_ring_worker, world, fn, layout)):
            results.append((f"{world} ranks, {layout} layout, rank {rank}", run,
                            (causal[rank], unmasked[rank], rank, world)))
    return results


def _ring_judge(case: str, run: Logged, context: Any) -> str | None:
    causal, unmasked, rank, world = context
    out = run.result
    if not isinstance(out, torch.Tensor) or out.shape != causal.shape:
        return f"return this rank's rows of the output, a tensor of shape {tuple(causal.shape)}"
    if _close(out, unmasked):
        return ("your rows attend to future keys (they equal attention without the mask): skip the chunks after a "
                "query chunk and mask the diagonal block, where a chunk's queries meet its own keys")
    if not _close(out, causal):
        chunks = [j for j, (a, b) in enumerate(zip(out.chunk(2, dim=2), causal.chunk(2, dim=2))) if not _close(a, b)]
        where = f" (in the rows of its query chunk(s) {chunks} of 2)" if "balanced" in case else ""
        return (f"your rows differ from causal attention on the whole sequence by up to {max_error(out, causal):.3g}"
                + where)
    kv = 2 * causal.numel() * causal.element_size()  # this rank's K and V
    return no_collective(run, FROM_MESSAGES) or (
        ring_only(run, rank, world, world - 1, (world - 1) * kv, "a round of the ring (K and V once a step)") and
        ring_only(run, rank, world, 2 * (world - 1), (world - 1) * kv, "a round of the ring (K, then V, each step)"))


def _ring_no_mask(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    kv, result = torch.stack([k, v]), None
    for step in range(world):
        result = merge(result, attention_block(q, kv[0], kv[1], diagonal=False))
        if step < world - 1:
            kv = my_pass_right(kv)
    assert result is not None
    return result[0]


def _ring_by_all_gather(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    keys, values = ([torch.empty_like(t) for _ in range(world)] for t in (k, v))
    dist.all_gather(keys, k)
    dist.all_gather(values, v)
    n = q.shape[2]
    mask = torch.ones(n, n * world, dtype=torch.bool).tril(dist.get_rank() * n)
    return F.scaled_dot_product_attention(q, torch.cat(keys, dim=2), torch.cat(values, dim=2), attn_mask=mask)


def _balanced_through_given(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The given function called through another: it runs on the ranks, so the check explains its result."""
    out: torch.Tensor = given_balanced_ring_forward(q, k, v)
    return out


# --------------------------------------------------------------------------------------------
# The all-to-all from send and receive


def my_all_to_all(blocks: list[torch.Tensor], recv_sizes: list[int]) -> list[torch.Tensor]:
    """Send ``blocks[d]`` to rank d; return the block each rank s sent here (``recv_sizes[s]`` rows), in rank order."""
    rank, world = dist.get_rank(), dist.get_world_size()
    out = [torch.empty(n, *blocks[0].shape[1:], dtype=blocks[0].dtype) for n in recv_sizes]
    out[rank] = blocks[rank].clone()  # a rank's block to itself never leaves it
    peers = [p for p in range(world) if p != rank]
    requests: list[Any] = [dist.irecv(out[s], s) for s in peers if recv_sizes[s]]
    requests += [dist.isend(blocks[d].contiguous(), d) for d in peers if len(blocks[d])]
    for request in requests:
        request.wait()
    return out


def _a2a_worker(rank: int, world: int, fn: Callable[..., Any]) -> Logged:
    cpu = torch.device("cpu")
    blocks = [all_to_all_block(rank, d, cpu) for d in range(world)]
    sizes = [len(all_to_all_block(s, rank, cpu)) for s in range(world)]
    run = logged(fn, [b.clone() for b in blocks], sizes)
    dist.barrier()
    return run


def _a2a_run(fn: Callable[..., Any]) -> Cases:
    cpu, results = torch.device("cpu"), []
    for world in WORLDS:
        for rank, run in enumerate(on_ranks(_a2a_worker, world, fn)):
            sends = [all_to_all_block(rank, d, cpu) for d in range(world)]
            expected = [all_to_all_block(s, rank, cpu) for s in range(world)]
            results.append((f"{world} ranks, rank {rank}", run, (sends, expected, rank)))
    return results


def _a2a_judge(case: str, run: Logged, context: Any) -> str | None:
    sends, expected, rank = context
    out = run.result
    if not isinstance(out, list) or len(out) != len(expected):
        return f"return a list of {len(expected)} blocks, one per source rank, in rank order"
    if not all(_close(o, e) for o, e in zip(out, expected)):
        if all(_close(o, s) for o, s in zip(out, sends)):
            return "you returned the blocks this rank sends: block s of the result is the one rank s sent here"
        wrong = [s for s, (o, e) in enumerate(zip(out, expected)) if not _close(o, e)]
        return f"block(s) {wrong} are not what those ranks sent here"
    used = no_collective(run, "the all-to-all built from point-to-point messages (dist.isend / dist.irecv), n − 1 "
                              "a rank")
    if used:
        return used
    if any(m.peer == rank for m in run.sends):
        return f"rank {rank} sent a message to itself: the block a rank addresses to itself stays where it is"
    others = sum(t.numel() * t.element_size() for d, t in enumerate(sends) if d != rank)
    sent = sum(m.nbytes for m in run.sends)
    if sent != others:
        return (f"rank {rank} sent {sent} bytes in {len(run.sends)} message(s); the blocks it addresses to other "
                f"ranks hold {others}: send each rank only its own block")
    return None


def _a2a_single(blocks: list[torch.Tensor], recv_sizes: list[int]) -> list[torch.Tensor]:
    flat = torch.cat(blocks)
    out = flat.new_empty((sum(recv_sizes), *flat.shape[1:]))
    dist.all_to_all_single(out, flat, list(recv_sizes), [len(b) for b in blocks])
    return list(torch.split(out, list(recv_sizes)))


def _a2a_everything(blocks: list[torch.Tensor], recv_sizes: list[int]) -> list[torch.Tensor]:
    rank, world = dist.get_rank(), dist.get_world_size()
    whole = torch.cat(blocks)  # every block to every rank: right result, (n − 1) times the bytes
    counts = [[len(all_to_all_block(s, d, torch.device("cpu"))) for d in range(world)] for s in range(world)]
    incoming = {s: torch.empty(sum(counts[s]), *whole.shape[1:]) for s in range(world) if s != rank}
    requests: list[Any] = [dist.irecv(t, s) for s, t in incoming.items()]
    requests += [dist.isend(whole, d) for d in range(world) if d != rank]
    for request in requests:
        request.wait()
    return [blocks[rank] if s == rank else torch.split(incoming[s], counts[s])[rank] for s in range(world)]


merge_checker = code_checker(
    _merge_run, _merge_judge, "your merge equals softmax attention over every block's keys, even where the scores "
                              "are in the hundreds.")
pass_checker = code_checker(
    _pass_run, _pass_judge, "on 2, 3 and 4 ranks every rank sent p − 1 messages of its chunk to its right "
                            "neighbour, and after s steps holds rank r − s's chunk.")
ring_checker = code_checker(
    lambda fn: _ring_run(fn, "plain"), _ring_judge, "on 2, 3 and 4 ranks your rows equal causal attention on the "
                                                    "whole sequence, and each rank sent its K/V p − 1 times, to the "
                                                    "right.")
balanced_checker = code_checker(
    lambda fn: _ring_run(fn, "balanced"), _ring_judge, "on 2, 3 and 4 ranks, balanced layout, your rows equal causal "
                                                       "attention on the whole sequence, in a ring's messages.")
all_to_all_checker = code_checker(
    _a2a_run, _a2a_judge, "on 2, 3 and 4 ranks, with uneven blocks (some empty), every block arrived, and each rank "
                          "sent exactly its blocks for the others.")
WRONG: dict[str, list[tuple[Any, str]]] = {
    "merge": [(_merge_average, "a plain average"), (_merge_naive, "overflows float32")],
    "pass": [(_pass_by_all_gather, "dist.all_gather"), (_pass_left, "sent to")],
    "ring": [(_ring_no_mask, "attend to future keys"), (_ring_by_all_gather, "dist.all_gather")],
    "balanced": [(given_balanced_ring_forward, "bug included"), (_balanced_through_given, "query chunk(s) [1]")],
    "all_to_all": [(_a2a_single, "dist.all_to_all_single"), (_a2a_everything, "send each rank only its own")]}
