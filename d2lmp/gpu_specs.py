"""The sourced table of notable GPUs (GTX 580 ... H200): vendor figures with a source for each row.

``NOTABLE_GPUS`` holds one ``GPUSpec`` per GPU; ``find_gpu_spec`` maps a name as NVML or torch
reports it to its row, and ``gpu_peak_gflops`` reads the vendor peak for a dtype. Figures only:
nothing here queries the machine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["GPUSpec", "NOTABLE_GPUS", "find_gpu_spec", "gpu_peak_gflops"]


@dataclass(frozen=True)
class GPUSpec:
    """Vendor figures for one GPU. Tensor figures are dense (no 2:4 sparsity)."""

    name: str
    architecture: str
    year: int
    memory_gb: float
    memory_type: str
    bus_bits: int
    bandwidth_gbs: float
    fp32_tflops: float
    fp16_tensor_tflops: float | None
    int8_tops: float | None
    tdp_w: float
    link: str
    source: str
    match: str  # regular expression matched against the name NVML/torch report


NOTABLE_GPUS: tuple[GPUSpec, ...] = (
    GPUSpec("GTX 580", "Fermi GF110", 2010, 1.5, "GDDR5", 384, 192.4, 1.58, None, None, 244,
            "PCIe 2.0 x16, no NVLink",
            "bit-tech/hexus/guru3d launch reviews: 512 cores, 1544 MHz shader clock, 384-bit "
            "4008 MT/s; FP32 = 512×2×1.544 GHz, bandwidth = 384/8×4.008 (derived). AlexNet used "
            "3 GB partner boards.",
            r"GTX 580"),
    GPUSpec("RTX 2080 Ti", "Turing TU102", 2018, 11, "GDDR6", 352, 616, 13.4, 53.8, 215.2, 250,
            "PCIe 3.0 x16; NVLink bridge",
            "Tom's Hardware / wccftech specs: 4352 cores, 1545 MHz, 352-bit 14 Gb/s GDDR6; tensor and "
            "INT8 figures from the Turing whitepaper table, still to be checked against the PDF.",
            r"2080 Ti"),
    GPUSpec("V100 SXM2", "Volta GV100", 2017, 16, "HBM2", 4096, 900, 15.7, 125, None, 300,
            "NVLink 2: 6 links, 300 GB/s",
            "NVIDIA Volta whitepaper table (5120 FP32 cores, 640 tensor cores, 4096-bit HBM2); "
            "shipping SXM2 clock 1530 MHz gives 15.7 / 125 TFLOPS.",
            r"V100"),
    GPUSpec("T4", "Turing TU104", 2018, 16, "GDDR6", 256, 320, 8.1, 65, 130, 70,
            "PCIe 3.0 x16, no NVLink",
            "NVIDIA T4 datasheet as reported by geektopia.es and sysrqmts.com (8.1 / 65 / 130 TOPS, 70 W).",
            r"\bT4\b"),
    GPUSpec("A100 SXM4 40GB", "Ampere GA100", 2020, 40, "HBM2", 5120, 1555, 19.5, 312, 624, 400,
            "NVLink 3: 12 links, 600 GB/s; PCIe 4.0",
            "NVIDIA A100 datasheet via glennklockwood.com and thundercompute.com.",
            r"A100(?!.*(80GB|PCIE))"),  # PCIe cards: lower power and clocks, not in the table
    GPUSpec("A100 SXM4 80GB", "Ampere GA100", 2020, 80, "HBM2e", 5120, 2039, 19.5, 312, 624, 400,
            "NVLink 3: 12 links, 600 GB/s; PCIe 4.0",
            "NVIDIA A100 datasheet via glennklockwood.com and thundercompute.com.",
            r"A100(?!.*PCIE).*80GB"),
    GPUSpec("H100 SXM5", "Hopper GH100", 2022, 80, "HBM3", 5120, 3350, 67, 989.4, 1979, 700,
            "NVLink 4: 18 links, 900 GB/s; PCIe 5.0",
            "NVIDIA H100 datasheet as reproduced by hpctech.co.jp; dense tensor figures from "
            "glennklockwood.com (datasheet headline values are 2:4 sparse, 2× dense).",
            r"H100(?!.*(PCIe|NVL))"),  # the PCIe and NVL cards have other memory and clocks
    GPUSpec("H200 SXM", "Hopper GH100", 2024, 141, "HBM3e", 6144, 4800, 67, 989.4, 1979, 700,
            "NVLink 4: 18 links, 900 GB/s; PCIe 5.0",
            "H200 product pages as summarised by aiminingco.com, lzwjava.github.io and geektopia.es "
            "(141 GB HBM3e, 4.8 TB/s, same compute as H100 SXM); 6144 bits × 6.25 Gb/s / 8 = 4.8 TB/s.",
            r"H200"),
)


def find_gpu_spec(name: str) -> GPUSpec | None:
    """The table row whose pattern matches a reported GPU name, e.g. "NVIDIA H200" → H200 SXM."""
    for spec in NOTABLE_GPUS:
        if re.search(spec.match, name, flags=re.IGNORECASE):
            return spec
    return None


def gpu_peak_gflops(name: str, dtype: str) -> float | None:
    """Vendor peak for a GPU name and dtype in GFLOP/s (FP32 on CUDA cores, FP16/BF16 on tensor cores)."""
    spec = find_gpu_spec(name)
    if spec is None:
        return None
    if dtype == "float32":
        return spec.fp32_tflops * 1e3
    if dtype in {"float16", "bfloat16"} and spec.fp16_tensor_tflops is not None:
        return spec.fp16_tensor_tflops * 1e3
    return None
