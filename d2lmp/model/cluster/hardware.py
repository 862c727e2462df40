"""GPU presets and the cluster a training run uses: peak, memory, NVLink and network per GPU, each sourced.

A ``GPUPreset`` reads the sourced GPU table (``gpu_specs.NOTABLE_GPUS``) for the dense 16-bit tensor peak, the memory
and its bandwidth, ``topology.NVLINK`` for the NVLink links, and adds the network per GPU of the node the GPU usually
ships in (a DGX): DGX-1 has four 100 Gb/s EDR InfiniBand ports for its eight V100s; DGX A100, as in Selene, the cluster
of Narayanan et al. (2021, §5), eight 200 Gb/s HDR InfiniBand adapters for its eight A100s; DGX H100 and H200 eight 400
Gb/s ConnectX-7 ports. The network is those NICs, one per GPU (rails): a group with ``k`` members in a node sends across
nodes over ``k`` of them (``steptime.group_bytes_per_s``). Every figure keeps its bibliography keys (``source``). A
``Cluster`` is a preset, a GPU count and optional overrides of the two link figures. Bandwidths are GB/s (10⁹ bytes) per
GPU in one direction; memory is the datasheet's GB read as GiB, as NVIDIA counts HBM (``GPUPreset``). Every preset
carries its per-message latency α (``GPUPreset.latency_s``: an assumed 10 µs, unless measured; across nodes the fitted
``efficiency.network_us`` takes its place) and may carry its own point-to-point rate (a CPU measured here does,
``model.cluster.cpu``); ``Cluster.link_rate`` hands both to the step's formulas with the bandwidth, as a ``LinkRate``,
which the step's formulas read as a ``terms.Link``. The layer-table model's ``costmodel.Hardware`` is a second preset
type on purpose: one whole machine behind one link, at FP32 and NCCL's α (its docstring says why).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from d2lmp.gpu_specs import gpu_spec
from d2lmp.model.terms import Link
from d2lmp.model.vocabulary import MatmulPrecision
from d2lmp.topology import NVLINK, NVLINK_SOURCES

__all__ = ["GPUPreset", "GPU_PRESETS", "GPU_ALIASES", "gpu_preset", "Cluster", "NetworkMeasurement", "LinkRate",
           "latency_of",
           "p2p_rate_of", "FP8_PEAK_TFLOPS", "MAMF_TFLOPS", "MAMF_SOURCE", "FLASH_FRACTION", "FLASH_SOURCE"]

# Dense FP8 tensor peaks, TFLOP/s (none before Hopper): the Hopper whitepaper's Table 3 (H100 SXM5, FP8 with FP32
# accumulate, 1,978.9 dense) and the H200 page (3,958 with 2:4 sparsity, half of it dense).
FP8_PEAK_TFLOPS: dict[str, float] = {"H100 SXM5": 1978.9, "H200 SXM": 1979.0}
# The largest mean rate a search over matmul shapes found, BF16 and FP8 inputs, TFLOP/s (Bekman, Machine Learning
# Engineering Open Book, "Maximum Achievable Matmul FLOPS comparison table"; the H200's BF16 "is the same" as the
# H100's). No V100 was measured there: it takes the A100's fraction of its peak, an assumption.
MAMF_TFLOPS: dict[str, tuple[float, float | None]] = {
    "A100 SXM4 40GB": (271.2, None), "A100 SXM4 80GB": (271.2, None), "H100 SXM5": (794.5, 1402.6),
    "H200 SXM": (794.5, 1453.4)}
MAMF_SOURCE = ("bekman2024mlengineering",)
# The fraction of the 16-bit peak a fused attention kernel (FlashAttention-2, the kernel of the 2023-2024 runs)
# reaches at best: 73 % on an A100 (Dao 2023, abstract: "50-73 %"), 35 % on an H100 (Shah et al. 2024, abstract).
# A V100 takes the A100's, an assumption.
FLASH_FRACTION: dict[str, float] = {"Ampere": 0.73, "Hopper": 0.35}
FLASH_SOURCE = ("dao2023flashattention2", "shah2024flashattention3")


@dataclass(frozen=True)
class GPUPreset:
    """One GPU as the cost model needs it, with the node it usually ships in.

    ``peak_tflops``: dense 16-bit tensor peak; ``memory_gb`` and ``hbm_GBps``: capacity and bandwidth, the capacity
    in NVIDIA's gigabytes of HBM, which are binary (an 80 GB A100 holds 80 GiB, as ``gpu_specs`` and NVML read it),
    unless ``binary_gb`` is False (a measured preset's memory, in 10⁹ bytes);
    ``nvlink_GBps``: NVLink per GPU per direction; ``network_GBps_per_gpu``: the node's network bandwidth
    (per direction) divided by its GPUs; ``node``: what that node is; ``source``: the bibliography keys of
    every figure; ``note``: where each figure comes from. ``p2p_GBps`` (None: a send runs at the link's bus
    bandwidth) is set by measured presets.

    ``gemm_fraction`` and ``fp8_gemm_fraction``: the fractions of the 16-bit and FP8 peaks (``fp8_peak_tflops``,
    None before Hopper) that the fastest large matmul measured on this GPU reaches (``MAMF_TFLOPS``); 1 for a
    measured preset, whose rate is already the achieved one. ``flash_fraction``: the fraction of the 16-bit peak a
    fused attention kernel reaches on this GPU (``FLASH_FRACTION``).

    ``latency_s`` is α, the seconds per message (a ring step or a send) on either link. A measured preset sets its
    own; the GPU presets keep the default, 10 µs: an assumption, not a sourced figure, with which the efficiencies
    (``efficiency.FITTED``) were fitted. NCCL's tuning latencies (``alpha_beta.GPU_ALPHA_S``, 3.4 µs over NVLink,
    the layer-table model's α) refit the network efficiency from 0.79 to 0.65 and put Narayanan et al.'s ZeRO-3
    rows below the model's goal, so the cluster model keeps this one (CONTRIBUTING, "What we learned").
    """

    name: str
    spec: str  # the row of gpu_specs.NOTABLE_GPUS it reads
    peak_tflops: float
    memory_gb: float
    hbm_GBps: float
    nvlink_GBps: float
    network_GBps_per_gpu: float
    gpus_per_node: int
    node: str
    source: tuple[str, ...]
    note: str
    latency_s: float = 10e-6  # α, seconds per message on either link: assumed, fitted with (see above)
    p2p_GBps: float | None = None  # a send's rate per direction where it differs from the collectives' bus bandwidth
    gemm_fraction: float = 1.0
    fp8_peak_tflops: float | None = None
    fp8_gemm_fraction: float | None = None
    flash_fraction: float = 1.0
    binary_gb: bool = True

    @property
    def peak_flops(self) -> float:
        return self.peak_tflops * 1e12

    @property
    def memory_bytes(self) -> float:
        return self.memory_gb * (2**30 if self.binary_gb else 1e9)

    def matmul_flops(self, precision: MatmulPrecision = "bf16") -> float:
        """FLOP/s of the fastest large matmul measured in ``precision``: its peak × its measured fraction."""
        if precision == "fp8":
            if self.fp8_peak_tflops is None or self.fp8_gemm_fraction is None:
                raise ValueError(f"{self.name} has no FP8 tensor cores (FP8 needs Hopper or newer)")
            return self.fp8_peak_tflops * 1e12 * self.fp8_gemm_fraction
        return self.peak_flops * self.gemm_fraction

    @property
    def flash_flops(self) -> float:
        """FLOP/s of a fused attention kernel's products at best: the peak × ``flash_fraction``."""
        return self.peak_flops * self.flash_fraction


def _preset(name: str, row: str, nvlink_generation: int, nics: int, nic_gbit: float, node: str,
            node_source: tuple[str, ...], memory_gb: float | None = None, memory_source: tuple[str, ...] = (),
            note: str = "") -> GPUPreset:
    """A preset from a GPU table row, an NVLink generation and the node's network (``nics`` × ``nic_gbit``)."""
    spec = gpu_spec(row)
    if spec.fp16_tensor_tflops is None:
        raise ValueError(f"{row} has no 16-bit tensor peak in the GPU table")
    _, _, per_link, links = NVLINK[nvlink_generation]
    gpus_per_node = 8
    network = nics * nic_gbit / 8 / gpus_per_node
    source = tuple(dict.fromkeys(spec.source + memory_source + NVLINK_SOURCES[nvlink_generation] + node_source))
    how = (f"{spec.name} (GPU table): {spec.fp16_tensor_tflops:g} dense 16-bit TFLOPS, "
           f"{memory_gb if memory_gb is not None else spec.memory_gb:g} GB at {spec.bandwidth_gbs:g} GB/s; "
           f"NVLink {nvlink_generation}: {links} links × {per_link} GB/s per direction; "
           f"{node}: {nics} × {nic_gbit:g} Gb/s for {gpus_per_node} GPUs = {network:g} GB/s per GPU{note}")
    measured = spec.name if spec.name in MAMF_TFLOPS else "A100 SXM4 80GB"  # a V100: the A100's, assumed
    bf16, fp8 = MAMF_TFLOPS[measured]
    fraction = bf16 / (gpu_spec(measured).fp16_tensor_tflops or bf16)
    fp8_peak = FP8_PEAK_TFLOPS.get(spec.name)
    fp8_fraction = fp8 / fp8_peak if fp8 is not None and fp8_peak is not None else None
    how += (f"; largest matmul measured: {fraction:.1%} of the 16-bit peak"
            + (f", {fp8_fraction:.1%} of {fp8_peak:g} FP8 TFLOPS" if fp8_fraction is not None else "")
            + ("" if measured == spec.name else " (the A100's fraction, assumed)"))
    generation = spec.architecture.split()[0]
    flash = FLASH_FRACTION.get(generation, FLASH_FRACTION["Ampere"])  # a V100: the A100's, assumed
    how += f"; fused attention at best {flash:.0%} of the 16-bit peak"
    return GPUPreset(name, spec.name, spec.fp16_tensor_tflops,
                     spec.memory_gb if memory_gb is None else memory_gb, spec.bandwidth_gbs,
                     float(links * per_link), network, gpus_per_node, node,
                     tuple(dict.fromkeys(source + MAMF_SOURCE + FLASH_SOURCE)), how,
                     gemm_fraction=fraction, fp8_peak_tflops=fp8_peak, fp8_gemm_fraction=fp8_fraction,
                     flash_fraction=flash)


_DGX1 = ("nvidia_dgx1_v100_whitepaper",)
_SELENE = ("narayanan2021efficient",)
_DGX_H = ("nvidia_ref_arch_basepod",)
GPU_PRESETS: dict[str, GPUPreset] = {p.name: p for p in (
    _preset("V100-16GB", "V100 SXM2", 2, 4, 100, "DGX-1 (four 100 Gb/s EDR InfiniBand ports)", _DGX1),
    _preset("V100-32GB", "V100 SXM2", 2, 4, 100, "DGX-1 (four 100 Gb/s EDR InfiniBand ports)", _DGX1,
            memory_gb=32, memory_source=("nvidia_v100_page",),
            note="; the 32 GB board (NVIDIA's V100 page) computes as the 16 GB row"),
    _preset("A100-40GB", "A100 SXM4 40GB", 3, 8, 200, "DGX A100 (eight 200 Gb/s HDR InfiniBand adapters)", _SELENE),
    _preset("A100-80GB", "A100 SXM4 80GB", 3, 8, 200,
            "DGX A100 as in Selene (eight 200 Gb/s HDR InfiniBand adapters)", _SELENE),
    _preset("H100-SXM", "H100 SXM5", 4, 8, 400, "DGX H100 (eight 400 Gb/s ConnectX-7 ports)", _DGX_H),
    _preset("H200", "H200 SXM", 4, 8, 400, "DGX H200 (eight 400 Gb/s ConnectX-7 ports)", _DGX_H),
)}
GPU_ALIASES: dict[str, str] = {
    "V100": "V100-32GB", "V100-SXM2": "V100-32GB", "A100": "A100-80GB", "A100-SXM4-40GB": "A100-40GB",
    "A100-SXM4-80GB": "A100-80GB", "H100": "H100-SXM", "H100-SXM5": "H100-SXM", "H100-80GB": "H100-SXM",
    "H200-SXM": "H200", "H200-141GB": "H200",
}


@lru_cache(maxsize=256)
def gpu_preset(name: str) -> GPUPreset:
    """The preset called ``name`` or one of its aliases (case and spaces do not matter); remembered, since a
    ``Cluster`` reads its preset through this on every use (the planner: hundreds of thousands of times)."""
    key = name.strip().upper().replace(" ", "-").replace("_", "-")
    for preset in GPU_PRESETS:
        if preset.upper() == key:
            return GPU_PRESETS[preset]
    for alias, preset in GPU_ALIASES.items():
        if alias.upper() == key:
            return GPU_PRESETS[preset]
    names = ", ".join(list(GPU_PRESETS) + list(GPU_ALIASES))
    raise ValueError(f"unknown GPU {name!r}: the presets are {names}")


class LinkRate(float):
    """A link's bus bandwidth in bytes/s (the float itself), carrying the link's α (``alpha_s``) and the rate of one
    send (``p2p_bytes_per_s``), so that the formulas given a bandwidth also read that link's latency and send rate;
    ``link`` is the same link as the ``terms.Link`` both cost models compute with."""

    alpha_s: float
    p2p_bytes_per_s: float

    def __new__(cls, bytes_per_s: float, alpha_s: float = GPUPreset.latency_s,
                p2p_bytes_per_s: float | None = None) -> LinkRate:
        rate = super().__new__(cls, bytes_per_s)
        rate.alpha_s = alpha_s
        rate.p2p_bytes_per_s = float(bytes_per_s) if p2p_bytes_per_s is None else p2p_bytes_per_s
        return rate

    @property
    def link(self) -> Link:
        """This link as a ``terms.Link``."""
        return Link(float(self), self.alpha_s, self.p2p_bytes_per_s)


def latency_of(bandwidth: float) -> float:
    """α of the link whose bandwidth this is: a ``LinkRate``'s own, else the GPU presets' (``GPUPreset.latency_s``)."""
    return bandwidth.alpha_s if isinstance(bandwidth, LinkRate) else GPUPreset.latency_s


def p2p_rate_of(bandwidth: float) -> float:
    """The rate of one send on the link whose bandwidth this is: a ``LinkRate``'s own, else the bandwidth."""
    return bandwidth.p2p_bytes_per_s if isinstance(bandwidth, LinkRate) else bandwidth


class NetworkMeasurement(NamedTuple):
    """A cluster's bus bandwidth per GPU, GB/s, measured over ``nodes`` whole nodes: an all-reduce and an all-gather
    (or reduce-scatter)."""

    nodes: int
    all_reduce_GBps: float
    gather_GBps: float


@dataclass(frozen=True)
class Cluster:
    """``gpus`` GPUs of one preset, ``gpus_per_node`` to a node joined by NVLink, nodes joined by the network.

    ``nvlink_GBps`` and ``network_GBps_per_gpu`` (per GPU, per direction) None take the preset's figures, the
    sourced ones of that GPU's usual node. ``network_measured``: the bus bandwidths per GPU of a cross-node all-reduce
    and all-gather measured on this cluster, every GPU of each node in the group, by node count
    (``NetworkMeasurement``; empty: the NICs' rate × the fitted network fraction). A group of ``n`` ranks reads
    the measurement over ``n`` ÷ GPUs a node nodes (``measured_network``), at most its own NICs where it has fewer
    members a node (``steptime.group_bytes_per_s``). ``custom``: a preset
    built at run time (``model.cluster.cpu.cpu_preset``, a CPU measured here), used instead of a named one; ``gpu``
    then only labels it.
    """

    gpu: str
    gpus: int
    gpus_per_node: int = 8
    nvlink_GBps: float | None = None
    network_GBps_per_gpu: float | None = None
    custom: GPUPreset | None = None
    network_measured: tuple[NetworkMeasurement, ...] = ()

    def __post_init__(self) -> None:
        if self.custom is None:
            gpu_preset(self.gpu)  # an unknown name is a ValueError here, not later
        if not isinstance(self.gpus, int) or self.gpus < 1:
            raise ValueError(f"gpus must be a positive integer, got {self.gpus!r}")
        if not isinstance(self.gpus_per_node, int) or self.gpus_per_node < 1:
            raise ValueError(f"gpus_per_node must be a positive integer, got {self.gpus_per_node!r}")
        if self.gpus > self.gpus_per_node and self.gpus % self.gpus_per_node:
            raise ValueError(f"gpus ({self.gpus}) must be a multiple of gpus_per_node ({self.gpus_per_node}) "
                             "once it spans more than one node")
        for name in ("nvlink_GBps", "network_GBps_per_gpu"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be positive or None, got {value!r}")
        nodes = [m.nodes for m in self.network_measured]
        if nodes != sorted(set(nodes)) or any(n < 2 for n in nodes):
            raise ValueError(f"network_measured needs distinct node counts of 2 or more, ascending; got {nodes}")
        for m in self.network_measured:
            if not (m.all_reduce_GBps > 0 and m.gather_GBps > 0):
                raise ValueError(f"a measured bus bandwidth must be positive, got {m}")

    @property
    def preset(self) -> GPUPreset:
        return self.custom if self.custom is not None else gpu_preset(self.gpu)

    @property
    def nvlink_bytes_per_s(self) -> float:
        return (self.preset.nvlink_GBps if self.nvlink_GBps is None else self.nvlink_GBps) * 1e9

    @property
    def network_bytes_per_s(self) -> float:
        network = self.preset.network_GBps_per_gpu if self.network_GBps_per_gpu is None else self.network_GBps_per_gpu
        return network * 1e9

    @property
    def nodes(self) -> int:
        return max(1, self.gpus // self.gpus_per_node)

    def measured_network(self, nodes: int) -> NetworkMeasurement | None:
        """The measurement for a group spanning ``nodes`` nodes: over that many, else over the fewest measured above
        it, else over the most measured (None: not measured)."""
        if not self.network_measured:
            return None
        return next((m for m in self.network_measured if m.nodes >= nodes), self.network_measured[-1])

    def link_rate(self, bytes_per_s: float, fraction: float, alpha_s: float | None = None) -> LinkRate:
        """``bytes_per_s`` × the achieved ``fraction``, with α (None: the preset's) and the preset's send rate (× the
        same fraction)."""
        p2p = self.preset.p2p_GBps
        alpha = self.preset.latency_s if alpha_s is None else alpha_s
        return LinkRate(bytes_per_s * fraction, alpha, None if p2p is None else p2p * 1e9 * fraction)
