"""Exercises for notebook 13 (data parallelism): buckets, uneven batches on real ranks, scaling, a bug to find, and
SyncBatchNorm's statistics.

The three code exercises (gradients from an uneven batch, a data-parallel SGD step given with a bug, and the
global batch's BatchNorm statistics from per-rank sums) run on real gloo ranks against one process's arithmetic,
and only gradients, or a few sums per channel, may travel (``_dp_code``, ``_bn_code``). The bucket question counts
with ``BucketedAllReduce``'s own rule (``data_parallel.fill_buckets``), the scaling question with the notebook's
latency-bandwidth model of a data-parallel step (``dp_model.predict_step``). Both need a network's parameter sizes,
so those two exercises, and ``EXERCISES``, are built on first use: importing the module builds no model.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from d2lmp.exercises import _bn_code as BN
from d2lmp.exercises import _dp_code as D
from d2lmp.exercises._code import DIST_IMPORT, bug_hunt
from d2lmp.exercises.core import Exercise, Verdict
from d2lmp.model.alpha_beta import GPU_ALPHA_S as ALPHA
from d2lmp.model.dp_model import BACKWARD_SHARE, buckets_needed, predict_step
from d2lmp.model.dp_model import DDP_BUCKET_BYTES as BUCKET

__all__ = ["EXERCISES", "bucket_count", "uneven_batch", "bench_dp", "bandwidth_for_80", "bf16_gradients",
           "summed_gradients", "global_stats"]


# --------------------------------------------------------------------------------------------
# Buckets

TIMELINE_WIDTHS = (1024, 2048, 2048, 2048, 10)  # the timeline experiment's full-size network
SMALL_CAP, LARGE_CAP = 256 * 2**10, 64 * 2**20


def _timeline_parameters() -> list[nn.Parameter]:
    """The timeline network's parameters, in ``model.parameters()`` order, on the meta device (no memory)."""
    from d2lmp.models import mlp

    with torch.device("meta"):
        model = mlp(TIMELINE_WIDTHS[0], TIMELINE_WIDTHS[1:-1], TIMELINE_WIDTHS[-1], flatten=False)
    return list(model.parameters())


@functools.cache
def _buckets() -> tuple[int, int]:
    """(buckets at 256 KiB, buckets at 64 MiB): ``BucketedAllReduce``'s own rule, ``fill_buckets`` on the
    parameters last layer first."""
    from d2lmp.parallel.data_parallel import fill_buckets

    backward_order = _timeline_parameters()[::-1]
    return len(fill_buckets(backward_order, SMALL_CAP)), len(fill_buckets(backward_order, LARGE_CAP))


