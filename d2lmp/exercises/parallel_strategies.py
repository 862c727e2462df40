"""Exercises for notebook 10 (three ways to split the work): the cost model, memory, and the hybrid on ranks.

The cost-model questions are checked with ``d2lmp.parallel.costmodel`` itself on AlexNet's layer
table, so a wrong choice gets the model's own numbers. The hybrid ("one weird trick") runs the
student's fully connected layer on real gloo ranks and compares it with one ``F.linear``.
"""

from __future__ import annotations

import itertools
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F

from ._code import DIST_IMPORT, Logged, code_checker, logged, max_error, on_ranks, sent_at_most
from .core import Exercise, Verdict, number_checker

__all__ = ["EXERCISES", "pipeline_beats_data", "wide_fc", "megatron_bytes", "bench_noise", "adam_fit",
           "hybrid_fc"]

MICRO_BATCHES = 8  # as in the notebook's figure and widget


def _alexnet_rows(fc_width: int = 4096) -> list:
    from torch import nn

    from d2lmp import models

    with torch.device("meta"):
        net = models.alexnet2012(init="torch")
        if fc_width != 4096:
            net.classifier.fc6 = nn.Linear(net.classifier.fc6.in_features, fc_width)
            net.classifier.fc7 = nn.Linear(fc_width, fc_width)
            net.classifier.fc8 = nn.Linear(fc_width, 1000)
    return models.layer_table(net, (1, 3, 224, 224))


def _preset(name: str):
    from d2lmp.parallel import costmodel

    if name in costmodel.PRESETS:
        return costmodel.PRESETS[name]
    found = [k for k in costmodel.PRESETS if str(name).strip().lower() in k.lower()]
    if len(found) != 1:
        raise ValueError(f"name one hardware preset: {', '.join(repr(k) for k in costmodel.PRESETS)}")
    return costmodel.PRESETS[found[0]]


def _check_pipeline_beats_data(answer: Any) -> Verdict:
    from d2lmp.parallel import costmodel

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
    from d2lmp.parallel import costmodel

    hw = _preset("V100")
    rows = _alexnet_rows(fc_width=40960)
    preds = {s: costmodel.predict(rows, s, hw, 128 * hw.devices, micro_batches=MICRO_BATCHES)
             for s in costmodel.STRATEGIES}
    choice = str(answer).strip().lower()
    if choice not in preds:
        return Verdict(False, f"answer with one of {', '.join(repr(s) for s in preds)}; got {answer!r}.")
    best = min(preds, key=lambda s: preds[s].step_s)
    times = ", ".join(f"{s} {p.step_s * 1e3:.0f} ms" for s, p in preds.items())
    data_gb = preds["data"].memory_bytes / 1e9
    fit = (f"data parallelism would also need {data_gb:.1f} GB per GPU, more than the V100's "
           f"{hw.memory_bytes / 1e9:.0f} GB" if data_gb > hw.memory_bytes / 1e9 else "")
    if choice == best:
        return Verdict(True, f"{best} ({times}). The wide FC layers hold most of the weights: data parallelism "
                             "all-reduces all of them every step, the hybrid splits them over the GPUs and sends "
                             f"only activations for them; {fit or 'memory is not the limit'}.")
    extra = f"; and {fit}" if choice == "data" and fit else ""
    return Verdict(False, f"the model gives {times}{extra}. What does each strategy send for the FC layers, whose "
                          "weights are now ten to a hundred times larger?")


# --------------------------------------------------------------------------------------------
# Bytes of Megatron's MLP; memory with Adam

BATCH, N_IN, N_HIDDEN = 64, 1024, 3072
MEGATRON_BYTES = 2 * BATCH * N_IN * 4  # one all-reduce of the (B, n_in) output forward, one of the input grad backward
COST_MODEL_BYTES = BATCH * (N_HIDDEN + N_IN + N_HIDDEN) * 4  # all-gather of both outputs, all-reduce of 2nd input grad

