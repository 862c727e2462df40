"""Exercises for notebook 14 (layerwise partitioning): a column-split linear layer on ranks, and its bytes.

The two code exercises run the student's column-split forward and backward on 2 and 3 real gloo
ranks. The forward gets weights whose rows owned by other ranks are NaN (a rank holding only its
shard would not have them), so using them shows; its output must equal ``nn.Linear``'s. The backward
is compared with ``TP.ColumnParallelLinear``'s gradients computed on the same ranks.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from ._code import code_checker, detached, max_error, on_ranks
from .core import Exercise, number_checker

__all__ = ["EXERCISES", "column_forward", "column_backward", "megatron_order", "fc6_break_even", "conv4_all_maps",
           "overlap_gathers"]

CASES = ((2, 3, 5, 6), (3, 5, 4, 9))  # (ranks, batch, in features, out features)


def _layer(batch: int, n_in: int, n_out: int):
    g = torch.Generator().manual_seed(n_out)
    return (torch.randn(batch, n_in, generator=g), torch.randn(n_out, n_in, generator=g),
            torch.randn(n_out, generator=g), torch.randn(batch, n_out, generator=g))


# --------------------------------------------------------------------------------------------
# Forward


def my_column_linear(rank, world, x, weight, bias):
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


def _forward_worker(rank, world, fn, x, weight, bias):
    return detached(fn(rank, world, x.clone(), _shard_only(weight, rank, world), _shard_only(bias, rank, world)))


def _forward_run(fn):
    results = []
    for world, batch, n_in, n_out in CASES:
        x, w, b, _ = _layer(batch, n_in, n_out)
        expected = F.linear(x, w, b)
        for rank, got in enumerate(on_ranks(_forward_worker, world, fn, x, w, b)):
            results.append((f"{world} ranks, Linear({n_in}, {n_out}), rank {rank}", got, (expected, rank, world)))
    return results


def _forward_judge(case, got, context):
    expected, rank, world = context
    if not isinstance(got, torch.Tensor):
        return f"expected a tensor, got {type(got).__name__}"
    if torch.isnan(got).any():
        return ("your output contains NaN: you used rows of `weight` or `bias` that belong to other ranks (NaN here, "
                "as a rank holding only its shard would not have them). Use rows [r·k, (r+1)·k) with k = out/world")
    if got.shape == expected.shape and torch.allclose(got, expected, atol=1e-5):
        return None
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


def _forward_no_gather(rank, world, x, weight, bias):
    k = weight.shape[0] // world
    return F.linear(x, weight[rank * k:(rank + 1) * k], bias[rank * k:(rank + 1) * k])


def _forward_whole_weight(rank, world, x, weight, bias):
    return F.linear(x, weight, bias)


# --------------------------------------------------------------------------------------------
# Backward


def my_column_backward(rank, world, x, weight, grad_output):
    """(grad of x, grad of this rank's weight shard, grad of its bias shard) for Y_r = x W_rᵀ + b_r."""
    grad_weight = grad_output.t() @ x  # local: these weights only affect this rank's outputs
    grad_bias = grad_output.sum(0)
    grad_x = grad_output @ weight  # a partial sum: x feeds every rank's output features
    dist.all_reduce(grad_x)
    return grad_x, grad_weight, grad_bias


def _backward_worker(rank, world, fn, x, w, b, grad_out):
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
    reference = (xs.grad.clone(), layer.weight.grad.clone(), layer.bias.grad.clone())
    got = fn(rank, world, x.clone(), w[rank * k:(rank + 1) * k].clone(), mine.clone())
    return detached(got), reference


def _backward_run(fn):
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


def _backward_judge(case, got, context):
    (gx, gw, gb), partial, summed_weight, world = context
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
    return "; ".join(problems) or None


def _backward_no_all_reduce(rank, world, x, weight, grad_output):
    return grad_output @ weight, grad_output.t() @ x, grad_output.sum(0)


def _backward_averaged(rank, world, x, weight, grad_output):
    grad_x, grad_weight, grad_bias = my_column_backward(rank, world, x, weight, grad_output)
    return grad_x / world, grad_weight, grad_bias


# --------------------------------------------------------------------------------------------
# Bytes


FC6_IN, FC6_OUT = 9216, 4096
FC6_GRAD_BYTES = (FC6_IN * FC6_OUT + FC6_OUT) * 4
FC6_BREAK_EVEN = FC6_GRAD_BYTES / ((FC6_OUT // 2 + FC6_IN) * 4)  # column split, gathered output, 2 ranks: ≈ 3352
CONV4_ALL_MAPS = 192 * 13 * 13 * 4  # each GPU's half of conv3's 384 maps of 13×13, FP32, per image


EXERCISES = [
    Exercise(
        function="my_column_linear(rank, world, x, weight, bias)",
        key="column_forward", number=1,
        question="Write the forward pass of a column-split linear layer: `my_column_linear(rank, world, x, weight, "
                 "bias)`. `x` (batch, in) is the same on every rank; `weight` (out, in) and `bias` (out,) have the "
                 "full layer's shapes, but only this rank's rows [r·k, (r+1)·k), k = out/world, hold values: the "
                 "other ranks' rows are NaN, as a rank holding only its shard would not have them. Every rank returns "
                 "the full output (batch, out), equal to `nn.Linear`'s. It runs on 2 and 3 gloo ranks.",
        hint_text="Compute this rank's slice of the outputs with its rows of `weight` and `bias`, then "
                  "`dist.all_gather` the slices into a list and concatenate them along the feature dimension.",
        solution_text="Y_r = x W_rᵀ + b_r with this rank's k rows, then all-gather the (batch, k) slices and "
                      "torch.cat them along dim=-1 in rank order. Forward, the column split needs no communication "
                      "until the full output is needed; the all-gather moves batch × out × (world−1)/world values "
                      "into each rank.",
        checker=code_checker(_forward_run, _forward_judge, "on 2 and 3 ranks every rank's output equals nn.Linear's."),
        reference=my_column_linear,
        wrong=[(_forward_no_gather, "only this rank's slice"), (_forward_whole_weight, "contains NaN")]),
    Exercise(
        function="my_column_backward(rank, world, x, weight, grad_output)",
        key="column_backward", number=2,
        question="Write the backward pass of a column-split layer by hand: which gradient is local and which needs "
                 "the all-reduce? `my_column_backward(rank, world, x, weight, grad_output)` gets the full input `x` "
                 "(batch, in), this rank's weight shard (k, in) and the gradient of its output slice (batch, k), and "
                 "returns `(grad_x, grad_weight, grad_bias)` for the full input and this rank's shard. It is checked "
                 "on 2 and 3 gloo ranks against `TP.ColumnParallelLinear`'s autograd gradients on the same ranks.",
        hint_text="For Y_r = x W_rᵀ + b_r: dL/dW_r = (dL/dY_r)ᵀ x and dL/db_r = Σ over the batch of dL/dY_r use only "
                  "this rank's data. dL/dx = Σ_r (dL/dY_r) W_r: each rank can compute one term of that sum.",
        solution_text="grad_weight = grad_outputᵀ · x and grad_bias = grad_output.sum(0) are local: the shard's "
                      "weights only affect this rank's output features. grad_x = grad_output · W_r is a partial sum, "
                      "because x feeds every rank's features: all-reduce (sum) it, which is exactly what "
                      "copy_to_parallel does in backward.",
        checker=code_checker(_backward_run, _backward_judge, "on 2 and 3 ranks your gradients equal "
                                                             "TP.ColumnParallelLinear's."),
        reference=my_column_backward,
        wrong=[(_backward_no_all_reduce, "only this rank's partial sum"), (_backward_averaged, "the average")]),
    Exercise(
        key="megatron_order", number=3,
        question="Why does Megatron-LM put the column split first and the row split second in an MLP, rather than the "
                 "other way round?",
        hint_text="Follow what each rank holds after a column split (a slice of the hidden features) and what a row "
                  "split needs as input; where does an element-wise activation fit; what would a row split first "
                  "leave you with?",
        solution_text="A column split leaves each rank with a slice of the hidden features; an element-wise "
                      "activation (GeLU) can be applied to that slice locally, and a row split takes exactly such a "
                      "slice as its input. So column → activation → row needs one all-reduce forward (after the row "
                      "layer) and one backward (before the column layer), nothing in between. Row first would end "
                      "with partial sums of the hidden features: they must be all-reduced before the non-linear "
                      "activation (GeLU of a partial sum is not a partial sum of GeLU), and the column layer after "
                      "it needs the full input, so it costs an extra collective each way."),
    Exercise(
        key="fc6_break_even", number=4,
        question="With `TP.comm_volume`, find the batch size at which splitting fc6 (9216 → 4096) over two ranks by "
                 "columns (output gathered) sends as much as all-reducing its gradients.",
        hint_text="The column split's bytes grow linearly with the batch (forward: B·4096/2 outputs; backward: B·9216 "
                  "input gradients, 4 bytes each); data parallelism's gradient bytes do not depend on the batch. Set "
                  "them equal and solve for B.",
        solution_text=f"Column split: B × (2048 + 9216) × 4 bytes per step; gradients: (9216 × 4096 + 4096) × 4 = "
                      f"{FC6_GRAD_BYTES:,} bytes. Equal at B ≈ {FC6_BREAK_EVEN:,.0f}. Below that (AlexNet's 128) "
                      "splitting fc6 sends far less than data parallelism; the row split (B·4096·4 bytes) breaks even "
                      "only at about 9,217.",
        checker=number_checker(FC6_BREAK_EVEN, "examples", rel_tol=0.01, near_misses=[
            (FC6_GRAD_BYTES / (FC6_OUT * 4), "that is the row split's break-even (input split, all-reduced output); "
                                             "the question asks for the column split with the output gathered"),
            (FC6_GRAD_BYTES / (FC6_OUT // 2 * 4), "you counted only the forward all-gather: backward all-reduces the "
                                                  "input gradient, B × 9216 values"),
            (FC6_GRAD_BYTES / (FC6_OUT * 4 + FC6_IN * 4), "the forward all-gather sends this rank's half of the "
                                                          "outputs, B × 4096/2 values, not all of them")]),
        reference=FC6_BREAK_EVEN,
        wrong=[(9217, "row split's break-even"), (18434, "only the forward all-gather")],
        how_to_answer="Pass the batch size."),
    Exercise(
        key="conv4_all_maps", number=5,
        question="In `AlexNetTower`, conv4 and conv5 need no communication. What would it cost (bytes each GPU sends "
                 "forward per image at the paper's size) to connect conv4 to all of conv3's maps, as conv3 is to "
                 "conv2's?",
        hint_text="conv3's output is 384 maps of 13×13 (no pooling after conv3), half of them on each GPU; an "
                  "all-gather sends each GPU's half, in FP32, as `crossing_bytes` counts.",
        solution_text=f"Each GPU sends its 192 maps of 13 × 13 FP32 values: 192 × 169 × 4 = {CONV4_ALL_MAPS:,} bytes "
                      "per image (16.6 MB at batch 128), and the same again backward (reduce-scatter), larger than "
                      "the conv2 → conv3 crossing, which happens after pooling to 13×13 from 256 maps (86,528 "
                      "bytes). The paper avoided it, trading some accuracy for communication.",
        checker=number_checker(CONV4_ALL_MAPS, "bytes", rel_tol=0.001, near_misses=[
            (2 * CONV4_ALL_MAPS, "that is all of conv3's output; each GPU sends only its half (192 maps)"),
            (192 * 6 * 6 * 4, "conv3's output is not pooled: its maps are 13×13"),
            (CONV4_ALL_MAPS // 4, "count 4 bytes per FP32 value")]),
        reference=CONV4_ALL_MAPS, wrong=[(2 * CONV4_ALL_MAPS, "only its half"), (27_648, "not pooled")],
        how_to_answer="Pass the bytes per image per GPU."),
    Exercise(
        key="overlap_gathers", number=6,
        question="The towers' all-gathers block the computation. Which of them could overlap with other work, and how?",
        hint_text="An all-gather can overlap only with work that does not need its result: look for computation on "
                  "this rank's own half that can start before the other half arrives, and for independent "
                  "micro-batches.",
        solution_text="conv2 → conv3: conv3's output channels sum over all 256 input maps, so each GPU can start on "
                      "the contribution of its own 128 maps (an input-channel-split partial convolution) while the "
                      "other half is in flight (async all_gather / isend), then add the rest. Likewise fc6, fc7 and "
                      "fc8 can multiply the local half of their input by the matching columns of their weights while "
                      "the remote half arrives. Across the batch, splitting it into micro-batches lets micro-batch "
                      "i+1's convolutions run during micro-batch i's all-gather. Backward, the reduce-scatters can "
                      "overlap with the weight-gradient computation of the same layer, which does not need them."),
]

column_forward, column_backward, megatron_order, fc6_break_even, conv4_all_maps, overlap_gathers = EXERCISES

