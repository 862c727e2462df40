"""The gradient-accumulation code exercise of notebook 17, checked on real gloo ranks: its numbers and its bytes.

The student's function runs k micro-steps of this rank's slice into ``.grad`` and then sums the gradients
over the ranks; it runs on 2 and 4 ranks with a batch that splits unevenly over the ranks and over the
micro-steps, and each gradient is compared with one process's gradient of the whole batch's mean loss. Then
the bytes each rank sent while the function ran (``_code.logged``, a collective counted as a ring runs it)
must not exceed one all-reduce of the gradients: summing after every micro-step, right in every number,
fails. The function is given with a bug to find (each micro-batch's mean loss averaged, so unequal
micro-batches are weighted alike). The question is in ``activation_memory_and_composing``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from d2lmp.exercises._code import Logged, code_checker, logged, max_error, on_ranks, sent_at_most
from d2lmp.model.alpha_beta import BUS_FACTORS
from d2lmp.models import mlp

__all__ = ["SIZES", "BATCH", "MICRO_STEPS", "given_accumulate", "my_accumulate", "accumulate_checker",
           "ACCUMULATE_WRONG"]

SIZES, BATCH, MICRO_STEPS, TOLERANCE = (6, 8, 3), 23, 3, 1e-5  # 23 examples: uneven over 2 and 4 ranks and over k


def _model() -> nn.Sequential:
    torch.manual_seed(0)
    return mlp(SIZES[0], SIZES[1:-1], SIZES[-1], flatten=False)


def _data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(5)
    return torch.randn(BATCH, SIZES[0], generator=g), torch.randint(0, SIZES[-1], (BATCH,), generator=g)


def given_accumulate(rank: int, world: int, model: nn.Module, xs: torch.Tensor, ys: torch.Tensor, global_batch: int,
                     k: int) -> list[torch.Tensor | None]:
    """k micro-steps of this rank's slice add into .grad, then one all-reduce per gradient sums over the ranks."""
    for xj, yj in zip(xs.tensor_split(k), ys.tensor_split(k)):
        loss = nn.functional.cross_entropy(model(xj), yj) / (k * world)  # each micro-batch's share of the mean
        loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    return [p.grad for p in model.parameters()]


def my_accumulate(rank: int, world: int, model: nn.Module, xs: torch.Tensor, ys: torch.Tensor, global_batch: int,
                  k: int) -> list[torch.Tensor | None]:
    """k micro-steps of this rank's slice add into .grad, then one all-reduce per gradient sums over the ranks."""
    for xj, yj in zip(xs.tensor_split(k), ys.tensor_split(k)):
        loss = nn.functional.cross_entropy(model(xj), yj, reduction="sum") / global_batch
        loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    return [p.grad for p in model.parameters()]


def _one_device() -> list[torch.Tensor]:
    model, (x, y) = _model(), _data()
    nn.functional.cross_entropy(model(x), y).backward()
    return [p.grad.clone() for p in model.parameters()]  # type: ignore[union-attr]  # backward has set them


def _worker(rank: int, world: int, fn: Callable[..., Any]) -> Logged:
    x, y = _data()
    xs, ys = x.tensor_split(world)[rank], y.tensor_split(world)[rank]
    return logged(fn, rank, world, _model(), xs, ys, BATCH, MICRO_STEPS)


def _run(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    reference = _one_device()
    return [(f"{world} ranks, rank {rank}", run, (world, reference))
            for world in (2, 4) for rank, run in enumerate(on_ranks(_worker, world, fn))]


def _judge(case: str, run: Logged, context: Any) -> str | None:
    world, reference = context
    got = run.result
    if not (isinstance(got, (list, tuple)) and len(got) == len(reference)
            and all(isinstance(g, torch.Tensor) and g.shape == r.shape for g, r in zip(got, reference))):
        return f"return the {len(reference)} gradients of the model's parameters, in order"
    error = max(max_error(g, r) for g, r in zip(got, reference))
    if error > TOLERANCE:
        if all(torch.allclose(g, world * r, atol=TOLERANCE) for g, r in zip(got, reference)):
            return f"the gradients are {world} times one device's: the ranks' losses were averaged, not summed"
        return (f"the gradients differ from one device's gradient of the whole batch's mean loss by up to "
                f"{error:.2g}: the micro-batches (and the ranks' slices) are not all the same size")
    param_bytes = sum(r.numel() * r.element_size() for r in reference)
    return sent_at_most(run, BUS_FACTORS["all_reduce"](world) * param_bytes, "one all-reduce of the gradients",
                        "accumulation sums the gradients over the ranks once per optimizer step, not once per "
                        "micro-step")


def _every_micro_step(rank: int, world: int, model: nn.Module, xs: torch.Tensor, ys: torch.Tensor, global_batch: int,
                      k: int) -> list[torch.Tensor]:
    """Right numbers, k times the messages: each micro-step's gradient summed over the ranks on its own."""
    total = [torch.zeros_like(p) for p in model.parameters()]
    for xj, yj in zip(xs.tensor_split(k), ys.tensor_split(k)):
        model.zero_grad()
        (nn.functional.cross_entropy(model(xj), yj, reduction="sum") / global_batch).backward()
        for t, p in zip(total, model.parameters()):
            dist.all_reduce(p.grad)
            t += p.grad  # type: ignore[arg-type]  # backward has set it
    return total


def _averaged_ranks(rank: int, world: int, model: nn.Module, xs: torch.Tensor, ys: torch.Tensor, global_batch: int,
                    k: int) -> list[torch.Tensor | None]:
    """Each rank's own mean loss, summed over the ranks: world times the gradient."""
    nn.functional.cross_entropy(model(xs), ys, reduction="sum").div(len(xs)).backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    return [p.grad for p in model.parameters()]


def _copy_of_given(rank: int, world: int, model: nn.Module, xs: torch.Tensor, ys: torch.Tensor, global_batch: int,
                   k: int) -> list[torch.Tensor | None]:
    """The given function called through another: it runs on the ranks, so the check explains its result."""
    return given_accumulate(rank, world, model, xs, ys, global_batch, k)


accumulate_checker = code_checker(_run, _judge, "on 2 and 4 ranks, with micro-batches of unequal sizes, every "
                                                "rank's gradients equal one device's on the whole batch, and "
                                                "each rank sent one all-reduce's bytes.")
ACCUMULATE_WRONG = [(_copy_of_given, "are not all the same size"), (_every_micro_step, "once per optimizer step"),
                    (_averaged_ranks, "the ranks' slices")]
