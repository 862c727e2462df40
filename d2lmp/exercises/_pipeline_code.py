"""The pipeline code exercises of notebook 14, run on real gloo ranks: outputs, a loss, and the messages.

Both run a network of equal-width layers cut into stages on 2 and 3 ranks, with micro-batches of unequal
sizes, against the unsplit network. The forward pass must return the unsplit network's output on the
last rank; a find-the-bug exercise gives a pipeline whose loss averages the micro-batches' means. In
both, each rank's messages are checked (``_code.logged``): one per micro-batch from rank r to r + 1 and
no collective, so sending the whole batch at once, right in every number, fails. The questions are in
``network_partitioning``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, no_type_check

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from d2lmp.exercises._code import Logged, code_checker, logged, max_error, no_collective, on_ranks

__all__ = ["my_pipeline_forward", "forward_checker", "FORWARD_WRONG", "given_pipeline_loss", "my_pipeline_loss",
           "loss_checker", "LOSS_WRONG"]

# --------------------------------------------------------------------------------------------
# A micro-batched pipeline forward on ranks

WIDTH, LAYERS = 4, 6


def my_pipeline_forward(rank: int, world: int, stage: nn.Module, x: torch.Tensor,
                        micro_batches: int) -> torch.Tensor | None:
    """Forward ``x`` through the pipeline in micro-batches; the last rank returns all outputs, the others None."""
    outputs = []
    for xb in torch.tensor_split(x, micro_batches):
        if rank == 0:
            inp = xb
        else:
            inp = torch.empty_like(xb)  # every stage keeps the width here, so the shape is the micro-batch's
            dist.recv(inp, rank - 1)
        out = stage(inp)
        if rank < world - 1:
            dist.send(out, rank + 1)
        else:
            outputs.append(out)
    return torch.cat(outputs) if rank == world - 1 else None


def _pipeline_model() -> nn.Sequential:
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for _ in range(LAYERS // 2):
        layers += [nn.Linear(WIDTH, WIDTH), nn.Tanh()]
    return nn.Sequential(*layers)


def _stage(rank: int, world: int) -> nn.Module:
    sizes = [LAYERS // world + (i < LAYERS % world) for i in range(world)]
    start = sum(sizes[:rank])
    return _pipeline_model()[start:start + sizes[rank]]


def _pipeline_worker(rank: int, world: int, fn: Callable[..., Any], x: torch.Tensor, micro_batches: int) -> Logged:
    with torch.no_grad():
        return logged(fn, rank, world, _stage(rank, world), x.clone(), micro_batches)


PIPELINE_CASES = ((2, 7, 3), (3, 5, 4))  # (ranks, batch, micro-batches): micro-batches of unequal sizes


def _pipeline_run(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    results = []
    for world, batch, m in PIPELINE_CASES:
        x = torch.randn(batch, WIDTH, generator=torch.Generator().manual_seed(batch))
        with torch.no_grad():
            expected = _pipeline_model()(x)
        runs = on_ranks(_pipeline_worker, world, fn, x, m)
        results.append((f"{world} ranks, batch {batch} in {m} micro-batches, last rank", runs[-1],
                        (expected, x, m, runs)))
    return results


def _micro_batch_messages(runs: list[Logged], x: torch.Tensor, m: int) -> str | None:
    """None when every rank but the last sent one message per micro-batch, of its size, to the next rank."""
    world = len(runs)
    sizes = [t.numel() * 4 for t in torch.tensor_split(x, m)]
    for rank, run in enumerate(runs):
        used = no_collective(run, "a pipeline built from dist.send and dist.recv")
        if used:
            return used
        expected = [] if rank == world - 1 else sizes
        if [m_.nbytes for m_ in run.sends] != expected or any(m_.peer != rank + 1 for m_ in run.sends):
            return (f"rank {rank} sent {len(run.sends)} message(s) ({[m_.nbytes for m_ in run.sends]} bytes); a "
                    f"pipeline of {m} micro-batches sends each micro-batch's activations on as soon as they are "
                    f"computed, one message per micro-batch ({sizes} bytes), from rank r to rank r + 1 only, so that "
                    "rank r + 1 works on one micro-batch while rank r computes the next")
    return None


def _pipeline_judge(case: str, run: Logged, context: Any) -> str | None:
    expected, x, m, runs = context
    got = run.result
    if not isinstance(got, torch.Tensor):
        return f"the last rank returned {type(got).__name__}, expected a tensor of shape {tuple(expected.shape)}"
    if got.shape == expected.shape and torch.allclose(got, expected, atol=1e-5):
        return _micro_batch_messages(runs, x, m)
    chunks = torch.tensor_split(expected, m)
    if got.shape == chunks[-1].shape and torch.allclose(got, chunks[-1], atol=1e-5):
        return "the last rank returned only the last micro-batch's output: keep every micro-batch's output and " \
               "concatenate them in order"
    if got.shape == expected.shape and torch.allclose(got, torch.cat(chunks[::-1]), atol=1e-5):
        return "the micro-batches come out in reverse order: concatenate them in the order they were sent"
    if got.shape != expected.shape:
        return f"the last rank returned shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    return (f"the output differs from the unsplit network by up to {max_error(got, expected):.3g}: does every rank "
            "apply its own stage to what it receives, and pass the result on?")


def _pipeline_last_only(rank: int, world: int, stage: nn.Module, x: torch.Tensor,
                        micro_batches: int) -> torch.Tensor | None:
    out = my_pipeline_forward(rank, world, stage, x, micro_batches)
    return None if out is None else torch.tensor_split(out, micro_batches)[-1]




def _pipeline_whole_batch(rank: int, world: int, stage: nn.Module, x: torch.Tensor,
                          micro_batches: int) -> torch.Tensor | None:
    """Right numbers, no pipelining: the whole batch travels in one message per rank."""
    inp = x
    if rank > 0:
        inp = torch.empty_like(x)
        dist.recv(inp, rank - 1)
    out = stage(inp)
    if rank < world - 1:
        dist.send(out, rank + 1)
    return out if rank == world - 1 else None


forward_checker = code_checker(_pipeline_run, _pipeline_judge, "on 2 and 3 ranks the last stage returns exactly the "
                                                               "unsplit network's output, one message per micro-batch.")
FORWARD_WRONG = [(_pipeline_last_only, "only the last micro-batch"), (_pipeline_whole_batch, "one message per micro")]


# --------------------------------------------------------------------------------------------
# Find the bug: a pipeline's loss over micro-batches of unequal sizes


@no_type_check  # shown to the student as written: its loss starts as a float, then becomes a tensor
def given_pipeline_loss(rank: int, world: int, stage: nn.Module, x: torch.Tensor, y: torch.Tensor,
                        micro_batches: int) -> torch.Tensor | float | None:
    """The whole batch's mean squared error, computed by a pipeline of micro-batches (last rank; the others None)."""
    loss = 0.0
    for xb, yb in zip(torch.tensor_split(x, micro_batches), torch.tensor_split(y, micro_batches)):
        if rank == 0:
            inp = xb
        else:
            inp = torch.empty_like(xb)
            dist.recv(inp, rank - 1)
        out = stage(inp)
        if rank < world - 1:
            dist.send(out, rank + 1)
        else:
            loss = loss + F.mse_loss(out, yb) / micro_batches  # this micro-batch's share of the batch's mean
    return loss if rank == world - 1 else None


