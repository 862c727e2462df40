"""The roof a link puts over a GPU: its matrix rate and the link's bus bandwidth per GPU, and the ridge between them.

A device that computes at ``P`` FLOP/s and sends over a link at ``B`` bytes/s hides the sending only when it computes
at least ``P/B`` FLOPs per byte it sends (the ridge). ``P`` is ``gemm`` × the largest matmul's measured rate, ``B`` the
link's sourced figure × the fitted ``nvlink`` or ``network`` fraction; PCIe has no fitted fraction: its specification
rate is used, an upper bound. comm_roofline places the strategies' points under these roofs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from d2lmp.gpu_specs import gpu_spec
from d2lmp.model.cluster.efficiency import FITTED, Efficiency
from d2lmp.model.cluster.hardware import Cluster, gpu_preset
from d2lmp.model.cluster.steptime import link_bytes_per_s
from d2lmp.model.vocabulary import LINK_KINDS, LinkKind
from d2lmp.topology import pcie_bandwidth_gbs

__all__ = ["LINKS", "LINK_NAMES", "nvlink_domain", "LinkRoof", "link_roof", "available_roofs"]

LINKS = LINK_KINDS
LINK_NAMES = {"nvlink": "NVLink", "network": "InfiniBand", "pcie": "PCIe"}


def nvlink_domain(gpu: str) -> int:
    """The GPUs one NVLink (or PCIe) domain joins for ``gpu``'s preset: its node (``GPUPreset.gpus_per_node``)."""
    return gpu_preset(gpu).gpus_per_node


@dataclass(frozen=True)
class LinkRoof:
    """One GPU's matrix rate and one link's bus bandwidth per GPU (one direction), with the fractions applied."""

    gpu: str
    link: LinkKind
    flops_per_s: float
    bytes_per_s: float
    compute_fraction: float
    link_fraction: float
    note: str

    @property
    def ridge(self) -> float:
        """FLOPs a device must compute per byte it sends to hide the sending: ``flops_per_s / bytes_per_s``."""
        return self.flops_per_s / self.bytes_per_s

    @property
    def name(self) -> str:
        return f"{self.gpu} {LINK_NAMES[self.link]}"

    def attainable(self, intensity: float) -> float:
        """The roof: ``min(P, I·B)`` FLOP/s."""
        return min(self.flops_per_s, intensity * self.bytes_per_s)


def _pcie_generation(gpu: str) -> int:
    row = gpu_preset(gpu).spec
    found = re.search(r"PCIe (\d)", gpu_spec(row).link)
    if found is None:
        raise ValueError(f"the GPU table gives no PCIe generation for {row}")
    return int(found.group(1))


def link_roof(gpu: str, link: LinkKind, efficiency: Efficiency | None = FITTED) -> LinkRoof:
    """The roof of ``gpu`` sending over ``link`` ("nvlink", "network" or "pcie"); ``efficiency`` None: the peaks."""
    if link not in LINKS:
        raise ValueError(f"link must be one of {LINKS}, got {link!r}")
    preset, cluster = gpu_preset(gpu), Cluster(gpu=gpu, gpus=1)
    whole = Efficiency(gemm=1.0, memory_passes=0.0, nvlink=1.0, network=1.0)
    fractions = whole if efficiency is None else efficiency
    if link == "pcie":
        gen = _pcie_generation(gpu)
        bandwidth, fraction, how = pcie_bandwidth_gbs(gen, 16) * 1e9, 1.0, f"PCIe {gen}.0 x16, specification rate"
    else:
        bandwidth = link_bytes_per_s(cluster, link, fractions)
        fraction = getattr(fractions, link)
        sourced = preset.nvlink_GBps if link == "nvlink" else preset.network_GBps_per_gpu
        how = f"{fraction:.1%} of {sourced:g} GB/s" + (" (fitted)" if efficiency is not None else "")
    # the rate steptime.matmul_seconds computes matrix products at (the peak itself without efficiencies)
    rate = preset.peak_flops if efficiency is None else preset.matmul_flops() * fractions.gemm
    of_peak = rate / preset.peak_flops
    note = f"{preset.name}: {of_peak:.1%} of {preset.peak_tflops:g} TFLOP/s; {LINK_NAMES[link]}: {how}"
    return LinkRoof(preset.name, link, rate, bandwidth, of_peak, fraction, note)


def available_roofs(gpu: str) -> list[LinkRoof]:
    """The roofs of ``gpu`` over every link the tables give it (the V100 row names no PCIe generation)."""
    roofs = []
    for link in LINKS:
        try:
            roofs.append(link_roof(gpu, link))
        except ValueError:
            continue
    return roofs
