"""Exercises of notebook 03 (general-purpose GPUs): fusing ReLU into axpy, the caches in a bandwidth sweep,
the intensity of batched matrix-vector products, double precision, read-only bandwidth, and a GPU's ridge.
"""

from __future__ import annotations

from d2lmp.exercises._answers import formula_checker
from d2lmp.exercises.core import Exercise, choice_checker, number_checker

__all__ = ["EXERCISES", "fused_relu_axpy", "find_the_caches", "matvec_intensity", "double_precision",
           "read_bandwidth", "your_gpu", "batched_matvec_intensity"]

fused_relu_axpy = Exercise(
    key="fused_relu_axpy", number=1,
    title="ReLU after axpy",
    question="Count FLOPs and minimum bytes for `z = relu(a*x + y)` in FP32 written as three "
             "kernels (multiply, add, ReLU, each reading from and writing to memory) and as one fused kernel (count "
             "the ReLU as one FLOP per element). Check your predicted speed-up from fusion (unfused time ÷ fused "
             "time), then measure both versions with `timing.benchmark` as in section 5.",
    hint_text="Both versions do 3 FLOPs per element and both are memory-bound, so the speed-up is the ratio of bytes "
              "moved. Count, per element, the numbers each kernel reads and writes: t = a·x, u = t + y, z = relu(u).",
    solution_text="FLOPs: 3n either way (multiply, add, max). Unfused: the multiply reads x and writes t (8n bytes), "
                  "the add reads t and y and writes u (12n), the ReLU reads u and writes z (8n): 28n bytes, intensity "
                  "3/28 ≈ 0.11 FLOP/byte. Fused: read x and y, write z: 12n bytes, 3/12 = 0.25 FLOP/byte. Both far "
                  "below the ridge point, so the predicted speed-up is 28/12 ≈ 2.33×. Measured on a CPU with vectors "
                  "well beyond the last-level cache it lands near it, often somewhat above, as the "
                  "axpy of section 5 did against its predicted 1.67× (the cell prints both); with a write-allocate "
                  "cache each write costs a little more than counted, which moves the measured ratio slightly.",
    checker=number_checker(28 / 12, "×", rel_tol=0.02, why="28n bytes unfused against 12n fused, same 3n FLOPs.",
                           near_misses=[
        (20 / 12, "that is plain axpy (section 5); the ReLU adds a third kernel that reads u and writes z: 8n bytes "
                  "more."),
        (3.0, "the speed-up follows the bytes moved, not the number of kernels: 28n against 12n."),
        (24 / 12, "the add reads two vectors (t and y) and writes one: 12n bytes, not 8n."),
        (12 / 28, "that is fused ÷ unfused; the speed-up is the unfused time over the fused time.")]),
    reference=28 / 12,
    wrong=[(20 / 12, "plain axpy"), (3.0, "not the number of kernels")],
    how_to_answer="Answer with the predicted speed-up, e.g. ex.fused_relu_axpy.check(1.5).",
)

find_the_caches = Exercise(
    key="find_the_caches", number=2,
    title="Find the caches",
    question="Run `bandwidth.device_copy_sweep` with buffers from 0.25 MiB to 256 MiB "
             "(doubling each time) and plot it with `bandwidth_views.plot_bandwidth_sweep`. Where does the bandwidth "
             "drop, and how do those sizes compare with the cache sizes in "
             "`/sys/devices/system/cpu/cpu0/cache/index*/size` (or `lscpu`)?",
    hint_text="A copy touches two buffers, so compare 2 × the buffer size (bytes_touched) with each cache size, and "
              "remember that L1 and L2 are per core while L3 is shared.",
    solution_text="The rate steps down where the data touched (two buffers) outgrows a cache level: first past the "
                  "per-core L2 (0.5-2 MiB on recent x86 cores), then past the last-level cache (the size section 3 "
                  "prints for this CPU), and it settles at main memory's rate once both buffers are several times "
                  "the last-level cache. The L1 step is hard to "
                  "see: a 0.25 MiB buffer already exceeds a 32-48 KiB L1. Drops often come a little before "
                  "2 × buffer = cache size, because the cache also holds other data and code and is not perfectly "
                  "associative, and where the L3 is split between groups of cores (as on AMD's CCXs) one core sees "
                  "only its group's share; on a large shared cache that other programs use too, the drop can come "
                  "much earlier.",
)

# ---------------------------------------------------------------------------------------------------
# 3. Batched matrix-vector products


def batched_matvec_intensity(n: int, b: int, itemsize: int = 4) -> float:
    """FLOP/byte of Y = A X with A n×n and X n×b: 2n²b FLOPs over reading A and X and writing Y once."""
    return 2 * n * n * b / (itemsize * (n * n + 2 * n * b))


