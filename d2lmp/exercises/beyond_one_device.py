"""Exercises for notebook 15 (beyond one device's memory): ZeRO's memory and traffic, a stage-2 step on ranks,
1F1B's activations, and what accumulation and recomputation trade.

The code exercise runs the student's stage-2 gradient step on 2 and 4 gloo ranks and compares each
rank's result with its shard of the summed gradient; the typical mistakes (the local shard, the whole
sum, the mean, another rank's shard) are recognised by computing each of them here. The numbers follow
``parallel.costmodel.zero_memory`` and ``zero_traffic``.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from ..parallel.costmodel import zero_memory, zero_traffic
from ._answers import parts_checker
from ._code import DIST_IMPORT, code_checker, on_ranks
from .core import Exercise, number_checker

__all__ = ["EXERCISES", "zero_by_hand", "stage2_shard", "stage3_traffic", "pipeline_peak", "accumulate_stage3",
           "segments"]


# --------------------------------------------------------------------------------------------
# Memory and traffic by hand

PSI, WORLD = 10_000_000_000, 16
STAGE2_GB = sum(zero_memory(PSI, WORLD, 2).values()) / 1e9  # 20 + 8.75 = 28.75 GB


def _gb(stage: int) -> float:
    return sum(zero_memory(PSI, WORLD, stage).values()) / 1e9


_check_zero_by_hand = number_checker(
    STAGE2_GB, "GB", rel_tol=0.01,
    why="Stage 2 keeps the fp16 parameters whole (2 bytes × 10 B = 20 GB) and 1/16 of the gradients and of the "
        "optimizer state ((2 + 12) × 10 B / 16 = 8.75 GB).",
    near_misses=[(_gb(1), "that is stage 1: stage 2 shards the gradients too, keeping only 1/16 of them"),
                 (_gb(0), "that is plain data parallelism (stage 0): nothing is sharded"),
                 (_gb(3), "that is stage 3: stage 2 still keeps every parameter on every device"),
                 (14 * PSI / WORLD / 1e9, "you counted only the sharded part: the whole fp16 parameters (20 GB) stay "
                                          "on every device"),
                 (STAGE2_GB * 1e9 / 2**30, "that is GiB (2^30 bytes); the question asks for GB (10^9 bytes)")])

PSI3, WORLD3 = 1_000_000_000, 8
STAGE3_GB = zero_traffic(PSI3, WORLD3, 3) / 1e9  # 3 · 7/8 · 2 GB = 5.25 GB

_check_stage3_traffic = number_checker(
    STAGE3_GB, "GB", rel_tol=0.01,
    why="Two all-gathers of the parameters (before forward and before backward) and one reduce-scatter of the "
        "gradients, each (n-1)/n · 2 GB: 1.5 times data parallelism's all-reduce.",
    near_misses=[(zero_traffic(PSI3, WORLD3, 0) / 1e9, "that is one all-reduce (stages 0-2): stage 3 gathers the "
                                                       "parameters a second time, before backward"),
                 (3 * 2 * PSI3 / 1e9, "a ring all-gather or reduce-scatter sends (n-1)/n of the bytes, not all of "
                                      "them"),
                 (2 * zero_traffic(PSI3, WORLD3, 3) / 1e9, "the parameters and gradients travel in fp16: 2 bytes "
                                                           "each, not 4")])


# --------------------------------------------------------------------------------------------
# The stage-2 gradient step on real ranks, written by the student

LENGTH = 24  # divides 2 and 4: the padding is done


def my_grad_shard(rank, world, flat_grad):
    """This rank's shard of the gradient summed over the ranks: a reduce-scatter."""
    from d2lmp.parallel.collectives import ring_reduce_scatter

    return ring_reduce_scatter(flat_grad)


def _local(rank: int) -> torch.Tensor:
    return torch.arange(LENGTH, dtype=torch.float32) * (rank + 1) + 0.5 * rank


def _shard_worker(rank, world, fn):
    flat = _local(rank)
    out = fn(rank, world, flat.clone())
    return out.detach().clone() if isinstance(out, torch.Tensor) else out


def _shard_run(fn):
    results = []
    for world in (2, 4):
        total = sum(_local(r) for r in range(world))
        for rank, got in enumerate(on_ranks(_shard_worker, world, fn)):
            results.append((f"{world} ranks, rank {rank}", got, (rank, world, total)))
    return results


