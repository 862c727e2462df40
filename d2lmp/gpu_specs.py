"""The sourced table of notable GPUs (GTX 580 ... H200): vendor figures, each row citing its primary sources.

``NOTABLE_GPUS`` holds one ``GPUSpec`` per GPU; ``find_gpu_spec`` maps a name as NVML or torch
reports it to its row, and ``gpu_peak_gflops`` reads the vendor peak for a dtype. ``SM_LAYOUTS`` holds
what one streaming multiprocessor contains and the memory levels around it (``SMLayout.levels``).
Figures only: nothing here queries the machine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["GPUSpec", "NOTABLE_GPUS", "ALEXNET_GTX580_BYTES", "gpu_spec", "find_gpu_spec", "gpu_peak_gflops",
           "SMLayout", "MemoryLevel", "SM_LAYOUTS"]


@dataclass(frozen=True)
class GPUSpec:
    """Vendor figures for one GPU. Tensor figures are dense (no 2:4 sparsity).

    ``source``: the keys of its primary sources in ``d2lmp.bibliography.SOURCES``; ``note``: where in
    them each figure stands, and which figures are derived (by what arithmetic) or not confirmed.
    """

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
    source: tuple[str, ...]
    note: str
    match: str  # regular expression matched against the name NVML/torch report


# The memory of each of AlexNet's two GTX 580s: the 3 GB version of the card (Krizhevsky et al. 2012, §3.2: "a single
# GTX 580 GPU has only 3GB of memory"), not the 1.5 GB reference board of NOTABLE_GPUS; GPU memory sizes are binary.
ALEXNET_GTX580_BYTES = 3 * 2**30

NOTABLE_GPUS: tuple[GPUSpec, ...] = (
    GPUSpec("GTX 580", "Fermi GF110", 2010, 1.5, "GDDR5", 384, 192.4, 1.58, None, None, 244,
            "PCIe 2.0 x16, no NVLink",
            source=("nvidia_gtx580_specs", "krizhevsky2012imagenet"),
            note="NVIDIA's specifications: 512 CUDA cores, 1544 MHz processor clock, 1.5 GB GDDR5 on 384 bits, "
                 "192.4 GB/s, 2,004 MHz memory clock, 244 W. Derived: FP32 = 512 × 2 × 1.544 GHz = 1.58 TFLOPS; "
                 "GDDR5 moves 2 bits per pin per memory clock: 4.008 Gb/s per pin (= 192.4 GB/s × 8 / 384 bits). "
                 "AlexNet used two boards with 3 GB each (Krizhevsky et al. 2012, §3.2).",
            match=r"GTX 580"),
    GPUSpec("RTX 2080 Ti", "Turing TU102", 2018, 11, "GDDR6", 352, 616, 13.4, 53.8, 215.2, 250,
            "PCIe 3.0 x16; NVLink bridge",
            source=("nvidia_turing_whitepaper",),
            note="Turing whitepaper, Table 1 (GP102 vs TU102), reference-board figures: 4352 CUDA cores, "
                 "1545 MHz boost, 13.4 TFLOPS FP32, 53.8 FP16 tensor TFLOPS with FP32 accumulate (107.6 with FP16 "
                 "accumulate), 215.2 INT8 TOPS, 11 GB GDDR6 on 352 bits at 14 Gb/s, 616 GB/s, 250 W (the Founders "
                 "Edition: 1635 MHz, 14.2 / 56.9 / 227.7, 260 W); NVLink: two x8 links, 100 GB/s both directions. "
                 "Read in NVIDIA's text of that table (NVIDIA Technical Blog, 'NVIDIA Turing Architecture "
                 "In-Depth', 2018), not on the PDF's page.",
            match=r"2080 Ti"),
    GPUSpec("V100 SXM2", "Volta GV100", 2017, 16, "HBM2", 4096, 900, 15.7, 125, None, 300,
            "NVLink 2: 6 links, 300 GB/s",
            source=("nvidia_volta_whitepaper",),
            note="Volta whitepaper (Table 1, Tesla V100 SXM2, and its text): 5120 FP32 cores, 640 tensor "
                 "cores, 1530 MHz boost, 15.7 TFLOPS FP32, 125 tensor TFLOPS, 16 GB HBM2 on 4096 bits, 900 GB/s, "
                 "300 W; six NVLink 2 links, 300 GB/s. No INT8 tensor mode.",
            match=r"V100"),
    GPUSpec("T4", "Turing TU104", 2018, 16, "GDDR6", 256, 320, 8.1, 65, 130, 70,
            "PCIe 3.0 x16, no NVLink",
            source=("nvidia_t4_datasheet", "nvidia_web_t4_page", "nvidia_turing_whitepaper"),
            note="T4 datasheet: 8.1 TFLOPS FP32, 65 FP16 (mixed-precision) tensor TFLOPS, 130 INT8 TOPS, 16 GB "
                 "GDDR6, 70 W, PCIe Gen3 x16. Bandwidth: \"320+ GB/s\" on NVIDIA's T4 product page "
                 "(= 256 bits × 10 Gb/s / 8), rounded to 300 GB/s in the datasheet. Bus width: 256 bits is the "
                 "TU104's memory interface in the Turing whitepaper; the datasheet gives none.",
            match=r"\bT4\b"),
    GPUSpec("A100 SXM4 40GB", "Ampere GA100", 2020, 40, "HBM2", 5120, 1555, 19.5, 312, 624, 400,
            "NVLink 3: 12 links, 600 GB/s; PCIe 4.0",
            source=("nvidia_ampere_whitepaper", "nvidia_a100_datasheet"),
            note="Ampere whitepaper, comparison of data-center GPUs (A100 SXM4): 19.5 TFLOPS FP32, 312 FP16 "
                 "tensor TFLOPS and 624 INT8 TOPS dense (twice with sparsity), 40 GB HBM2 on 5120 bits, "
                 "1555 GB/s, 400 W; twelve NVLink 3 links, 600 GB/s. PCIe Gen4 (64 GB/s): the A100 datasheet.",
            match=r"A100(?!.*(80GB|PCIE))"),  # PCIe cards: lower power and clocks, not in the table
    GPUSpec("A100 SXM4 80GB", "Ampere GA100", 2020, 80, "HBM2e", 5120, 2039, 19.5, 312, 624, 400,
            "NVLink 3: 12 links, 600 GB/s; PCIe 4.0",
            source=("nvidia_a100_datasheet", "nvidia_ampere_whitepaper"),
            note="A100 datasheet, A100 80GB SXM column: 80 GB HBM2e, 2,039 GB/s, 400 W, NVLink 600 GB/s, PCIe "
                 "Gen4 64 GB/s; compute as the 40 GB card (the datasheet's starred tensor figures are with "
                 "sparsity, twice the dense ones). 5120 bits: the A100's memory interface in the Ampere whitepaper.",
            match=r"A100(?!.*PCIE).*80GB"),
    GPUSpec("H100 SXM5", "Hopper GH100", 2022, 80, "HBM3", 5120, 3350, 67, 989.4, 1979, 700,
            "NVLink 4: 18 links, 900 GB/s; PCIe 5.0",
            source=("nvidia_h100_datasheet", "nvidia_hopper_whitepaper"),
            note="H100 datasheet, H100 SXM column: 67 TFLOPS FP32, 80 GB, 3.35 TB/s, up to 700 W, NVLink 900 GB/s, "
                 "PCIe Gen5 128 GB/s; its tensor figures are with 2:4 sparsity, so the dense ones come from the "
                 "Hopper whitepaper, Table 3 (H100 SXM5): 989.4 FP16/BF16 tensor TFLOPS, 1978.9 INT8 TOPS; "
                 "HBM3 on 5120 bits (five stacks).",
            match=r"H100(?!.*(PCIe|NVL))"),  # the PCIe and NVL cards have other memory and clocks
    GPUSpec("H200 SXM", "Hopper GH100", 2024, 141, "HBM3e", 6144, 4800, 67, 989.4, 1979, 700,
            "NVLink 4: 18 links, 900 GB/s; PCIe 5.0",
            source=("nvidia_h200_page", "nvidia_hopper_whitepaper"),
            note="H200 page, H200 SXM column: 141 GB HBM3e, 4.8 TB/s, 67 TFLOPS FP32, 1,979 FP16/BF16 tensor "
                 "TFLOPS and 3,958 INT8 TOPS with sparsity (the dense figures, half of these, as the H100 SXM's "
                 "in the Hopper whitepaper), up to 700 W, NVLink 900 GB/s, PCIe Gen5 128 GB/s. The bus width is "
                 "not on the page: 6144 bits is the full GH100 memory interface of the Hopper whitepaper "
                 "(six HBM stacks, twelve 512-bit controllers), assumed here; then 4.8 TB/s × 8 / 6144 bits = "
                 "6.25 Gb/s per pin (derived).",
            match=r"H200"),
)


def gpu_spec(name: str) -> GPUSpec:
    """The row called ``name`` exactly (e.g. "A100 SXM4 80GB"): what every hardware preset is built from."""
    for spec in NOTABLE_GPUS:
        if spec.name == name:
            return spec
    raise ValueError(f"no GPU called {name!r} in the table; available: {', '.join(s.name for s in NOTABLE_GPUS)}")


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


@dataclass(frozen=True)
class MemoryLevel:
    """One level of a GPU's memory hierarchy: its name, where it sits, and its size on the whole chip."""

    name: str
    where: str
    total_bytes: float


