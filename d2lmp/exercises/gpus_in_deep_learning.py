"""Exercises of notebook 01 (GPUs in deep learning): the order of 4×4 transforms, FLOPs and bytes per
vertex, the batch that reaches half of the best GFLOP/s, and the memory of AlexNet's fc6.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from d2lmp.exercises._answers import formula_checker, parts_checker
from d2lmp.exercises.core import Exercise, Verdict, number_checker
from d2lmp.gpu_specs import ALEXNET_GTX580_BYTES
from d2lmp.graphics import rotation_x, translation
from d2lmp.timing import LinearRow

__all__ = ["EXERCISES", "rotate_then_shift", "vertex_flops", "vertex_intensity", "half_peak_batch", "fc6_bytes",
           "half_peak_batch_reference"]

# ---------------------------------------------------------------------------------------------------
# 1. The order of two transforms: a rotation about x, then a shift along y, which do not commute

_ANGLE = math.radians(45)
_EXPECTED_MATRIX = translation(0, 2, 0) @ rotation_x(_ANGLE)
_OTHER_ORDER = rotation_x(_ANGLE) @ translation(0, 2, 0)


def _matrix_slips() -> list[tuple[torch.Tensor, str]]:
    right = _EXPECTED_MATRIX
    return [
        (_OTHER_ORDER, "that is the other order: it shifts first and then rotates, so the rotation turns the shift "
                       "too, from (0, 2, 0) to (0, 2 cos 45°, 2 sin 45°) ≈ (0, 1.41, 1.41). With column vectors, "
                       "v' = M v, the transform applied first stands on the right: M = second @ first."),
        (right.T, "the shift sits in the bottom row: that is the transpose, the convention for row vectors "
                  "(v' = v M). graphics uses column vectors, v' = M v, so the shift goes in the last column; "
                  "transform_batched then computes V Mᵀ for a stack of row vectors."),
        (translation(0, 2, 0) @ rotation_x(45.0), "you rotated by 45 radians, not 45 degrees: pass math.radians(45)."),
        (translation(0, -2, 0) @ rotation_x(_ANGLE), "the cube moved 2 units down: up is +y."),
        (translation(2, 0, 0) @ rotation_x(_ANGLE), "the shift is along x (right); the question asks for +y (up)."),
        (rotation_x(_ANGLE), "this only rotates: multiply by a translation as well."),
        (translation(0, 2, 0), "this only shifts: multiply by a rotation about x as well."),
        (translation(0, 2, 0) @ rotation_x(-_ANGLE), "the rotation goes the other way (−45°)."),
    ]


def _check_matrix(answer: Any) -> Verdict:
    try:
        m = torch.as_tensor(answer, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        return Verdict(False, f"expected a 4×4 matrix (a tensor or nested lists), got {type(answer).__name__}.")
    if m.shape != (4, 4):
        return Verdict(False, f"expected a 4×4 matrix, got shape {tuple(m.shape)}: homogeneous coordinates need "
                              "a 4th row and column.")
    if torch.allclose(m, _EXPECTED_MATRIX.double(), atol=1e-4):
        return Verdict(True, "the shift (0, 2, 0) is in the last column and the rotation in the top-left 3×3 block. "
                             "The other order, rotation_x(...) @ translation(0, 2, 0), rotates the shift too: its last "
                             "column is (0, 1.41, 1.41). With a shift along x the two orders agree, because a rotation "
                             "about x leaves x alone.")
    for wrong, message in _matrix_slips():
        if torch.allclose(m, wrong.double(), atol=1e-4):
            return Verdict(False, message)
    return Verdict(False, "this matrix does not rotate by 45° about x and then shift by 2 along +y. Build it from "
                          "graphics.translation and graphics.rotation_x and compare transform_batched(cube, M) with "
                          "what you expect for one corner.")


rotate_then_shift = Exercise(
    key="rotate_then_shift", number=1,
    title="Order of transforms",
    question="Build the 4×4 matrix that first rotates the cube by 45° about the x axis and then moves it 2 units up "
             "(+y), from `graphics.rotation_x`, `graphics.translation` and `math.radians`, and pass it to the check. "
             "Does the order of the two factors matter? Build the other order too and compare "
             "`graphics.transform_batched(cube, M)` for both: where does the cube's first corner end up? Then repeat "
             "with a shift along x instead: why do the two orders agree there?",
    hint_text="With column vectors, v' = M v, the transform applied first stands on the right of the product: "
              "M = second @ first. The rotation functions take radians.",
    solution_text="M = graphics.translation(0, 2, 0) @ graphics.rotation_x(math.radians(45)): the top-left 3×3 block "
                  "is the rotation, the last column holds the shift (0, 2, 0, 1). The other order, "
                  "rotation_x(...) @ translation(0, 2, 0), shifts first and then rotates the shifted cube, so the "
                  "shift vector turns with it, to (0, 2 cos 45°, 2 sin 45°) ≈ (0, 1.41, 1.41): the cube ends up "
                  "lower and further along z. Matrix products do not commute in general, so the order of the factors "
                  "is part of the transform. A shift along x is the exception here: a rotation about x leaves "
                  "x-coordinates alone, so it commutes with that shift and both orders give the same matrix.",
    checker=_check_matrix, reference=_EXPECTED_MATRIX,
    wrong=[(_OTHER_ORDER, "the other order"), (_EXPECTED_MATRIX.T, "bottom row"),
           (translation(0, 2, 0) @ rotation_x(45.0), "radians")],
    how_to_answer="Pass a 4×4 tensor, e.g. ex.rotate_then_shift.check(graphics.translation(...) @ ...).",
)

# ---------------------------------------------------------------------------------------------------
# 2. FLOPs of one vertex

vertex_flops = Exercise(
    key="vertex_flops", number=2,
    title="FLOPs per vertex",
    question="Count the FLOPs of transforming one vertex (x, y, z, 1) with a general 4×4 "
             "matrix, and with a matrix whose last row is (0, 0, 0, 1), counting each multiplication and each "
             "addition as one FLOP. Which operations can a renderer skip? Answer with a tuple `(general, affine)`.",
    hint_text="Each output coordinate is a dot product of one matrix row with (x, y, z, 1). How many additions does "
              "a sum of 4 terms need? Then ask which outputs are known in advance, and which products multiply by 1.",
    solution_text="General: 4 outputs, each 4 multiplications and 3 additions: 16 + 12 = 28 FLOPs. (The "
                  "2 · in · out = 32 of fc_flops counts 4 additions per output, as if each sum started from 0; for "
                  "large layers the difference vanishes.) Affine, last row (0, 0, 0, 1): the 4th output is always 1 "
                  "and is not computed, and in the 3 other rows the last term is m · 1 = m, an addition without a "
                  "multiplication: 3 × (3 multiplications + 3 additions) = 18 FLOPs. A renderer skips the last row "
                  "and the multiplications by w = 1, which is why affine transforms are often stored as 3×4.",
    checker=parts_checker(
        ("general 4×4", number_checker(28, "FLOPs", rel_tol=0, abs_tol=0.01, near_misses=[
            (32, "2 · 4 · 4 counts 4 additions per output; a sum of 4 terms needs only 3: 16 multiplications + "
                 "12 additions."),
            (16, "you counted the multiplications only; the additions are FLOPs too."),
            (12, "you counted the additions only; the multiplications are FLOPs too.")])),
        ("last row (0, 0, 0, 1)", number_checker(18, "FLOPs", rel_tol=0, abs_tol=0.01, near_misses=[
            (21, "skipping the last row is right, but the 4th term of each row multiplies by w = 1: that "
                 "multiplication can be skipped too (3 × (3 + 3))."),
            (24, "that is 2 · 3 · 4: skip the multiplications by w = 1 and count 3 additions per row."),
            (28, "the last output is always 1: it need not be computed at all."),
            (32, "the last output is always 1 and w = 1 needs no multiplication.")])),
    ),
    reference=(28, 18),
    wrong=[((32, 24), "a sum of 4 terms needs only 3"), ((28, 21), "multiplies by w = 1")],
    how_to_answer="Answer with a tuple, e.g. ex.vertex_flops.check((general, affine)).",
)

# ---------------------------------------------------------------------------------------------------
# 3. Bytes per vertex

vertex_intensity = Exercise(
    key="vertex_intensity", number=3,
    title="Memory, not arithmetic",
    question="Extend the vertex measurement to 16 million vertices "
             "(`graphics.measure_transforms([16_000_000], devices)`). Where does the batched CPU rate stop growing? "
             "To see why memory might be the limit, give the arithmetic intensity of the batched transform in "
             "FLOP/byte: the 28 FLOPs per vertex of exercise 2 over the bytes each FP32 vertex reads and writes "
             "(the 4×4 matrix stays in the cache; leave it out).",
    hint_text="A vertex is 4 FP32 numbers of 4 bytes. It is read once, and its transformed copy is written once.",
    solution_text="Each vertex reads 4 × 4 = 16 bytes and writes 16 bytes: 28 FLOPs / 32 bytes = 0.875 FLOP/byte, "
                  "far left of a CPU's ridge point (notebook 03 measures this machine's). Once the vertex arrays no "
                  "longer fit in the last-level cache, memory caps the rate: at a copy bandwidth of B bytes/s "
                  "(notebook 03 measures B), at most B / 32 vertices/s, and in practice less, since a product with an "
                  "inner dimension of 4 does not stream at full bandwidth. A frame of N vertices reads 16·N bytes "
                  "and writes as many, so 4 million vertices touch 128 MB. Multiply the rate where yours stops "
                  "growing or falls by 32 bytes and compare it with B: near B, memory is the limit; far below it, "
                  "as the rates this notebook prints can be at the largest frames, the fall is not a bandwidth limit "
                  "but comes from something else, such as the library's kernel for so narrow a product or the fresh "
                  "output allocated for every frame.",
    checker=number_checker(0.875, "FLOP/byte", rel_tol=0.02, near_misses=[
        (1.75, "you counted only the 16 bytes read; the transformed vertex is written back too (32 bytes)."),
        (1.0, "that is 32 FLOPs per vertex (the 2 · in · out count); with the 28 FLOPs of exercise 2 it is 28 / 32."),
        (0.4375, "an FP32 number is 4 bytes, not 8: a vertex is 16 bytes each way."),
        (28 / 24, "homogeneous coordinates store 4 numbers per vertex, (x, y, z, 1), not 3.")]),
    reference=0.875,
    wrong=[(1.75, "only the 16 bytes read"), (1.0, "32 FLOPs")],
    how_to_answer="Answer with a number of FLOP/byte, e.g. ex.vertex_intensity.check(1.23).",
)

# ---------------------------------------------------------------------------------------------------
# 4. The smallest batch at half of the best GFLOP/s


def half_peak_batch_reference(rows: list[LinearRow]) -> int:
    """The smallest batch whose GFLOP/s is at least half of the best in ``rows`` (any order)."""
    best = max(r.gflops for r in rows)
    return min(r.batch for r in rows if r.gflops >= best / 2)


def _first_in_list_order(rows: list[LinearRow]) -> int:
    best = max(r.gflops for r in rows)
    return next(r.batch for r in rows if r.gflops >= best / 2)


def _strictly_above(rows: list[LinearRow]) -> int | None:
    best = max(r.gflops for r in rows)
    return min((r.batch for r in rows if r.gflops > best / 2), default=None)


def _half_of_largest_batch(rows: list[LinearRow]) -> int:
    last = max(rows, key=lambda r: r.batch).gflops
    return min(r.batch for r in rows if r.gflops >= last / 2)


def _rows(*pairs: tuple[int, float]) -> list[LinearRow]:
    return [LinearRow(batch=b, device="cpu", seconds=1.0, gflops=g) for b, g in pairs]


_SWEEP = [(1, 10.0), (4, 40.0), (16, 120.0), (64, 200.0), (256, 210.0)]
_HALF_PEAK_CASES = [
    ("a sweep in increasing batch order", (_rows(*_SWEEP),)),
    ("the same sweep in another order", (_rows(*[_SWEEP[i] for i in (3, 0, 4, 2, 1)]),)),
    ("a sweep whose best is not at the largest batch", (_rows((1, 5.0), (4, 30.0), (16, 90.0), (64, 220.0),
                                                             (256, 150.0), (1024, 100.0)),)),
    ("a row at exactly half of the best", (_rows((1, 50.0), (8, 100.0)),)),
    ("a sweep of one row", (_rows((32, 7.5)),)),
]

half_peak_batch = Exercise(
    function="my_half_peak_batch(rows)",
    key="half_peak_batch", number=4,
    title="Half of the best",
    question="In the linear-layer sweep, find the smallest batch that reaches half of the best measured GFLOP/s "
             "on your machine. Write `my_half_peak_batch(rows)`: it takes rows like `layer_rows` (records "
             "with `.batch` and `.gflops`, one device, in any order) and returns that batch. Apply it to this "
             "notebook's sweep, then repeat with a 4096 → 4096 layer (`timing.linear_sweep(batches, 4096, 4096, "
             "devices)`). What changes?",
    hint_text="Find the best GFLOP/s over all rows first; then, among the rows that reach half of it (exactly half "
              "counts), take the smallest batch. Do not rely on the order of the rows.",
    solution_text="The function takes the best rate over all rows, then the smallest batch at or above half of it; "
                  "`my_half_peak_batch(layer_rows)` gives it for this notebook's sweep, and the sweep's plot shows how "
                  "far the rate at batch 1 lies below the best. A 4096 → 4096 layer feels two opposite effects. Each "
                  "example does 16 times the work, so the fixed cost of each call matters less and the rate climbs "
                  "sooner. But its 64 MiB of FP32 weights may no longer fit in the last-level cache, and then at small "
                  "batches they stream from main memory at about batch / 2 FLOP/byte: at a memory bandwidth of "
                  "B GB/s, at most about B / 2 GFLOP/s per example in the batch. Which effect wins depends on the "
                  "machine, and the best rate ends up similar, since both layers become large matrix products. On a "
                  "GPU the half-peak batch is far larger for both, because it needs thousands of independent outputs "
                  "to fill its lanes (notebook 02).",
    checker=formula_checker(half_peak_batch_reference, _HALF_PEAK_CASES, slips=[
        (_first_in_list_order, "you returned the first row in list order that reaches half; the rows may come in "
                               "any order, so take the smallest batch among those that reach it."),
        (_strictly_above, "\"reaches half\" includes a rate of exactly half of the best: use >=."),
        (_half_of_largest_batch, "you took half of the largest batch's rate; the best rate may come from a smaller "
                                 "batch, so take the maximum over all rows."),
    ], compare=lambda a, b: a == b, success="it finds the smallest batch at half of the best, whatever the order of "
                                            "the rows, including an exact tie and a one-row sweep."),
    reference=half_peak_batch_reference,
    wrong=[(_first_in_list_order, "in list order"), (_strictly_above, "exactly half"),
           (_half_of_largest_batch, "largest batch")],
)

# ---------------------------------------------------------------------------------------------------
# 5. fc6 on a 3 GB board

_FC6_BYTES = 9216 * 4096 * 4
_BOARD_BYTES = ALEXNET_GTX580_BYTES

fc6_bytes = Exercise(
    key="fc6_bytes", number=5,
    title="fc6 on a GTX 580",
    question="AlexNet's fc6 has 9216 × 4096 weights. How many bytes is that in FP32, and what "
             "fraction of one 3 GB GTX 580 did it take (take 3 GB as 3 × 2³⁰ bytes: GPU memory sizes are binary)? "
             "Answer with a tuple `(bytes, fraction)`, the fraction as a number between 0 and 1.",
    hint_text="Weights × bytes per FP32 number gives the bytes; divide by the board's memory in bytes.",
    solution_text="9216 × 4096 = 37,748,736 weights × 4 bytes = 150,994,944 bytes (144 MiB, 151 MB); with its 4096 "
                  "biases 151,011,328. Of 3 × 2³⁰ = 3,221,225,472 bytes that is 0.047, under 5 % of the board for one "
                  "layer's weights; with its gradient and momentum buffer in training, three times that, about 14 %. "
                  "(The paper split fc6 between the two GPUs, 2048 outputs each, so each board held half of it. "
                  "Reading 3 GB as 3 × 10⁹ bytes would give 0.050.)",
    checker=parts_checker(
        ("bytes", number_checker(_FC6_BYTES, "bytes", rel_tol=0.001, near_misses=[
            (9216 * 4096, "that is the number of weights; each FP32 weight is 4 bytes."),
            (_FC6_BYTES / 2, "that is FP16 (2 bytes per weight); the question asks for FP32."),
            (_FC6_BYTES * 2, "that is FP64 (8 bytes per weight); FP32 is 4 bytes."),
            (_FC6_BYTES / 2**20, "that is in MiB; give bytes."),
            (_FC6_BYTES / 1e6, "that is in MB; give bytes.")])),
        ("fraction", number_checker(_FC6_BYTES / _BOARD_BYTES, rel_tol=0.01, near_misses=[
            (_FC6_BYTES / 3e9, "you took 3 GB as 3 × 10⁹ bytes; the board has 3 × 2³⁰ bytes."),
            (100 * _FC6_BYTES / _BOARD_BYTES, "that is a percentage; give the fraction (between 0 and 1)."),
            (_FC6_BYTES / (2 * _BOARD_BYTES), "that is the fraction of both GPUs; the question asks for one."),
            (9216 * 4096 / _BOARD_BYTES, "divide bytes by bytes: the weights are 4 bytes each.")])),
    ),
    reference=(_FC6_BYTES, _FC6_BYTES / _BOARD_BYTES),
    wrong=[((9216 * 4096, 0.0117), "number of weights"), ((_FC6_BYTES, _FC6_BYTES / 3e9), "3 × 10⁹")],
    how_to_answer="Answer with a tuple, e.g. ex.fc6_bytes.check((bytes, fraction)).",
)

EXERCISES = [rotate_then_shift, vertex_flops, vertex_intensity, half_peak_batch, fc6_bytes]
