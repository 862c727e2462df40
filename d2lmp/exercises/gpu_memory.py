"""Exercises of notebook 04 (high-bandwidth GPU memory): a GDDR6 bus as wide as HBM, where a copy sweep
drops, the bandwidth of x + y (a formula, then measured here), H200 against H100, and pinned copies.
"""

from __future__ import annotations

from typing import Any

from d2lmp.exercises._answers import formula_checker, gpu
from d2lmp.exercises.core import Exercise, Verdict, number_checker

__all__ = ["EXERCISES", "gddr6_pins", "cache_drop", "add_bandwidth", "h200_vs_h100", "pinned_copies",
           "add_gbs"]

_H200, _H100 = gpu("H200"), gpu("H100")
_H200_GBS, _H100_GBS = _H200.bandwidth_gbs, _H100.bandwidth_gbs
_PINS = _H200_GBS * 8 / 14

gddr6_pins = Exercise(
    key="gddr6_pins", number=1,
    title=f"A GDDR6 bus for {_H200_GBS / 1000:g} TB/s",
    question="Using the table, how many 14 Gb/s GDDR6 pins (data wires) would a GPU "
             f"need to match the H200's {_H200_GBS:,.0f} GB/s ([NVIDIA, n.d.-d](#ref-nvidia_h200_page))? Why is such "
             "a bus impractical on a circuit board?",
    hint_text="Bandwidth = pins × Gb/s per pin / 8 bits per byte; solve for the pins.",
    solution_text="4,800 GB/s × 8 bits/byte / 14 Gb/s per pin ≈ 2,743 pins, in practice 86 GDDR6 chips of 32 bits "
                  "(2,752). That is more than 7 times the widest GDDR bus in the table (384 bits). Each GDDR chip "
                  "sits on the board with its own group of fast wires that must cross centimetres of circuit board "
                  "at matched lengths; there is no room around a GPU for 86 chips and thousands of such traces, and "
                  "driving them would cost a lot of power. HBM reaches the same width with 6 stacks of 1,024 short "
                  "wires each through a silicon interposer on the package.",
    checker=number_checker(_PINS, "pins", rel_tol=0.01, near_misses=[
        (_H200_GBS / 14, "you divided GB/s by Gb/s: one byte is 8 bits, so multiply by 8."),
        (_H200_GBS * 8 * 14, "solve B = pins × rate / 8 for the pins: divide by the rate, do not multiply."),
        (6144, "that is the H200's HBM bus at 6.25 Gb/s per pin; at 14 Gb/s fewer pins suffice."),
    ], why="about 7× the widest GDDR bus in the table."),
    reference=_PINS,
    wrong=[(_H200_GBS / 14, "multiply by 8"), (6144, "HBM bus")],
    how_to_answer="Answer with a number of pins, e.g. ex.gddr6_pins.check(1000).",
)

cache_drop = Exercise(
    key="cache_drop", number=2,
    title="Where the curve drops",
    question="Run the bandwidth sweep with buffers from a quarter of this CPU's last-level cache to eight "
             "times it (use finer steps). Where exactly does the curve drop, and does it drop at the cache size or "
             "earlier? Why might it drop earlier?",
    hint_text="The sweep names the size of one buffer, but a copy touches two. What else competes for the cache?",
    solution_text="The drop comes around a buffer of half the last-level cache, since the source and the destination "
                  "must fit together, and often somewhat earlier: the cache also holds page tables, code and other "
                  "programs' data, it is not fully associative, its replacement policy is not perfect LRU, and on "
                  "chips whose L3 is split between groups of cores one thread may see only part of it. Between "
                  "fitting and not fitting there is a gradual slope, not a cliff, as a growing share of the lines "
                  "comes from main memory.",
)

# ---------------------------------------------------------------------------------------------------
# 3. The bandwidth of x + y


