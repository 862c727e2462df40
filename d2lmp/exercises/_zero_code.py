"""The ZeRO code exercises of notebook 16 (sharding the training state), on real gloo ranks: numbers and bytes.

The stage-2 gradient step (each rank's shard of the summed gradient) and a whole ZeRO-2 step of SGD with
momentum (given with a stale-shard bug to find) run on 2 and 4 ranks. The result is compared with one
process's arithmetic on the same numbers; then the bytes each rank sent while the student's function ran
(``_code.logged``, a collective counted as a ring runs it) must not exceed what sharding needs: a
reduce-scatter's (n − 1)/n·S for the gradient step, a reduce-scatter and an all-gather per ZeRO step. So an
all-reduce and a slice, right in every number, fails: it sends an all-reduce's 2(n − 1)/n·S. The questions
are in ``sharding_the_training_state``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from d2lmp.exercises._code import Logged, code_checker, logged, on_ranks, sent_at_most
from d2lmp.model.alpha_beta import BUS_FACTORS
from d2lmp.parallel.collectives import ring_all_gather, ring_reduce_scatter

__all__ = ["LENGTH", "my_grad_shard", "shard_checker", "SHARD_WRONG", "MOMENTUM", "given_zero_step", "my_zero_step",
           "zero_step_checker", "ZERO_STEP_WRONG"]

LENGTH = 24  # divides 2 and 4: no padding
BYTES = LENGTH * 4  # the flat float32 gradient, S


def _local(rank: int, step: int = 0) -> torch.Tensor:
    return torch.arange(LENGTH, dtype=torch.float32) * (rank + 1) + 0.5 * rank - 0.25 * step


def _ring_share(world: int) -> float:
    """Bytes each rank sends in a ring reduce-scatter or all-gather of the S-byte flat tensor."""
    return BUS_FACTORS["reduce_scatter"](world) * BYTES


# --------------------------------------------------------------------------------------------
# The stage-2 gradient step


def my_grad_shard(rank: int, world: int, flat_grad: torch.Tensor) -> torch.Tensor:
    """This rank's shard of the gradient summed over the ranks: a reduce-scatter."""
    return ring_reduce_scatter(flat_grad)


def _shard_worker(rank: int, world: int, fn: Callable[..., Any]) -> Logged:
    return logged(fn, rank, world, _local(rank))