@dataclass(frozen=True)
class SMLayout:
    """Vendor figures for one GPU's streaming multiprocessors (SMs) and the memory levels around them.

    Each SM is split into ``partitions`` processing blocks, each with its own warp scheduler, its share of
    the FP32 lanes, of the tensor cores and of the register file; the L1 data cache / shared memory is
    one per SM, the L2 cache one per chip. Sizes as the vendor gives them: KB (1024 bytes) per SM, MB of
    L2, GB of device memory.
    """

    gpu: str
    sms: int
    partitions: int
    fp32_lanes_per_sm: int
    tensor_cores_per_sm: int
    register_file_kb_per_sm: int
    l1_shared_kb_per_sm: int
    l2_mb: float
    memory_gb: float
    memory_type: str
    source: tuple[str, ...]
    note: str

    def levels(self) -> tuple[MemoryLevel, ...]:
        """Registers, L1/shared memory, L2 and device memory, from the fastest and smallest to the largest.

        The per-SM levels are summed over all SMs; the L2 is read as MiB and device memory as GiB: NVIDIA's "GB"
        of HBM is a binary unit (an H100's five 16 GB stacks are 16 GiB each; notebook 04 reads an H200's "141 GB"
        from NVML as 140.4 GiB).
        """
        return (MemoryLevel("registers", f"{self.register_file_kb_per_sm} KB in each SM",
                            self.sms * self.register_file_kb_per_sm * 1024.0),
                MemoryLevel("L1 / shared memory", f"{self.l1_shared_kb_per_sm} KB in each SM",
                            self.sms * self.l1_shared_kb_per_sm * 1024.0),
                MemoryLevel("L2 cache", "one, shared by all SMs", self.l2_mb * 2.0**20),
                MemoryLevel(f"device memory ({self.memory_type})", "beside the chip", self.memory_gb * 2.0**30))


SM_LAYOUTS: tuple[SMLayout, ...] = (
    SMLayout("H100 SXM5", sms=132, partitions=4, fp32_lanes_per_sm=128, tensor_cores_per_sm=4,
             register_file_kb_per_sm=256, l1_shared_kb_per_sm=256, l2_mb=50, memory_gb=80, memory_type="HBM3",
             source=("nvidia_hopper_whitepaper",),
             note="Hopper whitepaper: the H100 SM figure (four processing blocks, each with a warp scheduler, "
                  "32 FP32 lanes, one tensor core and a 16,384 × 32-bit register file) and Table 3 (H100 SXM5: "
                  "132 SMs, 128 FP32 cores and 4 tensor cores per SM, 256 KB register file per SM, 256 KB "
                  "combined L1 data cache / shared memory per SM, 50 MB L2, 80 GB HBM3)."),
)