def add_gbs(n: int, seconds: float, itemsize: int = 4) -> float:
    """GB/s of z = x + y on vectors of n numbers taking ``seconds``: reads x and y, writes z."""
    return 3 * n * itemsize / seconds / 1e9


def _reads_only(n: int, seconds: float, itemsize: int = 4) -> float:
    return 2 * n * itemsize / seconds / 1e9


def _gib(n: int, seconds: float, itemsize: int = 4) -> float:
    return 3 * n * itemsize / seconds / 2**30


def _numbers_not_bytes(n: int, seconds: float, itemsize: int = 4) -> float:
    return 3 * n / seconds / 1e9


def _always_fp32(n: int, seconds: float, itemsize: int = 4) -> float:
    return 3 * n * 4 / seconds / 1e9


_add_formula = formula_checker(add_gbs, [
    ("64 MiB FP32 vectors in 3 ms", (64 * 2**20 // 4, 3e-3)),
    ("one number in a microsecond", (1, 1e-6)),
    ("float64 vectors of 1,000,001 numbers (itemsize = 8) in 0.5 ms", (1_000_001, 5e-4, 8)),
], slips=[
    (_reads_only, "you counted only the two reads; x + y also writes z: 3 vectors move."),
    (_gib, "that is GiB/s (2^30 bytes); GB/s uses 10^9 bytes, like the specifications it is compared with."),
    (_numbers_not_bytes, "you counted numbers, not bytes: multiply by itemsize."),
    (_always_fp32, "your function ignores itemsize: a float64 number is 8 bytes."),
])


def _measure_add(n: int = 64 * 2**20 // 4) -> tuple[float, float]:
    """(seconds of x + y, copy GB/s) on this CPU for vectors of 64 MiB."""
    import torch

    from d2lmp.bandwidth import measure_bandwidth
    from d2lmp.timing import benchmark

    x, y = torch.rand(n), torch.rand(n)
    out = torch.empty_like(x)
    seconds = benchmark(lambda: torch.add(x, y, out=out), "cpu", min_time=0.1).median
    return seconds, measure_bandwidth("cpu", megabytes=64, min_time=0.1)


def _check_add(fn: Any) -> Verdict:
    verdict = _add_formula(fn)
    if not verdict.correct:
        return verdict
    n = 64 * 2**20 // 4
    seconds, copy = _measure_add(n)
    return Verdict(True, f"{verdict.message} Measured here just now: x + y on 64 MiB vectors took "
                         f"{seconds * 1e3:.2f} ms, which your function turns into {fn(n, seconds):.1f} GB/s; a copy "
                         f"of 64 MiB moved {copy:.1f} GB/s. (One timing on a shared machine; run it again to see "
                         "the spread.)")


add_bandwidth = Exercise(
    function="my_add_gbs(n, seconds, itemsize=4)",
    key="add_bandwidth", number=3,
    title="The bandwidth of x + y",
    question="Time `x + y` for two vectors of 64 MiB on this machine with `d2lmp.timing.benchmark`, and compute "
             "the GB/s it achieves (it reads two vectors and writes one). Write `my_add_gbs(n, seconds, itemsize=4)` "
             "for vectors of n numbers of itemsize bytes; the check tests it and then uses it on a timing it takes "
             "here. How does it compare with the copy bandwidth measured "
             "above?",
    hint_text="Bytes moved = 3 vectors × n numbers × itemsize bytes; GB/s divides by the seconds and by 10^9.",
    solution_text="add_gbs = 3 · n · itemsize / seconds / 1e9. With vectors far beyond the cache, x + y moves about "
                  "as many bytes per second as the copy: both stream from main memory and both write (with a "
                  "write-allocate cache each write also reads its line, which neither figure counts). With 64 MiB "
                  "vectors (192 MiB touched) on a last-level cache much smaller than that, it lands near the copy "
                  "bandwidth of large buffers, as add did beside the copy in notebook 03's roofline table; the check "
                  "prints both rates measured here. Where the vectors fit in the cache, as on a CPU with a very "
                  "large shared L3, it can be much faster.",
    checker=_check_add, reference=add_gbs,
    wrong=[(_reads_only, "only the two reads"), (_gib, "GiB/s"), (_always_fp32, "ignores itemsize")],
)

h200_vs_h100 = Exercise(
    key="h200_vs_h100", number=4,
    title="H200 against H100",
    question=f"The H200 has the same compute as the H100 but {_H200_GBS / 1000:g} instead of "
             f"{_H100_GBS / 1000:g} TB/s "
             "([NVIDIA, n.d.-d](#ref-nvidia_h200_page), "
             "[NVIDIA, 2022a](#ref-nvidia_h100_datasheet)). For which operations of notebook 03 would you expect it "
             "to be faster, and by how much at most? "
             "Give the largest speed-up, H100 time ÷ H200 time.",
    hint_text="A memory-bound operation runs at intensity × bandwidth; a compute-bound one at the peak FLOP/s.",
    solution_text="Memory-bound operations (add, axpy, sum, dot, small matrix products, every elementwise layer and "
                  "the optimizer's update) at most 4.8 / 3.35 = 1.43× faster; compute-bound ones (large matmuls) not "
                  "at all, as the peak FLOP/s is the same. The H200's ridge point falls from 67 / 3.35 = 20 to 14 "
                  "FLOP/byte, so operations between 14 and 20 FLOP/byte gain part of the 1.43×. Its other advantage "
                  "is capacity: 141 GB instead of 80 GB.",
    checker=number_checker(_H200_GBS / _H100_GBS, "×", rel_tol=0.01, near_misses=[
        (1.0, "1× holds for compute-bound operations; memory-bound ones gain the bandwidth ratio."),
        (_H100_GBS / _H200_GBS, "that is H200 time ÷ H100 time; the speed-up is the H100's time over the H200's."),
        ((_H200_GBS / _H100_GBS) ** 2, "the speed-up of a memory-bound operation is the bandwidth ratio itself, not "
                                       "its square."),
    ], why="the bandwidth ratio, for operations that are memory-bound on both."),
    reference=_H200_GBS / _H100_GBS,
    wrong=[(1.0, "compute-bound"), (_H100_GBS / _H200_GBS, "H100's time over the H200's")],
    how_to_answer="Answer with the largest speed-up, e.g. ex.h200_vs_h100.check(1.2).",
)

pinned_copies = Exercise(
    key="pinned_copies", number=5,
    title="Pinned copies",
    question="On a machine with a GPU, measure pageable and pinned host→device copies for 1, 16 "
             "and 256 MiB. At which size does pinned memory help most, and how close does it come to the PCIe figure "
             "`d2lmp.topology.pcie_bandwidth_gbs` gives for the generation and width that `d2lmp info` reports?",
    hint_text="Pageable copies go through a staging buffer: an extra host copy that costs more, the more data there "
              "is. Compare each measurement with the one-direction PCIe figure, not the both-directions one.",
    solution_text="Pinned memory helps most for large copies: a pageable copy of many megabytes pays an extra "
                  "host-memory copy into the staging buffer for every byte, while for 1 MiB the fixed cost of "
                  "starting the transfer weighs as much as the bytes. Divide each rate by the link's "
                  "one-direction figure: the recorded H200 line of section 5 gives both for PCIe 5.0 ×16, where "
                  "pinned copies reached most of the link and pageable ones a small fraction of it. On PCIe 3.0 ×16 "
                  "(15.75 GB/s) D2L's latency table gives about 12 GB/s for moving 1 MB to or from a GPU (notebook "
                  "05), 76 % of the link: at that size the fixed cost of starting the transfer is part of the gap, "
                  "and packet headers and flow control take a share of every transfer.",
)

EXERCISES = [gddr6_pins, cache_drop, add_bandwidth, h200_vs_h100, pinned_copies]
