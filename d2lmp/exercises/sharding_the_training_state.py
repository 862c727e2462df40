"""Exercises for notebook 16 (sharding the training state): ZeRO's memory and traffic, on paper and on ranks.

Memory per GPU and traffic per step by hand (``model.costmodel``'s ``zero_memory`` and ``zero_traffic``),
stage 2's gradient step on ranks, and a ZeRO-2 step given with a bug to find (a stale shard); both code
exercises run on 2 and 4 gloo ranks and count each rank's bytes (``_zero_code``), so an all-reduce and a
slice, or an all-gather and a sum, fails with what was asked.
"""

from __future__ import annotations

from d2lmp.exercises import _zero_code as Z
from d2lmp.exercises._code import DIST_IMPORT, bug_hunt
from d2lmp.exercises.core import Exercise, number_checker
from d2lmp.model.costmodel import zero_memory, zero_traffic
from d2lmp.model.training_state import OPTIMIZERS

__all__ = ["EXERCISES", "zero_by_hand", "stage2_shard", "stage3_traffic", "stale_shard"]

_ADAM = OPTIMIZERS["adam_mixed"]
_ADAM_BYTES = f"{_ADAM.param_bytes:g} + {_ADAM.grad_bytes:g} + {_ADAM.state_bytes:g}"

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


zero_by_hand = Exercise(
    key="zero_by_hand", number=1, title="ZeRO stage 2 by hand",
    question=f"A model of {PSI / 1e9:g} billion parameters trains with mixed-precision Adam on {WORLD} GPUs under "
             "ZeRO stage 2. How many GB (10^9 bytes) of parameters, gradients and optimizer state does each GPU "
             "keep?",
    hint_text=f"Mixed-precision Adam keeps {_ADAM_BYTES} bytes per parameter. Which of the three does stage 2 "
              "divide by the number of GPUs, and which does it keep whole? Compare with `zero_memory`'s formula.",
    solution_text="2 × 10 B = 20 GB of fp16 parameters (whole), plus (2 + 12) × 10 B / 16 = 8.75 GB of gradient "
                  "and optimizer shards: 28.75 GB per GPU, against 160 GB without sharding, 47.5 GB under "
                  "stage 1 and 10 GB under stage 3 (activations come on top).",
    checker=_check_zero_by_hand, reference=STAGE2_GB,
    wrong=[(_gb(1), "that is stage 1"), (_gb(3), "that is stage 3"), (STAGE2_GB * 1e9 / 2**30, "GiB")],
    how_to_answer="Pass a number of GB.")


stage2_shard = Exercise(
    key="stage2_shard", number=2, title="Stage 2's gradient step", function="my_grad_shard(rank, world, flat_grad)",
    imports=DIST_IMPORT,
    question="Write the gradient step of stage 2: `my_grad_shard(rank, world, flat_grad)` gets this rank's own "
             "gradient as one flat tensor (its length divisible by `world`) and returns this rank's shard (the "
             "`rank`-th of `world` equal pieces) of the gradient summed over all ranks. It runs on 2 and 4 "
             "ranks, and the check also counts the bytes each rank sends (a collective counted as a ring runs "
             "it): no more than stage 2 needs.",
    hint_text="Each rank needs only its own piece of the sum, never the whole sum, and the check counts what each "
              "rank sends. Notebook 12 built the all-reduce from two passes round the ring: after which pass does "
              "every rank already hold one finished piece of the sum, and what had that pass cost it?",
    solution_text="A reduce-scatter: `return ring_reduce_scatter(flat_grad)` (from d2lmp.parallel.collectives), or "
                  "`dist.reduce_scatter_tensor` into a tensor of the shard's size. Each rank receives only its "
                  "1/n of the sum, after (n-1) steps around the ring, sending (n-1)/n of the bytes: half an "
                  "all-reduce. An all-reduce followed by a slice gives the same numbers for twice the bytes, and "
                  "saving those bytes (and the memory of the whole summed gradient) is what stage 2 is for. "
                  "ZeroAdam in stage 2 then updates that shard with Adam and all-gathers the parameters.",
    checker=Z.shard_checker, reference=Z.my_grad_shard, wrong=Z.SHARD_WRONG)


stage3_traffic = Exercise(
    key="stage3_traffic", number=3, title="Stage 3's traffic",
    question=f"A model of {PSI3 / 1e9:g} billion parameters trains under ZeRO stage 3 on {WORLD3} ranks, with "
             "parameters and gradients in fp16 and ring collectives. How many GB does each rank send per step?",
    hint_text="Count the collectives of one step: which are all-gathers of the parameters, which "
              "reduce-scatters of the gradients? A ring all-gather or reduce-scatter of S bytes sends "
              "(n-1)/n · S per rank.",
    solution_text="S = 2 GB. Stage 3 all-gathers the parameters before forward and again before backward, and "
                  "reduce-scatters the gradients: 3 × 7/8 × 2 GB = 5.25 GB per rank per step, 1.5 times the "
                  "3.5 GB of plain data parallelism's all-reduce.",
    checker=_check_stage3_traffic, reference=STAGE3_GB,
    wrong=[(zero_traffic(PSI3, WORLD3, 0) / 1e9, "one all-reduce"), (6.0, "(n-1)/n")],
    how_to_answer="Pass a number of GB.")


stale_shard = Exercise(
    key="stale_shard", number=4, title="Find the bug: a ZeRO-2 step",
    function="my_zero_step(rank, world, params, grad, momentum, lr)",
    imports="import torch\n\nfrom d2lmp.parallel.collectives import ring_all_gather, ring_reduce_scatter",
    question="The function below is one ZeRO-2 step of SGD with momentum: every rank keeps a full copy of the "
             "parameters but only its shard of the momentum, reduce-scatters the gradient, updates its own shard "
             "and shares it with the others. It runs, the ranks' losses go down, and yet it has a bug. Find it "
             "with this notebook's kind of check: run two steps on 2 ranks with `launch` and compare every "
             "rank's parameters with one device's SGD-with-momentum step on the summed gradient, with "
             "`torch.testing.assert_close`, and the ranks' copies with each other. Fix it in the cell and run "
             "the check (2 and 4 gloo ranks, two steps, and each rank's bytes).",
    hint_text="After one step, which parts of a rank's copy agree with one device, and which still hold the "
              "starting values? Follow the shard of rank 1 in the copy of rank 0: when was it sent?",
    solution_text="The all-gather runs before the update: each rank shares its shard as it was before the step, so "
                  "every rank's own shard is new and every other shard is one step behind, and the ranks' "
                  "copies differ. Training still goes on, with stale parameters, which is why it looks "
                  "plausible. Move the all-gather after `shards[rank].sub_(...)`: gather the updated shards. "
                  "Each rank then sends a reduce-scatter's and an all-gather's bytes, 2(n − 1)/n · S per step, "
                  "as much as one all-reduce, while it keeps only 1/n of the momentum.",
    checker=bug_hunt(Z.given_zero_step, Z.zero_step_checker,
                     "Run two steps on 2 ranks and compare each rank's parameters with one device's step, part by "
                     "part, and with the other ranks' copies."),
    reference=Z.my_zero_step, given=Z.given_zero_step,
    wrong=[(Z.given_zero_step, "bug included"), *Z.ZERO_STEP_WRONG])


EXERCISES = [zero_by_hand, stage2_shard, stage3_traffic, stale_shard]