def _check_buckets(answer: Any) -> Verdict:
    try:
        small, large = (int(v) for v in answer)
    except (TypeError, ValueError):
        return Verdict(False, f"answer with a pair (buckets at 256 KiB, buckets at 64 MiB); got {answer!r}.")
    buckets = _buckets()
    if (small, large) == buckets:
        return Verdict(True, f"{buckets[0]} and {buckets[1]}. A bucket never splits a tensor: each 8-16 MiB weight "
                             "matrix already exceeds 256 KiB and closes its bucket, so smaller caps change nothing; "
                             "at 64 MiB all 42 MB go in one bucket that can start only when backward ends.")
    problems = []
    if small != buckets[0]:
        total = sum(p.numel() * p.element_size() for p in _timeline_parameters())
        near = small in (math.ceil(total / SMALL_CAP), total // SMALL_CAP)
        problems.append(f"{small} buckets at 256 KiB? " + (
            "A bucket holds whole tensors, it never cuts one: each 8-16 MiB weight matrix alone passes the cap"
            if near else "Walk the parameters last layer first and close a bucket as soon as it reaches the cap"))
    if large != buckets[1]:
        problems.append(f"{large} buckets at 64 MiB? All the gradients together are about 42 MB")
    return Verdict(False, "; ".join(problems) + ".")


# --------------------------------------------------------------------------------------------
# Scaling: the notebook's model of a data-parallel step (d2lmp.model.dp_model.predict_step)

SMALL_BATCH = 32  # a global batch too small for any bandwidth to reach 80 % at the assumed α
WORLD = 8


@functools.cache
def _alexnet_on_h200() -> tuple[float, int]:
    """(seconds per image forward and backward on one H200 at its recorded FP32 rate, gradient bytes) of
    torchvision's AlexNet: the figures of the notebook's table and widget."""
    from d2lmp.models import alexnet_torchvision, layer_table, totals
    from d2lmp.recorded import matmul_rows

    with torch.device("meta"):
        tv = totals(layer_table(alexnet_torchvision(), (1, 3, 224, 224)))
    fp32 = max(row.gflops for row in matmul_rows("float32")) * 1e9
    return 3 * tv.flops / fp32, tv.params * 4


def one_gpu_seconds(batch: int) -> float:
    """AlexNet's step on one H200, as in the notebook: 3 × the forward FLOPs per image at the recorded FP32 rate."""
    return batch * _alexnet_on_h200()[0]


def efficiency(batch: int, gbs: float, world: int = WORLD) -> float:
    """Predicted scaling efficiency with overlap (``dp_model.predict_step``) at ``gbs`` GB/s and the assumed α."""
    single = one_gpu_seconds(batch)
    step = predict_step(single, _alexnet_on_h200()[1], world, ALPHA, 1 / (gbs * 1e9), BUCKET)
    return step.efficiency(single)


def _bandwidth_for(batch: int, target: float = 0.8) -> float | None:
    lo, hi = 0.01, 1e6
    if efficiency(batch, hi) < target:
        return None
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if efficiency(batch, mid) >= target else (mid, hi)
    return hi


@dataclass(frozen=True)
class _Scaling:
    """The figures of the bandwidth exercise: what 80 % needs at batch 1024, and why batch 32 never gets there."""

    bandwidth_1024: float  # GB/s: ≈ 45 at α = 3.4 µs
    buckets: int  # all-reduces per step
    small_compute: float  # seconds: each of the 8 GPUs' share of batch 32
    small_latency: float  # seconds: every bucket's 2(n - 1) messages on an infinitely fast link


@functools.cache
def _scaling() -> _Scaling:
    bandwidth = _bandwidth_for(1024)
    if bandwidth is None:
        raise ValueError("the model no longer reaches 80 % at batch 1024: the exercise needs a new question")
    buckets = buckets_needed(_alexnet_on_h200()[1], BUCKET)
    return _Scaling(bandwidth, buckets, one_gpu_seconds(SMALL_BATCH) / WORLD, buckets * 2 * (WORLD - 1) * ALPHA)


def _check_bandwidth(answer: Any) -> Verdict:
    s = _scaling()
    try:
        first, second = answer
        first = float(first)
    except (TypeError, ValueError):
        return Verdict(False, f"answer with a pair (GB/s at batch 1024, GB/s at batch {SMALL_BATCH} or None); "
                              f"got {answer!r}.")
    problems = []
    if not math.isclose(first, s.bandwidth_1024, rel_tol=0.12):
        e = efficiency(1024, first) if first > 0 else 0.0
        problems.append(f"at {first:g} GB/s the model gives {e:.0%} at batch 1024, and 80 % needs about "
                        f"{s.bandwidth_1024:.0f} GB/s (tolerance 12 %: the slider moves in steps of 12 %)")
    never = second is None or (isinstance(second, str) and second.strip().lower() in ("none", "never")) or (
        isinstance(second, float) and math.isinf(second))
    if not never:
        try:
            e = efficiency(SMALL_BATCH, float(second))
            problems.append(f"at {float(second):g} GB/s the model gives {e:.0%} at batch {SMALL_BATCH}: no bandwidth "
                            f"reaches 80 % there. With {BUCKET / 2**20:g} MiB buckets there are {s.buckets} "
                            f"all-reduces of 14 messages each, {s.small_latency * 1e3:.2f} ms of latency even on an "
                            f"infinitely fast link, against {s.small_compute * 1e3:.2f} ms of compute per GPU")
        except (TypeError, ValueError):
            problems.append(f"the second answer should be a bandwidth or None, got {second!r}")
    if problems:
        return Verdict(False, "; ".join(problems) + ".")
    return Verdict(True, f"about {s.bandwidth_1024:.0f} GB/s at batch 1024, and never at batch {SMALL_BATCH}: with "
                         f"1/{1024 // SMALL_BATCH} of the compute, the latency of {s.buckets} buckets × 14 messages "
                         "alone exceeds what backward can hide.")


(_W2, _B2), (_W3, _B3) = BN.STATS_CASES
_SPLIT2, _SPLIT3 = (" + ".join(str(len(s)) for s in torch.arange(b).tensor_split(w)) for w, b in BN.STATS_CASES)


@functools.cache
def _bucket_count() -> Exercise:
    """Exercise 1, built on first use: its answer counts the buckets of a network on the meta device."""
    small, large = _buckets()
    return Exercise(
        key="bucket_count", number=1, title="How many buckets",
        question="Change the bucket size in the timeline experiment to 256 KiB and to 64 MiB. How many buckets (red "
                 "bars per step) does our bucketed version send for the full-size network (1024 → 2048 → 2048 → 2048 "
                 "→ 10) with each, how does the exposed communication change, and why is one huge bucket no better "
                 "than no overlap?",
        hint_text="Parameters are bucketed last layer first, and a bucket closes as soon as it reaches the cap, after "
                  "a whole tensor: a bucket never splits a tensor. How large is each weight matrix? Answer with "
                  "`(buckets at 256 KiB, buckets at 64 MiB)`.",
        solution_text=f"{small} and {large}. At 256 KiB the buckets are the same as at 2 MiB: each weight matrix (8 "
                      "or 16 MiB) exceeds the cap on its own, so every bucket is one matrix plus a few small tensors; "
                      "smaller caps only add per-message latency when tensors are small. At 64 MiB all 42 MB of "
                      "gradients form one bucket, which is complete only when backward has produced the first "
                      "layer's gradient, at the very end: nothing is left to overlap with, so the whole all-reduce "
                      "is exposed, exactly as without overlap.",
        checker=_check_buckets, reference=(small, large),
        wrong=[((161, 1), "never cuts one"), ((3, 2), "about 42 MB")],
        how_to_answer="Pass (buckets at 256 KiB, buckets at 64 MiB).")


uneven_batch = Exercise(
    function="my_dp_gradients(rank, world, model, x, y, global_batch)", imports=DIST_IMPORT,
    key="uneven_batch", number=2, title="Uneven batches",
    question="Show on paper that averaging per-rank *mean* losses gives the wrong gradient when the batch does not "
             "split evenly. Then check it in code: write `my_dp_gradients(rank, world, model, x, y, "
             "global_batch)`, which gets this rank's slice (x, y) of an uneven batch and a fresh copy of the "
             "model, and returns one gradient per parameter (in `model.parameters()` order) equal on every rank "
             "to one process's gradient of the cross-entropy averaged over the whole batch. It runs on 2 ranks "
             "(23 examples: 12 + 11) and 3 ranks (7: 3 + 2 + 2), and only gradients may travel between the ranks; "
             "try the per-rank mean too, to see the message.",
    hint_text="The full-batch gradient is (1/B) Σ_i ∇ℓ_i. Which loss on each rank makes a plain sum over ranks "
              "(`dist.all_reduce` of each `p.grad`) give exactly that? Compare with the notebook's "
              "`DP.local_loss`.",
    solution_text="Mean of means: (1/n) Σ_r (1/n_r) Σ_{i∈r} ∇ℓ_i weighs an example on rank r by 1/(n·n_r), "
                  "which equals 1/B only if every n_r = B/n. With 12 + 11 examples the 11 examples of rank 1 "
                  "count 12/11 times too much. Correct: each rank backpropagates its loss summed over its own "
                  "examples divided by the global batch B, then all-reduces (sums) every gradient: Σ_r Σ_{i∈r} "
                  "∇ℓ_i / B, exactly the full-batch mean, for any split.",
    checker=D.uneven_checker, reference=D.my_dp_gradients, wrong=D.UNEVEN_WRONG)


bench_dp = Exercise(
    key="bench_dp", number=3, title="Which version is fastest here",
    question="Run `d2lmp bench dp` and `d2lmp bench dp --world 4` in a terminal. Which version is fastest here, "
             "and does that change with `--bucket-mb 1`?",
    hint_text="Compare each version's median step time within one run (the machine's load changes between "
              "runs), and think about how many cores the ranks and gloo's threads share.",
    solution_text="On a 2-core machine the differences are small and noisy: the versions that overlap "
                  "(bucketed, ddp) gain little, because gloo's communication threads compete with the compute "
                  "threads for the same cores, and with 4 ranks on 2 cores everything gets slower. Smaller "
                  "buckets (1 MiB) add per-message latency (gloo's α, which this notebook fits, is far larger "
                  "than a GPU's) and can make the bucketed versions slower; DDP and our bucketed version "
                  "usually stay close to each other since they build the same buckets. On GPUs with separate "
                  "communication hardware, overlap wins clearly.")


@functools.cache
def _bandwidth_for_80() -> Exercise:
    """Exercise 4, built on first use: its answer and solution need AlexNet's figures."""
    sc = _scaling()
    return Exercise(
        key="bandwidth_for_80", number=4, title="Bandwidth for 80 %",
        question="With the widget, find the smallest link bandwidth at which 8 GPUs reach 80 % efficiency for AlexNet "
                 f"with a global batch of 1024 ({BUCKET / 2**20:g} MiB buckets, overlap on), with the widget's assumed "
                 f"α of {ALPHA * 1e6:g} µs (its default), not the one fitted here. What if the global batch is "
                 f"{SMALL_BATCH} (divide the single-GPU time by {1024 // SMALL_BATCH})?",
        hint_text=f"Slide the bandwidth up until the efficiency passes 80 %. For batch {SMALL_BATCH}, push the "
                  "bandwidth to the slider's end: what stays when bandwidth is infinite? Answer with "
                  f"`(GB/s at 1024, GB/s at {SMALL_BATCH})`, and `None` for one that is never reached.",
        solution_text=f"About {sc.bandwidth_1024:.0f} GB/s at batch 1024 (more than PCIe 4.0 ×16's 31.5 GB/s per "
                      f"direction, less than NVLink 2's 150). At batch {SMALL_BATCH} it is never reached: each GPU "
                      f"computes only {sc.small_compute * 1e3:.2f} ms, and backward "
                      f"({sc.small_compute * BACKWARD_SHARE * 1e3:.2f} ms) hides less than the latency alone, "
                      f"{sc.buckets} buckets × 2(n−1) = 14 messages × "
                      f"{ALPHA * 1e6:g} µs = {sc.small_latency * 1e3:.2f} ms, so the efficiency stays near "
                      f"{efficiency(SMALL_BATCH, 1e6):.0%} however fast the link. Larger buckets, fewer messages (a "
                      "tree) or a larger batch per GPU would help; bandwidth cannot.",
        checker=_check_bandwidth, reference=(sc.bandwidth_1024, None),
        wrong=[((150.0, None), "the model gives"), ((sc.bandwidth_1024, 1000.0), "no bandwidth reaches 80 %")],
        how_to_answer=f"Pass (GB/s at batch 1024, GB/s at batch {SMALL_BATCH} or None).")


bf16_gradients = Exercise(
    key="bf16_gradients", number=5, title="Gradients in BF16",
    question="Gradients could be all-reduced in BF16 instead of FP32. What would that do to the communication "
             "time, and what could go wrong?",
    hint_text="BF16 has the same exponent range as FP32 but only 8 bits of mantissa (about 3 decimal digits). "
              "Think of the bandwidth term of the α-β model, and of adding many small numbers to a large one.",
    solution_text="The bandwidth term halves (half the bytes per bucket); the latency term does not change, so "
                  "the saving is up to 2× for large, bandwidth-bound buckets and little for small ones. The risk "
                  "is precision: with 8 mantissa bits, summing gradients across many ranks (and in a ring, in "
                  "n − 1 rounding steps) loses small contributions next to large ones, so the summed gradient "
                  "is noisier; small updates can vanish. Common remedies: accumulate in FP32 and only "
                  "communicate in BF16, use error feedback or compensated summation, or keep FP32 for the "
                  "sensitive layers (DDP's bf16 compression hook casts for the transfer and back).")


summed_gradients = Exercise(
    key="summed_gradients", number=6, title="Find the bug: a data-parallel step",
    function="my_dp_step(rank, world, model, x, y, lr)",
    imports="import torch\nimport torch.distributed as dist\nfrom torch import nn",
    question="The function below is one step of data-parallel SGD: each rank computes the mean loss over its equal "
             "share of the batch, the ranks combine their gradients, and every rank updates its copy of the "
             "model. It runs, the loss goes down, and it even trains a little faster than one process; yet it has "
             "a bug. Find it with this notebook's check: run a few steps on 2 and on 4 ranks with `launch` and "
             "compare the parameters with one process's SGD on the whole batch, with `torch.testing.assert_close`. "
             "How does the difference grow with the number of ranks? Fix it in the cell and run the check (2 and "
             "4 gloo ranks, three steps).",
    hint_text="On one process the step uses the gradient of the mean loss over the whole batch. What does each "
              "rank contribute to the combined gradient, and what does `dist.all_reduce` do with the "
              "contributions?",
    solution_text="`dist.all_reduce` sums: with equal shares each rank's gradient is the mean over its examples, "
                  "so the sum is world times the whole batch's mean gradient, and the step is that of one process "
                  "with a learning rate world times larger. It trains, faster at first, which is why it looks "
                  "plausible, but it is not the same training, and it diverges where the larger rate is too "
                  "large. Divide the summed gradient by the world size (or the loss by it before backward); with "
                  "uneven shares, sum the loss over the examples and divide by the global batch instead "
                  "(exercise 2). DistributedDataParallel averages for the same reason.",
    checker=bug_hunt(D.given_dp_step, D.dp_step_checker,
                     "Run a few steps on 2 and 4 ranks and compare the parameters with one process's SGD on the "
                     "whole batch."),
    reference=D.my_dp_step, given=D.given_dp_step,
    wrong=[(D.given_dp_step, "bug included"), *D.DP_STEP_WRONG])


global_stats = Exercise(
    key="global_stats", number=7, title="SyncBatchNorm's statistics from per-rank sums",
    function="my_global_stats(rank, world, x)", imports=DIST_IMPORT,
    question="Write `my_global_stats(rank, world, x)`, the statistics `SyncBatchNorm2d` normalises with: `x` is "
             "this rank's slice (N_r, C, H, W) of a global batch that does not split evenly, and the function "
             "returns each channel's mean and variance over the *whole* global batch (the biased variance, "
             "divided by the count, as BatchNorm normalises), two tensors of shape (C,), the same on every rank. "
             f"It runs on {_W2} ranks ({_B2} examples: {_SPLIT2}) and on {_W3} ranks ({_B3}: {_SPLIT3}), and "
             "only a few numbers per channel may travel between the ranks. Try averaging the ranks' own means "
             "and variances too, to see what that misses.",
    hint_text="A mean and a variance follow from three sums: the count N, Σx and Σx² (variance = Σx²/N − "
              "mean²). Sums add over ranks; means and variances do not. Compare with `SyncBatchNorm2d.forward` "
              "above.",
    solution_text="Each rank sums, per channel, its values and their squares, and counts its values; one "
                  "all-reduce adds the three over the ranks (2C + 1 numbers, however large the batch); then mean "
                  "= Σx/N and variance = Σx²/N − mean² on every rank. Averaging the ranks' means weighs a rank of "
                  "4 examples like one of 3, and averaging their variances leaves out the spread between the "
                  "ranks' means (the law of total variance: the global variance is the mean of the ranks' "
                  "variances plus the variance of their means, each weighted by its count). Sum in float64: "
                  "Σx²/N − mean² subtracts two large numbers when the mean is large against the spread.",
    checker=BN.global_stats_checker, reference=BN.my_global_stats, wrong=BN.GLOBAL_STATS_WRONG)


@functools.cache
def _exercises() -> list[Exercise]:
    """The notebook's exercises, in order."""
    return [_bucket_count(), uneven_batch, bench_dp, _bandwidth_for_80(), bf16_gradients, summed_gradients,
            global_stats]


# Built on first use (PEP 562), so that importing this module builds no model: ``EXERCISES`` and the two exercises
# whose answers need a network's parameter sizes.
EXERCISES: list[Exercise]
bucket_count: Exercise
bandwidth_for_80: Exercise


def __getattr__(name: str) -> Exercise | list[Exercise]:
    """The names built on first use (``EXERCISES``, ``bucket_count``, ``bandwidth_for_80``)."""
    if name == "EXERCISES":
        return _exercises()
    if name == "bucket_count":
        return _bucket_count()
    if name == "bandwidth_for_80":
        return _bandwidth_for_80()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