def _no_output(n: int, b: int, itemsize: int = 4) -> float:
    return 2 * n * n * b / (itemsize * (n * n + n * b))


def _one_flop_per_multiply_add(n: int, b: int, itemsize: int = 4) -> float:
    return n * n * b / (itemsize * (n * n + 2 * n * b))


def _fp32_always(n: int, b: int, itemsize: int = 4) -> float:
    return 2 * n * n * b / (4 * (n * n + 2 * n * b))


def _matrix_only(n: int, b: int, itemsize: int = 4) -> float:
    return 2 * n * n * b / (itemsize * n * n)


matvec_intensity = Exercise(
    function="my_batched_matvec_intensity(n, b, itemsize=4)",
    key="matvec_intensity", number=3,
    title="Matrix-vector products",
    question="Count the FLOPs and minimum bytes of y = Ax with A of n×n, and of Y = AX "
             "with X of n×b (b vectors at once). Write `my_batched_matvec_intensity(n, b, itemsize=4)` returning the "
             "FLOP/byte of Y = AX (b = 1 is y = Ax), show that for b = 1 it is about 1/2 whatever n is, and find the "
             "b at which it crosses the ridge point of this CPU and of the recorded H200. What does this say about "
             "batch sizes in training?",
    hint_text="Y has n·b outputs, each a dot product of length n. Minimum traffic: read A (n² numbers) and X (n·b), "
              "write Y (n·b), each itemsize bytes. Check your formula at b = n: it must give the matmul's n/6.",
    solution_text="FLOPs 2n²b; bytes itemsize · (n² + 2nb); intensity 2n²b / (4(n² + 2nb)) in FP32. For b = 1 that is "
                  "2n² / (4n² + 8n) ≈ 1/2: every number of A is used once. For b ≪ n it is about b/2, so Y = AX "
                  "crosses a ridge point I* at b ≈ 2I*: read I* for this CPU and for the recorded H200 from the "
                  "ridge points section 3 and section 4 print, and double them (the H200's vendor figures, "
                  "67 TFLOP/s over 4.8 TB/s, give I* ≈ 14 and b ≈ 28); exactly, b = 2I*n / (n − 4I*). In training a "
                  "fully connected layer's weights are A and the batch "
                  "is X: below a batch of a few dozen a GPU streams weights from memory and leaves its arithmetic "
                  "idle, one reason training uses large batches (and why small-batch inference is memory-bound, "
                  "notebook 06).",
    checker=formula_checker(batched_matvec_intensity, [
        ("n = 1024, b = 1 (a matrix-vector product)", (1024, 1)),
        ("n = 8192, b = 24", (8192, 24)),
        ("n = 4096, b = 4096 (a square matrix product: n/6)", (4096, 4096)),
        ("n = 1, b = 1", (1, 1)),
        ("n = 1000, b = 7 in float64 (itemsize = 8)", (1000, 7, 8)),
    ], slips=[
        (_no_output, "you left out writing Y (n·b numbers): at b = n the intensity must be the matmul's n/6."),
        (_one_flop_per_multiply_add, "half the FLOPs: each multiply-add is 2 FLOPs, 2n²b in all."),
        (_fp32_always, "your function ignores itemsize: in float64 every number is 8 bytes."),
        (_matrix_only, "you counted only the bytes of A; X and Y are read and written too."),
    ], success="your formula agrees at b = 1, at b = n (the matmul's n/6), for one element and in float64."),
    reference=batched_matvec_intensity,
    wrong=[(_no_output, "left out writing Y"), (_one_flop_per_multiply_add, "2 FLOPs"),
           (_fp32_always, "ignores itemsize")],
)

double_precision = Exercise(
    key="double_precision", number=4,
    title="Double precision",
    question="Repeat `roofline.measure_operations` with `dtype=\"float64\"`. Predict before you run: what "
             "happens to the intensity of every operation, to the GB/s of the vector operations, and to the best "
             "matmul's GFLOP/s (notebook 02)? Choose one: 'a' intensity halves, vector GB/s stay, matmul GFLOP/s "
             "halves; 'b' intensity halves, vector GB/s halve, matmul GFLOP/s halves; 'c' intensity stays, vector "
             "GB/s stay, matmul GFLOP/s halves; 'd' intensity halves, vector GB/s stay, matmul GFLOP/s stays.",
    hint_text="Same FLOPs, twice the bytes per number. Memory moves bytes at the same rate whatever they hold, and a "
              "vector register holds half as many float64 numbers.",
    solution_text="'a'. Every operation does the same FLOPs on twice the bytes, so every intensity halves (add 1/24, "
                  "matmul n/12). The vector operations stay memory-bound and move bytes at about the same GB/s, so "
                  "their GFLOP/s halve. The best matmul stays compute-bound on half as many lanes per register and "
                  "reaches about half the GFLOP/s (notebook 02's exercise 2). The ridge point, peak / bandwidth, "
                  "halves too, so the matmul remains far to its right.",
    checker=choice_checker("a", {
        "a": "same FLOPs on twice the bytes halve every intensity; memory still moves the same GB/s, so the vector "
             "operations' GFLOP/s halve; the matmul runs on half the lanes per register at about half the GFLOP/s.",
        "b": "memory delivers bytes at the same rate whatever they hold: the GB/s of a memory-bound operation stay; "
             "its GFLOP/s halve, because each byte now carries half as many numbers.",
        "c": "the intensity counts bytes, and each float64 number is 8 bytes instead of 4: every intensity halves.",
        "d": "a vector register holds 8 float64 numbers instead of 16 float32, so a compute-bound matmul gets about "
             "half the GFLOP/s.",
    }),
    reference="a",
    wrong=[("b", "whatever they hold"), ("d", "half the GFLOP/s")],
    how_to_answer="Answer with one letter, e.g. ex.double_precision.check('a').",
)

