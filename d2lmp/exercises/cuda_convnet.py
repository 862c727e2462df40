"""Exercises for notebook 09 (cuda-convnet): im2col's size and code, cuda-convnet's batch rule, measurements.

The im2col exercise runs the student's function on odd shapes, strides and paddings and compares it
with ``d2lmp.conv.im2col_columns``; a wrong answer is explained by its shape or by the ordering of
its rows and columns. Measurements that depend on the machine are open questions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from d2lmp.exercises._code import code_checker, max_error
from d2lmp.exercises.core import Exercise, Verdict, number_checker
from d2lmp.gpu_specs import ALEXNET_GTX580_BYTES

__all__ = ["EXERCISES", "im2col_blowup", "im2col_code", "batch_scaling", "copy_vs_gemm", "four_images_per_thread",
           "im2col_over_3gb", "gpu_bench"]

CONV1_BLOWUP = 121 * 55 * 55 / (224 * 224)  # 3·11·11 rows × 55·55 columns per image, over 3·224·224 inputs


# --------------------------------------------------------------------------------------------
# im2col, written by the student


def my_im2col(x: torch.Tensor, kernel_size: int, stride: int = 1, padding: int = 0) -> torch.Tensor:
    """Every receptive field of NCHW ``x`` as a column: shape (N, C·k·k, Ho·Wo), rows ordered like F.unfold."""
    n, c, h, w = x.shape
    k = kernel_size
    ho = (h + 2 * padding - k) // stride + 1
    wo = (w + 2 * padding - k) // stride + 1
    xp = F.pad(x, (padding, padding, padding, padding))
    cols = x.new_empty(n, c, k, k, ho, wo)
    for u in range(k):  # kernel row
        for v in range(k):  # kernel column: the input values this weight meets at every output position
            cols[:, :, u, v] = xp[:, :, u:u + stride * (ho - 1) + 1:stride, v:v + stride * (wo - 1) + 1:stride]
    return cols.reshape(n, c * k * k, ho * wo)


IM2COL_CASES = (  # (input shape, kernel, stride, padding): odd sizes, strides that do not divide, padding
    ((2, 3, 7, 5), 3, 2, 1),
    ((1, 2, 6, 6), 2, 1, 0),
    ((3, 1, 9, 7), 5, 3, 2),
    ((1, 4, 5, 5), 1, 1, 0),
    ((2, 2, 4, 3), 3, 1, 2),
)


def _im2col_run(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    from d2lmp import conv

    g = torch.Generator().manual_seed(0)
    results = []
    for shape, k, s, p in IM2COL_CASES:
        x = torch.randn(shape, generator=g, dtype=torch.float64)
        expected = conv.im2col_columns(x, k, s, p)[:, 0]  # groups=1: (N, C·k·k, Ho·Wo)
        case = f"x of shape {shape}, kernel {k}, stride {s}, padding {p}"
        results.append((case, fn(x.clone(), k, s, p), (expected, shape, k, s, p)))
    return results


def _im2col_judge(case: str, got: Any, context: Any) -> str | None:
    expected, (n, c, h, w), k, s, p = context
    if not isinstance(got, torch.Tensor):
        return f"expected a tensor, got {type(got).__name__}"
    if got.shape != expected.shape:
        want = tuple(expected.shape)
        out: Callable[[int, int, int], int] = lambda size, pad, stride: (size + 2 * pad - k) // stride + 1  # noqa: E731
        if got.dim() == 2:
            return f"your result has shape {tuple(got.shape)}; keep the batch axis: {want}"
        if got.dim() == 3 and got.shape[1] != c * k * k:
            return f"your result has {got.shape[1]} rows, expected C·k·k = {c}·{k}·{k} = {c * k * k}"
        if got.dim() == 3 and p and got.shape[2] == out(h, 0, s) * out(w, 0, s):
            return (f"your result has {got.shape[2]} columns, expected {want[2]}: you left out the padding "
                    f"({p} pixel(s) of zeros on every side)")
        if got.dim() == 3 and s > 1 and got.shape[2] == out(h, p, 1) * out(w, p, 1):
            return (f"your result has {got.shape[2]} columns, expected {want[2]}: you ignored the stride {s} "
                    "(one column per output position, ⌊(H + 2p − k)/s⌋ + 1 of them per axis)")
        return f"your result has shape {tuple(got.shape)}, expected {want} = (N, C·k·k, Ho·Wo)"
    if torch.allclose(got.double(), expected):
        return None
    ho, wo = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    blocks = expected.reshape(n, c, k, k, ho * wo)
    orders = (
        (blocks.permute(0, 2, 3, 1, 4), "rows in the wrong order: F.unfold's rows go channel first, then kernel row, "
                                        "then kernel column (row = c·k·k + u·k + v), not kernel position first"),
        (blocks.permute(0, 1, 3, 2, 4), "kernel rows and columns swapped: row = c·k·k + u·k + v, u the kernel row"),
        (expected.reshape(n, c * k * k, ho, wo).transpose(2, 3),
         "columns in the wrong order: output positions go row by row, column = i·Wo + j"),
    )
    for candidate, why in orders:
        if torch.allclose(got.double(), candidate.reshape(expected.shape)):
            return why
    return f"values differ from F.unfold's by up to {max_error(got, expected):.3g} (compare one column by hand)"


def _im2col_no_padding(x: torch.Tensor, kernel_size: int, stride: int = 1, padding: int = 0) -> torch.Tensor:
    return my_im2col(x, kernel_size, stride, 0)


def _im2col_kernel_major(x: torch.Tensor, kernel_size: int, stride: int = 1, padding: int = 0) -> torch.Tensor:
    cols = my_im2col(x, kernel_size, stride, padding)
    n, c = x.shape[:2]
    return cols.reshape(n, c, kernel_size, kernel_size, -1).permute(0, 2, 3, 1, 4).reshape(cols.shape)


# --------------------------------------------------------------------------------------------
# cuda-convnet's batch rule and a too-large im2col matrix


def _check_four_per_thread(answer: Any) -> Verdict:
    try:
        batches = sorted({int(b) for b in answer})
    except (TypeError, ValueError):
        return Verdict(False, f"answer with a list of batch sizes, e.g. [100, 200]; got {answer!r}.")
    if batches == [128, 256]:
        return Verdict(True, "128 and 256: only multiples of 128 get 4 images per thread. A batch of 100 gets 1 "
                             "image per thread, so each 32-thread warp covers 32 images where 128 would cover 128 "
                             "with 4 per thread: a quarter of the work per thread, and far less register reuse.")
    if batches == [128]:
        return Verdict(False, "256 between 64 and 256 is a multiple of 128 too (the range includes its ends).")
    twos = [b for b in batches if b % 128 and b % 64 == 0]
    if twos:
        return Verdict(False, f"{twos} get 2 images per thread: multiples of 64 but not of 128 "
                              "(`numImages % 128 == 0 ? 4 : numImages % 64 == 0 ? 2 : 1`).")
    return Verdict(False, f"{batches} is not it: run `conv.cuda_convnet_fit(layer, batch)` for each batch and read "
                          "images_per_thread.")


GTX580_BYTES = ALEXNET_GTX580_BYTES  # the card's 3 GB (3072 MiB)


def _check_over_3gb(answer: Any) -> Verdict:
    from d2lmp import conv

    try:
        kernel, stride, channels, size = (int(v) for v in answer)
    except (TypeError, ValueError):
        return Verdict(False, f"answer with (kernel, stride, channels, input size); got {answer!r}.")
    try:
        m = conv.im2col_size((128, channels, size, size), kernel, stride, kernel // 2)
    except ValueError as exc:
        return Verdict(False, str(exc))
    gib = m.bytes / 2**30
    if m.bytes > GTX580_BYTES:
        return Verdict(True, f"{m.rows:,} × {m.cols:,} FP32 values = {gib:.2f} GiB at batch 128, more than a "
                             "GTX 580's 3 GB before a single weight or activation is stored.")
    return Verdict(False, f"kernel {kernel}, stride {stride}, {channels} channels of {size}×{size} at batch 128 give "
                          f"a {m.rows:,} × {m.cols:,} matrix, {m.bytes / 2**20:,.0f} MiB: under the 3 GB "
                          "(3072 MiB). Larger kernels, larger maps and stride 1 grow it.")


EXERCISES = [
    Exercise(
        key="im2col_blowup", number=1, title="im2col's blow-up",
        question="Derive the im2col blow-up $\\approx k^2/s^2$ from the output size formula, and check it against the "
                 "table for conv1 (11×11, stride 4, padding 2, 224×224 input): what is conv1's exact blow-up (im2col "
                 "values over input values)? Why is it not exactly $121/16$?",
        hint_text="The matrix has C·k·k rows and Ho·Wo columns per image; the input has C·H·W values. With "
                  "Ho ≈ H/s the ratio is k²/s²; now use conv1's real Ho = Wo = 55.",
        solution_text="Rows C·k², columns Ho·Wo per image with Ho = ⌊(H + 2p − k)/s⌋ + 1 ≈ H/s, so the ratio "
                      "C·k²·Ho·Wo / (C·H·W) ≈ k²/s². For conv1: 121 · 55² / 224² = 7.29 (the table's 7.3×), not "
                      "121/16 = 7.56, because the kernel does not fit at the last positions: 55 outputs per axis, not "
                      "224/4 = 56 (the floor and the k − 2p pixels the formula subtracts).",
        checker=number_checker(CONV1_BLOWUP, "×", rel_tol=0.01, why="121 · 55² / 224²: 55 output positions per axis, "
                               "not 224/4 = 56.", near_misses=[
                                   (121 / 16, "that is k²/s², the approximation: use conv1's real 55×55 output, not "
                                              "224/4 = 56")]),
        reference=CONV1_BLOWUP, wrong=[(121 / 16, "the approximation")],
        how_to_answer="Pass conv1's exact blow-up (a number such as 7.1)."),
    Exercise(
        function="my_im2col(x, kernel_size, stride=1, padding=0)",
        key="im2col_code", number=2, title="im2col by hand",
        question="Write `my_im2col(x, kernel_size, stride, padding)` for a square kernel: from an NCHW input return "
                 "the matrix of receptive fields of shape (N, C·k·k, Ho·Wo), rows ordered like `F.unfold`'s (channel, "
                 "then kernel row, then kernel column) and columns output position by output position, row by row. "
                 "Use slicing and loops over the kernel only, not `F.unfold` or `Tensor.unfold`. It is checked "
                 "against `d2lmp.conv` on odd shapes with strides and paddings.",
        hint_text="Pad once with `F.pad(x, (p, p, p, p))`. For each kernel offset (u, v), the values that weight "
                  "meets at every output position are the strided slice `xp[:, :, u:u + s·(Ho−1) + 1:s, v:v + "
                  "s·(Wo−1) + 1:s]`; store it in a (N, C, k, k, Ho, Wo) tensor, then reshape.",
        solution_text="Pad, then for every kernel offset (u, v) copy the strided slice of the padded input that this "
                      "weight multiplies at all output positions into cols[:, :, u, v]; reshaping (N, C, k, k, Ho, Wo) "
                      "to (N, C·k·k, Ho·Wo) gives exactly F.unfold's channel-major row order. k² slice copies replace "
                      "N·Ho·Wo Python-level loops.",
        checker=code_checker(_im2col_run, _im2col_judge, "your im2col equals d2lmp.conv's on every shape, stride "
                                                         "and padding tried."),
        reference=my_im2col,
        wrong=[(_im2col_no_padding, "you left out the padding"), (_im2col_kernel_major, "rows in the wrong order")]),
    Exercise(
        key="batch_scaling", number=3, title="Batch size and speed",
        question="Measure: time `conv.conv2d_im2col` on conv3 at batches 1, 4, 16 and 64 "
                 "(`conv.benchmark_conv([...], batch=...)`). How do GFLOP/s and the ratio to `F.conv2d` change with "
                 "the batch? Relate your answer to the GEMM's shape.",
        hint_text="conv3's GEMM multiplies a 384 × 2304 filter matrix by a 2304 × (N·169) column matrix: the batch "
                  "only widens the second matrix. How efficient is a matrix product with 169 columns?",
        solution_text="GFLOP/s rise with the batch and then level off: at batch 1 the GEMM is 384 × 2304 × 169, too "
                      "narrow to keep every core's vector units busy, and fixed costs per call weigh more; at 16-64 "
                      "the product is wide (thousands of columns) and runs near the BLAS's speed. The ratio to "
                      "F.conv2d improves with the batch for the same reason, but stays above 1 on most CPUs because "
                      "the copy grows with the batch too (9× conv3's input)."),
    Exercise(
        key="copy_vs_gemm", number=4, title="Copy or product",
        question="Measure: split `conv.conv2d_im2col` into its copy and its matrix product (time `F.unfold` alone on "
                 "the same input). Which part dominates on your machine, and for which layers?",
        hint_text="Time `F.unfold(x, k, padding=p, stride=s)` and, separately, the `torch.matmul` of the reshaped "
                  "filters with precomputed columns (the benchmark's 'copy only' and 'GEMM only' rows do this).",
        solution_text="On most CPUs the matrix product dominates for conv2-conv5 (hundreds of GFLOP per batch), and "
                      "the copy is a large share for conv1 (stride 4, 3 channels: little arithmetic per copied "
                      "value) and for conv2 (25× blow-up). Where main-memory bandwidth per core is low, the copy can "
                      "take as long as the product. The notebook's 'copy only' and 'GEMM only' rows show this "
                      "machine's split."),
    Exercise(
        key="four_images_per_thread", number=5, title="Batches cuda-convnet accepts",
        question="cuda-convnet asks for a batch that is a multiple of 128. Using `conv.cuda_convnet_fit`, which batch "
                 "sizes between 64 and 256 (inclusive) get 4 images per thread? What would a batch of 100 cost, in "
                 "idle threads, compared with 128?",
        hint_text="Read `images_per_thread` from `conv.cuda_convnet_fit(conv.ALEXNET_2012_CONV[0], batch)` for every "
                  "batch from 64 to 256, or read the rule in the notebook's text.",
        solution_text="128 and 256 (`numImages % 128 == 0 ? 4 : numImages % 64 == 0 ? 2 : 1`; 64 and 192 get 2). A "
                      "batch of 100 runs with 1 image per thread: 100 threads' worth of images where 128 would keep "
                      "32 threads busy with 4 each, so for the same images the kernel launches 4× the threads, each "
                      "reusing its loaded filter values for one image instead of four, and the last warp of a block "
                      "is partly idle (100 is not a multiple of 32: 28 of 128 thread slots in 4 warps do nothing).",
        checker=_check_four_per_thread, reference=[128, 256],
        wrong=[([128], "256"), ([64, 128, 192, 256], "get 2 images per thread")],
        how_to_answer="Pass a list of batch sizes."),
    Exercise(
        key="im2col_over_3gb", number=6, title="An im2col matrix over 3 GB",
        question="With the im2col widget, find a layer whose im2col matrix exceeds 3 GB (a 3 GB GTX 580, the boards "
                 "AlexNet used) at batch "
                 "128; answer with its (kernel, stride, channels, input size), padding k // 2 as in the widget. How "
                 "did cuda-convnet avoid building such matrices?",
        hint_text="Set the batch to 128 and grow the kernel and the input size with stride 1; for instance, what "
                  "would conv2 (5×5, 96 channels) have cost on conv1's 55×55 maps before pooling?",
        solution_text="For example (5, 1, 96, 55): conv2's kernels on conv1's unpooled 55×55 maps give a 2,400 × "
                      "387,200 matrix, 3.46 GiB. cuda-convnet never builds the matrix: each thread block loads a tile "
                      "of images and filters into shared memory and computes the sums directly from the input "
                      "(implicit GEMM), so the receptive fields are read from the c01b input as needed and never "
                      "copied to main memory.",
        checker=_check_over_3gb, reference=(5, 1, 96, 55), wrong=[((5, 1, 96, 27), "under the 3 GB")],
        how_to_answer="Pass (kernel, stride, channels, input size)."),
    Exercise(
        key="gpu_bench", number=7, title="The benchmark on a GPU",
        question="If you have a GPU: run `d2lmp bench conv` and compare the ratios of im2col and c01b to cuDNN with "
                 "the CPU ratios.",
        hint_text="On the GPU the ratio compares our copy + cuBLAS GEMM with cuDNN's kernels; on the CPU with "
                  "oneDNN's. Look separately at the grouped layers (conv2, conv4, conv5) and at conv3.",
        solution_text="On a GPU im2col and c01b are typically within a small factor of cuDNN and can beat it. In the "
                      "recorded H200 run, at batch 128 (the bars in the notebook) our code beats cuDNN on the grouped "
                      "layers (conv2, conv4, conv5) and loses on conv3; at `bench conv`'s default batch of 16 it "
                      "beats cuDNN on every layer. Why is not tested here (cuDNN may pick other algorithms, such as "
                      "Winograd or FFT, at other batches). On the CPU both are slower than oneDNN (the notebook's "
                      "ratios). The "
                      "GPU's huge memory bandwidth makes the copy cheap relative to the GEMM, so the im2col penalty "
                      "shrinks."),
]

(im2col_blowup, im2col_code, batch_scaling, copy_vs_gemm, four_images_per_thread, im2col_over_3gb,
 gpu_bench) = EXERCISES