ADAM_BILLIONS = 80e9 / (4 * (1 + 1 + 2)) / 1e9  # weights, gradients, two Adam moments, FP32


# --------------------------------------------------------------------------------------------
# The hybrid's fully connected layer, on ranks


def my_hybrid_fc(rank, world, features, weight, bias):
    """This rank's output neurons for every example of the global batch (examples in rank order)."""
    parts = [torch.empty_like(features) for _ in range(world)]
    dist.all_gather(parts, features)  # every rank now has every example's features
    return F.linear(torch.cat(parts), weight, bias)


LOCAL_BATCH, IN_FEATURES, OUT_FEATURES = 3, 5, 7  # 7 neurons: slices 4 + 3 on two ranks, 3 + 2 + 2 on three


def _hybrid_inputs(world: int):
    g = torch.Generator().manual_seed(world)
    x = torch.randn(world * LOCAL_BATCH, IN_FEATURES, generator=g)
    w = torch.randn(OUT_FEATURES, IN_FEATURES, generator=g)
    b = torch.randn(OUT_FEATURES, generator=g)
    return x, list(torch.tensor_split(w, world)), list(torch.tensor_split(b, world))


def _hybrid_worker(rank, world, fn, x, weights, biases):
    features = x[rank * LOCAL_BATCH:(rank + 1) * LOCAL_BATCH].clone()
    return logged(fn, rank, world, features, weights[rank].clone(), biases[rank].clone())


def _hybrid_run(fn):
    results = []
    for world in (2, 3):
        x, weights, biases = _hybrid_inputs(world)
        outs = on_ranks(_hybrid_worker, world, fn, x, weights, biases)
        for rank, got in enumerate(outs):
            expected = F.linear(x, weights[rank], biases[rank])
            results.append((f"{world} ranks, rank {rank}", got, (expected, x, world, rank)))
    return results


def _hybrid_judge(case, run: Logged, context):
    expected, x, world, rank = context
    got = run.result
    if not isinstance(got, torch.Tensor):
        return f"expected a tensor, got {type(got).__name__}"
    if got.shape == expected.shape and torch.allclose(got, expected, atol=1e-5):
        return sent_at_most(run, (world - 1) / world * x.numel() * 4, "the hybrid's forward",
                            "an all-gather of the ranks' features; the weights stay where they are")
    local = expected[rank * LOCAL_BATCH:(rank + 1) * LOCAL_BATCH]
    if got.shape == local.shape and torch.allclose(got, local, atol=1e-5):
        return (f"you computed only this rank's own {LOCAL_BATCH} examples. The layer is split by neurons, so "
                "each rank must produce its neurons for every example of the global batch: all-gather the "
                "features first (the hybrid's one communication in the forward pass)")
    if got.shape != expected.shape:
        return f"your output has shape {tuple(got.shape)}, expected {tuple(expected.shape)} = (world·b, your neurons)"
    blocks = expected.view(world, LOCAL_BATCH, -1)
    if any(torch.allclose(got, blocks[list(order)].reshape(expected.shape), atol=1e-5)
           for order in itertools.permutations(range(world))):
        return "the examples are in the wrong order: keep them in rank order (all_gather returns them that way)"
    return f"your output differs from F.linear on all examples by up to {max_error(got, expected):.3g}"


def _hybrid_local_only(rank, world, features, weight, bias):
    return F.linear(features, weight, bias)


def _hybrid_all_reduce(rank, world, features, weight, bias):
    """Right numbers, twice the bytes: each rank places its features in a zero batch and all-reduces it."""
    batch = torch.zeros(world * len(features), features.shape[1])
    batch[rank * len(features):(rank + 1) * len(features)] = features
    dist.all_reduce(batch)
    return F.linear(batch, weight, bias)


def _hybrid_reversed(rank, world, features, weight, bias):
    parts = [torch.empty_like(features) for _ in range(world)]
    dist.all_gather(parts, features)
    return F.linear(torch.cat(parts[::-1]), weight, bias)