read_bandwidth = Exercise(
    key="read_bandwidth", number=5,
    title="Reads versus copies",
    question="`sum` and `dot` can sit above the sloped roof. Measure a read-only bandwidth, "
             "bytes of `x` divided by the time of `x.sum()`, for vectors of 16 MiB to 256 MiB, and compare it with the "
             "copy bandwidth. Which would you use for the roof of an operation that only reads: 'copy' (the copy "
             "bandwidth), 'read' (the read-only bandwidth) or 'vendor' (the memory's specified bandwidth), and why?",
    hint_text="The copy is credited with one read and one write per number, but a write-allocate cache first reads "
              "the line it writes into. Which measured rate counts the traffic an operation that only reads causes?",
    solution_text="'read'. On CPUs with write-allocate caches the copy moves three bytes for every two it is "
                  "credited with, so the copy bandwidth understates what memory delivers to reads, and read-only "
                  "operations can beat it (compare the share of its roof that sum and dot reach in section 3). For an "
                  "operation that only reads, the read-only bandwidth is the roof it can actually reach; for "
                  "operations that read and write, the copy rate is the better model. A vendor figure is an upper "
                  "bound no kernel reaches.",
    checker=choice_checker("read", {
        "read": "an operation that only reads causes read traffic only, and the read-only rate measures exactly that; "
                "the copy's rate is lowered by writes (and by write-allocate reads that it is not credited with).",
        "copy": "the copy's rate includes writes, which cost more than counted on a write-allocate cache, so it "
                "understates the roof of a read-only operation; that is why sum and dot sit above it.",
        "vendor": "a specified bandwidth is an upper bound that no kernel reaches; the roofline needs a measured rate.",
    }),
    reference="read",
    wrong=[("copy", "understates the roof"), ("vendor", "upper bound")],
    how_to_answer="Answer with 'copy', 'read' or 'vendor', e.g. ex.read_bandwidth.check('copy').",
)

your_gpu = Exercise(
    key="your_gpu", number=6,
    title="Your GPU",
    question="On a machine with a GPU (a Colab GPU runtime will do), run this notebook and compare your "
             "GPU's ridge point with the H200's and with the CPU's. Which operations change class, and which speed-up "
             "ratios change most?",
    hint_text="The ridge point is measured peak ÷ copy bandwidth. An operation changes class only if its intensity "
              "lies between the two ridge points; compare both ratios, bandwidth and FLOP/s, with the H200's.",
    solution_text="Take a T4 as the example: its vendor figures, 8.1 TFLOP/s FP32 over 320 GB/s, put the ridge at "
                  "about 25 FLOP/byte, above the H200's 14 from its vendor figures (section 4 prints the measured "
                  "one as well) and above the ridge of most CPUs; measured figures are lower on both sides. The "
                  "vector operations (0.08-0.25 FLOP/byte) "
                  "stay memory-bound and large matmuls (n/6 in the hundreds) compute-bound everywhere. Only an "
                  "operation whose intensity lies between two ridge points changes class, such as a matmul of n = 96 "
                  "or 128 (16 to 21 FLOP/byte): compute-bound by intensity where the ridge lies below it, "
                  "memory-bound "
                  "on the T4. The speed-up ratios change most: by vendor figures a T4 has 320 / 4,800, a fifteenth, "
                  "of the H200's bandwidth and 8.1 / 67, an eighth, of its FP32 peak, so against the same CPU both "
                  "of the ratios section 5 prints shrink by those factors, and the T4 gains far less on memory-bound "
                  "work.",
)

EXERCISES = [fused_relu_axpy, find_the_caches, matvec_intensity, double_precision, read_bandwidth, your_gpu]