def _shard_judge(case, got, context):
    rank, world, total = context
    shards = total.chunk(world)
    if isinstance(got, torch.Tensor) and got.shape == shards[rank].shape and torch.allclose(got, shards[rank]):
        return None
    if not isinstance(got, torch.Tensor):
        return f"return a tensor (this rank's shard), got {type(got).__name__}"
    if got.shape == total.shape:
        return (f"you returned all {LENGTH} elements: stage 2 keeps only this rank's 1/{world} of the summed "
                "gradient (a reduce-scatter, not an all-reduce)")
    if got.shape != shards[rank].shape:
        return f"this rank's shard has {LENGTH // world} elements, got shape {tuple(got.shape)}"
    if torch.allclose(got, _local(rank).chunk(world)[rank]):
        return "you returned your own gradient's shard: it must be summed over the ranks first"
    if torch.allclose(got, shards[rank] / world):
        return "you averaged: the ranks' losses are already divided by the global batch, so sum the gradients"
    for other in range(world):
        if other != rank and torch.allclose(got, shards[other]):
            return f"that is rank {other}'s shard: rank r keeps elements r·{LENGTH // world} to (r+1)·{LENGTH // world}"
    return "not this rank's shard of the summed gradient"


def _only_local(rank, world, flat_grad):
    return flat_grad.chunk(world)[rank]


def _whole_sum(rank, world, flat_grad):
    dist.all_reduce(flat_grad)
    return flat_grad


def _mean_shard(rank, world, flat_grad):
    dist.all_reduce(flat_grad)
    return flat_grad.chunk(world)[rank] / world


# --------------------------------------------------------------------------------------------
# Pipeline activations

PIPE_STAGES, PIPE_M, PIPE_MB = 4, 16, 50

_check_pipeline = parts_checker(
    ("GPipe", number_checker(PIPE_M * PIPE_MB, "MB", rel_tol=0.01,
                             why="GPipe runs all 16 forwards before the first backward.",
                             near_misses=[(PIPE_STAGES * PIPE_MB, "that is 1F1B's bound: GPipe runs every forward "
                                                                  "before any backward, so stage 0 holds all m")])),
    ("1F1B", number_checker(PIPE_STAGES * PIPE_MB, "MB", rel_tol=0.01,
                            why="Stage 0 runs p = 4 forwards before its first backward, then one forward per "
                                "backward.",
                            near_misses=[(PIPE_MB, "stage 0 cannot start a backward after one forward: the first "
                                                   "backward needs that micro-batch to pass all p stages, and "
                                                   "stage 0 keeps forwarding meanwhile"),
                                         (PIPE_M * PIPE_MB, "that is GPipe: 1F1B bounds stage 0 by p micro-batches, "
                                                            "whatever m")])))


