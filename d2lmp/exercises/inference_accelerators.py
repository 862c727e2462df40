"""Exercises of notebook 06 (accelerators for inference): per-tensor INT8 quantisation written by hand,
weight-only INT8, the steps of Int8Linear, when the T4 becomes compute-bound, and models per T4.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from d2lmp.exercises._answers import figure, gpu, parts_checker
from d2lmp.exercises.core import Exercise, Verdict, choice_checker, function_checker, number_checker

__all__ = ["EXERCISES", "per_tensor_int8", "weight_only", "int8_steps", "t4_compute_bound", "t4_models",
           "quantize_per_tensor"]

# ---------------------------------------------------------------------------------------------------
# 1. One scale per tensor


def quantize_per_tensor(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric INT8 with one scale for the whole tensor: (q int8 in [-127, 127], scale) with w ≈ scale · q."""
    amax = w.detach().float().abs().max()
    scale = amax / 127 if amax > 0 else torch.tensor(1.0)
    q = torch.round(w.float() / scale).clamp(-127, 127).to(torch.int8)
    return q, scale


def _largest_value_not_magnitude(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    scale = w.float().max() / 127
    return torch.round(w.float() / scale).clamp(-127, 127).to(torch.int8), scale


def _truncates(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    scale = w.float().abs().max() / 127
    return (w.float() / scale).clamp(-127, 127).to(torch.int8), scale


def _no_zero_guard(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    scale = w.float().abs().max() / 127
    return torch.round(w.float() / scale).clamp(-127, 127).to(torch.int8), scale


def _per_row(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    amax = w.float().abs().amax(dim=-1, keepdim=True)
    scale = torch.where(amax > 0, amax / 127, torch.ones_like(amax))
    return torch.round(w.float() / scale).clamp(-127, 127).to(torch.int8), scale


def _scale_128(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    amax = w.float().abs().max()
    scale = amax / 128 if amax > 0 else torch.tensor(1.0)
    return torch.round(w.float() / scale).clamp(-127, 127).to(torch.int8), scale


_QUANT_SLIPS = [
    (_per_row, "you used one scale per row; this exercise asks for one scale for the whole tensor."),
    (_no_zero_guard, "an all-zero tensor gives scale 0 and 0/0 = nan: choose scale 1 (any positive number) when "
                     "max |w| is 0."),
    (_largest_value_not_magnitude, "the scale must come from the largest magnitude, max |w|: here the largest weight "
                                   "is negative and max(w) misses it, so it gets clipped."),
    (_truncates, "converting to int8 truncates toward zero; round to the nearest integer first (torch.round)."),
    (_scale_128, "divide max |w| by 127, not 128: the symmetric range is [-127, 127], so the largest weight must "
                 "map to ±127 exactly."),
]


def _quant_cases(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    g = torch.Generator().manual_seed(0)
    big_row = torch.randn(4, 256, generator=g)
    big_row[0] *= 100
    cases = [("a 4×256 matrix with one row 100× larger (section 2)", big_row),
             ("a matrix whose largest magnitude is negative", torch.tensor([[-3.0, 1.0, 2.0], [0.5, -0.25, 0.0]])),
             ("an all-zero matrix", torch.zeros(3, 5)),
             ("a vector of 7 values", torch.linspace(-1.0, 0.5, 7))]
    results = []
    for name, w in cases:
        given = w.clone()
        out = fn(given)
        results.append((name, (w, out, torch.equal(given, w)), None))
    return results


def _quant_problem(w: torch.Tensor, out: Any, unchanged: bool) -> str | None:
    if not unchanged:
        return "your function changed the tensor it was given; quantise a copy."
    if not (isinstance(out, tuple) and len(out) == 2):
        return "return a tuple (q, scale)."
    q, scale = out
    if not torch.is_tensor(q) or q.dtype != torch.int8:
        kind = getattr(q, "dtype", type(q).__name__)
        return f"q must be an int8 tensor, got {kind}: round, clamp, then .to(torch.int8)."
    if q.shape != w.shape:
        return f"q has shape {tuple(q.shape)}; it must have the shape of w, {tuple(w.shape)}."
    scales = torch.as_tensor(scale, dtype=torch.float64)
    if scales.numel() != 1:
        return f"got {scales.numel()} scales; one scale for the whole tensor is the point of this exercise."
    s = float(scales)
    if not s > 0 or s == float("inf"):
        return f"the scale is {s}: it must be a positive, finite number (for an all-zero tensor choose 1)."
    if int(q.abs().max()) > 127:
        return "q reaches -128: the symmetric range is [-127, 127]."
    amax = float(w.abs().max())
    if amax > 0 and abs(amax / s - 127) > 1e-3 * 127:
        return f"max |w| / scale is {amax / s:.2f}, not 127: the largest magnitude should map to ±127."
    err = float((q.double() * s - w.double()).abs().max())
    if err > s / 2 * (1 + 1e-4):
        return f"|scale · q − w| reaches {err / s:.2f} steps; rounding to nearest keeps it within half a step."
    return None


def _same_quantisation(a: Any, b: tuple[torch.Tensor, torch.Tensor]) -> bool:
    try:
        q, scale = a
        return (torch.equal(torch.as_tensor(q), b[0])
                and torch.allclose(torch.as_tensor(scale, dtype=torch.float32), b[1].float(), equal_nan=True))
    except (RuntimeError, TypeError, ValueError):  # another shape or kind of result: not the same
        return False


def _quant_diagnose(case: str, got: Any, expected: Any) -> str:
    """The slip that reproduces the student's result (and differs from the right one here), else the problem."""
    w, out, unchanged = got
    if unchanged:
        right = quantize_per_tensor(w.clone())
        for slip, message in _QUANT_SLIPS:
            result = slip(w.clone())
            if _same_quantisation(out, result) and not _same_quantisation(right, result):
                return message
    return _quant_problem(w, out, unchanged) or "see the hint."


per_tensor_int8 = Exercise(
    function="my_quantize_per_tensor(w)",
    key="per_tensor_int8", number=1,
    title="One scale per tensor",
    question="Quantise with one scale per tensor instead of per channel. Write "
             "`my_quantize_per_tensor(w)` returning `(q, scale)`: int8 values in [−127, 127] and one scale, with "
             "w ≈ scale · q (symmetric, as in section 2); the check runs it on awkward tensors. Then write a variant "
             "of `Int8Linear` that uses it for the weights. How much accuracy does the digits network lose? Which "
             "layer suffers most, and why?",
    hint_text="scale = max |w| / 127 over the whole tensor; q = round(w / scale), clamped to [−127, 127], as int8. "
              "What must the scale be when every weight is 0?",
    solution_text="A variant of Int8Linear only replaces quantize_symmetric(linear.weight, dim=1) by the per-tensor "
                  "version (one scale, broadcast over the output channels). Print, for each layer, the largest row "
                  "maximum over the smallest (w.abs().amax(dim=1)): the trained layers' rows have similar ranges, "
                  "unlike the 100× row of section 2, so one scale costs each row little and the network's accuracy "
                  "and its 'same prediction as FP32' share barely move (compare yours with section 3's table). The "
                  "layer whose row maxima differ most suffers most: its rows of small weights get the coarsest steps "
                  "for their size. Measure it as the relative weight error ‖dequantize(q, s) − w‖ / ‖w‖ per channel "
                  "and per tensor, layer by layer. Weight errors of a fraction of a step rarely change which class "
                  "scores highest.",
    checker=function_checker(_quant_cases, lambda got, _: _quant_problem(*got) is None, _quant_diagnose,
                             success="int8 values, one positive scale, the largest magnitude at ±127 and every "
                                     "weight within half a step, also for a negative maximum and an all-zero tensor."),
    reference=quantize_per_tensor,
    wrong=[(_largest_value_not_magnitude, "largest magnitude"), (_truncates, "truncates toward zero"),
           (_no_zero_guard, "all-zero tensor"), (_per_row, "one scale per row")],
)

weight_only = Exercise(
    key="weight_only", number=2,
    title="Weight-only INT8",
    question="Quantise only the weights and keep the activations in FP32 (dequantise the "
             "weights once). Measure accuracy and latency. Which part of `Int8Linear`'s time did you remove: "
             "'input' (quantising each input row and rescaling the int32 sums), 'weights' (quantising the weights), "
             "or 'product' (the matrix product)?",
    hint_text="Look at what `Int8Linear.forward` does on every call, and at what `Int8Linear.__init__` does once.",
    solution_text="'input'. With FP32 activations the per-call passes over the activations go away: finding each "
                  "row's scale, dividing, rounding, clamping and converting the input, and converting the int32 sums "
                  "back and multiplying by the two scales. The product remains, now an FP32 product on dequantised "
                  "weights, so the layer runs at nn.Linear's speed, while the int8 product's own speed is lost: "
                  "whether that is faster than Int8Linear depends on the machine (section 3 prints both speeds). "
                  "Accuracy stays at the INT8 level or closer to FP32, since only the weights are rounded. "
                  "What weight-only INT8 keeps is the 4× smaller weights in storage; a "
                  "kernel that dequantises on the fly also reads 4× fewer weight bytes, which is what matters for "
                  "memory-bound small batches.",
    checker=choice_checker("input", {
        "input": "every call of Int8Linear quantises its input rows and rescales the int32 sums; with FP32 "
                 "activations those passes are gone, and the product becomes an ordinary FP32 product.",
        "weights": "the weights are quantised once, in Int8Linear.__init__, not on every call: there was no per-call "
                   "time to remove there.",
        "product": "the product stays: with dequantised weights it becomes an FP32 product (as fast as nn.Linear), "
                   "not no product.",
    }),
    reference="input",
    wrong=[("weights", "quantised once"), ("product", "the product stays")],
    how_to_answer="Answer with 'input', 'weights' or 'product', e.g. ex.weight_only.check('weights').",
)

int8_steps = Exercise(
    key="int8_steps", number=3,
    title="Where the INT8 layer spends its time",
    question="Measure the time of `Int8Linear` split into its steps "
             "(quantising the input, the integer product, rescaling) with `timing.benchmark`. Which step dominates on "
             "this CPU?",
    hint_text="Time each step on its own with inputs prepared beforehand: quantize.quantize_symmetric(x, dim=1); "
              "quantize.int8_matmul(qx, layer.qweight_t); acc.float() * xscale * layer.wscale + layer.bias. Use the "
              "notebook's batch (2872 rows) and the 1024 → 1024 middle layer.",
    solution_text="The integer product is one call; quantising the input makes six passes over 2872 × 1024 floats "
                  "(abs, amax, divide, round, clamp, convert) and the rescaling four (convert, two multiplies, the "
                  "bias), each a separate memory-bound operation. Section 3 already prints the outcome on your "
                  "machine: its last line gives the INT8 product's speed-up over FP32 and the whole network's. Where "
                  "torch._int_mm exists and the product gains much more than the network, quantising and rescaling "
                  "take most of the layer's time, and your three timings should show which of the two comes first. "
                  "That order varies between machines and between runs on a shared one: run each timing twice. Where "
                  "torch._int_mm is missing, the widened int32 product dominates everything (compare the int8-int32 "
                  "row of section 3's table with the int8 row).",
)

# ---------------------------------------------------------------------------------------------------
# 4. When the T4 becomes compute-bound


def _smallest_batch(ridge: float, bytes_per_value: float, weights_only: bool = False) -> int:
    from d2lmp.quantize import linear_intensity

    b = 1
    while True:
        intensity = (2 * b / bytes_per_value if weights_only else linear_intensity(b, 4096, 4096, bytes_per_value))
        if intensity >= ridge:
            return b
        b += 1


_T4 = gpu("T4")
_T4_INT8, _T4_FP16 = figure(_T4.int8_tops, "T4 INT8 TOPS"), figure(_T4.fp16_tensor_tflops, "T4 FP16 TFLOPS")
_INT8_RIDGE, _FP16_RIDGE = _T4_INT8 * 1e3 / _T4.bandwidth_gbs, _T4_FP16 * 1e3 / _T4.bandwidth_gbs
_INT8_BATCH, _FP16_BATCH = _smallest_batch(_INT8_RIDGE, 1), _smallest_batch(_FP16_RIDGE, 2)

t4_compute_bound = Exercise(
    key="t4_compute_bound", number=4,
    title="When does the T4 compute?",
    question="For the 4096×4096 layer, at which batch size does INT8 inference on the "
             "T4 become compute-bound? And FP16? Use `quantize.linear_intensity` and the T4's vendor figures "
             f"({_T4_INT8:g} INT8 TOPS, {_T4_FP16:g} FP16 TFLOPS, {_T4.bandwidth_gbs:g} GB/s). "
             "Answer with a tuple `(INT8 batch, FP16 batch)` of the smallest whole "
             "batches.",
    hint_text=f"Compute-bound means intensity ≥ ridge point = peak ÷ bandwidth: {_INT8_RIDGE:.0f} op/byte for INT8, "
              f"{_FP16_RIDGE:.0f} FLOP/byte for FP16. Raise the batch until "
              "`linear_intensity(batch, 4096, 4096, bytes_per_value)` reaches it.",
    solution_text="INT8: 2b · 4096² / (4096² + 8192 b) ≥ 406.25 gives b ≥ 225.5, so batch 226. FP16: the same with 2 "
                  "bytes per value against the ridge 203.1: again 226. INT8 doubles both the intensity (half the "
                  "bytes) and the ridge (twice the peak), so the crossover does not move: INT8 doubles the speed at "
                  "every batch, below 226 because it moves half the bytes, above because the tensor cores do twice "
                  "the operations.",
    checker=parts_checker(
        ("INT8", number_checker(_INT8_BATCH, rel_tol=0, abs_tol=1, near_misses=[
            (_smallest_batch(_INT8_RIDGE, 1, weights_only=True), "you counted only the weights' bytes; at a batch of "
                                                                 "about 200 the input and output rows add 10 %."),
            (_INT8_RIDGE, "406 is the ridge point in op/byte; the question asks for the batch that reaches it.")])),
        ("FP16", number_checker(_FP16_BATCH, rel_tol=0, abs_tol=1, near_misses=[
            (_smallest_batch(_FP16_RIDGE, 2, weights_only=True), "you counted only the weights' bytes; at a batch of "
                                                                 "about 200 the input and output rows add 10 %."),
            (_smallest_batch(_FP16_RIDGE, 1), "an FP16 value is 2 bytes, not 1."),
            (_smallest_batch(_INT8_RIDGE, 2), "FP16's ridge point is 65 TFLOPS / 320 GB/s = 203, not INT8's 406.")])),
    ),
    reference=(_INT8_BATCH, _FP16_BATCH),
    wrong=[((_smallest_batch(_INT8_RIDGE, 1, True), _smallest_batch(_FP16_RIDGE, 2, True)), "only the weights'"),
           ((_INT8_BATCH, _smallest_batch(_FP16_RIDGE, 1)), "2 bytes")],
    how_to_answer="Answer with a tuple, e.g. ex.t4_compute_bound.check((int8_batch, fp16_batch)).",
)

# ---------------------------------------------------------------------------------------------------
# 5. Models per T4

_T4_GB = _T4.memory_gb
_T4_BYTES = int(_T4_GB * 2**30)
_DECIMAL = f"you took {_T4_GB:g} GB as {_T4_GB:g} × 10⁹ bytes; GPU memory is {_T4_GB:g} × 2³⁰ bytes."


@functools.cache
def _t4_bytes_per_model() -> dict[str, float]:
    """Bytes of one served (INT8 weights, batch 8) and one trained (FP32, Adam, batch 128) D2L AlexNet."""
    from d2lmp.memory import inference_activation_peak, predict_step_memory
    from d2lmp.models import alexnet_d2l

    with torch.device("meta"):
        net = alexnet_d2l()
    weights = sum(p.numel() for p in net.parameters())
    peak8 = inference_activation_peak(net, (8, 1, 224, 224))
    step = predict_step_memory(net, (128, 1, 224, 224), "adam", device_type="cuda")
    return dict(serve=weights + peak8, serve_fp32=4 * weights + peak8, train=step.total,
                train_sgd=step.total - step.optimizer_state)


def _count_checker(kind: str, slips: list[tuple[str, float, str]]) -> Callable[[Any], Verdict]:
    def check(answer: Any) -> Verdict:
        sizes = _t4_bytes_per_model()
        misses = [(capacity // sizes[k], text) for k, capacity, text in slips]
        return number_checker(_T4_BYTES // sizes[kind], "models", rel_tol=0, abs_tol=0.5,
                              near_misses=misses)(answer)

    return check


t4_models = Exercise(
    key="t4_models", number=5,
    title="Serving and training on a T4",
    question="Using `memory.predict_step_memory` and `memory.inference_activation_peak`, how many D2L AlexNets "
             f"could a {_T4_GB:g} GB T4 serve at batch 8 with INT8 weights (activations in FP32), and how many could "
             "it train at batch 128 in FP32 with Adam? Build the model on the `meta` device as in notebook 07, take "
             f"{_T4_GB:g} GB as {_T4_GB:g} × 2³⁰ bytes, count dropout masks as on a GPU (`device_type=\"cuda\"`), "
             "and leave the CUDA context and workspaces aside. Answer with a tuple `(served, trained)` of whole "
             "models.",
    hint_text="Serving one model holds its weights (1 byte each in INT8) and the activation peak of one batch-8 "
              "forward pass; training one holds the four parts predict_step_memory returns. Divide "
              f"{_T4_GB:g} × 2³⁰ bytes by each and round down.",
    solution_text="Serving: 46,764,746 weights × 1 byte = 44.6 MiB plus an activation peak of 18.6 MiB at batch 8: "
                  "63.2 MiB per model, 16,384 / 63.2 → 259 models. Training: parameters 178 MiB, gradients 178 MiB, "
                  "Adam's state 357 MiB and saved activations 485 MiB: 1,199 MiB per model → 13 models. The card "
                  "serves about 20 times as many models as it trains, which is why an inference card can make do "
                  "with less and slower memory (and, with FP32 weights, 83 would still fit).",
    checker=parts_checker(
        ("served", _count_checker("serve", [
            ("serve", _T4_GB * 1e9, _DECIMAL),
            ("serve_fp32", _T4_BYTES, "that is with FP32 weights (4 bytes each); INT8 weights are 1 byte.")])),
        ("trained", _count_checker("train", [
            ("train", _T4_GB * 1e9, _DECIMAL),
            ("train_sgd", _T4_BYTES, "that leaves out Adam's two buffers per parameter (357 MiB per model).")])),
    ),
    reference=(259, 13),
    wrong=[((241, 12), "16 × 10⁹ bytes"), ((83, 13), "FP32 weights"), ((259, 19), "Adam's two buffers")],
    how_to_answer="Answer with a tuple, e.g. ex.t4_models.check((served, trained)).",
)

EXERCISES = [per_tensor_int8, weight_only, int8_steps, t4_compute_bound, t4_models]
