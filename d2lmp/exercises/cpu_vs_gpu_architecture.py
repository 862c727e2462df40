"""Exercises of notebook 02 (CPU vs GPU architecture): scaling over cores, float64 against float32
(measured here), how many outputs fill a GPU, the power laws of many slow cores, and lanes not cores.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from typing import Any

from d2lmp.exercises._answers import MeasuredHere, measured_checker, parts_checker
from d2lmp.exercises.core import Exercise, Verdict, number_checker

__all__ = ["EXERCISES", "per_core_peak", "float64_ratio", "lanes_fill", "power_exponent", "fast_plus_slow",
           "lanes_not_cores"]

per_core_peak = Exercise(
    key="per_core_peak", number=1,
    title="Per-core peak",
    question="Run the sweep with one thread (`previous = config.set_threads(1)`, then "
             "`config.set_threads(previous)` to set it back) and compare the GFLOP/s at the largest n with "
             "`cpu.peak_gflops_fp32 / cpu.cores`. Is the gap to peak the same as with all cores? What does the ratio "
             "of the two measurements tell you about how well the matrix product scales over cores?",
    hint_text="Compare shares of peak, not raw rates: one thread against one core's peak, all threads against the "
              "chip's. Then divide the all-thread GFLOP/s by the one-thread GFLOP/s at the same n; perfect scaling "
              "gives the number of cores.",
    solution_text="One thread usually gets as close to one core's peak as all threads get to the chip's, or closer: "
                  "a lone core has the shared last-level cache and the memory bandwidth to itself and may run at a "
                  "higher boost clock than when every core runs vector code. The ratio all threads / one thread at "
                  "the largest n is the parallel speed-up of the product. Near the core count (about 2 on a 2-core "
                  "machine) means the product scales almost perfectly: it is almost all parallel work, the good case "
                  "of Amdahl's law in section 5. Well below it points to something shared: memory bandwidth, the "
                  "cache, a lower all-core clock, or other programs on a shared machine. At small n the ratio is "
                  "lower still, because the fixed cost of each call is serial.",
)

# ---------------------------------------------------------------------------------------------------
# 2. float64 against float32, measured here


@functools.cache
def measured_float64_slowdown(n: int = 1024, rounds: int = 5) -> float:
    """float32 GFLOP/s ÷ float64 GFLOP/s of an n×n matmul on this CPU (= float64 time ÷ float32 time).

    The two products alternate, so that load from other programs hits both alike, and the best of
    ``rounds`` runs of each is kept (the least disturbed one). Measured once per session.
    """
    import torch

    a32, b32 = torch.randn(n, n), torch.randn(n, n)
    pairs = {"float32": (a32, b32), "float64": (a32.double(), b32.double())}
    best = dict.fromkeys(pairs, math.inf)
    for a, b in pairs.values():
        a @ b  # warm-up: the first call picks and loads a kernel
    for _ in range(rounds):
        for name, (a, b) in pairs.items():
            start = time.perf_counter()
            a @ b
            best[name] = min(best[name], time.perf_counter() - start)
    return best["float64"] / best["float32"]


float64_ratio = Exercise(
    key="float64_ratio", number=2,
    title="Half the lanes",
    question="Using the widget, measure n = 1024 in `float32` and `float64` on the CPU. Predict "
             "the ratio float32 GFLOP/s ÷ float64 GFLOP/s from the SIMD width, then check your measured ratio (the "
             "check measures it on this machine as well). If you have a GPU, repeat with `float32` against "
             "`bfloat16` and compare with the recorded H200 figures.",
    hint_text="A 512-bit vector register holds 16 FP32 numbers but only 8 FP64 numbers, and one FMA instruction "
              "takes as long on either. Divide the float32 GFLOP/s by the float64 GFLOP/s.",
    solution_text="Prediction: 2, because each vector FMA handles half as many 64-bit numbers. Measured ratios are "
                  "usually near 2 (about 1.6 to 2.4 on a shared machine): a little less where float32 runs further "
                  "below its peak than float64, a little more where the doubled memory traffic of float64 starts to "
                  "show. On a GPU, bfloat16 runs on the tensor cores: in the recorded H200 sweep that section 3 "
                  "prints, "
                  "bfloat16 ran many times faster than float32, far more than the 2× of the narrower numbers alone, "
                  "because tensor cores are separate and much denser units (the H200's dense BF16 tensor peak is "
                  "about 15 times its FP32 peak).",
    checker=measured_checker(
        measured_float64_slowdown, "×", rel_tol=0.35,
        tolerance_reason="your widget run and this check ran at different moments, and single timings of one "
                         "product on a shared machine vary by 10-30 % (the check keeps the best of 5 alternating "
                         "runs, the widget one median).",
        why="float64 halves the numbers per vector register; the prediction from the SIMD width is 2.",
        near_misses=[
            (lambda m: 1 / m, "that is the inverse: float64 is the slower one, so float32 GFLOP/s ÷ float64 GFLOP/s "
                              "is above 1 (or you divided the times the wrong way round)."),
            (lambda m: 1.0, "the two rates are not equal here: a vector register holds half as many float64 "
                            "numbers."),
        ]),
    reference=MeasuredHere(measured_float64_slowdown, "float32 GFLOP/s ÷ float64 GFLOP/s at n = 1024"),
    # the inverse of what this machine measures (a fixed 0.5 would be no inverse where load moves the ratio)
    wrong=[(MeasuredHere(lambda: 1 / measured_float64_slowdown(), "the inverse ratio"), "that is the inverse")],
    how_to_answer="Answer with your measured ratio, e.g. ex.float64_ratio.check(1.9).",
)

# ---------------------------------------------------------------------------------------------------
# 3. Outputs per lane

_H200_LANES = 16896
_FILL_N = math.ceil(math.sqrt(16 * _H200_LANES))

lanes_fill = Exercise(
    key="lanes_fill", number=3,
    title="Where does the GPU fill up?",
    question="From the outputs-per-lane table, predict the smallest n at which an "
             "n×n product gives a GPU with 16,896 lanes at least 16 outputs per lane. On a GPU (Colab will do), "
             "extend the sweep to `[64, 128, ..., 8192]` and find the n at which it first reaches half of its best "
             "GFLOP/s. Do the same for the CPU.",
    hint_text="An n×n product has n² outputs. Solve n² ≥ 16 × 16,896 for the smallest whole n.",
    solution_text="n² ≥ 16 × 16,896 = 270,336 gives n ≥ 519.9, so n = 520 (1024 in a power-of-two sweep). The "
                  "recorded H200 sweep printed in section 3 is already past half of its best at n = 1024, its "
                  "smallest size, and gains little beyond n = 2048; a T4 (2,560 lanes) gets 16 outputs per lane from "
                  "n = 203. On the CPU, read the n at which your own sweep passes half of its best from the table of "
                  "section 3: a few dozen lanes fill with far fewer outputs, so it comes at a small n, and there the "
                  "per-call overhead is what small products lose to.",
    checker=number_checker(_FILL_N, rel_tol=0, abs_tol=0.5, why="n² = 270,400 outputs, 16.004 per lane.",
                           near_misses=[
        (math.ceil(math.sqrt(_H200_LANES)), "n² ≥ 16,896 gives one output per lane; the question asks for 16."),
        (1024, "n need not be a power of two: n² ≥ 270,336 already holds from n = 520."),
        (16 * _H200_LANES, "that is the number of outputs n²; n is its square root.")]),
    reference=_FILL_N,
    wrong=[(130, "one output per lane"), (1024, "power of two")],
    how_to_answer="Answer with a whole number, e.g. ex.lanes_fill.check(123).",
)

# ---------------------------------------------------------------------------------------------------
# 4. Other power exponents

power_exponent = Exercise(
    key="power_exponent", number=4,
    title="Other exponents",
    question="Show that with P ∝ f^k a fixed budget spent on cores at clock fraction f gives "
             "throughput f^(1−k). What throughput does a ¼-clock design give for k = 2.5? For which k does slowing "
             "down stop paying at all? Answer with a tuple `(throughput, k)`.",
    hint_text="Each slow core draws f^k of the budget, so 1 / f^k of them fit, and each does f of a fast core's "
              "work. For f < 1, when is f^(1−k) still above 1?",
    solution_text="Cores = 1 / f^k, each with throughput f: f · f^(−k) = f^(1−k). For f = ¼ and k = 2.5: "
                  "(¼)^(−1.5) = 4^1.5 = 8, between the quadratic law's 4 and the cubic law's 16. For f < 1, "
                  "f^(1−k) > 1 exactly when k > 1. At k = 1 (fixed voltage, P ∝ f) the throughput is 1 at every "
                  "clock, so slowing down stops paying at k = 1; below it, slow cores lose.",
    checker=parts_checker(
        ("throughput at k = 2.5", number_checker(8.0, "×", rel_tol=0.01, near_misses=[
            (4.0, "that is the quadratic law (k = 2): (¼)^(−1) = 4."),
            (16.0, "that is the cubic law (k = 3): (¼)^(−2) = 16."),
            (0.125, "that is f^(k−1), the inverse: slow cores at k > 1 gain, so the throughput is above 1."),
            (0.25 ** -2.5, "that is the number of cores, 1 / f^k; each does only ¼ of the work.")])),
        ("k where slowing down stops paying", number_checker(1.0, rel_tol=0, abs_tol=0.01, near_misses=[
            (2.0, "at k = 2 a ¼-clock design still gives 4×; the gain ends where f^(1−k) = 1 for every f."),
            (0.0, "at k = 0 power does not depend on the clock at all, and slow cores lose outright; the break-even "
                  "is where f^(1−k) = 1."),
            (3.0, "at k = 3 slow cores gain most (16× at ¼ clock); look for the k where the gain is 1.")])),
    ),
    reference=(8.0, 1.0),
    wrong=[((4.0, 1.0), "quadratic law"), ((8.0, 2.0), "still gives 4×")],
    how_to_answer="Answer with a tuple, e.g. ex.power_exponent.check((throughput, k)).",
)

# ---------------------------------------------------------------------------------------------------
# 5. One big core plus many slow ones


def _mixed_speedup(p: float, big_clock: float = 0.5 ** (1 / 3), slow_budget: float = 0.5,
                   big_helps: bool = False) -> float:
    slow_throughput = slow_budget / 0.25**3 * 0.25
    parallel = slow_throughput + (big_clock if big_helps else 0.0)
    return 1 / ((1 - p) / big_clock + p / parallel)


def _all_slow(p: float) -> float:
    return 1 / ((1 - p) / 0.25 + p / 16)


def _speedup_checker(p: float) -> Callable[[Any], Verdict]:
    return number_checker(_mixed_speedup(p), "×", rel_tol=0.01, near_misses=[
        (_mixed_speedup(p, big_clock=1.0), "you ran the big core at full clock; with half the power under the cubic "
                                           "law it runs at 0.5^(1/3) ≈ 0.79."),
        (_mixed_speedup(p, big_helps=True), "you let the big core help with the parallel part; the question keeps it "
                                            "for the serial part only."),
        (_mixed_speedup(p, slow_budget=1.0), "the slow cores get half the budget: 32 of them, not 64."),
        (_all_slow(p), "that is the all-slow design of the table; the mixed design runs the serial part on the big "
                       "core.")])


fast_plus_slow = Exercise(
    key="fast_plus_slow", number=5,
    title="One fast core plus many slow ones",
    question="Under the cubic law, spend half the budget (the power of one "
             "full-speed core) on one big core for the serial part: on half the power it runs at clock "
             "0.5^(1/3) ≈ 0.79. Spend the other half on cores at ¼ clock for the parallel part. Work out the speedup "
             "over one full-speed core for p = 0.9 and p = 0.99 and compare with the all-slow design in the table "
             "above. Which design does a CPU + GPU system resemble? Answer with a tuple "
             "`(speedup at p = 0.9, speedup at p = 0.99)`.",
    hint_text="Time relative to one fast core = (1 − p) / (the big core's clock) + p / (the slow cores' total "
              "throughput). Half the budget buys 0.5 / (¼)³ slow cores, each doing ¼ of a fast core's work.",
    solution_text="Half the budget buys 0.5 / (¼)³ = 32 slow cores, throughput 32 × ¼ = 8; the big core runs at "
                  "0.794. p = 0.9: time 0.1 / 0.794 + 0.9 / 8 = 0.126 + 0.113 = 0.238, speedup 4.19 (all slow: "
                  "2.19). p = 0.99: 0.0126 + 0.1238 = 0.136, speedup 7.33 (all slow: 9.82). The mixed design wins "
                  "clearly when the serial part matters and loses a little on almost purely parallel work, because "
                  "it spends half its power on one core. A CPU with a few fast cores beside a GPU with thousands of "
                  "slow lanes is this mixed design.",
    checker=parts_checker(("p = 0.9", _speedup_checker(0.9)), ("p = 0.99", _speedup_checker(0.99))),
    reference=(_mixed_speedup(0.9), _mixed_speedup(0.99)),
    wrong=[((_mixed_speedup(0.9, big_clock=1.0), _mixed_speedup(0.99, big_clock=1.0)), "full clock"),
           ((_all_slow(0.9), _all_slow(0.99)), "all-slow design")],
    how_to_answer="Answer with a tuple, e.g. ex.fast_plus_slow.check((s_90, s_99)).",
)

# ---------------------------------------------------------------------------------------------------
# 6. Lanes, not cores

lanes_not_cores = Exercise(
    key="lanes_not_cores", number=6,
    title="Lanes, not cores",
    question="An 8-core laptop CPU with one AVX-512 FMA unit per core runs at 3.5 GHz. How many "
             "FP32 FMA lanes does it have, and what is its peak in GFLOP/s? Compare it with the GTX 580 that trained "
             "AlexNet (512 lanes at 1.544 GHz). Answer with a tuple `(lanes, GFLOP/s)`.",
    hint_text="An AVX-512 register holds 16 FP32 numbers. Lanes = cores × FMA units × SIMD width; peak = lanes × 2 "
              "(an FMA is a multiply and an add) × clock.",
    solution_text="8 cores × 1 FMA unit × 16 lanes = 128 FP32 FMA lanes; 128 × 2 × 3.5 GHz = 896 GFLOP/s. The GTX 580: "
                  "512 × 2 × 1.544 = 1,581 GFLOP/s, 1.8× the laptop, with 4× the lanes at less than half the clock. "
                  "A 2010 GPU still out-computes a modern laptop CPU in FP32 peak.",
    checker=parts_checker(
        ("lanes", number_checker(128, "lanes", rel_tol=0, abs_tol=0.01, near_misses=[
            (8, "that is the number of cores; a CUDA core compares with a SIMD lane, and each core has 16."),
            (256, "the question gives one FMA unit per core, not two."),
            (64, "AVX-512 holds 16 FP32 numbers; 8 is AVX2's width."),
            (16, "that is one core's lanes; multiply by the 8 cores.")])),
        ("peak GFLOP/s", number_checker(896, "GFLOP/s", rel_tol=0.01, near_misses=[
            (448, "half the peak: count an FMA as 2 FLOPs (a multiply and an add)."),
            (1792, "one FMA unit per core, not two."),
            (0.896, "that is TFLOP/s; give GFLOP/s.")])),
    ),
    reference=(128, 896),
    wrong=[((256, 1792), "one FMA unit per core"), ((128, 448), "count an FMA as 2 FLOPs")],
    how_to_answer="Answer with a tuple, e.g. ex.lanes_not_cores.check((lanes, gflops)).",
)

EXERCISES = [per_core_peak, float64_ratio, lanes_fill, power_exponent, fast_plus_slow, lanes_not_cores]
