"""Exercises for notebook 17 (activation memory and composing strategies).

1F1B's activations against GPipe's, the best number of checkpointed segments, gradient accumulation on
ranks given with a bug to find (each micro-batch's mean loss averaged, so micro-batches of unequal size
are weighted alike; checked on 2 and 4 gloo ranks for its gradients and its bytes, ``_accumulation_code``),
and what accumulation saves under ZeRO stage 3.
"""

from __future__ import annotations

from d2lmp.exercises import _accumulation_code as A
from d2lmp.exercises._answers import parts_checker
from d2lmp.exercises._code import DIST_IMPORT, bug_hunt
from d2lmp.exercises.core import Exercise, number_checker
from d2lmp.model.cluster.presets import model_preset
from d2lmp.model.transformer_accounting import korthikanti_bytes_per_layer

__all__ = ["EXERCISES", "pipeline_peak", "segments", "full_recompute_gb", "accumulation_bug", "accumulate_stage3"]

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

# --------------------------------------------------------------------------------------------
# Full recomputation by hand: GPT-3's first stage, tensor 8 with sequence parallelism, pipeline 8

GPT3 = model_preset("175B").model
TP_, PP_ = 8, 8
FULL_GB = GPT3.layers * korthikanti_bytes_per_layer(GPT3.seq, 1, GPT3.hidden, GPT3.heads, TP_, True, "full") / 1e9
NONE_GB = GPT3.layers * korthikanti_bytes_per_layer(GPT3.seq, 1, GPT3.hidden, GPT3.heads, TP_, True, "none") / 1e9

_check_full = number_checker(
    FULL_GB, "GB", rel_tol=0.02,
    why=f"each layer keeps its 16-bit input, a 1/{TP_} chunk under sequence parallelism: 2·s·h/t bytes; 1F1B keeps "
        f"{PP_} micro-batches in flight on the first stage, each through L/{PP_} layers, so L layers' worth.",
    near_misses=[(FULL_GB * TP_, "sequence parallelism splits the kept input too: divide by t"),
                 (FULL_GB / PP_, "1F1B's first stage holds p micro-batches, each through L/p layers: L layers' worth, "
                                 "not L/p"),
                 (FULL_GB * 2, "16-bit values are 2 bytes each, and 2·s·b·h already counts them")])

pipeline_peak = Exercise(
    key="pipeline_peak", number=1, title="Activations in a pipeline",
    question=f"A pipeline of {PIPE_STAGES} stages runs {PIPE_M} micro-batches per step; each micro-batch's saved "
             f"activations on stage 0 take {PIPE_MB} MB. What is stage 0's peak of saved activations under GPipe "
             "and under 1F1B?",
    hint_text="Count the micro-batches stage 0 has run forward but not yet backward, at the worst moment of each "
              f"schedule (`schedule('1f1b', {PIPE_STAGES}, 0, {PIPE_M})` lists stage 0's operations). Answer with "
              "`(MB under GPipe, MB under 1F1B)`.",
    solution_text="GPipe: all 16 forwards come first, so 16 × 50 = 800 MB. 1F1B: stage 0 runs p = 4 forwards "
                  "(3 of warm-up, then the first of its steady state) before its first backward, and from then "
                  "on one forward per backward: at most 4 × 50 = 200 MB, whatever the number of micro-batches. "
                  "The bubble is the same for both.",
    checker=_check_pipeline, reference=(PIPE_M * PIPE_MB, PIPE_STAGES * PIPE_MB),
    wrong=[((800, 50), "cannot start a backward"), ((200, 200), "GPipe runs every forward"),
           ((800, 800), "that is GPipe")],
    how_to_answer="Pass (MB under GPipe, MB under 1F1B).")


segments = Exercise(
    key="segments", number=2, title="How many segments",
    question="A chain of n equal layers, each saving A bytes, is cut into k checkpointed segments. Roughly how "
             "many bytes are held at the peak of backward, and which k makes that smallest? Try it with "
             "`predict_saved_with_recompute` on the MLP of the notebook.",
    hint_text="After forward the k segment boundaries are kept; during backward, one segment at a time is "
              "recomputed and holds its own n/k layers' saves. Add the two and minimise over k.",
    solution_text="About k·A (boundaries) + (n/k)·A (one recomputed segment): smallest at k ≈ √n, where it is "
                  "about 2√n·A instead of n·A, for one extra forward pass (Chen et al., 2016). With few layers, as "
                  "here, the boundaries' sizes differ and the last segment is not recomputed, so the best cut is "
                  "found by trying the few possibilities; the notebook's `predict_saved_with_recompute` does "
                  "that arithmetic exactly.")


