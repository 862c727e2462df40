"""Exercises for notebook 12 (data parallelism): buckets, uneven batches on real ranks, and scaling.

The gradient exercise runs the student's data-parallel backward on 2 and 3 gloo ranks with batches
that do not split evenly, and compares every rank's gradients with one process's full-batch
gradient; the typical mistakes (the local gradient, averaged per-rank means, no division by the
global batch, dividing twice) are recognised by computing each of them here. The scaling question
uses the notebook's latency-bandwidth model of a data-parallel step, written out below.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from ..parallel.alpha_beta import GPU_ALPHA_S as ALPHA
from ..parallel.dp_model import DDP_BUCKET_BYTES as BUCKET
from ._code import code_checker, max_error, on_ranks
from .core import Exercise, Verdict

__all__ = ["EXERCISES", "bucket_count", "uneven_batch", "bench_dp", "bandwidth_for_80", "bf16_gradients"]


# --------------------------------------------------------------------------------------------
# Buckets


def _bucket_sizes(param_bytes: list[int], cap: int) -> list[int]:
    """BucketedAllReduce's rule: parameters in backward order; a bucket closes once it reaches the cap."""
    sizes, current = [], 0
    for nbytes in reversed(param_bytes):
        current += nbytes
        if current >= cap:
            sizes.append(current)
            current = 0
    return sizes + ([current] if current else [])


def _timeline_params(widths=(1024, 2048, 2048, 2048, 10)) -> list[int]:
    sizes = []
    for a, b in zip(widths[:-1], widths[1:]):
        sizes += [a * b * 4, b * 4]  # weight, bias (model.parameters() order)
    return sizes


BUCKETS = (len(_bucket_sizes(_timeline_params(), 256 * 2**10)), len(_bucket_sizes(_timeline_params(), 64 * 2**20)))


