"""The tensor-parallel code exercises of notebook 15, run on real gloo ranks: outputs, gradients and bytes.

The column-split forward gets weights whose rows owned by other ranks are NaN (a rank holding only its
shard would not have them), so using them shows; its output must equal ``nn.Linear``'s. The backward is
compared with ``TP.ColumnParallelLinear``'s gradients computed on the same ranks. In both, each rank's
bytes (``_code.logged``, a collective counted as a ring runs it) may not exceed what the split needs, so
gathering the weights, or all-reducing a padded output, fails although its numbers are right. Two
find-the-bug exercises give a row-split forward that adds the bias before the all-reduce, and the
initialisation of a column split that seeds every rank alike. The questions are in
``layerwise_partitioning``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from d2lmp.exercises._code import Logged, code_checker, logged, max_error, on_ranks, sent_at_most
from d2lmp.model.alpha_beta import BUS_FACTORS

__all__ = ["my_column_linear", "forward_checker", "FORWARD_WRONG", "my_column_backward", "backward_checker",
           "BACKWARD_WRONG", "given_row_linear", "my_row_linear", "row_checker", "ROW_WRONG", "given_column_init",
           "my_column_init", "init_checker", "INIT_WRONG"]

CASES = ((2, 3, 5, 6), (3, 2, 5, 9))  # (ranks, batch, in, out): the weights outweigh the outputs, so gathering
# the weights instead of the outputs sends more bytes


def _layer(batch: int, n_in: int, n_out: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(n_out)
    return (torch.randn(batch, n_in, generator=g), torch.randn(n_out, n_in, generator=g),
            torch.randn(n_out, generator=g), torch.randn(batch, n_out, generator=g))


# --------------------------------------------------------------------------------------------
# The column split's forward


def my_column_linear(rank: int, world: int, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """This rank computes its slice of the output features, then all ranks all-gather the full output."""
    k = weight.shape[0] // world
    mine = F.linear(x, weight[rank * k:(rank + 1) * k], bias[rank * k:(rank + 1) * k])
    parts = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(parts, mine)
    return torch.cat(parts, dim=-1)


def _shard_only(t: torch.Tensor, rank: int, world: int) -> torch.Tensor:
    """``t`` with every row that another rank owns replaced by NaN."""
    k = t.shape[0] // world
    out = torch.full_like(t, float("nan"))
    out[rank * k:(rank + 1) * k] = t[rank * k:(rank + 1) * k]
    return out


def _forward_worker(rank: int, world: int, fn: Callable[..., Any], x: torch.Tensor, weight: torch.Tensor,
                    bias: torch.Tensor) -> Logged:
    return logged(fn, rank, world, x.clone(), _shard_only(weight, rank, world), _shard_only(bias, rank, world))


def _forward_run(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    results = []
    for world, batch, n_in, n_out in CASES:
        x, w, b, _ = _layer(batch, n_in, n_out)
        expected = F.linear(x, w, b)
        for rank, got in enumerate(on_ranks(_forward_worker, world, fn, x, w, b)):
            results.append((f"{world} ranks, Linear({n_in}, {n_out}), rank {rank}", got, (expected, rank, world)))
    return results


def _forward_judge(case: str, run: Logged, context: Any) -> str | None:
    expected, rank, world = context
    got = run.result
    if not isinstance(got, torch.Tensor):
        return f"expected a tensor, got {type(got).__name__}"
    if torch.isnan(got).any():
        return ("your output contains NaN: you used rows of `weight` or `bias` that belong to other ranks (NaN here, "
                "as a rank holding only its shard would not have them). Use rows [r·k, (r+1)·k) with k = out/world")
    if got.shape == expected.shape and torch.allclose(got, expected, atol=1e-5):
        return sent_at_most(run, BUS_FACTORS["all_gather"](world) * expected.numel() * 4, "the column split's forward",
                            "an all-gather of the ranks' output slices, while the weights stay where they are (an "
                            "all-reduce of a padded output sends twice as much)")
    k = expected.shape[1] // world
    mine = expected[:, rank * k:(rank + 1) * k]
    if got.shape == mine.shape and torch.allclose(got, mine, atol=1e-5):
        return "you returned only this rank's slice of the output features: all-gather the slices and concatenate " \
               "them along the last dimension"
    if got.shape == (world * expected.shape[0], k):
        return "you concatenated the gathered slices along the batch: the slices are output features, dim=-1"
    if got.shape != expected.shape:
        return f"your output has shape {tuple(got.shape)}, expected {tuple(expected.shape)} = (batch, out features)"
    return f"your output differs from nn.Linear's by up to {max_error(got, expected):.3g}"


def _forward_no_gather(rank: int, world: int, x: torch.Tensor, weight: torch.Tensor,
                       bias: torch.Tensor) -> torch.Tensor:
    k = weight.shape[0] // world
    return F.linear(x, weight[rank * k:(rank + 1) * k], bias[rank * k:(rank + 1) * k])


def _forward_whole_weight(rank: int, world: int, x: torch.Tensor, weight: torch.Tensor,
                          bias: torch.Tensor) -> torch.Tensor:
    return F.linear(x, weight, bias)


# --------------------------------------------------------------------------------------------
# The column split's backward


def my_column_backward(rank: int, world: int, x: torch.Tensor, weight: torch.Tensor,
                       grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(grad of x, grad of this rank's weight shard, grad of its bias shard) for Y_r = x W_rᵀ + b_r."""
    grad_weight = grad_output.t() @ x  # local: these weights only affect this rank's outputs
    grad_bias = grad_output.sum(0)
    grad_x = grad_output @ weight  # a partial sum: x feeds every rank's output features
    dist.all_reduce(grad_x)
    return grad_x, grad_weight, grad_bias


