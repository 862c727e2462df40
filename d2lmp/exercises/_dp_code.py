"""The data-parallel code exercises of notebook 13, checked on real gloo ranks: gradients, steps and traffic.

The uneven-batch exercise runs the student's data-parallel backward on 2 and 3 ranks with batches that do
not split evenly and compares every rank's gradients with one process's full-batch gradient; the typical
mistakes (the local gradient, averaged per-rank means, no division by the global batch, dividing twice)
are recognised by computing each of them here. The find-the-bug exercise runs a given data-parallel SGD
step (its gradients summed, not averaged) for a few steps on 2 and 4 ranks against one process's SGD on
the whole batch. In both, only the gradients may travel: a rank that gathers the batch and computes the
whole gradient itself gets the right numbers and fails, with a message that says so (``_code.logged``).
The questions are in ``data_parallelism``; the SyncBatchNorm exercise is in ``_bn_code``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, no_type_check

import torch
import torch.distributed as dist
from torch import nn

from d2lmp.exercises._code import Logged, code_checker, logged, max_error, on_ranks, sent_at_most
from d2lmp.model.alpha_beta import BUS_FACTORS

if TYPE_CHECKING:
    from d2lmp.parallel.data_parallel import MLPSpec

__all__ = ["my_dp_gradients", "uneven_checker", "UNEVEN_WRONG", "given_dp_step", "my_dp_step", "dp_step_checker",
           "DP_STEP_WRONG"]


def _gradients_travel(run: Logged, grads: Sequence[torch.Tensor]) -> str | None:
    """None when ``run`` sent only gradients' worth of all-reduces (or messages); else what was asked."""
    other = [m.op for m in run.messages if m.collective and m.op != "all_reduce"]
    if other:
        return (f"your function called dist.{other[0]}: in data parallelism each rank keeps its own examples, and "
                "only the gradients travel, summed by an all-reduce")
    world = max([m.world for m in run.messages if m.collective] or [2])
    grad_bytes = sum(g.numel() * g.element_size() for g in grads)
    return sent_at_most(run, BUS_FACTORS["all_reduce"](world) * grad_bytes, "an all-reduce of the gradients",
                        "each gradient needs to be all-reduced once")


# --------------------------------------------------------------------------------------------
# Uneven batches on ranks

SPEC_SIZES = (6, 8, 3)
CASES = ((2, 23), (3, 7))  # (ranks, global batch): 12 + 11 examples, and 3 + 2 + 2


def my_dp_gradients(rank: int, world: int, model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                    global_batch: int) -> list[torch.Tensor | None]:
    """Full-batch mean-loss gradients on every rank, from this rank's slice (x, y) of an uneven batch."""
    loss = nn.functional.cross_entropy(model(x), y, reduction="sum") / global_batch
    loss.backward()
    grads = []
    for p in model.parameters():
        dist.all_reduce(p.grad)  # sum over ranks: Σ_r Σ_{i in r} ∇ℓ_i / B = the full-batch mean
        grads.append(p.grad)
    return grads


def _spec() -> MLPSpec:
    from d2lmp.parallel.data_parallel import MLPSpec

    return MLPSpec(SPEC_SIZES, seed=0)


def _dp_worker(rank: int, world: int, fn: Callable[..., Any], x: torch.Tensor, y: torch.Tensor) -> Logged:
    model = _spec().build()
    xs, ys = torch.tensor_split(x, world)[rank], torch.tensor_split(y, world)[rank]
    return logged(fn, rank, world, model, xs.clone(), ys.clone(), len(x))


def _sum_grads(x: torch.Tensor, y: torch.Tensor) -> list[torch.Tensor]:
    model = _spec().build()
    nn.functional.cross_entropy(model(x), y, reduction="sum").backward()
    return [p.grad.clone() for p in model.parameters()]  # type: ignore[union-attr]  # backward has set p.grad