EXERCISES = [
    Exercise(
        key="pipeline_beats_data", number=1, title="When the pipeline wins",
        question="In the widget, find a preset, a number of devices and a (global) batch where pipeline partitioning "
                 "beats data parallelism for AlexNet. What changed?",
        hint_text="Data parallelism's communication is the gradients, the same size whatever the batch; the "
                  "pipeline's is activations. Try the smallest batches. Answer with `(preset, devices, batch)`; a "
                  "unique part of the preset's name such as 'V100' is enough.",
        solution_text="Small global batches: for example 8× V100 at batch 32 (4 images per device), where the model "
                      "predicts a few ms for the pipeline against about 5 ms for data parallelism. Per step, data "
                      "parallelism all-reduces 244 MB of gradients regardless of the batch, while the pipeline sends "
                      "a few activations per micro-batch; with little compute per device to hide behind, the "
                      "gradient traffic dominates. At 128 images per device or more, data parallelism wins again.",
        checker=_check_pipeline_beats_data, reference=("8x V100 (NVLink 2, hybrid cube-mesh)", 8, 32),
        wrong=[(("V100", 8, 1024), "data parallelism takes")],
        how_to_answer="Pass (preset, devices, batch)."),
    Exercise(
        key="wide_fc", number=2, title="Ten times wider",
        question="Make AlexNet's fully connected layers ten times wider (4096 → 40,960 neurons: rebuild fc6, fc7 and "
                 "fc8 as `nn.Linear` layers of that width on the meta device and recompute the layer table, or scale "
                 "the rows: fc6's and fc8's params and FLOPs tenfold, fc7's a hundredfold). Which strategy wins now on "
                 "8× V100 at 128 images per device (8 micro-batches), and why?",
        hint_text="Compare `CM.predict(rows, s, hw, 1024, micro_batches=8)` for every strategy in `CM.STRATEGIES`, "
                  "and look at `memory_bytes` too: a V100 has 16 GB. Answer with the strategy's name.",
        solution_text="The hybrid: about 140 ms per step against about 190 ms for data and tensor parallelism and "
                      "over 260 ms for the pipeline. The FC layers now hold about 1.7 billion parameters (6.7 GB in "
                      "FP32): data parallelism must all-reduce all their gradients every step, and would not even "
                      "fit (about 26 GB per GPU with gradients and momentum, against 16 GB). The hybrid keeps the "
                      "convolutions data parallel (few weights) and splits the FC layers, sending only their "
                      "activations, which are small at 128 images per device.",
        checker=_check_wide_fc, reference="hybrid",
        wrong=[("data", "more than the V100's"), ("pipeline", "the model gives")],
        how_to_answer="Pass the name of a strategy."),
    Exercise(
        key="megatron_bytes", number=3, title="Tensor parallelism's bytes",
        question="The model charges tensor parallelism, per layer, an all-gather of its output and an all-reduce of "
                 "its input's gradient (none for the first layer). Use notebook 14's "
                 "`comm_volume` to check this against a column-then-row MLP, which needs fewer: for "
                 f"Linear({N_IN}, {N_HIDDEN}) → Linear({N_HIDDEN}, {N_IN}) at batch {BATCH} on 2 ranks, how many bytes "
                 "does each rank feed into collectives per forward and backward in Megatron's split "
                 "(`TP.parallel_mlp`: the column layer's output stays split)? Compare with what the cost model's rule "
                 "charges.",
        hint_text="In Megatron's MLP the column layer's output is not gathered: it feeds the row layer directly. Take "
                  "`comm_volume`'s column backward and row forward; both are all-reduces of a (batch, 1024) FP32 "
                  "tensor.",
        solution_text=f"{MEGATRON_BYTES:,} bytes: one all-reduce of the (64, 1024) output forward and one of the "
                      f"(64, 1024) input gradient backward, 262,144 bytes each. The cost model's rule charges an "
                      f"all-gather of every layer's full output and an all-reduce of the second layer's input "
                      f"gradient: (64·3072 + 64·1024 + 64·3072) × 4 = {COST_MODEL_BYTES:,} bytes, "
                      f"{COST_MODEL_BYTES / MEGATRON_BYTES:.1f} times as much, so for Megatron-style MLPs it "
                      "overestimates tensor parallelism's communication.",
        checker=number_checker(MEGATRON_BYTES, "bytes", rel_tol=0.001, near_misses=[
            (COST_MODEL_BYTES, "that is the cost model's charge (an all-gather of each layer's full output and an "
                               "all-reduce of the second layer's input gradient); Megatron's split needs fewer"),
            (MEGATRON_BYTES // 2, "that is one direction only: forward all-reduces the output, backward the input "
                                  "gradient"),
            (MEGATRON_BYTES + BATCH * N_HIDDEN // 2 * 4, "you kept the column layer's all-gather: in Megatron's MLP "
                                                         "its output stays split (gather_output=False)")]),
        reference=MEGATRON_BYTES,
        wrong=[(COST_MODEL_BYTES, "cost model's charge"), (MEGATRON_BYTES // 2, "one direction only"),
               (MEGATRON_BYTES + BATCH * N_HIDDEN // 2 * 4, "kept the column layer's all-gather")],
        how_to_answer="Pass the bytes per rank per step."),
    Exercise(
        key="bench_noise", number=4, title="How noisy the measurements are",
        question="Run `d2lmp bench costmodel` twice. How much do the measured times move between runs, and what does "
                 "that mean when judging a model whose predictions fall within 0.75–1.33× of the measurement?",
        hint_text="Compare each strategy's measured time across the two runs as a ratio, and compare that spread "
                  "with the width of that band (a factor of 1.33 either way).",
        solution_text="On a shared 2-core machine the measured step times typically move by 5-20 % between runs "
                      "(other processes, frequency scaling, the scheduler), occasionally more. A band of 0.75-1.33× "
                      "is therefore only meaningful because it is several times wider than that noise; a ratio "
                      "near a bound can pass in one run and fail in the next, so one should repeat the measurement "
                      "and report the spread, not one number."),
    Exercise(
        key="adam_fit", number=5, title="When Adam no longer fits",
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
        how_to_answer="Pass the model size in billions of parameters."),
    Exercise(
        function="my_hybrid_fc(rank, world, features, weight, bias)", imports=DIST_IMPORT,
        key="hybrid_fc", number=6, title="The hybrid on ranks",
        question="The hybrid for real (\"one weird trick\"): the convolutions run data parallel, so after them each "
                 "rank holds the features of its own examples; the fully connected layer runs model parallel, each "
                 "rank owning a slice of its output neurons. Write `my_hybrid_fc(rank, world, features, weight, "
                 "bias)`: `features` (b, in) are this rank's b examples, `weight` (out_r, in) and `bias` (out_r,) "
                 "this rank's slice of the layer. Return this rank's neurons for every example of the global batch, "
                 "shape (world·b, out_r), examples in rank order. It runs on 2 and 3 gloo ranks, with neuron slices "
                 "of unequal sizes.",
        hint_text="Every rank needs every example's features before it can compute its neurons: which collective "
                  "gives each rank all the ranks' tensors, in rank order? Then one `F.linear` on their "
                  "concatenation.",
        solution_text="All-gather the features (every rank contributes b examples and receives world·b), then apply "
                      "this rank's slice of the layer to all of them. Forward, the hybrid communicates activations "
                      "(world·b × in values), never the FC layer's weights or gradients; backward, the gradient of "
                      "the gathered features is reduce-scattered back to the ranks that own the examples.",
        checker=code_checker(_hybrid_run, _hybrid_judge, "on 2 and 3 ranks every rank's neurons equal one F.linear "
                                                         "on the whole batch."),
        reference=my_hybrid_fc,
        wrong=[(_hybrid_local_only, "only this rank's own"), (_hybrid_reversed, "wrong order"),
               (_hybrid_all_reduce, "2 times the")]),
]

pipeline_beats_data, wide_fc, megatron_bytes, bench_noise, adam_fit, hybrid_fc = EXERCISES
