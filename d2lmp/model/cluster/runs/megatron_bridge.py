"""NVIDIA Megatron-Bridge's published pre-training benchmarks (the NeMo Framework's performance summary, 25.09-26.08).

Source: ``docs/performance-summary.md`` (the 26.08 container) and ``docs/performance-summary-archive.md`` (25.09 to
26.06.01) of NVIDIA-NeMo/Megatron-Bridge, commit 067f987 (the same tables as docs.nvidia.com/nemo/megatron-bridge
"Performance"). Each section is a container release; its "Pre-Training Performance" tables give, per model and
system, #-GPUs, precision, GBS, MBS, sequence length, FSDP (in some releases), TP, PP, CP, VP, EP, GA (in some),
tokens/s per GPU and model TFLOP/s per GPU. ``where`` names the file, release, table and line.

Read: the rows of the dense Llama 3 models and of the mixtures of experts whose attention and MLP the record can
describe (DeepSeek-V3, gpt-oss-120b, Qwen3-30B-A3B, Qwen3-235B-A22B), on every system (DGX-H100, DGX-B200, DGX-B300,
DGX-GB200, DGX-GB300); SFT and LoRA rows, NVFP4 rows and the hybrid Mamba and Kimi/DeepSeek-V4 models are left out.
A layout measured unchanged in several releases is kept once, from the newest release (a changed layout is a new
row). Where a cell prints an alternative in parentheses (another quantisation granularity or layout), the value
before the parentheses is read. The metric is tokens/s per GPU; the note keeps the printed model TFLOP/s per GPU.

Assumed or not stated: FSDP > 0 is full sharding (zero 3) over the data-parallel group, as the page's nomenclature
says; FSDP 0 is DDP, but whether the optimizer state is sharded (Megatron's distributed optimizer) is not printed,
nor is FSDP in releases without the column: zero left None. Activation recomputation is not printed (the recipes
change per release): "unknown". VP is the virtual pipeline stages per GPU (``interleave``). DP = GPUs / (TP·PP·CP);
experts are spread over EP ranks of it. The 25.09 tables have no precision column (their footnote speaks of FP8
granularities, but the column is absent): "unknown". FP8-CS, FP8-MX and MXFP8 are FP8 matmuls (current scaling,
MX block scaling). Attention is Transformer Engine's fused kernel: "flash". MoE rows are force-balanced and
token-dropless (the page's footnote) unless the row says "tokendrop". GB200/GB300 are NVL72 racks: 72 GPUs in one
NVLink domain (``gpus_per_node`` 72); B200, B300, GB200 and GB300 have no preset in ``hardware``.

Two 25.11 rows print a GA their layout does not give (Qwen3_235B_a22B on GB300: 32, where GBS/(MBS·DP) is 64;
gpt-oss-120b on H100: 2, where it is 8), and the page does not say which figure is wrong: their configuration is not
known (``RunRecord.contradiction``).
"""

from __future__ import annotations

from d2lmp.model.cluster.run_record import Precision, RunRecord, batch_contradiction
from d2lmp.model.cluster.runs.shapes import SHAPES, caveat

__all__ = ["RECORDS"]

_FILES = {"L": "docs/performance-summary.md", "A": "docs/performance-summary-archive.md"}
_GPUS = {"H100": "H100-SXM", "B200": "B200", "B300": "B300", "GB200": "GB200", "GB300": "GB300"}
_PRECISIONS: dict[str, Precision] = {"BF16": "bf16", "FP8": "fp8", "FP8-CS": "fp8", "FP8-MX": "fp8",
                                     "MXFP8": "fp8", "?": "unknown"}
_SHAPE_OF = (("LLAMA3_8B", "llama3-8b"), ("LLAMA3_70B", "llama3-70b"), ("LLAMA3.1_405B", "llama3-405b"),
             ("DeepSeekV3", "deepseek-v3"), ("GPT OSS 120B", "gpt-oss-120b"), ("Qwen3_30B_a3B", "qwen3-30b-a3b"),
             ("Qwen3_235B_a22B", "qwen3-235b-a22b"))

