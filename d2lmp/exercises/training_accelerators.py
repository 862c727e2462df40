"""Exercises of notebook 07 (accelerators for training): what grows the saved activations, in-place ReLU,
gradients before training, the largest batch on a GTX 580, and a round trip through FP16 written by hand.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from d2lmp.exercises._answers import parts_checker
from d2lmp.exercises.core import Exercise, Verdict, choice_checker, function_checker, number_checker

__all__ = ["EXERCISES", "activation_growth", "inplace_relu", "untrained_gradients", "gtx580_batch", "round_trip",
           "fp16_round_trip"]

# ---------------------------------------------------------------------------------------------------
# 1. Batch or width


@functools.cache
def _width_factor() -> float:
    """Saved activations of the small AlexNet at width 32 over width 16, batch 64 (FP32, CPU rules)."""
    from d2lmp.memory import predict_saved_activations
    from d2lmp.models import alexnet_small

    def saved(width: int) -> int:
        return predict_saved_activations(alexnet_small(width=width), (64, 1, 32, 32)).total_bytes

    return saved(32) / saved(16)


def _width_checker(answer: Any) -> Verdict:
    return number_checker(_width_factor(), "×", rel_tol=0.01, near_misses=[
        (2.0, "close, but not every saved tensor has the width's channels: conv1 saves the 1-channel image and the "
              "classifier's 256-wide layers keep their size. Measure it."),
        (4.0, "activations grow with the channels, not with channels²; channels² is how a convolution's weights "
              "grow."),
        (1.0, "the convolutions' outputs, the ReLU outputs and the pooling indices all have width × k channels."),
    ])(answer)


activation_growth = Exercise(
    key="activation_growth", number=1,
    title="Batch or width?",
    question="Predict, then measure with `memory.compare_saved_activations`, how the saved "
             "activations of the small AlexNet (batch 64) change when you double the batch size and when you double "
             "`width` (16 → 32). Which grows faster, and why? Answer with a tuple of the two factors "
             "`(doubled batch, doubled width)`.",
    hint_text="Every saved tensor has the batch as its first dimension. Width multiplies the channels of the "
              "convolutions: which saved tensors do not carry those channels?",
    solution_text="Doubling the batch doubles every saved tensor: exactly 2.00×. Doubling the width gives 1.95×: the "
                  "convolution and ReLU outputs and the pooling indices double with their channels, but conv1 saves "
                  "the 1-channel input image and the classifier's 256-wide layers do not depend on the width. So the "
                  "batch grows the activations slightly faster. The width grows the parameters faster (2.19× here; "
                  "4× for a convolution whose input and output channels both double): width costs weights, batch "
                  "costs activations.",
    checker=parts_checker(
        ("doubled batch", number_checker(2.0, "×", rel_tol=0.01, near_misses=[
            (1.0, "every saved tensor has the batch as its first dimension, so all of them double."),
            (4.0, "the activations are linear in the batch: twice the images, twice the bytes.")])),
        ("doubled width", _width_checker),
    ),
    reference=(2.0, 1.9475),
    wrong=[((2.0, 2.0), "not every saved tensor"), ((2.0, 4.0), "not with channels²"),
           ((1.0, 1.95), "first dimension")],
    how_to_answer="Answer with a tuple, e.g. ex.activation_growth.check((batch_factor, width_factor)).",
)

inplace_relu = Exercise(
    key="inplace_relu", number=2,
    title="In-place ReLU",
    question="Replace every `nn.ReLU()` in a copy of the small AlexNet by `nn.ReLU(inplace=True)` "
             "and measure again. Do the saved activations come out 'less', the 'same' or 'more'? Why does in-place "
             "ReLU save memory without changing the gradients?",
    hint_text="A convolution saves its input and a ReLU its output. Is the convolution's output, the tensor that "
              "in-place ReLU overwrites, among the saved tensors?",
    solution_text="'same': 11.910 MiB either way, layer by layer. A convolution saves its input, not its output, and "
                  "a ReLU saves its output; the tensor in-place ReLU overwrites, the convolution's output, was never "
                  "saved, and the ReLU output that backward needs is saved in both versions. What in-place saves is "
                  "transient: without it the convolution's output and the ReLU's output exist side by side for a "
                  "moment, one activation more at the forward pass's peak (and one allocation more per layer). The "
                  "gradients do not change because ReLU's backward needs only where its output is positive, which "
                  "the overwritten tensor still shows. In-place is wrong only where the overwritten tensor was saved "
                  "by another layer, e.g. after a sigmoid, which saves its output; autograd then raises an error.",
    checker=choice_checker("same", {
        "same": "the convolution saves its input and the ReLU its output in both versions; the tensor that in-place "
                "ReLU overwrites (the convolution's output) was never saved. The saving is the transient second "
                "tensor during forward.",
        "less": "measure it: the saved tensors are the same. The conv's output that in-place ReLU overwrites was "
                "never saved (a convolution saves its input); what goes away is a transient tensor during forward.",
        "more": "nothing new is saved: ReLU saves its output either way, and in place that output simply shares the "
                "convolution output's memory.",
    }),
    reference="same",
    wrong=[("less", "was never saved"), ("more", "nothing new is saved")],
    how_to_answer="Answer with 'less', 'same' or 'more', e.g. ex.inplace_relu.check('less').",
)

untrained_gradients = Exercise(
    key="untrained_gradients", number=3,
    title="Before training",
    question="Re-run the underflow measurement on the untrained network (before calling "
             "`train_mixed`). Are the gradients 'larger', 'smaller' or about the 'same', and what does that mean for "
             "loss scaling late in training?",
    hint_text="The gradient of the cross-entropy with respect to the logits is softmax − one-hot. How far from zero "
              "is it for a network that guesses, and for one that is confidently right?",
    solution_text="'larger'. An untrained network guesses (a loss near ln 10 ≈ 2.3 on ten classes, against the "
                  "small loss section 3 prints after training), so softmax − one-hot is of order 0.1 to 1 and every "
                  "gradient behind it is large. Compare the median activation gradient "
                  "(grads.activations.abs().median()) before and after training, and the share that flushes to zero "
                  "in FP16 at scale 1 (precision.scale_sweep): both move by orders of magnitude. Underflow is a "
                  "late-training problem: a scale that suits the start is too small later, which is why GradScaler "
                  "keeps doubling its scale after each long run of steps without overflow.",
    checker=choice_checker("larger", {
        "larger": "a guessing network has a loss near ln 10 ≈ 2.3 and a large softmax − one-hot; training drives it "
                  "toward 0, and every gradient behind it shrinks with it.",
        "smaller": "it is the other way round: training makes the predictions match the labels, so softmax − one-hot, "
                   "and every gradient behind it, shrinks as the loss falls from about ln 10 ≈ 2.3 toward 0.",
        "same": "the loss falls from about ln 10 ≈ 2.3 toward 0 during training, and the gradients with it: measure "
                "the median before and after.",
    }),
    reference="larger",
    wrong=[("smaller", "the other way round"), ("same", "the gradients with it")],
    how_to_answer="Answer with 'larger', 'smaller' or 'same', e.g. ex.untrained_gradients.check('same').",
)

# ---------------------------------------------------------------------------------------------------
# 4. The largest batch on a 3 GB board


@functools.cache
def _step_bytes() -> tuple[dict[tuple[str, str], float], dict[str, float]]:
    """(one training step's batch-independent bytes per optimizer and mask rule, saved bytes per image)."""
    from d2lmp.memory import predict_step_memory
    from d2lmp.models import alexnet_d2l

    with torch.device("meta"):
        net = alexnet_d2l()
    fixed: dict[tuple[str, str], float] = {}
    per_image: dict[str, float] = {}
    for opt in ("adam", "momentum", "sgd"):
        for device in ("cuda", "cpu"):
            one, two = (predict_step_memory(net, (b, 1, 224, 224), opt, device_type=device) for b in (1, 2))
            per_image[device] = two.saved_activations - one.saved_activations
            fixed[opt, device] = one.total - per_image[device]
    return fixed, per_image


def _largest_batch(budget: float, optimizer: str = "adam", device: str = "cuda") -> int:
    fixed, per_image = _step_bytes()
    return int((budget - fixed[optimizer, device]) // per_image[device])


def _gtx580_checker(answer: Any) -> Verdict:
    gib3 = 3 * 2**30
    return number_checker(_largest_batch(gib3), "images", rel_tol=0, abs_tol=5, near_misses=[
        (_largest_batch(3e9), "you took 3 GB as 3 × 10⁹ bytes; the board has 3 × 2³⁰."),
        (_largest_batch(gib3, "sgd"), "that leaves out Adam's two buffers per parameter (357 MiB)."),
        (_largest_batch(gib3, "momentum"), "that is SGD with momentum (one buffer); Adam keeps two."),
        (_largest_batch(gib3) * 2, "that is two boards; one GTX 580 has 3 GB."),
    ], why="(618 if dropout masks are counted as FP32, as on a CPU.)")(answer)


gtx580_batch = Exercise(
    key="gtx580_batch", number=4,
    title="Fitting on a GTX 580",
    question="Using `memory.predict_step_memory` (Adam, FP32, dropout masks as on a GPU: "
             "`device_type=\"cuda\"`), find the largest batch of D2L's AlexNet (the one-tower network of section 1, "
             "not the paper's: notebook 08 counts that one) whose training step fits in the GTX 580's 3 GB "
             "(3 × 2³⁰ bytes; the boards AlexNet was trained on, "
             "[Krizhevsky et al., 2012](#ref-krizhevsky2012imagenet)). Compare with the batch "
             "size of 128 the paper used, and with what splitting the network over two GPUs (notebook 15) would "
             "allow.",
    hint_text="Build the model on the `meta` device. Parameters, gradients and Adam's state do not depend on the "
              "batch; the saved activations grow in proportion to it. Find the bytes per image, or search over the "
              "batch.",
    solution_text="Parameters, gradients and Adam's state take 178 + 178 + 357 = 713 MiB whatever the batch; the saved "
                  "activations take 3.79 MiB per image (485 MiB at 128). (3,072 − 713) / 3.79 gives batch 622, almost "
                  "five times the paper's 128, with nothing left for the CUDA context, library workspaces and "
                  "backward's temporaries, so somewhat less in practice. This is D2L's one-tower network on grey "
                  "images with Adam, counted by PyTorch's rules: what fits by this count, not what fitted in "
                  "cuda-convnet in 2012. Notebook 08 counts the paper's own network the same way (three-channel "
                  "input, response normalisation, SGD with momentum): at batch 128 it also comes out under 3 GB, with "
                  "less to spare. The paper does not say that a batch of 128 failed to fit; it says that 3 GB limits "
                  "the size of the networks one GTX 580 can train and that theirs was too big for one GPU (§3.2). "
                  "Splitting the layers over two GPUs halves "
                  "each GPU's share of parameters, gradients, optimizer state and activations, so about twice the "
                  "batch fits (some 1,400 images in 2 × 3 GiB), paid for with traffic between the GPUs at every split.",
    checker=_gtx580_checker,
    reference=622,
    wrong=[(566, "3 × 10⁹ bytes"), (716, "Adam's two buffers")],
    how_to_answer="Answer with a batch size, e.g. ex.gtx580_batch.check(100).",
)

# ---------------------------------------------------------------------------------------------------
# 5. A round trip through FP16


def fp16_round_trip(grads: torch.Tensor, scale: float) -> torch.Tensor:
    """Gradients after × scale, a cast to FP16 and back to FP32, and ÷ scale (a new tensor)."""
    return (grads.float() * scale).half().float() / scale


def _bf16(grads: torch.Tensor, scale: float) -> torch.Tensor:
    return (grads * scale).bfloat16().float() / scale


def _no_divide(grads: torch.Tensor, scale: float) -> torch.Tensor:
    return (grads * scale).half().float()


def _divide_in_fp16(grads: torch.Tensor, scale: float) -> torch.Tensor:
    return ((grads * scale).half() / scale).float()


def _no_cast(grads: torch.Tensor, scale: float) -> torch.Tensor:
    return grads * scale / scale


def _in_place(grads: torch.Tensor, scale: float) -> torch.Tensor:
    grads.mul_(scale)
    return grads.half().float() / scale


_ROUND_TRIP_SLIPS = [
    (_in_place, "your function changed the gradients it was given (in place); work on a new tensor."),
    (_bf16, "values below FP16's smallest subnormal (2⁻²⁴ ≈ 6e-8) must come back as 0: this looks like bfloat16, "
            "which has FP32's range. Cast to torch.float16."),
    (_no_cast, "nothing was rounded: 2⁻²⁶ came back unchanged. Cast to torch.float16 between the multiply and the "
               "divide (and back to torch.float32)."),
    (_no_divide, "the result is still multiplied by the scale: divide by it after the cast back to FP32."),
    (_divide_in_fp16, "you divided by the scale while still in FP16, so small values underflow again; cast back to "
                      "FP32 first, then divide."),
]

_G = torch.tensor([1e-3, 1e-6, 2.0**-26, 3e-8, -2e-5, 0.0])
_ROUND_TRIP_CASES = [
    ("tiny gradients at scale 1", (_G, 1.0)),
    ("the same gradients at scale 1024", (_G, 1024.0)),
    ("a large gradient at scale 2^16 (it overflows to inf)", (torch.tensor([10.0, 1.0, -0.5]), 2.0**16)),
    ("scale 3, not a power of two", (torch.tensor([0.1, 0.2, 1e-7]), 3.0)),
    ("a 3×4 matrix of gradients at scale 8", (torch.linspace(-1e-4, 1e-4, 12).reshape(3, 4), 8.0)),
]
_ARGS = dict(_ROUND_TRIP_CASES)


def _round_trip_cases(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    results = []
    for name, (g, scale) in _ROUND_TRIP_CASES:
        given = g.clone()
        out = fn(given, scale)
        results.append((name, (out, torch.equal(given, g)), fp16_round_trip(g, scale)))
    return results


def _same_tensor(out: Any, expected: torch.Tensor) -> bool:
    return (torch.is_tensor(out) and out.shape == expected.shape and out.dtype == torch.float32
            and torch.allclose(out, expected, rtol=1e-3, atol=0.0, equal_nan=True))


def _round_trip_diagnose(case: str, got: Any, expected: torch.Tensor) -> str:
    out, unchanged = got
    if not unchanged:
        return _ROUND_TRIP_SLIPS[0][1]
    g, scale = _ARGS[case]
    for slip, message in _ROUND_TRIP_SLIPS[1:]:
        value = slip(g.clone(), scale)
        if _same_tensor(out, value) and not _same_tensor(value, expected):
            return message
    if torch.is_tensor(out) and out.dtype != torch.float32:
        return f"return FP32 gradients, got {out.dtype}."
    if torch.is_tensor(out) and out.shape != expected.shape:
        return f"the result has shape {tuple(out.shape)}; keep the gradients' shape {tuple(expected.shape)}."
    return f"expected {expected.tolist()}, got {out.tolist() if torch.is_tensor(out) else out!r}."


round_trip = Exercise(
    function="my_fp16_round_trip(grads, scale)",
    key="round_trip", number=5,
    title="A round trip through FP16",
    question="Implement `my_fp16_round_trip(grads, scale)`, returning the gradients after "
             "multiplying by `scale`, casting to FP16, back to FP32 and dividing by `scale`, without changing "
             "`grads`; the check runs it on tiny, huge and ordinary gradients. Then measure the relative error of the "
             "whole gradient vector, ‖round trip − g‖ / ‖g‖, for the activation gradients of section 3 at scales 1, "
             "8 and 1024. Which scale minimises it?",
    hint_text="Keep every step but the cast in FP32: multiply, cast to torch.float16, cast back to torch.float32, and "
              "only then divide. Values at or below half of FP16's smallest subnormal should come back as 0, values "
              "well above 65,504 as inf.",
    solution_text="On the trained digits MLP of section 3 the error falls from scale 1 to 8 and hardly moves "
                  "from 8 to 1024 and beyond: 1024 minimises it, by little (print your three errors to see by how "
                  "much). The norm is dominated by the largest gradients, which FP16 stores to within half a step at "
                  "any scale; the gradients that flush to zero at scale 1 (section 3's sweep) are too small to move "
                  "it. A whole-vector error hides "
                  "underflow, so count the zeros (section 3) to see it. Too large a scale turns the largest gradients "
                  "into inf and the error with them (the weight gradients at 2²⁴).",
    checker=function_checker(_round_trip_cases, lambda got, expected: got[1] and _same_tensor(got[0], expected),
                             _round_trip_diagnose,
                             success="tiny values flush to zero at scale 1 and survive at 1024, 10 × 2¹⁶ overflows to "
                                     "inf, and the gradients you were given stay as they were."),
    reference=fp16_round_trip,
    wrong=[(_bf16, "bfloat16"), (_no_divide, "still multiplied"), (_divide_in_fp16, "underflow again"),
           (_in_place, "in place")],
)

EXERCISES = [activation_growth, inplace_relu, untrained_gradients, gtx580_batch, round_trip]