def _backward_worker(rank: int, world: int, fn: Callable[..., Any], x: torch.Tensor, w: torch.Tensor, b: torch.Tensor,
                     grad_out: torch.Tensor) -> tuple[Logged, tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    from d2lmp.parallel import tensor_parallel as TP

    full = nn.Linear(w.shape[1], w.shape[0])
    with torch.no_grad():
        full.weight.copy_(w)
        full.bias.copy_(b)
    layer = TP.ColumnParallelLinear(full, gather_output=False)
    k = w.shape[0] // world
    mine = grad_out[:, rank * k:(rank + 1) * k]
    xs = x.clone().requires_grad_(True)
    # The reference: autograd through the library's column-split layer. (A probe and .sum() rather than
    # .backward(mine): backward with an explicit gradient lazily imports sympy, seconds in every fresh rank.)
    (layer(xs) * mine).sum().backward()
    reference = (xs.grad.clone(), layer.weight.grad.clone(), layer.bias.grad.clone())  # type: ignore[union-attr]
    return logged(fn, rank, world, x.clone(), w[rank * k:(rank + 1) * k].clone(), mine.clone()), reference


def _backward_run(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    results = []
    for world, batch, n_in, n_out in CASES:
        x, w, b, grad_out = _layer(batch, n_in, n_out)
        for rank, (got, reference) in enumerate(on_ranks(_backward_worker, world, fn, x, w, b, grad_out)):
            k = n_out // world
            partial = grad_out[:, rank * k:(rank + 1) * k] @ w[rank * k:(rank + 1) * k]
            summed_weight = sum(grad_out[:, r * k:(r + 1) * k].t() @ x for r in range(world))
            results.append((f"{world} ranks, Linear({n_in}, {n_out}), rank {rank}", got,
                            (reference, partial, summed_weight, world)))
    return results


def _backward_judge(case: str, run: Logged, context: Any) -> str | None:
    (gx, gw, gb), partial, summed_weight, world = context
    got = run.result
    if not (isinstance(got, (tuple, list)) and len(got) == 3 and all(isinstance(t, torch.Tensor) for t in got)):
        return "return a tuple of three tensors: (grad_x, grad_weight, grad_bias)"
    x_, w_, b_ = got
    problems = []
    if not (x_.shape == gx.shape and torch.allclose(x_, gx, atol=1e-5)):
        if x_.shape == gx.shape and torch.allclose(x_, partial, atol=1e-5):
            problems.append("grad_x is only this rank's partial sum grad_output·W_r: x feeds every rank's output "
                            "features, so its gradient is the sum over ranks: all-reduce it")
        elif x_.shape == gx.shape and torch.allclose(x_, gx / world, atol=1e-5):
            problems.append("grad_x is the average over ranks: it is their sum (all-reduce, and do not divide)")
        else:
            problems.append(f"grad_x {tuple(x_.shape)} differs from the full layer's {tuple(gx.shape)} "
                            f"(by up to {max_error(x_, gx) if x_.shape == gx.shape else float('nan'):.3g})")
    if not (w_.shape == gw.shape and torch.allclose(w_, gw, atol=1e-5)):
        if w_.shape == gw.t().shape:
            problems.append(f"grad_weight has shape {tuple(w_.shape)}, transposed: the shard is (out/world, in), "
                            "so grad_weight = grad_outputᵀ·x")
        elif w_.shape == gw.shape and torch.allclose(w_, summed_weight, atol=1e-5):
            problems.append("grad_weight needs no communication: this rank's weights only affect its own output "
                            "features (you summed it over ranks)")
        else:
            problems.append("grad_weight differs from the shard's gradient grad_outputᵀ·x")
    if not (b_.shape == gb.shape and torch.allclose(b_, gb, atol=1e-5)):
        problems.append("grad_bias is grad_output summed over the batch (dim 0), no communication")
    if problems:
        return "; ".join(problems)
    return sent_at_most(run, BUS_FACTORS["all_reduce"](world) * gx.numel() * 4, "the column split's backward",
                        "one all-reduce of the input's gradient; the weight and bias gradients are local")


def _backward_no_all_reduce(rank: int, world: int, x: torch.Tensor, weight: torch.Tensor,
                            grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return grad_output @ weight, grad_output.t() @ x, grad_output.sum(0)


def _forward_gather_weights(rank: int, world: int, x: torch.Tensor, weight: torch.Tensor,
                            bias: torch.Tensor) -> torch.Tensor:
    """Right numbers, not a split layer: every rank gathers the others' weight rows and computes the whole layer."""
    k = weight.shape[0] // world
    rows = [torch.empty_like(weight[:k]) for _ in range(world)]
    biases = [torch.empty_like(bias[:k]) for _ in range(world)]
    dist.all_gather(rows, weight[rank * k:(rank + 1) * k].contiguous())
    dist.all_gather(biases, bias[rank * k:(rank + 1) * k].contiguous())
    return F.linear(x, torch.cat(rows), torch.cat(biases))


def _forward_all_reduce(rank: int, world: int, x: torch.Tensor, weight: torch.Tensor,
                        bias: torch.Tensor) -> torch.Tensor:
    """Right numbers, twice the bytes: each rank fills its slice of a zero output and all-reduces it."""
    k = weight.shape[0] // world
    out = torch.zeros(x.shape[0], weight.shape[0])
    out[:, rank * k:(rank + 1) * k] = F.linear(x, weight[rank * k:(rank + 1) * k], bias[rank * k:(rank + 1) * k])
    dist.all_reduce(out)
    return out


def _backward_gather_everything(rank: int, world: int, x: torch.Tensor, weight: torch.Tensor,
                                grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right numbers, more bytes: gather every shard and output gradient, then compute grad_x locally."""
    weights = [torch.empty_like(weight) for _ in range(world)]
    grads = [torch.empty_like(grad_output) for _ in range(world)]
    dist.all_gather(weights, weight.contiguous())
    dist.all_gather(grads, grad_output.contiguous())
    grad_x = torch.cat(grads, dim=1) @ torch.cat(weights)
    return grad_x, grad_output.t() @ x, grad_output.sum(0)


def _backward_averaged(rank: int, world: int, x: torch.Tensor, weight: torch.Tensor,
                       grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    grad_x, grad_weight, grad_bias = my_column_backward(rank, world, x, weight, grad_output)
    return grad_x / world, grad_weight, grad_bias



forward_checker = code_checker(_forward_run, _forward_judge, "on 2 and 3 ranks every rank's output equals "
                                                             "nn.Linear's, for an all-gather's bytes.")
FORWARD_WRONG = [(_forward_no_gather, "only this rank's slice"), (_forward_whole_weight, "contains NaN"),
                 (_forward_gather_weights, "the weights stay where they are"), (_forward_all_reduce, "2 times the")]
backward_checker = code_checker(_backward_run, _backward_judge,
                                "on 2 and 3 ranks your gradients equal TP.ColumnParallelLinear's, for one all-reduce's "
                                "bytes.")
BACKWARD_WRONG = [(_backward_no_all_reduce, "only this rank's partial sum"), (_backward_averaged, "the average"),
                  (_backward_gather_everything, "one all-reduce of the input's gradient")]


# --------------------------------------------------------------------------------------------
# Find the bug: a row-split forward

ROW_CASES = ((2, 3, 6, 5), (3, 2, 9, 4))  # (ranks, batch, in features, out features)


def given_row_linear(rank: int, world: int, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """A row-split linear layer: ``x`` is this rank's slice of the input features (batch, in/world), ``weight``
    the matching columns (out, in/world), ``bias`` the whole bias; every rank returns the layer's full output."""
    partial = F.linear(x, weight, bias)  # this rank's share of the output
    dist.all_reduce(partial)  # the sum of the ranks' shares
    return partial


def my_row_linear(rank: int, world: int, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """A row-split linear layer: ``x`` is this rank's slice of the input features (batch, in/world), ``weight``
    the matching columns (out, in/world), ``bias`` the whole bias; every rank returns the layer's full output."""
    partial = F.linear(x, weight)  # this rank's partial sum of x Wᵀ, without the bias
    dist.all_reduce(partial)  # the sum over the ranks' input features
    return partial + bias  # the bias once, after the sum


def _row_worker(rank: int, world: int, fn: Callable[..., Any], x: torch.Tensor, w: torch.Tensor,
                b: torch.Tensor) -> Logged:
    k = x.shape[1] // world
    cols = slice(rank * k, (rank + 1) * k)
    return logged(fn, rank, world, x[:, cols].clone(), w[:, cols].clone(), b.clone())


def _row_run(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    results = []
    for world, batch, n_in, n_out in ROW_CASES:
        x, w, b, _ = _layer(batch, n_in, n_out)
        expected = F.linear(x, w, b)
        for rank, run in enumerate(on_ranks(_row_worker, world, fn, x, w, b)):
            results.append((f"{world} ranks, Linear({n_in}, {n_out}), rank {rank}", run, (expected, b, world)))
    return results


def _row_judge(case: str, run: Logged, context: Any) -> str | None:
    expected, bias, world = context
    got = run.result
    if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
        return f"every rank returns the full output, shape {tuple(expected.shape)}"
    if not torch.allclose(got, expected, atol=1e-5):
        if torch.allclose(got, expected + (world - 1) * bias, atol=1e-5):
            return (f"your output carries the bias {world} times: each rank added it to its partial sum before the "
                    "all-reduce, which then added the ranks' copies together; add it once, after the all-reduce")
        return f"your output differs from nn.Linear's by up to {max_error(got, expected):.3g}"
    return sent_at_most(run, BUS_FACTORS["all_reduce"](world) * expected.numel() * 4, "the row split's forward",
                        "one all-reduce of the partial outputs")


def _row_copy_of_given(rank: int, world: int, x: torch.Tensor, weight: torch.Tensor,
                       bias: torch.Tensor) -> torch.Tensor:
    """The given function called through another: it runs on the ranks, so the check explains its result."""
    return given_row_linear(rank, world, x, weight, bias)


row_checker = code_checker(_row_run, _row_judge, "on 2 and 3 ranks every rank's output equals nn.Linear's, the bias "
                                                 "added once.")
ROW_WRONG = [(_row_copy_of_given, "the bias 2 times")]


# --------------------------------------------------------------------------------------------
# Find the bug: initialising a column split

INIT_CASES = ((2, 5, 6, 3), (3, 4, 9, 7))  # (ranks, in features, out features, seed)


def given_column_init(rank: int, world: int, n_in: int, n_out: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """This rank's rows (weight, bias) of a column-split nn.Linear(n_in, n_out): together the ranks' rows must be
    the layer that ``torch.manual_seed(seed)`` and ``nn.Linear(n_in, n_out)`` give on one device."""
    torch.manual_seed(seed)  # the same seed on every rank, so that the ranks agree
    shard = nn.Linear(n_in, n_out // world)  # this rank's n_out / world output features
    return shard.weight.detach(), shard.bias.detach()


def my_column_init(rank: int, world: int, n_in: int, n_out: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """This rank's rows (weight, bias) of a column-split nn.Linear(n_in, n_out): together the ranks' rows must be
    the layer that ``torch.manual_seed(seed)`` and ``nn.Linear(n_in, n_out)`` give on one device."""
    torch.manual_seed(seed)  # every rank draws the whole layer, the one device's numbers
    full = nn.Linear(n_in, n_out)
    k = n_out // world
    return full.weight.detach()[rank * k:(rank + 1) * k], full.bias.detach()[rank * k:(rank + 1) * k]


def _init_worker(rank: int, world: int, fn: Callable[..., Any], n_in: int, n_out: int, seed: int) -> Logged:
    with torch.no_grad():
        return logged(fn, rank, world, n_in, n_out, seed)


def _init_run(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    results = []
    for world, n_in, n_out, seed in INIT_CASES:
        torch.manual_seed(seed)
        full = nn.Linear(n_in, n_out)
        runs = on_ranks(_init_worker, world, fn, n_in, n_out, seed)
        k = n_out // world
        for rank, run in enumerate(runs):
            expected = (full.weight.detach()[rank * k:(rank + 1) * k], full.bias.detach()[rank * k:(rank + 1) * k])
            results.append((f"{world} ranks, Linear({n_in}, {n_out}), seed {seed}, rank {rank}", run,
                            (expected, [r.result for r in runs], rank)))
    return results


def _init_judge(case: str, run: Logged, context: Any) -> str | None:
    (weight, bias), every_rank, rank = context
    got = run.result
    if not (isinstance(got, (tuple, list)) and len(got) == 2 and all(isinstance(t, torch.Tensor) for t in got)):
        return "return (weight rows, bias rows) of this rank's shard"
    if got[0].shape != weight.shape or got[1].shape != bias.shape:
        return (f"this rank's shard is a weight of shape {tuple(weight.shape)} and a bias of {tuple(bias.shape)}, got "
                f"{tuple(got[0].shape)} and {tuple(got[1].shape)}")
    if torch.allclose(got[0], weight) and torch.allclose(got[1], bias):
        return None
    others = [r for r, other in enumerate(every_rank) if r != rank and isinstance(other, (tuple, list))
              and len(other) == 2 and torch.equal(other[0], got[0])]
    if others:
        return (f"rank {rank} holds the same rows as rank(s) {others}: the same seed draws the same numbers on every "
                "rank, so the split layer repeats one block instead of being the one device's layer")
    return "your rows are not the rows this rank owns of the layer torch.manual_seed(seed) gives on one device"


def _init_copy_of_given(rank: int, world: int, n_in: int, n_out: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The given function called through another: it runs on the ranks, so the check explains its result."""
    return given_column_init(rank, world, n_in, n_out, seed)


def _init_seed_per_rank(rank: int, world: int, n_in: int, n_out: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(seed + rank)
    shard = nn.Linear(n_in, n_out // world)
    return shard.weight.detach(), shard.bias.detach()


init_checker = code_checker(_init_run, _init_judge, "on 2 and 3 ranks the ranks' rows together are the one device's "
                                                    "nn.Linear.")
INIT_WRONG = [(_init_copy_of_given, "holds the same rows"), (_init_seed_per_rank, "are not the rows this rank owns")]