EXERCISES = [
    Exercise(
        key="zero_by_hand", number=1,
        question="A model of 10 billion parameters trains with mixed-precision Adam on 16 GPUs under ZeRO stage 2. "
                 "How many GB (10^9 bytes) of parameters, gradients and optimizer state does each GPU keep?",
        hint_text="Mixed-precision Adam keeps 2 + 2 + 12 bytes per parameter. Which of the three does stage 2 divide "
                  "by the number of GPUs, and which does it keep whole? Compare with `zero_memory`'s formula.",
        solution_text="2 × 10 B = 20 GB of fp16 parameters (whole), plus (2 + 12) × 10 B / 16 = 8.75 GB of gradient "
                      "and optimizer shards: 28.75 GB per GPU, against 160 GB without sharding, 47.5 GB under "
                      "stage 1 and 10 GB under stage 3 (activations come on top).",
        checker=_check_zero_by_hand, reference=STAGE2_GB,
        wrong=[(_gb(1), "that is stage 1"), (_gb(3), "that is stage 3"), (STAGE2_GB * 1e9 / 2**30, "GiB")],
        how_to_answer="Pass a number of GB."),
    Exercise(
        function="my_grad_shard(rank, world, flat_grad)", imports=DIST_IMPORT,
        key="stage2_shard", number=2,
        question="Write the gradient step of stage 2: `my_grad_shard(rank, world, flat_grad)` gets this rank's own "
                 "gradient as one flat tensor (its length divisible by `world`) and returns this rank's shard (the "
                 "`rank`-th of `world` equal pieces) of the gradient summed over all ranks. It runs on 2 and 4 "
                 "ranks.",
        hint_text="A reduce-scatter does exactly this: `from d2lmp.parallel.collectives import ring_reduce_scatter`. "
                  "(An all-reduce followed by slicing gives the same numbers but sends twice the bytes: try it, then "
                  "think about what stage 2 is for.)",
        solution_text="`return ring_reduce_scatter(flat_grad)`: each rank receives only its 1/n of the sum, after "
                      "(n-1) steps around the ring, sending (n-1)/n of the bytes: half an all-reduce. ZeroAdam in "
                      "stage 2 then updates that shard with Adam and all-gathers the parameters.",
        checker=code_checker(_shard_run, _shard_judge, "on 2 and 4 ranks every rank holds its shard of the summed "
                                                       "gradient."),
        reference=my_grad_shard,
        wrong=[(_only_local, "your own gradient's shard"), (_whole_sum, "you returned all"),
               (_mean_shard, "you averaged")]),
    Exercise(
        key="stage3_traffic", number=3,
        question="A model of 1 billion parameters trains under ZeRO stage 3 on 8 ranks, with parameters and "
                 "gradients in fp16 and ring collectives. How many GB does each rank send per step?",
        hint_text="Count the collectives of one step: which are all-gathers of the parameters, which "
                  "reduce-scatters of the gradients? A ring all-gather or reduce-scatter of S bytes sends "
                  "(n-1)/n · S per rank.",
        solution_text="S = 2 GB. Stage 3 all-gathers the parameters before forward and again before backward, and "
                      "reduce-scatters the gradients: 3 × 7/8 × 2 GB = 5.25 GB per rank per step, 1.5 times the "
                      "3.5 GB of plain data parallelism's all-reduce.",
        checker=_check_stage3_traffic, reference=STAGE3_GB,
        wrong=[(zero_traffic(PSI3, WORLD3, 0) / 1e9, "one all-reduce"), (6.0, "(n-1)/n")],
        how_to_answer="Pass a number of GB."),
    Exercise(
        key="pipeline_peak", number=4,
        question="A pipeline of 4 stages runs 16 micro-batches per step; each micro-batch's saved activations on "
                 "stage 0 take 50 MB. What is stage 0's peak of saved activations under GPipe and under 1F1B?",
        hint_text="Count the micro-batches stage 0 has run forward but not yet backward, at the worst moment of each "
                  "schedule (`schedule('1f1b', 4, 0, 16)` lists stage 0's operations). Answer with "
                  "`(MB under GPipe, MB under 1F1B)`.",
        solution_text="GPipe: all 16 forwards come first, so 16 × 50 = 800 MB. 1F1B: stage 0 runs p = 4 forwards "
                      "(3 of warm-up, then the first of its steady state) before its first backward, and from then "
                      "on one forward per backward: at most 4 × 50 = 200 MB, whatever the number of micro-batches. "
                      "The bubble is the same for both.",
        checker=_check_pipeline, reference=(PIPE_M * PIPE_MB, PIPE_STAGES * PIPE_MB),
        wrong=[((800, 50), "cannot start a backward"), ((200, 200), "GPipe runs every forward"),
               ((800, 800), "that is GPipe")],
        how_to_answer="Pass (MB under GPipe, MB under 1F1B)."),
    Exercise(
        key="accumulate_stage3", number=5,
        question="Gradient accumulation with k micro-steps turned k all-reduces into one. Does it cut the "
                 "communication of ZeRO stage 3 by k as well? What would it cost to make it do so?",
        hint_text="List the collectives stage 3 runs in one micro-step's forward and backward. Which of them could "
                  "wait until the last micro-step, and what would a rank have to keep in the meantime?",
        solution_text="No. Stage 3 keeps only a shard of the parameters, so every micro-step must all-gather each "
                      "layer's parameters for its forward and again for its backward: 2k all-gathers instead of 2. "
                      "The reduce-scatter could wait, but only if each rank kept the full, unsharded gradient "
                      "between micro-steps, which is what stage 3 set out to avoid (in practice: reduce-scatter "
                      "every micro-step and accumulate the shard, k reduce-scatters). Accumulation helps stages 0-2, "
                      "whose parameters are whole on every rank, fully, and stage 3 only a little."),
    Exercise(
        key="segments", number=6,
        question="A chain of n equal layers, each saving A bytes, is cut into k checkpointed segments. Roughly how "
                 "many bytes are held at the peak of backward, and which k makes that smallest? Try it with "
                 "`predict_saved_with_recompute` on the MLP of the notebook.",
        hint_text="After forward the k segment boundaries are kept; during backward, one segment at a time is "
                  "recomputed and holds its own n/k layers' saves. Add the two and minimise over k.",
        solution_text="About k·A (boundaries) + (n/k)·A (one recomputed segment): smallest at k ≈ √n, where it is "
                      "about 2√n·A instead of n·A, for one extra forward pass (Chen et al., 2016). With few layers, as "
                      "here, the boundaries' sizes differ and the last segment is not recomputed, so the best cut is "
                      "found by trying the few possibilities; the notebook's `predict_saved_with_recompute` does "
                      "that arithmetic exactly."),
]

zero_by_hand, stage2_shard, stage3_traffic, pipeline_peak, accumulate_stage3, segments = EXERCISES