def _dp_run(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    from d2lmp.parallel.data_parallel import synthetic_data

    results = []
    for world, batch in CASES:
        x, y = synthetic_data(_spec(), batch)
        local = [_sum_grads(xs, ys) for xs, ys in zip(torch.tensor_split(x, world), torch.tensor_split(y, world))]
        counts = [len(xs) for xs in torch.tensor_split(x, world)]
        total = [sum(g) for g in zip(*local)]
        mistakes = {
            "average": [t / batch / world for t in total],
            "mean_of_means": [sum(g[i] / counts[r] for r, g in enumerate(local)) / world for i in range(len(total))],
            "sum_of_means": [sum(g[i] / counts[r] for r, g in enumerate(local)) for i in range(len(total))],
            "no_divide": total,
        }
        expected = [t / batch for t in total]
        for rank, got in enumerate(on_ranks(_dp_worker, world, fn, x, y)):
            own = {"local_global": [g / batch for g in local[rank]],
                   "local_mean": [g / counts[rank] for g in local[rank]]}
            results.append((f"{world} ranks, a batch of {batch} split {counts}, rank {rank}", got,
                            (expected, {**mistakes, **own}, counts, batch)))
    return results


def _same(a: Any, b: Sequence[torch.Tensor]) -> bool:
    return (isinstance(a, (list, tuple)) and len(a) == len(b)
            and all(isinstance(t, torch.Tensor) and t.shape == u.shape and torch.allclose(t, u, atol=1e-6, rtol=1e-5)
                    for t, u in zip(a, b)))


def _dp_judge(case: str, run: Logged, context: Any) -> str | None:
    expected, mistakes, counts, batch = context
    got = run.result
    if _same(got, expected):
        return _gradients_travel(run, expected)
    if not isinstance(got, (list, tuple)) or len(got) != len(expected):
        return (f"return a list with one gradient per parameter, in model.parameters() order ({len(expected)} "
                "tensors)")
    explanations = {
        "local_global": "you returned the local gradient: it covers only this rank's examples; all-reduce (sum) "
                        "the gradients over the ranks",
        "local_mean": "you returned the local gradient of this rank's mean loss: all-reduce the gradients over the "
                      "ranks, and divide the summed loss by the global batch",
        "mean_of_means": f"you averaged per-rank means: with an uneven split ({' + '.join(map(str, counts))}) each "
                         "rank's mean weighs its examples by 1/n_r, not 1/B. Sum the loss over your examples, "
                         "divide by the global batch, then sum over the ranks",
        "sum_of_means": "you summed per-rank mean-loss gradients: each is divided by its local batch. Divide the "
                        "summed loss by the global batch instead",
        "no_divide": f"you forgot to divide by the global batch: your gradients are {batch} times too large (the "
                     "loss is the mean over the whole batch)",
        "average": "you divided twice: the all-reduce sums the ranks' contributions, which are already divided by "
                   "the global batch; do not also divide by the world size",
    }
    for name, why in explanations.items():
        if _same(got, mistakes[name]):
            return why
    worst = max(max_error(g, e) if isinstance(g, torch.Tensor) and g.shape == e.shape else math.inf
                for g, e in zip(got, expected))
    return f"your gradients differ from one process's full-batch gradient by up to {worst:.3g}"


def _dp_local_only(rank: int, world: int, model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                   global_batch: int) -> list[torch.Tensor | None]:
    (nn.functional.cross_entropy(model(x), y, reduction="sum") / global_batch).backward()
    return [p.grad for p in model.parameters()]


def _dp_mean_of_means(rank: int, world: int, model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                      global_batch: int) -> list[torch.Tensor | None]:
    nn.functional.cross_entropy(model(x), y).backward()  # the mean over this rank's examples
    grads: list[torch.Tensor | None] = []
    for p in model.parameters():
        dist.all_reduce(p.grad)
        grads.append(p.grad / world)  # type: ignore[operator, arg-type]  # backward has set p.grad
    return grads


def _dp_gather_batch(rank: int, world: int, model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                     global_batch: int) -> list[torch.Tensor | None]:
    """Right numbers, not data parallelism: every rank gathers the whole batch and computes its gradient."""
    pieces: list[Any] = [None] * world
    dist.all_gather_object(pieces, (x, y))
    xs, ys = torch.cat([p[0] for p in pieces]), torch.cat([p[1] for p in pieces])
    nn.functional.cross_entropy(model(xs), ys).backward()
    return [p.grad for p in model.parameters()]


def _dp_no_divide(rank: int, world: int, model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                  global_batch: int) -> list[torch.Tensor | None]:
    nn.functional.cross_entropy(model(x), y, reduction="sum").backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    return [p.grad for p in model.parameters()]



uneven_checker = code_checker(_dp_run, _dp_judge, "on 2 and 3 ranks, with uneven splits, every rank holds one "
                                                  "process's full-batch gradient, and only gradients travelled.")
UNEVEN_WRONG = [(_dp_local_only, "you returned the local gradient"), (_dp_mean_of_means, "you averaged per-rank means"),
                (_dp_no_divide, "you forgot to divide by the global batch"),
                (_dp_gather_batch, "your function called dist.all_gather_object")]


# --------------------------------------------------------------------------------------------
# Find the bug: a data-parallel SGD step

STEP_CASES = ((2, 8), (4, 8))  # (ranks, global batch): equal shares of 4 and 2 examples
STEPS, LR = 3, 0.5


@no_type_check  # shown to the student as written, where torch types p.grad as Tensor | None
def given_dp_step(rank: int, world: int, model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                  lr: float) -> list[torch.Tensor]:
    """One data-parallel SGD step on this rank's equal share (x, y) of the batch; the parameters after it."""
    loss = nn.functional.cross_entropy(model(x), y)  # the mean over this rank's examples
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            dist.all_reduce(p.grad)  # combine the ranks' gradients
            p -= lr * p.grad
            p.grad = None
    return [p.detach().clone() for p in model.parameters()]


def my_dp_step(rank: int, world: int, model: nn.Module, x: torch.Tensor, y: torch.Tensor,
               lr: float) -> list[torch.Tensor]:
    """One data-parallel SGD step on this rank's equal share (x, y) of the batch; the parameters after it."""
    loss = nn.functional.cross_entropy(model(x), y)  # the mean over this rank's examples
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            dist.all_reduce(p.grad)  # the sum of the ranks' means
            # their mean: equal shares make it the whole batch's mean gradient (backward has set p.grad)
            p -= lr * p.grad / world  # type: ignore[operator, misc]
            p.grad = None
    return [p.detach().clone() for p in model.parameters()]


def _batches(batch: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    from d2lmp.parallel.data_parallel import synthetic_data

    return [synthetic_data(_spec(), batch, seed=10 + step) for step in range(STEPS)]


def one_device_sgd(batch: int, lr: float) -> list[list[torch.Tensor]]:
    """The parameters after each SGD step of one process on the whole batch."""
    model, out = _spec().build(), []
    for x, y in _batches(batch):
        nn.functional.cross_entropy(model(x), y).backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad  # type: ignore[operator, misc]  # backward has set p.grad
                p.grad = None
        out.append([p.detach().clone() for p in model.parameters()])
    return out


def _step_worker(rank: int, world: int, fn: Callable[..., Any], batch: int) -> list[Logged]:
    model, runs = _spec().build(), []
    for x, y in _batches(batch):
        xs, ys = torch.tensor_split(x, world)[rank], torch.tensor_split(y, world)[rank]
        runs.append(logged(fn, rank, world, model, xs.clone(), ys.clone(), LR))
    return runs


def _step_run(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    results = []
    for world, batch in STEP_CASES:
        expected, scaled = one_device_sgd(batch, LR), one_device_sgd(batch, LR * world)
        for rank, runs in enumerate(on_ranks(_step_worker, world, fn, batch)):
            for step, run in enumerate(runs):
                results.append((f"{world} ranks, step {step + 1}, rank {rank}", run,
                                (expected[step], scaled[step], world)))
    return results


def _step_judge(case: str, run: Logged, context: Any) -> str | None:
    expected, scaled, world = context
    got = run.result
    if not _same(got, expected):
        if not isinstance(got, (list, tuple)) or len(got) != len(expected):
            return f"return the parameters after the step, a list of {len(expected)} tensors"
        if _same(got, scaled):
            return (f"your parameters are those of one process with a learning rate {world} times larger: the "
                    "all-reduce sums the ranks' gradients, and each rank's is already a mean over its examples, so "
                    f"divide the sum by the {world} ranks")
        worst = max(max_error(g, e) if isinstance(g, torch.Tensor) and g.shape == e.shape else math.inf
                    for g, e in zip(got, expected))
        return f"your parameters differ from one process's SGD on the whole batch by up to {worst:.3g}"
    return _gradients_travel(run, expected)


def _step_copy_of_given(rank: int, world: int, model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                        lr: float) -> list[torch.Tensor]:
    """The given function called through another: it runs on the ranks, so the check explains its result."""
    result: list[torch.Tensor] = given_dp_step(rank, world, model, x, y, lr)
    return result


def _step_gather_batch(rank: int, world: int, model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                       lr: float) -> list[torch.Tensor]:
    """Right numbers, not data parallelism: every rank gathers the batch and takes one process's step."""
    xs, ys = [torch.empty_like(x) for _ in range(world)], [torch.empty_like(y) for _ in range(world)]
    dist.all_gather(xs, x)
    dist.all_gather(ys, y)
    nn.functional.cross_entropy(model(torch.cat(xs)), torch.cat(ys)).backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad  # type: ignore[operator, misc]  # backward has set p.grad
            p.grad = None
    return [p.detach().clone() for p in model.parameters()]


dp_step_checker = code_checker(_step_run, _step_judge, "on 2 and 4 ranks, for three steps, every rank's parameters "
                                                       "equal one process's SGD on the whole batch, and only the "
                                                       "gradients travelled.")
DP_STEP_WRONG = [(_step_copy_of_given, "times larger"), (_step_gather_batch, "your function called dist.all_gather")]