def _shard_run(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    results = []
    for world in (2, 4):
        total = sum(_local(r) for r in range(world))
        for rank, run in enumerate(on_ranks(_shard_worker, world, fn)):
            results.append((f"{world} ranks, rank {rank}", run, (rank, world, total)))
    return results


def _shard_judge(case: str, run: Logged, context: Any) -> str | None:
    rank, world, total = context
    got, shards = run.result, total.chunk(world)
    if not isinstance(got, torch.Tensor):
        return f"return a tensor (this rank's shard), got {type(got).__name__}"
    if not (got.shape == shards[rank].shape and torch.allclose(got, shards[rank])):
        if got.shape == total.shape:
            return (f"you returned all {LENGTH} elements: stage 2 keeps only this rank's 1/{world} of the summed "
                    "gradient")
        if got.shape != shards[rank].shape:
            return f"this rank's shard has {LENGTH // world} elements, got shape {tuple(got.shape)}"
        if torch.allclose(got, _local(rank).chunk(world)[rank]):
            return "you returned your own gradient's shard: it must be summed over the ranks first"
        if torch.allclose(got, shards[rank] / world):
            return "you averaged: the ranks' losses are already divided by the global batch, so sum the gradients"
        for other in range(world):
            if other != rank and torch.allclose(got, shards[other]):
                return (f"that is rank {other}'s shard: rank r keeps elements r·{LENGTH // world} to "
                        f"(r+1)·{LENGTH // world}")
        return "not this rank's shard of the summed gradient"
    return sent_at_most(run, _ring_share(world), "stage 2's gradient step",
                        "a reduce-scatter leaves each rank only its shard of the sum, for half an all-reduce's bytes")


def _only_local(rank: int, world: int, flat_grad: torch.Tensor) -> torch.Tensor:
    return flat_grad.chunk(world)[rank]


def _whole_sum(rank: int, world: int, flat_grad: torch.Tensor) -> torch.Tensor:
    dist.all_reduce(flat_grad)
    return flat_grad


def _mean_shard(rank: int, world: int, flat_grad: torch.Tensor) -> torch.Tensor:
    dist.all_reduce(flat_grad)
    return flat_grad.chunk(world)[rank] / world


def _all_reduce_then_slice(rank: int, world: int, flat_grad: torch.Tensor) -> torch.Tensor:
    dist.all_reduce(flat_grad)
    return flat_grad.chunk(world)[rank]


shard_checker = code_checker(_shard_run, _shard_judge, "on 2 and 4 ranks every rank holds its shard of the summed "
                                                       "gradient, and sent (n − 1)/n of the gradient's bytes: half an "
                                                       "all-reduce.")
SHARD_WRONG = [(_only_local, "your own gradient's shard"), (_whole_sum, "you returned all"),
               (_mean_shard, "you averaged"), (_all_reduce_then_slice, "2 times the 48 bytes of stage 2's")]


# --------------------------------------------------------------------------------------------
# Find the bug: a ZeRO-2 step whose other shards are one step behind

MOMENTUM, LR, STEPS = 0.9, 0.1, 2


def given_zero_step(rank: int, world: int, params: torch.Tensor, grad: torch.Tensor, momentum: torch.Tensor,
                    lr: float) -> tuple[torch.Tensor, torch.Tensor]:
    """One ZeRO-2 step of SGD with momentum 0.9: ``params`` is this rank's full copy, ``grad`` its own gradient,
    ``momentum`` its shard of the momentum; each rank updates its shard, then the shards are shared."""
    shards = params.chunk(world)  # views: shards[r] is rank r's part of params
    gathered = ring_all_gather(shards[rank].clone())  # every rank's shard, to refresh the others
    momentum.mul_(0.9).add_(ring_reduce_scatter(grad))  # this rank's shard of the summed gradient
    shards[rank].sub_(lr * momentum)
    for r in range(world):
        if r != rank:
            shards[r].copy_(gathered[r])
    return params, momentum


def my_zero_step(rank: int, world: int, params: torch.Tensor, grad: torch.Tensor, momentum: torch.Tensor,
                 lr: float) -> tuple[torch.Tensor, torch.Tensor]:
    """One ZeRO-2 step of SGD with momentum 0.9: ``params`` is this rank's full copy, ``grad`` its own gradient,
    ``momentum`` its shard of the momentum; each rank updates its shard, then the shards are shared."""
    shards = params.chunk(world)  # views: shards[r] is rank r's part of params
    momentum.mul_(0.9).add_(ring_reduce_scatter(grad))  # this rank's shard of the summed gradient
    shards[rank].sub_(lr * momentum)
    gathered = ring_all_gather(shards[rank].clone())  # every rank's updated shard
    for r in range(world):
        if r != rank:
            shards[r].copy_(gathered[r])
    return params, momentum


def _start() -> torch.Tensor:
    return torch.linspace(-1.0, 1.0, LENGTH)


def one_device_steps(world: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(parameters, momentum) after each step of SGD with momentum on one device, on the summed gradients."""
    params, velocity, out = _start(), torch.zeros(LENGTH), []
    for step in range(STEPS):
        velocity = MOMENTUM * velocity + sum(_local(r, step) for r in range(world))
        params = params - LR * velocity
        out.append((params.clone(), velocity.clone()))
    return out


def _step_worker(rank: int, world: int, fn: Callable[..., Any]) -> list[Logged]:
    params, momentum, runs = _start(), torch.zeros(LENGTH // world), []
    for step in range(STEPS):
        run = logged(fn, rank, world, params.clone(), _local(rank, step), momentum.clone(), LR)
        runs.append(run)
        result = run.result
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            break
        params, momentum = (t.detach().clone() for t in result)
    return runs


def _step_run(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    results = []
    for world in (2, 4):
        expected = one_device_steps(world)
        per_rank = on_ranks(_step_worker, world, fn)
        for rank, runs in enumerate(per_rank):
            for step, run in enumerate(runs):
                results.append((f"{world} ranks, step {step + 1}, rank {rank}", run,
                                (rank, world, step, expected,
                                 [r[step].result if step < len(r) else None for r in per_rank])))
    return results


def _step_judge(case: str, run: Logged, context: Any) -> str | None:
    rank, world, step, expected, every_rank = context
    result = run.result
    if not (isinstance(result, (tuple, list)) and len(result) == 2
            and all(isinstance(t, torch.Tensor) for t in result)):
        return "return (params, momentum): this rank's full parameters and its shard of the momentum"
    params, momentum = result
    want_params, want_velocity = expected[step]
    if params.shape != want_params.shape or momentum.shape != (LENGTH // world,):
        return (f"params must keep its {LENGTH} elements and momentum be this rank's shard of {LENGTH // world}, got "
                f"{tuple(params.shape)} and {tuple(momentum.shape)}")
    if not torch.allclose(momentum, want_velocity.chunk(world)[rank], atol=1e-5):
        return "the momentum shard differs from one device's momentum on the summed gradient"
    if not torch.allclose(params, want_params, atol=1e-5):
        mine = params.chunk(world)[rank]
        if torch.allclose(mine, want_params.chunk(world)[rank], atol=1e-5):
            before = expected[step - 1][0] if step else _start()
            stale = [r for r in range(world) if r != rank
                     and torch.allclose(params.chunk(world)[r], before.chunk(world)[r], atol=1e-5)]
            if stale:
                return (f"this rank's own shard is right, but the shards of rank(s) {stale} are one step behind: "
                        "they were gathered before their owners updated them")
        if any(not torch.allclose(params, other[0], atol=1e-5) for other in every_rank
               if isinstance(other, (tuple, list)) and other and isinstance(other[0], torch.Tensor)):
            return "the ranks' copies of the parameters differ from each other, and from one device's"
        return "the parameters differ from one device's step of SGD with momentum on the summed gradient"
    return sent_at_most(run, 2 * _ring_share(world), "a ZeRO-2 step",
                        "one reduce-scatter of the gradient and one all-gather of the updated shards")


def _copy_of_given(rank: int, world: int, params: torch.Tensor, grad: torch.Tensor, momentum: torch.Tensor,
                   lr: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The given function called through another: it runs on the ranks, so the check explains its result."""
    return given_zero_step(rank, world, params, grad, momentum, lr)


def _all_reduce_step(rank: int, world: int, params: torch.Tensor, grad: torch.Tensor, momentum: torch.Tensor,
                     lr: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Right numbers, without sharding the gradient: an all-reduce, then the shard, then an all-gather."""
    dist.all_reduce(grad)
    shards = params.chunk(world)
    momentum.mul_(MOMENTUM).add_(grad.chunk(world)[rank])
    shards[rank].sub_(lr * momentum)
    parts = [torch.empty_like(shards[rank]) for _ in range(world)]
    dist.all_gather(parts, shards[rank].clone())
    return torch.cat(parts), momentum


zero_step_checker = code_checker(_step_run, _step_judge, "on 2 and 4 ranks, for two steps, every rank's parameters "
                                                         "and momentum shard equal one device's, and each rank sent "
                                                         "one reduce-scatter's and one all-gather's bytes per step.")
ZERO_STEP_WRONG = [(_copy_of_given, "one step behind"), (_all_reduce_step, "this rank sent")]