# (file, release, line, model, system, precision, #-GPUs, GBS, MBS, sequence, FSDP, TP, PP, CP, VP, EP, GA,
#  tokens/s/GPU, model TFLOP/s/GPU) as printed; None where the table has no such column or prints "n/a".
_ROWS: tuple[tuple[str, str, int, str, str, str, int, int, int, int, int | None, int, int, int, int | None,
                   int | None, int | None, float, float], ...] = (
    ("L", "26.08", 45, "DeepSeekV3", "GB300", "MXFP8", 256, 4096, 1, 4096, None, 1, 2, 1, 8, 32, None, 6288, 1635),
    ("L", "26.08", 46, "DeepSeekV3", "GB200", "MXFP8", 256, 4096, 1, 4096, None, 1, 4, 1, 4, 64, None, 4912, 1276),
    ("L", "26.08", 59, "GPT OSS 120B", "GB300", "MXFP8", 64, 1280, 4, 4096, None, 1, 1, 1, None, 16, None, 33024, 1077),
    ("L", "26.08", 60, "GPT OSS 120B", "GB200", "MXFP8", 64, 1280, 4, 4096, None, 1, 1, 1, None, 64, None, 28672, 934),
    ("L", "26.08", 66, "Qwen3_30B_a3B", "GB300", "MXFP8", 8, 512, 8, 4096, None, 1, 1, 1, None, 8, None, 44544, 1029),
    ("L", "26.08", 67, "Qwen3_30B_a3B", "GB200", "MXFP8", 8, 512, 4, 4096, None, 1, 1, 1, None, 8, None, 39936, 923),
    ("L", "26.08", 73, "Qwen3_235B_a22B", "GB300", "MXFP8", 256, 8192, 2, 4096,
     None, 1, 4, 1, 12, 32, None, 8816, 1306),
    ("L", "26.08", 74, "Qwen3_235B_a22B", "GB200", "MXFP8", 256, 8192, 1, 4096, None, 1, 8, 1, 3, 32, None, 7280, 1077),
    ("A", "26.06", 100, "LLAMA3.1_405B", "GB300", "FP8", 256, 1536, 1, 8192, None, 4, 8, 1, 4, None, None, 1048, 2646),
    ("A", "26.06", 101, "LLAMA3.1_405B", "GB300", "MXFP8", 256, 1536, 1, 8192, None, 2, 8, 2, 4, None, None, 952, 2403),
    ("A", "26.06", 103, "LLAMA3.1_405B", "GB200", "FP8", 256, 1536, 1, 8192, None, 4, 16, 1, 4, None, None, 843, 2129),
    ("A", "26.06", 104, "LLAMA3.1_405B", "GB200", "MXFP8", 256, 1536, 1, 8192,
     None, 4, 16, 1, 8, None, None, 783, 1976),
    ("A", "26.06", 106, "LLAMA3.1_405B", "H100", "FP8", 1024, 1536, 1, 8192, None, 8, 8, 2, 8, None, None, 326, 822),
    ("A", "26.06", 113, "DeepSeekV3", "GB300", "MXFP8", 256, 15360, 1, 4096, None, 1, 2, 1, 8, 32, None, 6422, 1670),
    ("A", "26.06", 115, "DeepSeekV3", "B300", "MXFP8", 256, 4096, 2, 4096, None, 1, 8, 1, None, 8, None, 3541, 920),
    ("A", "26.06", 123, "GPT OSS 120B", "B300", "MXFP8", 64, 1280, 4, 4096, None, 1, 1, 1, None, 8, None, 18534, 604),
    ("A", "26.06", 131, "Qwen3_30B_a3B", "B300", "MXFP8", 8, 512, 8, 4096, None, 1, 1, 1, None, 8, None, 40769, 938),
    ("A", "26.06", 132, "Qwen3_30B_a3B", "H100", "FP8", 16, 1024, 1, 4096, None, 1, 1, 1, None, 16, None, 8826, 203),
    ("A", "26.04.01", 201, "LLAMA3_70B", "GB300", "FP8", 64, 256, 2, 8192, 64, 1, 1, 1, None, None, None, 5248, 2348),
    ("A", "26.04.01", 202, "LLAMA3_70B", "GB300", "MXFP8", 64, 256, 1, 8192, 0, 1, 4, 1, 5, None, None, 4864, 2186),
    ("A", "26.04.01", 204, "LLAMA3_70B", "GB200", "FP8", 64, 256, 2, 8192, 64, 1, 1, 1, None, None, None, 4224, 1892),
    ("A", "26.04.01", 205, "LLAMA3_70B", "GB200", "MXFP8", 64, 256, 1, 8192, 0, 2, 4, 1, 5, None, None, 3712, 1664),
    ("A", "26.04.01", 207, "LLAMA3_70B", "H100", "FP8", 64, 256, 1, 8192, 0, 4, 8, 1, 5, None, None, 1664, 731),
    ("A", "26.04.01", 213, "LLAMA3.1_405B", "GB300", "FP8", 256, 1536, 1, 8192, 0, 4, 8, 1, 4, None, None, 1024, 2617),
    ("A", "26.04.01", 214, "LLAMA3.1_405B", "GB300", "MXFP8", 256, 1536, 1, 8192, 0, 2, 8, 2, 4, None, None, 960, 2453),
    ("A", "26.04.01", 216, "LLAMA3.1_405B", "GB200", "FP8", 256, 1536, 1, 8192, 0, 4, 16, 1, 4, None, None, 864, 2144),
    ("A", "26.04.01", 217, "LLAMA3.1_405B", "GB200", "MXFP8", 256, 1536, 1, 8192,
     0, 4, 16, 1, 8, None, None, 800, 1994),
    ("A", "26.04.01", 219, "LLAMA3.1_405B", "H100", "FP8", 1024, 1536, 1, 8192, 0, 8, 8, 2, 8, None, None, 328, 827),
    ("A", "26.04.01", 225, "DeepSeekV3", "GB300", "MXFP8", 256, 4096, 2, 4096, 0, 1, 2, 1, 8, 32, None, 4992, 1298),
    ("A", "26.04.01", 226, "DeepSeekV3", "GB200", "MXFP8", 256, 4096, 1, 4096, 0, 1, 4, 1, 4, 64, None, 4256, 1106),
    ("A", "26.04.01", 227, "DeepSeekV3", "B300", "MXFP8", 256, 4096, 2, 4096, 0, 1, 8, 1, None, 8, None, 3456, 898),
    ("A", "26.04.01", 228, "DeepSeekV3", "B200", "MXFP8", 256, 4096, 1, 4096, 0, 1, 8, 1, 2, 32, None, 3328, 864),
    ("A", "26.04.01", 234, "GPT OSS 120B", "GB300", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, None, 64, None, 19200, 523),
    ("A", "26.04.01", 235, "GPT OSS 120B", "GB200", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, None, 64, None, 16640, 452),
    ("A", "26.04.01", 236, "GPT OSS 120B", "B300", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, None, 8, None, 15232, 414),
    ("A", "26.04.01", 237, "GPT OSS 120B", "B200", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, None, 8, None, 13568, 369),
    ("A", "26.04.01", 238, "GPT OSS 120B", "H100", "BF16", 64, 1280, 1, 4096, 0, 1, 4, 1, None, 8, None, 5824, 158),
    ("A", "26.04.01", 244, "Qwen3_30B_a3B", "GB300", "MXFP8", 8, 512, 8, 4096, 0, 1, 1, 1, None, 8, None, 31744, 729),
    ("A", "26.04.01", 245, "Qwen3_30B_a3B", "GB200", "MXFP8", 8, 512, 4, 4096, 0, 1, 1, 1, None, 8, None, 26112, 599),
    ("A", "26.04.01", 246, "Qwen3_30B_a3B", "B300", "MXFP8", 8, 512, 8, 4096, 0, 1, 1, 1, None, 8, None, 30720, 704),
    ("A", "26.04.01", 247, "Qwen3_30B_a3B", "B200", "MXFP8", 8, 512, 4, 4096, 0, 1, 1, 1, None, 8, None, 27136, 619),
    ("A", "26.04.01", 248, "Qwen3_30B_a3B", "H100", "FP8", 16, 1024, 1, 4096, 0, 1, 1, 1, None, 16, None, 8960, 206),
    ("A", "26.04.01", 254, "Qwen3_235B_a22B", "GB300", "MXFP8", 256, 8192, 2, 4096,
     0, 1, 4, 1, 12, 32, None, 6944, 1029),
    ("A", "26.04.01", 255, "Qwen3_235B_a22B", "GB200", "MXFP8", 256, 8192, 1, 4096, 0, 1, 8, 1, 3, 32, None, 5680, 840),
    ("A", "26.04.01", 256, "Qwen3_235B_a22B", "B300", "MXFP8", 256, 8192, 2, 4096,
     0, 1, 8, 1, None, 8, None, 5936, 878),
    ("A", "26.04.01", 257, "Qwen3_235B_a22B", "B200", "MXFP8", 256, 8192, 1, 4096,
     0, 1, 8, 1, None, 8, None, 3776, 560),
    ("A", "26.04.01", 258, "Qwen3_235B_a22B", "H100", "FP8", 256, 8192, 1, 4096, 0, 2, 8, 1, 4, 32, None, 1712, 253),
    ("A", "26.04", 327, "DeepSeekV3", "B300", "MXFP8", 256, 4096, 1, 4096, 0, 1, 16, 1, None, 8, None, 3131, 814),
    ("A", "26.04", 328, "DeepSeekV3", "B200", "MXFP8", 256, 4096, 1, 4096, 0, 1, 16, 1, None, 8, None, 2815, 732),
    ("A", "26.02.01", 401, "LLAMA3_70B", "GB300", "MXFP8", 64, 256, 2, 8192, 0, 1, 4, 1, None, None, None, 4798, 2157),
    ("A", "26.02.01", 415, "LLAMA3.1_405B", "GB300", "FP8", 256, 1536, 1, 8192, 0, 2, 8, 2, 4, None, None, 1024, 2585),
    ("A", "26.02.01", 445, "Qwen3_30B_a3B", "H100", "FP8", 16, 1024, 1, 4096, 0, 1, 2, 1, 12, 8, None, 9058, 208),
    ("A", "26.02.01", 451, "Qwen3_235B_a22B", "GB300", "MXFP8", 256, 8192, 2, 4096,
     0, 1, 4, 1, None, 32, None, 6583, 974),
    ("A", "26.02.01", 452, "Qwen3_235B_a22B", "GB200", "MXFP8", 256, 8192, 1, 4096,
     0, 1, 8, 1, None, 32, None, 5530, 819),
    ("A", "26.02.01", 453, "Qwen3_235B_a22B", "B300", "MXFP8", 256, 8192, 1, 4096, 0, 1, 8, 1, 4, 8, None, 2644, 391),
    ("A", "26.02", 518, "GPT OSS 120B", "B300", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, None, 64, None, 8359, 228),
    ("A", "26.02", 519, "GPT OSS 120B", "B200", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, None, 64, None, 8047, 219),
    ("A", "26.02", 529, "Qwen3_30B_a3B", "B200", "MXFP8", 8, 512, 1, 4096, 0, 1, 1, 1, None, 8, None, 9691, 223),
    ("A", "25.11", 552, "LLAMA3_8B", "GB300", "FP8-CS", 8, 128, 2, 8192, 0, 1, 1, 1, None, 1, 8, 37556, 1933),
    ("A", "25.11", 553, "LLAMA3_70B", "GB300", "FP8-CS", 64, 256, 2, 8192, 64, 1, 1, 1, 1, 1, 2, 4520, 2030),
    ("A", "25.11", 554, "LLAMA3.1_405B", "GB300", "FP8-CS", 256, 1536, 1, 8192, 0, 2, 8, 2, 4, 1, 192, 999, 2522),
    ("A", "25.11", 555, "DeepSeekV3 (w/o MTP)", "GB300", "BF16", 256, 4096, 1, 4096, 0, 1, 2, 1, 4, 32, 32, 3848, 961),
    ("A", "25.11", 556, "DeepSeekV3 (w/o MTP)", "GB300", "FP8-MX", 256, 4096, 1, 4096,
     0, 1, 2, 1, 4, 32, 32, 4357, 1088),
    ("A", "25.11", 557, "GPT OSS 120B", "GB300", "BF16", 64, 1280, 2, 8192, 0, 1, 1, 1, 1, 64, 10, 18347, 565),
    ("A", "25.11", 558, "Qwen3_30B_a3B", "GB300", "FP8-MX", 8, 512, 4, 4096, 0, 1, 1, 1, 1, 8, 16, 28934, 666),
    ("A", "25.11", 559, "Qwen3_235B_a22B", "GB300", "BF16", 256, 8192, 2, 4096, 0, 1, 4, 1, 12, 16, 32, 6131, 907),
    ("A", "25.11", 565, "LLAMA3_8B", "GB200", "FP8-CS", 8, 128, 2, 8192, 0, 1, 1, 1, None, 1, 8, 31508, 1622),
    ("A", "25.11", 566, "LLAMA3_70B", "GB200", "FP8-CS", 64, 256, 2, 8192, 64, 1, 1, 1, 1, 1, 2, 4312, 1937),
    ("A", "25.11", 567, "LLAMA3.1_405B", "GB200", "FP8-CS", 256, 1536, 1, 8192, 0, 4, 16, 1, 4, 1, 384, 813, 2053),
    ("A", "25.11", 568, "DeepSeekV3 (w/o MTP)", "GB200", "BF16", 256, 4096, 1, 4096, 0, 1, 4, 1, 4, 64, 64, 3139, 782),
    ("A", "25.11", 569, "DeepSeekV3 (w/o MTP)", "GB200", "FP8-MX", 256, 4096, 1, 4096,
     0, 1, 8, 1, 4, 32, 128, 4018, 1003),
    ("A", "25.11", 570, "GPT OSS 120B", "GB200", "BF16", 64, 1280, 1, 8192, 0, 1, 1, 1, 1, 64, 20, 15876, 488),
    ("A", "25.11", 571, "Qwen3_30B_a3B", "GB200", "FP8-MX", 8, 512, 4, 4096, 0, 1, 1, 1, 1, 8, 16, 23766, 547),
    ("A", "25.11", 572, "Qwen3_235B_a22B", "GB200", "BF16", 256, 8192, 1, 4096, 0, 1, 8, 1, 3, 32, 256, 4916, 728),
    ("A", "25.11", 578, "LLAMA3_8B", "B200", "FP8-CS", 8, 128, 2, 8192, 0, 1, 1, 1, None, 1, 8, 30624, 1576),
    ("A", "25.11", 579, "LLAMA3.1_405B", "B200", "FP8-CS", 128, 64, 1, 8192, 0, 4, 8, 2, 8, 1, 32, 661, 1667),
    ("A", "25.11", 580, "DeepSeekV3 (w/ MTP)", "B200", "FP8-MX", 256, 2048, 1, 4096, 0, 1, 16, 1, 1, 8, 128, 2139, 557),
    ("A", "25.11", 581, "GPT OSS 120B", "B200", "BF16", 64, 512, 4, 4096, 0, 1, 1, 1, 1, 8, 2, 8213, 223),
    ("A", "25.11", 582, "Qwen3_30B_a3B", "B200", "FP8-MX", 8, 512, 1, 4096, 0, 1, 1, 1, 1, 8, 64, 9299, 214),
    ("A", "25.11", 583, "Qwen3_235B_a22B", "B200", "FP8-MX", 64, 1024, 1, 4096, 0, 1, 8, 1, 2, 8, 128, 3269, 484),
    ("A", "25.11", 589, "LLAMA3_8B", "H100", "FP8-CS", 8, 128, 1, 8192, 8, 1, 1, 1, None, 1, 16, 14451, 744),
    ("A", "25.11", 590, "LLAMA3_70B", "H100", "FP8-CS", 64, 128, 1, 8192, 0, 4, 8, 1, 5, 1, 64, 1602, 719),
    ("A", "25.11", 591, "LLAMA3.1_405B", "H100", "FP8-CS", 1024, 512, 1, 8192, 0, 8, 8, 2, 8, 1, 64, 292, 737),
    ("A", "25.11", 592, "GPT OSS 120B", "H100", "BF16", 64, 512, 4, 4096, 0, 1, 4, 1, 1, 8, 2, 5630, 153),
    ("A", "25.11", 593, "Qwen3_30B_a3B", "H100", "FP8-CS", 16, 512, 2, 4096, 0, 1, 2, 1, 24, 8, 32, 5275, 121),
    ("A", "25.11", 594, "Qwen3_235B_a22B", "H100", "FP8-CS", 256, 2048, 1, 4096, 0, 2, 8, 1, 4, 32, 128, 1575, 233),
    ("A", "25.09", 607, "LLAMA3_8B", "GB200", "?", 8, 128, 2, 8192, 0, 1, 1, 1, None, 1, 8, 31357, 1614),
    ("A", "25.09", 608, "LLAMA3_70B", "GB200", "?", 64, 128, 2, 8192, 64, 1, 1, 1, 1, 1, 1, 3986, 1791),
    ("A", "25.09", 609, "LLAMA3.1_405B", "GB200", "?", 128, 64, 1, 8192, 64, 2, 1, 1, 1, 1, 1, 729, 1840),
    ("A", "25.09", 610, "DeepSeekV3 (tokendrop)", "GB200", "?", 256, 2048, 1, 4096, 0, 1, 4, 1, 4, 64, 32, 3454, 899),
    ("A", "25.09", 611, "Qwen3_30B_a3B (tokendrop)", "GB200", "?", 8, 512, 4, 4096, 0, 1, 1, 1, 1, 8, 16, 22775, 524),
    ("A", "25.09", 612, "Qwen3_235B_a22B (tokendrop)", "GB200", "?", 64, 1024, 1, 4096,
     0, 2, 1, 1, 1, 64, 32, 4452, 659),
    ("A", "25.09", 618, "LLAMA3_8B", "B200", "?", 8, 128, 2, 8192, 0, 1, 1, 1, None, 1, 8, 29994, 1544),
    ("A", "25.09", 619, "LLAMA3.1_405B", "B200", "?", 128, 64, 1, 8192, 0, 4, 8, 2, 8, 1, 32, 664, 1676),
    ("A", "25.09", 620, "DeepSeekV3 (tokendrop)", "B200", "?", 256, 2048, 1, 4096, 0, 1, 16, 1, 1, 8, 128, 2265, 589),
    ("A", "25.09", 621, "Qwen3_30B_a3B (tokendrop)", "B200", "?", 8, 512, 1, 4096, 0, 1, 1, 1, 1, 8, 64, 18066, 416),
    ("A", "25.09", 622, "Qwen3_235B_a22B (tokendrop)", "B200", "?", 64, 1024, 1, 4096,
     0, 1, 8, 1, 2, 8, 128, 4104, 607),
    ("A", "25.09", 628, "LLAMA3_8B", "H100", "?", 8, 128, 1, 8192, 8, 1, 1, 1, None, 1, 16, 14079, 725),
    ("A", "25.09", 629, "LLAMA3_70B", "H100", "?", 64, 128, 1, 8192, 0, 4, 8, 1, 5, 1, 64, 1619, 727),
    ("A", "25.09", 630, "LLAMA3.1_405B", "H100", "?", 1024, 512, 1, 8192, 0, 8, 8, 2, 8, 1, 64, 302, 763),
    ("A", "25.09", 631, "DeepSeekV3 (dropless)", "H100", "?", 1024, 8192, 1, 4096, 0, 2, 8, 1, 4, 64, 128, 1297, 338),
    ("A", "25.09", 632, "Qwen3_30B_a3B (tokendrop)", "H100", "?", 16, 512, 2, 4096, 0, 1, 2, 1, 24, 8, 32, 10494, 241),
    ("A", "25.09", 633, "Qwen3_235B_a22B (tokendrop)", "H100", "?", 256, 2048, 1, 4096,
     0, 2, 8, 1, 4, 32, 128, 1204, 178),
)