full_recompute_gb = Exercise(
    key="full_recompute_gb", number=3, title="Full recomputation by hand",
    question=f"GPT-3 175B ({GPT3.layers} layers, hidden {GPT3.hidden:,}, sequence {GPT3.seq:,}) trains with "
             f"tensor parallelism {TP_} with sequence parallelism, a pipeline of {PP_} stages under 1F1B, one "
             "sequence per micro-batch, 16-bit activations and full recomputation. How many GB (10^9 bytes) of "
             "activations does a GPU of the first stage keep for its blocks, by Korthikanti et al.'s closed form "
             "(leave out the embedding and the output layer)?",
    hint_text="Under full recomputation a block keeps only its input. How many bytes is that per block and per "
              "GPU once sequence parallelism splits it, and how many blocks' worth of micro-batches does 1F1B keep "
              "in flight on the first stage? The notebook's first figure prints the same number with the embedding.",
    solution_text=f"2·s·b·h/t = 2 × {GPT3.seq:,} × {GPT3.hidden:,} / {TP_} bytes, "
                  f"{FULL_GB / GPT3.layers * 1e3:.1f} MB per block; the first stage holds p = {PP_} micro-batches, "
                  f"each through L/p = {GPT3.layers // PP_} blocks, so L = {GPT3.layers} blocks' worth: "
                  f"{FULL_GB:.2f} GB. Without recomputation the same blocks keep {NONE_GB:.1f} GB by the same "
                  "closed form (the activations of the notebook's first figure add the embedding).",
    checker=_check_full, reference=FULL_GB,
    wrong=[(FULL_GB * TP_, "divide by t"), (FULL_GB / PP_, "L layers' worth")],
    how_to_answer="Pass a number of GB.")


accumulation_bug = Exercise(
    key="accumulation_bug", number=4, title="Find the bug: accumulated gradients",
    function="my_accumulate(rank, world, model, xs, ys, global_batch, k)",
    imports=f"{DIST_IMPORT}\nfrom torch import nn",
    question="The function below accumulates k micro-steps of this rank's slice `xs, ys` into `.grad` and then "
             "sums each gradient over the ranks with one all-reduce; it should return the gradient of the whole "
             "batch's mean loss (the batch has `global_batch` examples over all ranks). It runs, a model "
             "trained with it learns, and yet it has a bug. Find it with this notebook's kind of check: on 2 "
             f"ranks with `launch`, {A.BATCH} examples and k = {A.MICRO_STEPS}, compare every rank's gradients "
             "with one device's gradient of the whole batch, with `torch.testing.assert_close`. Fix it in the "
             "cell and run the check (2 and 4 gloo ranks, and each rank's bytes).",
    hint_text=f"{A.BATCH} examples do not split evenly, over the ranks or over the micro-steps. Which examples' "
              "losses does the code weight more than others, and what should each micro-batch's loss be divided "
              "by so that every example counts alike?",
    solution_text="Each micro-batch's loss is its mean, divided by k·world: a mean of means, which weights an "
                  "example of a small micro-batch more than one of a large micro-batch. It equals the whole "
                  "batch's mean only when every micro-batch has the same size, which is why it looks right on "
                  "even batches. Sum each micro-batch's losses and divide by the global batch: "
                  "`cross_entropy(model(xj), yj, reduction=\"sum\") / global_batch`. The one all-reduce per "
                  "gradient after the last micro-step is right: accumulation communicates once per optimizer "
                  "step.",
    checker=bug_hunt(A.given_accumulate, A.accumulate_checker,
                     f"Run it on 2 ranks with {A.BATCH} examples and k = {A.MICRO_STEPS} and compare the "
                     "gradients with one device's on the whole batch."),
    reference=A.my_accumulate, given=A.given_accumulate,
    wrong=[(A.given_accumulate, "bug included"), *A.ACCUMULATE_WRONG])


accumulate_stage3 = Exercise(
    key="accumulate_stage3", number=5, title="Accumulation under stage 3",
    question="Gradient accumulation with k micro-steps turned k all-reduces into one. Does it cut the "
             "communication of ZeRO stage 3 (notebook 16) by k as well? What would it cost to make it do so?",
    hint_text="List the collectives stage 3 runs in one micro-step's forward and backward. Which of them could "
              "wait until the last micro-step, and what would a rank have to keep in the meantime?",
    solution_text="No. Stage 3 keeps only a shard of the parameters, so every micro-step must all-gather each "
                  "layer's parameters for its forward and again for its backward: 2k all-gathers instead of 2. "
                  "The reduce-scatter could wait, but only if each rank kept the full, unsharded gradient "
                  "between micro-steps, which is what stage 3 set out to avoid (in practice: reduce-scatter "
                  "every micro-step and accumulate the shard, k reduce-scatters). Accumulation helps stages 0-1 "
                  "fully. Stage 2, like stage 3, shards the gradient, so it reduce-scatters every micro-step "
                  "unless each rank keeps the whole gradient, as our ZeroAdam does until step().")


EXERCISES = [pipeline_peak, segments, full_recompute_gb, accumulation_bug, accumulate_stage3]
