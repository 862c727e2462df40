"""Exercises for the notebook on three ways to split the work: the cost model, memory, the one weird trick counted.

The questions are checked with ``d2lmp.model.costmodel`` itself on AlexNet's layer table, so a wrong choice gets the
model's own numbers. Nothing here runs on ranks: the programming model comes later in the series.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from d2lmp.exercises.core import Exercise, Verdict, number_checker
from d2lmp.model.alpha_beta import BUS_FACTORS

if TYPE_CHECKING:
    from d2lmp.model.costmodel import Hardware
    from d2lmp.models import LayerRow

__all__ = ["EXERCISES", "pipeline_beats_data", "wide_fc", "megatron_bytes", "bench_noise", "adam_fit",
           "weird_trick_bytes"]

MICRO_BATCHES = 8  # as in the notebook's figure and widget


def _alexnet_rows(fc_width: int = 4096) -> list[LayerRow]:
    from torch import nn

    from d2lmp import models

    with torch.device("meta"):
        net: Any = models.alexnet2012(init="torch")  # its layers, by name
        if fc_width != 4096:
            net.classifier.fc6 = nn.Linear(net.classifier.fc6.in_features, fc_width)
            net.classifier.fc7 = nn.Linear(fc_width, fc_width)
            net.classifier.fc8 = nn.Linear(fc_width, 1000)
    return models.layer_table(net, (1, 3, 224, 224))


def _preset(name: str) -> Hardware:
    from d2lmp.model import costmodel

    if name in costmodel.PRESETS:
        return costmodel.PRESETS[name]
    found = [k for k in costmodel.PRESETS if str(name).strip().lower() in k.lower()]
    if len(found) != 1:
        raise ValueError(f"name one hardware preset: {', '.join(repr(k) for k in costmodel.PRESETS)}")
    return costmodel.PRESETS[found[0]]


def _check_pipeline_beats_data(answer: Any) -> Verdict:
    from d2lmp.model import costmodel

    try:
        name, devices, batch = answer
        hw = _preset(name).with_devices(int(devices))
        batch = int(batch)
    except ValueError as exc:
        return Verdict(False, str(exc) if "preset" in str(exc) else f"answer with (preset, devices, batch); {exc}")
    except TypeError:
        return Verdict(False, f"answer with (preset, devices, batch), e.g. ('A100', 8, 1024); got {answer!r}.")
    rows = _alexnet_rows()
    data = costmodel.predict(rows, "data", hw, batch, micro_batches=MICRO_BATCHES)
    pipe = costmodel.predict(rows, "pipeline", hw, batch, micro_batches=MICRO_BATCHES)
    where = f"{hw.devices} devices of {hw.name}, global batch {batch}"
    if pipe.step_s < data.step_s:
        return Verdict(True, f"{where}: pipeline {pipe.step_s * 1e3:.2f} ms, data {data.step_s * 1e3:.2f} ms per "
                             f"step. With {batch / hw.devices:g} images per device the compute is tiny, but data "
                             "parallelism still all-reduces all 244 MB of gradients every step, whatever the batch; "
                             "the pipeline sends activations, which shrink with the batch.")
    return Verdict(False, f"{where}: data parallelism takes {data.step_s * 1e3:.2f} ms and the pipeline "
                          f"{pipe.step_s * 1e3:.2f} ms per step. Which of the two communicates an amount that does "
                          "not shrink with the batch?")


def _check_wide_fc(answer: Any) -> Verdict:
    from d2lmp.model import costmodel

    hw = _preset("V100")
    rows = _alexnet_rows(fc_width=40960)
    preds = {s: costmodel.predict(rows, s, hw, 128 * hw.devices, micro_batches=MICRO_BATCHES)
             for s in costmodel.STRATEGIES}
    choice = str(answer).strip().lower()
    if choice == costmodel.GRID:
        return Verdict(False, f"{costmodel.GRID!r} is the data × tensor grid of notebook 17; the cost model names "
                              f"Krizhevsky's split {costmodel.WEIRD_TRICK!r}. Answer with one of "
                              f"{', '.join(repr(s) for s in preds)}.")
    if choice not in preds:
        return Verdict(False, f"answer with one of {', '.join(repr(s) for s in preds)}; got {answer!r}.")
    best = min(preds, key=lambda s: preds[s].step_s)
    times = ", ".join(f"{s} {p.step_s * 1e3:.0f} ms" for s, p in preds.items())
    data_gb = preds["data"].memory_bytes / 1e9
    fit = (f"data parallelism would also need {data_gb:.1f} GB per GPU, more than the V100's "
           f"{hw.memory_bytes / 1e9:.0f} GB" if data_gb > hw.memory_bytes / 1e9 else "")
    if choice == best:
        return Verdict(True, f"{best} ({times}). The wide FC layers hold most of the weights: data parallelism "
                             "all-reduces all of them every step, the one weird trick splits them over the GPUs and "
                             f"sends only activations for them; {fit or 'memory is not the limit'}.")
    extra = f"; and {fit}" if choice == "data" and fit else ""
    return Verdict(False, f"the model gives {times}{extra}. What does each strategy send for the FC layers, whose "
                          "weights are now ten to a hundred times larger?")


# --------------------------------------------------------------------------------------------
# Bytes of Megatron's MLP; memory with Adam

BATCH, N_IN, N_HIDDEN = 64, 1024, 3072
MEGATRON_BYTES = 2 * BATCH * N_IN * 4  # one all-reduce of the (B, n_in) output forward, one of the input grad backward
# The cost model's rule: an all-gather of each layer's output (each device feeds its half) and an all-reduce of the
# second layer's input gradient (each device feeds all of it).
COST_MODEL_BYTES = BATCH * (N_HIDDEN // 2 + N_IN // 2 + N_HIDDEN) * 4

ADAM_BILLIONS = 80e9 / (4 * (1 + 1 + 2)) / 1e9  # weights, gradients, two Adam moments, FP32


# --------------------------------------------------------------------------------------------
# The one weird trick's fc6, counted

TRICK_DEVICES, TRICK_IMAGES, FC6_IN = 8, 128, 9216  # fc6: 9216 inputs (256 × 6 × 6), 4096 outputs
_FC6_INPUT_BYTES = TRICK_DEVICES * TRICK_IMAGES * FC6_IN * 4  # every image's fc6 input, FP32
_RING = BUS_FACTORS["all_gather"](TRICK_DEVICES)  # a ring all-gather or reduce-scatter sends (n-1)/n of the buffer
TRICK_BYTES = 2 * _RING * _FC6_INPUT_BYTES  # all-gather forward, reduce-scatter backward
FC6_DP_BYTES = 2 * _RING * (FC6_IN * 4096 + 4096) * 4  # data parallelism: all-reduce fc6's FP32 gradients



pipeline_beats_data = Exercise(
    key="pipeline_beats_data", number=1,
    title="When the pipeline beats data parallelism",
    question="In the widget, find a preset, a number of devices and a (global) batch where pipeline partitioning "
             "beats data parallelism for AlexNet. What changed?",
    hint_text="Data parallelism's communication is the gradients, the same size whatever the batch; the "
              "pipeline's is activations. Try the smallest batches. Answer with `(preset, devices, batch)`; a "
              "unique part of the preset's name such as 'V100' is enough.",
    solution_text="Small global batches: for example 8× V100 at batch 32 (4 images per device), where the model "
                  "predicts a shorter step for the pipeline than for data parallelism (the check prints both). Per "
                  "step, data parallelism all-reduces 244 MB of gradients regardless of the batch, while the "
                  "pipeline sends a few activations per micro-batch; with little compute per device to hide "
                  "behind, the gradient traffic dominates. At 128 images per device or more, data parallelism "
                  "wins again.",
    checker=_check_pipeline_beats_data, reference=("8x V100 (NVLink 2, hybrid cube-mesh)", 8, 32),
    wrong=[(("V100", 8, 1024), "data parallelism takes")],
    how_to_answer="Pass (preset, devices, batch).")


wide_fc = Exercise(
    key="wide_fc", number=2,
    title="Wider fully connected layers",
    question="Make AlexNet's fully connected layers ten times wider (4096 → 40,960 neurons: rebuild fc6, fc7 and "
             "fc8 as `nn.Linear` layers of that width on the meta device and recompute the layer table, or scale "
             "the rows: fc6's and fc8's params and FLOPs tenfold, fc7's a hundredfold). Which strategy wins now on "
             "8× V100 at 128 images per device (8 micro-batches), and why?",
    hint_text="Compare `CM.predict(rows, s, hw, 1024, micro_batches=8)` for every strategy in `CM.STRATEGIES`, "
              "and look at `memory_bytes` too: a V100 has 16 GB. Answer with the strategy's name.",
    solution_text="The one weird trick, with the shortest predicted step (the check prints every strategy's). "
                  "The FC layers now hold about 2.1 billion parameters (8.4 GB in FP32): data parallelism must "
                  "all-reduce all their gradients every step, and would not even fit (about 26 GB per GPU with "
                  "gradients and momentum, against 16 GB). The trick keeps the convolutions data parallel (few "
                  "weights) and splits the FC layers, sending only their activations, which are small at 128 "
                  "images per device.",
    checker=_check_wide_fc, reference="one weird trick",
    wrong=[("data", "more than the V100's"), ("pipeline", "the model gives"), ("hybrid", "data × tensor grid")],
    how_to_answer="Pass the name of a strategy.")


megatron_bytes = Exercise(
    key="megatron_bytes", number=3,
    title="Megatron's split, counted",
    question="The model charges tensor parallelism, per layer, an all-gather of its output and an all-reduce of "
             "its input's gradient (none for the first layer). Use notebook 15's "
             "`comm_volume` to check this against a column-then-row MLP, which needs fewer: for "
             f"Linear({N_IN}, {N_HIDDEN}) → Linear({N_HIDDEN}, {N_IN}) at batch {BATCH} on 2 devices, how many "
             "bytes does each device feed into collectives per forward and backward in Megatron's split "
             "(`TP.parallel_mlp`: the column layer's output stays split)? Compare with what the cost model's rule "
             "charges.",
    hint_text="In Megatron's MLP the column layer's output is not gathered: it feeds the row layer directly. Take "
              "`comm_volume`'s column backward and row forward; both are all-reduces of a (batch, 1024) FP32 "
              "tensor.",
    solution_text=f"{MEGATRON_BYTES:,} bytes: one all-reduce of the (64, 1024) output forward and one of the "
                  f"(64, 1024) input gradient backward, 262,144 bytes each. The cost model's rule charges an "
                  f"all-gather of every layer's output, to which each device feeds its half, and an all-reduce "
                  f"of the second layer's input gradient: (64·1536 + 64·512 + 64·3072) × 4 = "
                  f"{COST_MODEL_BYTES:,} bytes, "
                  f"{COST_MODEL_BYTES / MEGATRON_BYTES:.1f} times as much, so for Megatron-style MLPs it "
                  "overestimates tensor parallelism's communication.",
    checker=number_checker(MEGATRON_BYTES, "bytes", rel_tol=0.001, near_misses=[
        (COST_MODEL_BYTES, "that is the cost model's charge (an all-gather of each layer's output and an "
                           "all-reduce of the second layer's input gradient); Megatron's split needs fewer"),
        (MEGATRON_BYTES // 2, "that is one direction only: forward all-reduces the output, backward the input "
                              "gradient"),
        (MEGATRON_BYTES + BATCH * N_HIDDEN // 2 * 4, "you kept the column layer's all-gather: in Megatron's MLP "
                                                     "its output stays split (gather_output=False)")]),
    reference=MEGATRON_BYTES,
    wrong=[(COST_MODEL_BYTES, "cost model's charge"), (MEGATRON_BYTES // 2, "one direction only"),
           (MEGATRON_BYTES + BATCH * N_HIDDEN // 2 * 4, "kept the column layer's all-gather")],
    how_to_answer="Pass the bytes per rank per step.")


bench_noise = Exercise(
    key="bench_noise", number=4,
    title="How good are the predictions?",
    question="How good are the cost model's predictions? `d2lmp bench costmodel`, run in a terminal, trains the "
             "network of the first figure split each of the three ways on two CPU processes (notebooks 13 to 15 "
             "build those splits) and prints, for each, the predicted and the measured step and their ratio. Run "
             "it twice. How much do the measured times move between the two runs, and what does that spread say "
             "about the ratios: when can the model tell which of two strategies is faster?",
    hint_text="Compare each strategy's measured time across the two runs as a ratio. Then compare that spread "
              "with how far each predicted/measured ratio is from 1, and with the gap between two strategies' "
              "measured times.",
    solution_text="On a shared machine the measured step moves between runs (other processes, frequency "
                  "scaling, the scheduler), often by several per cent and sometimes by more. A predicted/measured "
                  "ratio means something only where it is further from 1 than that spread, and the model can rank "
                  "two strategies only where the gap between their times is larger than its own error plus the "
                  "noise. A ratio below 1 that is the same for every strategy is a calibration offset (on CPU "
                  "processes the copies and reductions take cycles from the cores that compute) and does not "
                  "change the ranking; ratios that differ between strategies do. Repeat the measurement and report "
                  "the spread, not one number.")


adam_fit = Exercise(
    key="adam_fit", number=5,
    title="Where data parallelism stops fitting",
    question="Memory: with Adam (two optimizer copies instead of one), at what model size does data parallelism "
             "stop fitting on an 80 GB GPU? Count FP32 weights, gradients and the two Adam moments, ignore "
             "activations, take 80 GB = 80 × 10⁹ bytes as the presets do, and answer in billions of parameters.",
    hint_text="Each parameter costs 4 bytes for the weight, 4 for its gradient and 4 for each of Adam's two "
              "moments; data parallelism keeps all of it on every GPU.",
    solution_text="16 bytes per parameter (4 weight + 4 gradient + 8 for Adam's two moments), so 80e9 / 16 = 5.0 "
                  "billion parameters, fewer once activations and workspaces are counted. Data parallelism "
                  "replicates all of it on every GPU, so adding GPUs does not help; that is where sharding the "
                  "optimizer state (ZeRO) or tensor/pipeline parallelism comes in.",
    checker=number_checker(ADAM_BILLIONS, "billion parameters", rel_tol=0.02, near_misses=[
        (80e9 / 12 / 1e9, "that is with one optimizer copy (SGD with momentum): Adam keeps two moments"),
        (80e9 / 8 / 1e9, "weights and gradients only: add Adam's two moments"),
        (80e9 / 4 / 1e9, "weights only: training also keeps gradients and Adam's two moments"),
        (80 * 2**30 / 16 / 1e9, "you used 80 GiB (2^30 bytes); the presets count 80 GB = 80e9 bytes"),
        (ADAM_BILLIONS * 1e9, "answer in billions of parameters")]),
    reference=ADAM_BILLIONS,
    wrong=[(80e9 / 12 / 1e9, "one optimizer copy"), (20.0, "weights only")],
    how_to_answer="Pass the model size in billions of parameters.")


weird_trick_bytes = Exercise(
    key="weird_trick_bytes", number=6,
    title="The one weird trick's traffic",
    question=f"The one weird trick, counted by hand. At AlexNet's first fully connected layer, fc6 ({FC6_IN:,} "
             f"inputs, 4096 outputs), on {TRICK_DEVICES} devices with {TRICK_IMAGES} images each, every device "
             "needs every image's fc6 input before it can compute its slice of the neurons (an all-gather), and "
             "backward sends the gradient of those inputs back to the devices that own the images (a "
             "reduce-scatter). How many bytes does each device send for fc6 per step, in FP32, with ring "
             "collectives? Compare with the all-reduce of fc6's gradients that data parallelism would send.",
    hint_text="A ring all-gather or reduce-scatter of S bytes sends (n−1)/n·S per device, and S is the fc6 input "
              "of the whole global batch: images × 9216 values × 4 bytes. The last line of `comm_bytes` charges "
              "exactly this, for every fully connected layer.",
    solution_text=f"S = {TRICK_DEVICES * TRICK_IMAGES:,} images × {FC6_IN:,} × 4 bytes = {_FC6_INPUT_BYTES:,} "
                  f"bytes; the all-gather and the reduce-scatter each send 7/8 of it: {TRICK_BYTES:,.0f} bytes "
                  f"per device, about {TRICK_BYTES / 1e6:.0f} MB. Data parallelism would all-reduce fc6's "
                  f"{FC6_IN * 4096 + 4096:,} FP32 gradients, 2 × 7/8 of them: {FC6_DP_BYTES / 1e6:.0f} MB, "
                  f"{FC6_DP_BYTES / TRICK_BYTES:.1f} times as much. The activations shrink with the batch, the "
                  "gradients do not: at a large enough batch per device the trick loses its advantage at fc6.",
    checker=number_checker(TRICK_BYTES, "bytes", rel_tol=0.01, near_misses=[
        (_RING * _FC6_INPUT_BYTES, "that is one direction only: the all-gather forward, and as much again "
                                   "for the reduce-scatter of the inputs' gradient backward"),
        (2 * _FC6_INPUT_BYTES, "a ring all-gather or reduce-scatter sends (n−1)/n of the buffer per device, "
                               "not all of it"),
        (TRICK_BYTES / TRICK_DEVICES, "S is the input of the whole global batch: every device gathers every "
                                      "image's features, not only its own"),
        (FC6_DP_BYTES, "that is data parallelism's all-reduce of fc6's gradients: the trick sends activations "
                       "instead"),
        (2 * TRICK_BYTES, "an all-gather sends (n−1)/n of the buffer, not 2(n−1)/n as an all-reduce does")]),
    reference=TRICK_BYTES,
    wrong=[(_RING * _FC6_INPUT_BYTES, "one direction only"), (2 * _FC6_INPUT_BYTES, "(n−1)/n"),
           (TRICK_BYTES / TRICK_DEVICES, "whole global batch"), (FC6_DP_BYTES, "data parallelism's all-reduce")],
    how_to_answer="Pass the bytes one device sends per step, e.g. ex.weird_trick_bytes.check(1.2e7).")


EXERCISES = [pipeline_beats_data, wide_fc, megatron_bytes, bench_noise, adam_fit, weird_trick_bytes]