def my_pipeline_loss(rank: int, world: int, stage: nn.Module, x: torch.Tensor, y: torch.Tensor,
                     micro_batches: int) -> torch.Tensor | float | None:
    """The whole batch's mean squared error, computed by a pipeline of micro-batches (last rank; the others None)."""
    loss: torch.Tensor | float = 0.0
    for xb, yb in zip(torch.tensor_split(x, micro_batches), torch.tensor_split(y, micro_batches)):
        if rank == 0:
            inp = xb
        else:
            inp = torch.empty_like(xb)
            dist.recv(inp, rank - 1)
        out = stage(inp)
        if rank < world - 1:
            dist.send(out, rank + 1)
        else:
            loss = loss + F.mse_loss(out, yb) * len(yb) / len(y)  # weighed by its share of the examples
    return loss if rank == world - 1 else None


def _loss_inputs(batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(100 + batch)
    return torch.randn(batch, WIDTH, generator=g), torch.randn(batch, WIDTH, generator=g)


def _loss_worker(rank: int, world: int, fn: Callable[..., Any], x: torch.Tensor, y: torch.Tensor,
                 micro_batches: int) -> Logged:
    with torch.no_grad():
        return logged(fn, rank, world, _stage(rank, world), x.clone(), y.clone(), micro_batches)


def _loss_run(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    results = []
    for world, batch, m in PIPELINE_CASES:
        x, y = _loss_inputs(batch)
        with torch.no_grad():
            out = _pipeline_model()(x)
        expected = F.mse_loss(out, y)
        mean_of_means = sum(F.mse_loss(o, t) for o, t in zip(torch.tensor_split(out, m), torch.tensor_split(y, m))) / m
        runs = on_ranks(_loss_worker, world, fn, x, y, m)
        results.append((f"{world} ranks, batch {batch} in {m} micro-batches, last rank", runs[-1],
                        (expected, mean_of_means, x, m, runs)))
    return results


def _loss_judge(case: str, run: Logged, context: Any) -> str | None:
    expected, mean_of_means, x, m, runs = context
    got = run.result
    try:
        value = float(got)
    except (TypeError, ValueError, RuntimeError):
        return f"the last rank returned {type(got).__name__}, expected the loss, a number"
    if math.isclose(value, float(expected), rel_tol=1e-5, abs_tol=1e-7):
        return _micro_batch_messages(runs, x, m)
    sizes = [len(t) for t in torch.tensor_split(x, m)]
    if math.isclose(value, float(mean_of_means), rel_tol=1e-5, abs_tol=1e-7):
        return (f"your loss is the mean of the micro-batches' means: the micro-batches hold {sizes} examples, so "
                "each mean must be weighed by its share of the batch, len(micro-batch) / len(batch), not 1/m")
    return f"your loss is {value:.6g}, the unsplit network's mean squared error is {float(expected):.6g}"


def _loss_copy_of_given(rank: int, world: int, stage: nn.Module, x: torch.Tensor, y: torch.Tensor,
                        micro_batches: int) -> torch.Tensor | float | None:
    """The given function called through another: it runs on the ranks, so the check explains its result."""
    result: torch.Tensor | float | None = given_pipeline_loss(rank, world, stage, x, y, micro_batches)
    return result


loss_checker = code_checker(_loss_run, _loss_judge, "on 2 and 3 ranks, with micro-batches of unequal sizes, the last "
                                                    "stage's loss equals the unsplit network's.")
LOSS_WRONG = [(_loss_copy_of_given, "the mean of the micro-batches' means")]