def _check_buckets(answer: Any) -> Verdict:
    try:
        small, large = (int(v) for v in answer)
    except (TypeError, ValueError):
        return Verdict(False, f"answer with a pair (buckets at 256 KiB, buckets at 64 MiB); got {answer!r}.")
    if (small, large) == BUCKETS:
        return Verdict(True, f"{BUCKETS[0]} and {BUCKETS[1]}. A bucket never splits a tensor: each 8-16 MiB weight "
                             "matrix already exceeds 256 KiB and closes its bucket, so smaller caps change nothing; "
                             "at 64 MiB all 42 MB go in one bucket that can start only when backward ends.")
    problems = []
    if small != BUCKETS[0]:
        total = sum(_timeline_params())
        near = small in (math.ceil(total / (256 * 2**10)), total // (256 * 2**10))
        problems.append(f"{small} buckets at 256 KiB? " + (
            "A bucket holds whole tensors, it never cuts one: each 8-16 MiB weight matrix alone passes the cap"
            if near else "Walk the parameters last layer first and close a bucket as soon as it reaches the cap"))
    if large != BUCKETS[1]:
        problems.append(f"{large} buckets at 64 MiB? All the gradients together are about 42 MB")
    return Verdict(False, "; ".join(problems) + ".")


# --------------------------------------------------------------------------------------------
# Uneven batches on ranks, written by the student

SPEC_SIZES = (6, 8, 3)
CASES = ((2, 23), (3, 7))  # (ranks, global batch): 12 + 11 examples, and 3 + 2 + 2


def my_dp_gradients(rank, world, model, x, y, global_batch):
    """Full-batch mean-loss gradients on every rank, from this rank's slice (x, y) of an uneven batch."""
    loss = nn.functional.cross_entropy(model(x), y, reduction="sum") / global_batch
    loss.backward()
    grads = []
    for p in model.parameters():
        dist.all_reduce(p.grad)  # sum over ranks: Σ_r Σ_{i in r} ∇ℓ_i / B = the full-batch mean
        grads.append(p.grad)
    return grads


def _spec():
    from d2lmp.parallel.data_parallel import MLPSpec

    return MLPSpec(SPEC_SIZES, seed=0)


def _dp_worker(rank, world, fn, x, y):
    model = _spec().build()
    xs, ys = torch.tensor_split(x, world)[rank], torch.tensor_split(y, world)[rank]
    grads = fn(rank, world, model, xs.clone(), ys.clone(), len(x))
    return [g.detach().clone() if isinstance(g, torch.Tensor) else g for g in grads] if grads is not None else None


def _sum_grads(x, y) -> list[torch.Tensor]:
    model = _spec().build()
    nn.functional.cross_entropy(model(x), y, reduction="sum").backward()
    return [p.grad.clone() for p in model.parameters()]


def _dp_run(fn):
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


def _same(a, b) -> bool:
    return (isinstance(a, (list, tuple)) and len(a) == len(b)
            and all(isinstance(t, torch.Tensor) and t.shape == u.shape and torch.allclose(t, u, atol=1e-6, rtol=1e-5)
                    for t, u in zip(a, b)))


def _dp_judge(case, got, context):
    expected, mistakes, counts, batch = context
    if _same(got, expected):
        return None
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


def _dp_local_only(rank, world, model, x, y, global_batch):
    (nn.functional.cross_entropy(model(x), y, reduction="sum") / global_batch).backward()
    return [p.grad for p in model.parameters()]


def _dp_mean_of_means(rank, world, model, x, y, global_batch):
    nn.functional.cross_entropy(model(x), y).backward()  # the mean over this rank's examples
    grads = []
    for p in model.parameters():
        dist.all_reduce(p.grad)
        grads.append(p.grad / world)
    return grads


def _dp_no_divide(rank, world, model, x, y, global_batch):
    nn.functional.cross_entropy(model(x), y, reduction="sum").backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    return [p.grad for p in model.parameters()]


# --------------------------------------------------------------------------------------------
# Scaling: the notebook's model of a data-parallel step (d2lmp.parallel.dp_model), written out

SMALL_BATCH = 32  # a global batch too small for any bandwidth to reach 80 % at the assumed α


def _alexnet_on_h200() -> tuple[float, int]:
    """(seconds per image forward and backward on one H200 at its recorded FP32 rate, gradient bytes) of
    torchvision's AlexNet: the figures of the notebook's table and widget."""
    from ..models import alexnet_torchvision, layer_table, totals
    from ..recorded import matmul_rows

    with torch.device("meta"):
        tv = totals(layer_table(alexnet_torchvision(), (1, 3, 224, 224)))
    fp32 = max(row.gflops for row in matmul_rows("float32")) * 1e9
    return 3 * tv.flops / fp32, tv.params * 4


_SECONDS_PER_IMAGE, GRAD_BYTES = _alexnet_on_h200()


def one_gpu_seconds(batch: int) -> float:
    """AlexNet's step on one H200, as in the notebook: 3 × the forward FLOPs per image at the recorded FP32 rate."""
    return batch * _SECONDS_PER_IMAGE


def efficiency(batch: int, gbs: float, world: int = 8) -> float:
    """Predicted scaling efficiency with overlap: compute split evenly, ring all-reduce per bucket."""
    single = one_gpu_seconds(batch)
    compute, beta = single / world, 1 / (gbs * 1e9)
    full, rest = divmod(GRAD_BYTES, BUCKET)
    buckets = [BUCKET] * int(full) + ([rest] if rest else [])
    per_bucket = [2 * (world - 1) * (ALPHA + b / world * beta) for b in buckets]
    exposed = max(per_bucket[-1], sum(per_bucket) - compute * 2 / 3)
    return single / (compute + exposed) / world


def _bandwidth_for(batch: int, target: float = 0.8) -> float | None:
    lo, hi = 0.01, 1e6
    if efficiency(batch, hi) < target:
        return None
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if efficiency(batch, mid) >= target else (mid, hi)
    return hi


BANDWIDTH_1024 = _bandwidth_for(1024)  # ≈ 45 GB/s at α = 3.4 µs; batch 32 never reaches 80 %
_BUCKETS = math.ceil(GRAD_BYTES / BUCKET)
_SMALL_COMPUTE = one_gpu_seconds(SMALL_BATCH) / 8  # each of 8 GPUs' share
_SMALL_LATENCY = _BUCKETS * 14 * ALPHA  # every bucket's 2(n - 1) = 14 messages on an infinitely fast link


def _check_bandwidth(answer: Any) -> Verdict:
    try:
        first, second = answer
        first = float(first)
    except (TypeError, ValueError):
        return Verdict(False, f"answer with a pair (GB/s at batch 1024, GB/s at batch {SMALL_BATCH} or None); "
                              f"got {answer!r}.")
    problems = []
    if not math.isclose(first, BANDWIDTH_1024, rel_tol=0.12):
        e = efficiency(1024, first) if first > 0 else 0.0
        problems.append(f"at {first:g} GB/s the model gives {e:.0%} at batch 1024, and 80 % needs about "
                        f"{BANDWIDTH_1024:.0f} GB/s (tolerance 12 %: the slider moves in steps of 12 %)")
    never = second is None or (isinstance(second, str) and second.strip().lower() in ("none", "never")) or (
        isinstance(second, float) and math.isinf(second))
    if not never:
        try:
            e = efficiency(SMALL_BATCH, float(second))
            problems.append(f"at {float(second):g} GB/s the model gives {e:.0%} at batch {SMALL_BATCH}: no bandwidth "
                            f"reaches 80 % there. With {BUCKET / 2**20:g} MiB buckets there are {_BUCKETS} "
                            f"all-reduces of 14 messages each, {_SMALL_LATENCY * 1e3:.2f} ms of latency even on an "
                            f"infinitely fast link, against {_SMALL_COMPUTE * 1e3:.2f} ms of compute per GPU")
        except (TypeError, ValueError):
            problems.append(f"the second answer should be a bandwidth or None, got {second!r}")
    if problems:
        return Verdict(False, "; ".join(problems) + ".")
    return Verdict(True, f"about {BANDWIDTH_1024:.0f} GB/s at batch 1024, and never at batch {SMALL_BATCH}: with "
                         f"1/{1024 // SMALL_BATCH} of the compute, the latency of {_BUCKETS} buckets × 14 messages "
                         "alone exceeds what backward can hide.")


EXERCISES = [
    Exercise(
        key="bucket_count", number=1,
        question="Change the bucket size in the timeline experiment to 256 KiB and to 64 MiB. How many buckets (red "
                 "bars per step) does our bucketed version send for the full-size network (1024 → 2048 → 2048 → 2048 "
                 "→ 10) with each, how does the exposed communication change, and why is one huge bucket no better "
                 "than no overlap?",
        hint_text="Parameters are bucketed last layer first, and a bucket closes as soon as it reaches the cap, after "
                  "a whole tensor: a bucket never splits a tensor. How large is each weight matrix? Answer with "
                  "`(buckets at 256 KiB, buckets at 64 MiB)`.",
        solution_text="3 and 1. At 256 KiB the buckets are the same as at 2 MiB: each weight matrix (8 or 16 MiB) "
                      "exceeds the cap on its own, so every bucket is one matrix plus a few small tensors; smaller "
                      "caps only add per-message latency when tensors are small. At 64 MiB all 42 MB of gradients "
                      "form one bucket, which is complete only when backward has produced the first layer's "
                      "gradient, at the very end: nothing is left to overlap with, so the whole all-reduce is "
                      "exposed, exactly as without overlap.",
        checker=_check_buckets, reference=BUCKETS,
        wrong=[((161, 1), "never cuts one"), ((3, 2), "about 42 MB")],
        how_to_answer="Pass (buckets at 256 KiB, buckets at 64 MiB)."),
    Exercise(
        key="uneven_batch", number=2,
        question="Show on paper that averaging per-rank *mean* losses gives the wrong gradient when the batch does not "
                 "split evenly. Then check it in code: write `my_dp_gradients(rank, world, model, x, y, "
                 "global_batch)`, which gets this rank's slice (x, y) of an uneven batch and a fresh copy of the "
                 "model, and returns one gradient per parameter (in `model.parameters()` order) equal on every rank "
                 "to one process's gradient of the cross-entropy averaged over the whole batch. It runs on 2 ranks "
                 "(23 examples: 12 + 11) and 3 ranks (7: 3 + 2 + 2); try the per-rank mean too, to see the message.",
        hint_text="The full-batch gradient is (1/B) Σ_i ∇ℓ_i. Which loss on each rank makes a plain sum over ranks "
                  "(`dist.all_reduce` of each `p.grad`) give exactly that? Compare with the notebook's "
                  "`DP.local_loss`.",
        solution_text="Mean of means: (1/n) Σ_r (1/n_r) Σ_{i∈r} ∇ℓ_i weighs an example on rank r by 1/(n·n_r), "
                      "which equals 1/B only if every n_r = B/n. With 12 + 11 examples the 11 examples of rank 1 "
                      "count 12/11 times too much. Correct: each rank backpropagates its loss summed over its own "
                      "examples divided by the global batch B, then all-reduces (sums) every gradient: Σ_r Σ_{i∈r} "
                      "∇ℓ_i / B, exactly the full-batch mean, for any split.",
        checker=code_checker(_dp_run, _dp_judge, "on 2 and 3 ranks, with uneven splits, every rank holds one "
                                                 "process's full-batch gradient."),
        reference=my_dp_gradients,
        wrong=[(_dp_local_only, "you returned the local gradient"), (_dp_mean_of_means, "you averaged per-rank means"),
               (_dp_no_divide, "you forgot to divide by the global batch")]),
    Exercise(
        key="bench_dp", number=3,
        question="Run `d2lmp bench dp` and `d2lmp bench dp --world 4` in a terminal. Which version is fastest here, "
                 "and does that change with `--bucket-mb 1`?",
        hint_text="Compare each version's median step time within one run (the machine's load changes between "
                  "runs), and think about how many cores the ranks and gloo's threads share.",
        solution_text="On a 2-core machine the differences are small and noisy: the versions that overlap "
                      "(bucketed, ddp) gain little, because gloo's communication threads compete with the compute "
                      "threads for the same cores, and with 4 ranks on 2 cores everything gets slower. Smaller "
                      "buckets (1 MiB) add per-message latency (gloo: ~100 µs each) and can make the bucketed "
                      "versions slower; DDP and our bucketed version usually stay close to each other since they "
                      "build the same buckets. On GPUs with separate communication hardware, overlap wins clearly."),
    Exercise(
        key="bandwidth_for_80", number=4,
        question="With the widget, find the smallest link bandwidth at which 8 GPUs reach 80 % efficiency for AlexNet "
                 f"with a global batch of 1024 ({BUCKET / 2**20:g} MiB buckets, overlap on), with the widget's assumed "
                 f"α of {ALPHA * 1e6:g} µs (its default), not the one fitted here. What if the global batch is "
                 f"{SMALL_BATCH} (divide the single-GPU time by {1024 // SMALL_BATCH})?",
        hint_text=f"Slide the bandwidth up until the efficiency passes 80 %. For batch {SMALL_BATCH}, push the "
                  "bandwidth to the slider's end: what stays when bandwidth is infinite? Answer with "
                  f"`(GB/s at 1024, GB/s at {SMALL_BATCH})`, and `None` for one that is never reached.",
        solution_text=f"About {BANDWIDTH_1024:.0f} GB/s at batch 1024 (more than PCIe 4.0 ×16's 31.5 GB/s per "
                      f"direction, less than NVLink 2's 150). At batch {SMALL_BATCH} it is never reached: each GPU "
                      f"computes only {_SMALL_COMPUTE * 1e3:.2f} ms, and backward ({_SMALL_COMPUTE * 2 / 3 * 1e3:.2f} "
                      f"ms) hides less than the latency alone, {_BUCKETS} buckets × 2(n−1) = 14 messages × "
                      f"{ALPHA * 1e6:g} µs = {_SMALL_LATENCY * 1e3:.2f} ms, so the efficiency stays near "
                      f"{efficiency(SMALL_BATCH, 1e6):.0%} however fast the link. Larger buckets, fewer messages (a "
                      "tree) or a larger batch per GPU would help; bandwidth cannot.",
        checker=_check_bandwidth, reference=(BANDWIDTH_1024, None),
        wrong=[((150.0, None), "the model gives"), ((BANDWIDTH_1024, 1000.0), "no bandwidth reaches 80 %")],
        how_to_answer=f"Pass (GB/s at batch 1024, GB/s at batch {SMALL_BATCH} or None)."),
    Exercise(
        key="bf16_gradients", number=5,
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
                      "sensitive layers (DDP's bf16 compression hook casts for the transfer and back)."),
]

bucket_count, uneven_batch, bench_dp, bandwidth_for_80, bf16_gradients = EXERCISES
