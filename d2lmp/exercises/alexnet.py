"""Exercises for notebook 08 (AlexNet): layer arithmetic by hand and in code, where parameters live, memory.

The checks compare with the layer tables that ``d2lmp.models`` computes for the paper's network
(built on the meta device, so they cost no arithmetic). Training experiments are open questions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from d2lmp.exercises._code import code_checker
from d2lmp.exercises.core import Exercise, Verdict

__all__ = ["EXERCISES", "conv2_by_hand", "fc6_inputs", "fc_share", "sigmoid_vs_relu", "dropout_gap",
           "batch_activations", "gpu_speedup"]

CONV2_PARAMS = 256 * (5 * 5 * 48 + 1)  # 307,456
CONV2_MACS = 256 * 27 * 27 * (5 * 5 * 48)  # 223,948,800


def _pair(answer: Any) -> tuple[int, int] | None:
    try:
        a, b = answer
        return int(round(float(a))), int(round(float(b)))
    except (TypeError, ValueError):
        return None


def _check_conv2(answer: Any) -> Verdict:
    pair = _pair(answer)
    if pair is None:
        return Verdict(False, f"answer with a pair (parameters, multiply_adds), e.g. (1000, 2000); got {answer!r}.")
    params, macs = pair
    problems = []
    if params == 256 * 5 * 5 * 48:
        problems.append(f"{params:,} parameters counts the weights only: add one bias per kernel (256 of them)")
    elif params in (256 * (5 * 5 * 96 + 1), 256 * 5 * 5 * 96):
        problems.append(f"{params:,} parameters would be conv2 without the grouping: each kernel is 5×5×48, "
                        "it sees only the 48 maps on its own GPU, not all 96")
    elif params != CONV2_PARAMS:
        problems.append(f"{params:,} parameters is not it: count 256 kernels × (5·5·48 weights + 1 bias)")
    if macs == 2 * CONV2_MACS:
        problems.append(f"{macs:,} multiply-adds is twice the answer: either you counted FLOPs (a multiply-add is "
                        "two FLOPs, but counts once here) or all 96 input maps (the grouping gives each kernel 48)")
    elif macs == CONV2_MACS + 256 * 27 * 27:
        problems.append("the bias additions are not multiply-adds: leave out the 256 × 27 × 27 of them")
    elif macs != CONV2_MACS:
        problems.append(f"{macs:,} multiply-adds is not it: every one of the 256 × 27 × 27 output values takes "
                        "5·5·48 multiply-adds")
    if problems:
        return Verdict(False, "; ".join(problems) + ".")
    return Verdict(True, f"{CONV2_PARAMS:,} parameters and {CONV2_MACS:,} multiply-adds (447.9 MFLOPs in the table). "
                         "Without the grouping, each kernel would read all 96 maps: twice both numbers.")


# --------------------------------------------------------------------------------------------
# fc6's input features as a function of the input size


def my_fc6_inputs(input_size: int) -> int:
    """fc6's input features in the paper's AlexNet for a square input of ``input_size`` pixels."""
    def out(n: int, kernel: int, stride: int = 1, padding: int = 0) -> int:
        return (n + 2 * padding - kernel) // stride + 1

    n = out(input_size, 11, stride=4, padding=2)  # conv1
    n = out(n, 3, stride=2)                        # pool1 (conv2 keeps the size: 5×5, padding 2)
    n = out(n, 3, stride=2)                        # pool2 (conv3-conv5 keep it: 3×3, padding 1)
    n = out(n, 3, stride=2)                        # pool5
    return 256 * n * n


def _variant(size: int, pad1: int = 2, pool_ceil: bool = False, pools: int = 3, channels: int = 256) -> int:
    n = (size + 2 * pad1 - 11) // 4 + 1
    for _ in range(pools):
        n = math.ceil((n - 3) / 2) + 1 if pool_ceil else (n - 3) // 2 + 1
    return channels * n * n


FC6_SIZES = (224, 67, 100, 163, 320, 99, 131)
_FC6_MISTAKES: tuple[tuple[Callable[[int], int], str], ...] = (
    (lambda s: 9216, "you always return 9216 (the 224×224 value): fc6's input follows the input size"),
    (lambda s: _variant(s, pad1=0), "conv1 pads by 2 pixels on each side (without it 224 would not give 55×55)"),
    (lambda s: _variant(s, pool_ceil=True), "the output-size formula rounds down (floor), also for the max-pools"),
    (lambda s: _variant(s, pools=2), "there are three 3×3 stride-2 max-pools (after conv1, conv2 and conv5)"),
    (lambda s: _variant(s, channels=1), "multiply pool5's s × s by its 256 channels"),
)


def _fc6_run(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    import torch

    from d2lmp import models

    results = []
    for size in FC6_SIZES:
        with torch.device("meta"):
            net: Any = models.alexnet2012(input_size=size, init="torch")  # its layers, by name
            expected = net.classifier.fc6.in_features
        results.append((f"input {size}×{size}", fn(size), (size, expected)))
    return results


def _fc6_judge(case: str, got: Any, size_and_expected: tuple[int, int]) -> str | None:
    size, expected = size_and_expected
    try:
        if int(got) == expected and float(got) == expected:
            return None
    except (TypeError, ValueError):
        return f"expected a whole number of features, got {got!r}"
    for wrong, why in _FC6_MISTAKES:
        if wrong(size) == got and wrong(size) != expected:
            return f"you got {got}, the network has {expected}: {why}."
    return f"you got {got}, the network has {expected}: follow the size through conv1, pool1, pool2 and pool5."


def _fc6_wrong_no_padding(input_size: int) -> int:
    return _variant(input_size, pad1=0)


def _fc6_wrong_ceil(input_size: int) -> int:
    return _variant(input_size, pool_ceil=True)


# --------------------------------------------------------------------------------------------
# The FC layers' share of the parameters, from the widget


def _check_fc_share(answer: Any) -> Verdict:
    from d2lmp import models

    at_64 = models.alexnet_summary(64).fc_param_share
    if answer is None or str(answer).strip().lower() in ("none", "never", "no"):
        return Verdict(True, f"at width ×1 it never does: even at 64×64 (pool5 1×1) the FC layers hold {at_64:.1%}, "
                             "because fc7 and fc8 alone (20.9 M parameters) outweigh all five convolutions (2.3 M) "
                             "about nine to one, whatever the input size.")
    try:
        size = int(answer)
    except (TypeError, ValueError):
        return Verdict(False, f"answer with an input size (an int) or None; got {answer!r}.")
    try:
        share = models.alexnet_summary(size).fc_param_share
    except ValueError as exc:
        return Verdict(False, str(exc))
    if share < 0.9:
        return Verdict(True, f"at {size}×{size} the FC layers hold {share:.1%} of the parameters.")
    smallest = "" if size == 64 else f", and even at 64×64, the smallest on the slider, {at_64:.1%}"
    return Verdict(False, f"at {size}×{size} the FC layers still hold {share:.1%} of the parameters{smallest}: "
                          "compare fc7 + fc8, which do not depend on the input size, with all the convolutions.")


# --------------------------------------------------------------------------------------------
# Activation memory of a batch


def _table_total_kib() -> float:
    from d2lmp import models

    with torch.device("meta"):
        net = models.alexnet2012(init="torch")
    rows = models.layer_table(net, (1, 3, 224, 224))
    return sum(r.activation_bytes for r in rows if r.kind not in ("ReLU", "Dropout", "Flatten")) / 2**10


def _check_batch_activations(answer: Any) -> Verdict:
    from d2lmp.exercises.core import number_checker

    mib = _table_total_kib() * 128 / 2**10
    check = number_checker(mib, "MiB", rel_tol=0.015, why=(
        f"{mib / 2**10:.2f} GiB of the GTX 580's 3 GB, next to 233 MiB of weights and as many again for gradients "
        "and for momentum. What autograd keeps for backward is more than the layer outputs (the section 'One GTX 580 "
        "or two?' measures it), and by that count too batch 128 fits on one board, with less to spare."),
        near_misses=[(mib * 1024, "that is in KiB: divide by 1024 for MiB"),
                     (mib / 1024, "that looks like GiB: the question asks for MiB"),
                     (mib * 1.024, "you divided by 1000 once: 1 MiB is 1024 KiB"),
                     (mib / 128, "that is one image: the batch holds 128"),
                     (2 * mib, "twice the answer: the question asks for the activations themselves, kept once for "
                               "the backward pass")])
    return check(answer)


EXERCISES = [
    Exercise(
        key="conv2_by_hand", number=1, title="conv2 by hand",
        question="Compute conv2's parameters and multiply-adds by hand from the paper's description (256 kernels of "
                 "5×5×48 on 27×27 maps, one bias per kernel) and check them against the layer table. How would both "
                 "change without the two-GPU grouping?",
        hint_text="Parameters: kernels × (weights per kernel + 1 bias). Multiply-adds: output values (kernels × rows × "
                  "cols) × weights per kernel. The table's MFLOPs are 2 × multiply-adds. Answer with the pair "
                  "`(parameters, multiply_adds)`.",
        solution_text="Parameters: 256 × (5·5·48 + 1) = 307,456. Multiply-adds: 256 × 27 × 27 output values × 5·5·48 "
                      "= 223,948,800, the table's 447.9 MFLOPs halved. Without the grouping every kernel would read "
                      "all 96 maps of conv1: 5×5×96 kernels, so 614,656 parameters and 447,897,600 multiply-adds, "
                      "twice both (the biases aside). The grouping halves conv2's cost and, above all, means conv2 "
                      "needs no data from the other GPU.",
        checker=_check_conv2, reference=(CONV2_PARAMS, CONV2_MACS),
        wrong=[((256 * 5 * 5 * 48, CONV2_MACS), "one bias per kernel"),
               ((CONV2_PARAMS, 2 * CONV2_MACS), "counted FLOPs"),
               ((256 * (5 * 5 * 96 + 1), CONV2_MACS), "without the grouping")],
        how_to_answer="Pass the pair (parameters, multiply_adds)."),
    Exercise(
        function="my_fc6_inputs(input_size)",
        key="fc6_inputs", number=2, title="fc6's inputs for any image size",
        question="Write `my_fc6_inputs(input_size)`: the number of input features of fc6 (pool5's 256 channels × "
                 "s × s) in the paper's network for a square input of any size, by chaining the output-size formula "
                 "⌊(n + 2p − k)/s⌋ + 1 through conv1 (11×11, stride 4, padding 2), the three 3×3 stride-2 max-pools "
                 "and the size-preserving conv2–conv5. It is checked against `models.alexnet2012` on sizes that are "
                 "not 224.",
        hint_text="conv2 (5×5, padding 2) and conv3–conv5 (3×3, padding 1) keep the size, so only conv1 and the "
                  "three pools change it: 224 → 55 → 27 → 13 → 6. Round down at every step.",
        solution_text="Apply n → ⌊(n + 2p − k)/s⌋ + 1 for conv1 (k=11, s=4, p=2) and three times for the pools (k=3, "
                      "s=2, p=0), then multiply s × s by 256 channels: 9216 at 224, 256 at 67, 20,736 at 320. Only "
                      "fc6 depends on the input size; every convolution's parameters depend only on its kernel and "
                      "channels.",
        checker=code_checker(_fc6_run, _fc6_judge, "your function agrees with the network on every input size tried."),
        reference=my_fc6_inputs,
        wrong=[(lambda input_size: 9216, "always return 9216"), (_fc6_wrong_no_padding, "conv1 pads by 2"),
               (_fc6_wrong_ceil, "rounds down")]),
    Exercise(
        key="fc_share", number=3, title="Where the parameters are",
        question="Using the widget at width ×1, find the smallest input size at which the FC layers' share of the "
                 "parameters falls below 90 % (answer `None` if no size on the slider, 64 to 320, gets there). Why "
                 "does the input size change fc6 but no convolution's parameter count?",
        hint_text="Slide the input size down to its minimum and read the FC share; then compare fc7 + fc8, which do "
                  "not depend on the input size, with the sum of the convolutions' parameters.",
        solution_text="None: at width ×1 the FC share never falls below 90 %. At 64×64 pool5 is 1×1, so fc6 shrinks "
                      "to 256 × 4096 weights, yet the FC layers still hold 90.4 %: fc7 (16.8 M) and fc8 (4.1 M) do "
                      "not depend on the input at all and alone outweigh the five convolutions (2.3 M). A "
                      "convolution's parameters are its kernels (out × in × k × k + biases), the same at every "
                      "position and every input size; fc6 has one weight per input feature, and its inputs are all "
                      "of pool5's 256 × s × s values, which grow with the input's area.",
        checker=_check_fc_share, reference=None, wrong=[(64, "still hold 90.4%"), (224, "still hold 96.2%")],
        how_to_answer="Pass an input size, or None."),
    Exercise(
        key="sigmoid_vs_relu", number=4, title="Sigmoid against ReLU",
        question="Measure: train the small AlexNet with `torch.nn.Sigmoid` in place of every ReLU (rebuild it from "
                 "`models.alexnet_small`'s code) and compare the accuracy after 5 epochs with the ReLU version. Does "
                 "the paper's claim of faster training hold here?",
        hint_text="Copy `alexnet_small` into a cell, swap `nn.ReLU()` for `nn.Sigmoid()`, and call `train.train` "
                  "with the same seed, loaders, learning rate and `epochs=5` for both networks.",
        solution_text="With sigmoids the small network typically stays near chance (one class in ten) for several "
                      "epochs, or learns much more slowly, while the ReLU version is far above chance. Seven "
                      "saturating layers multiply gradients by at most 0.25 each (the sigmoid's largest slope), so "
                      "the early layers barely learn: the paper's claim (six times faster to 25 % error on CIFAR-10) "
                      "holds qualitatively here. Adam softens the effect compared with plain SGD; the exact numbers "
                      "depend on the seed and the machine."),
    Exercise(
        key="dropout_gap", number=5, title="Without dropout",
        question="Measure: train with dropout switched off (`p=0`) and compare the gap between training and test "
                 "accuracy.",
        hint_text="Set `m.p = 0` for every `nn.Dropout` module of a fresh `alexnet_small`, train for the same "
                  "epochs, and compare `history` train and test accuracy with the dropout run.",
        solution_text="Without dropout the training accuracy rises faster and ends higher (often close to all of the "
                      "1,438 training digits), while test accuracy ends about the same or slightly lower: the gap "
                      "between the two widens. Dropout is a regulariser; on a data set this small the network can "
                      "memorise it, and dropout slows that down, at the price of more epochs (the paper: about "
                      "twice the iterations)."),
    Exercise(
        key="batch_activations", number=6, title="Activations of a batch",
        question="The activations of one image take the memory shown in the table's total (4,917 KiB). Estimate the "
                 "activation memory of a batch of 128 images in FP32, in MiB, and compare it with a 3 GB GTX 580 "
                 "(the boards AlexNet used) "
                 "(remember that training keeps activations for the backward pass).",
        hint_text="Multiply the per-image total by the batch, then convert: a MiB is 2¹⁰ KiB. Then add the weights, "
                  "their gradients and the momentum to see what is left of 3 GB.",
        solution_text="4,917 KiB × 128 = 629,376 KiB = 614.6 MiB (0.60 GiB) of layer outputs. Add 233 MiB of FP32 "
                      "weights and as much again for gradients and for SGD momentum (about 0.7 GiB): about 1.3 GiB "
                      "of a 3 GB card. Autograd keeps more than the outputs for backward (the ReLU outputs, "
                      "max-pooling's int64 indices, the response normalisation's intermediates): the section 'One "
                      "GTX 580 or two?' measures more than twice the table's figure, and even so the step fits at "
                      "batch 128, with less to spare and nothing counted yet for workspaces and temporaries. So this "
                      "count does not show that batch 128 failed to fit; the paper's reason for two GPUs is the size "
                      "of the network it wanted, 'too big to fit on one GPU' (§3.2).",
        checker=_check_batch_activations, reference=614.6,
        wrong=[(629_376, "that is in KiB"), (4.8, "that is one image"), (1229.3, "twice the answer")],
        how_to_answer="Pass the activation memory of the batch in MiB."),
    Exercise(
        key="gpu_speedup", number=7, title="The GPU's speed-up",
        question="If your machine has a GPU, time one epoch on the CPU and on the GPU (`train.train(..., "
                 "device=\"cpu\")`); why is the speed-up much smaller for this tiny network than for the real AlexNet?",
        hint_text="Count the work per batch: the small network needs about 8 MFLOPs per image, so a batch of 64 is "
                  "half a GFLOP. Compare that with the fixed cost of launching each GPU kernel and of moving each "
                  "batch to the GPU.",
        solution_text="The GPU is typically only a few times faster here (sometimes not at all), against a much "
                      "larger factor for the real AlexNet. A batch of 64 of the small network is about 0.5 GFLOP "
                      "forward plus backward about 1.5 GFLOP: a GPU does that in well under a millisecond, so the "
                      "step is dominated by fixed costs, tens of kernel launches of a few microseconds each, the "
                      "host-to-device copy of every batch and Python's per-step overhead, which the CPU does not "
                      "pay. The real AlexNet does about 1.4 GFLOPs per image forward, so the arithmetic dominates "
                      "and the GPU's throughput shows."),
]

conv2_by_hand, fc6_inputs, fc_share, sigmoid_vs_relu, dropout_gap, batch_activations, gpu_speedup = EXERCISES