def _record(row: tuple[str, str, int, str, str, str, int, int, int, int, int | None, int, int, int, int | None,
                       int | None, int | None, float, float]) -> RunRecord:
    (file, release, line, model, system, precision, gpus, gbs, mbs, seq, fsdp, tp, pp, cp, vp, ep, ga,
     tokens, tflops) = row
    dp = gpus // (tp * pp * cp)
    contradiction = "" if ga is None else batch_contradiction(gbs, dp, mbs, ga, "GA")
    shape = next(s for prefix, s in _SHAPE_OF if model.startswith(prefix))
    table = "System: DGX-" + system if release in ("25.09", "25.11") else "Model: " + model
    printed = "precision not printed" if precision == "?" else precision
    notes = [f"Printed: {tflops} model TFLOP/s per GPU.", caveat(shape)]
    if system != "H100":
        notes.append(f"{system}: no preset.")
    if "tokendrop" in model:
        notes.append("Token-dropping MoE (capacity-limited).")
    return RunRecord(
        source="megatron_bridge_performance", where=f"{_FILES[file]}, {release} NeMo Container, table '{table}', "
        f"line {line}", row=f"{release} {model}, DGX-{system}, {gpus} GPUs, {printed}", use="validation",
        seq=seq, gpu=_GPUS[system], gpus=gpus, metric="tokens_per_s_per_gpu", value=tokens,
        gpus_per_node=72 if system.startswith("GB") else 8, tp=tp, pp=pp, dp=dp, cp=cp,
        ep=ep or 1, zero=3 if fsdp else None, micro_batch=mbs, global_batch=gbs, interleave=vp or 1,
        recompute="unknown", attention="flash", precision=_PRECISIONS[precision], counts_recompute=False,
        contradiction=contradiction, note=" ".join(n for n in notes if n), **SHAPES[shape])


RECORDS: tuple[RunRecord, ...] = tuple(_record(r) for r in _ROWS)
