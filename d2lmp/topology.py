"""How GPUs are wired: PCIe and NVLink bandwidth, 8-GPU topologies and a power budget (this machine's real
topology is read by ``d2lmp.gpu_topology``).

Each link table names its primary sources by key in ``d2lmp.bibliography.SOURCES`` (``PCIE_SOURCES``,
``NVLINK_SOURCES``, and a ``source`` in every row of ``pcie_table`` and ``nvlink_table``): the PCI-SIG
specifications for the PCIe rates and encodings (GB/s is arithmetic), NVIDIA's whitepapers and NVLink
page for the NVLink links; the DGX-1 and DGX H100 topologies cite NVIDIA's system descriptions.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

__all__ = ["PCIE", "PCIE_LANES", "PCIE_SOURCES", "NVLINK", "NVLINK_SOURCES", "pcie_bandwidth_gbs", "PCIeRow",
           "pcie_table", "nvlink_bandwidth_gbs", "NVLinkRow", "nvlink_table", "Topology", "pcie_tree",
           "hybrid_cube_mesh", "nvswitch", "hop_counts", "PowerBudget", "power_budget"]

# PCIe generation → (transfer rate per lane in GT/s, encoding efficiency), from the PCI Express Base
# Specifications; the GB/s below are arithmetic on these two numbers.
PCIE = {
    2: (5.0, 8 / 10),
    3: (8.0, 128 / 130),
    4: (16.0, 128 / 130),
    5: (32.0, 128 / 130),
}
PCIE_LANES = (1, 2, 4, 8, 16)
PCIE_SOURCES = {generation: ("pcisig_specifications",) for generation in PCIE}

# NVLink generation → (GPU, year, GB/s per link per direction, links per GPU).
NVLINK = {
    1: ("P100", 2016, 20, 4),
    2: ("V100", 2017, 25, 6),
    3: ("A100", 2020, 25, 12),
    4: ("H100/H200", 2022, 25, 18),
    5: ("B200", 2024, 50, 18),
}
# Each generation's links as its GPU's whitepaper describes them; NVIDIA's NVLink page tabulates all five.
NVLINK_SOURCES = {
    1: ("nvidia_pascal_whitepaper", "nvidia_nvlink_page"),
    2: ("nvidia_volta_whitepaper", "nvidia_nvlink_page"),
    3: ("nvidia_ampere_whitepaper", "nvidia_nvlink_page"),
    4: ("nvidia_hopper_whitepaper", "nvidia_nvlink_page"),
    5: ("nvidia_nvlink_page",),
}


def pcie_bandwidth_gbs(generation: int, lanes: int = 16, both_directions: bool = False) -> float:
    """GB/s of a PCIe link: GT/s per lane × encoding efficiency / 8 bits × lanes (one direction by default).

    Gen 3 ×16: 8 × 128/130 / 8 × 16 = 15.75 GB/s each way; NVIDIA's "64 GB/s" (Gen 4) and
    "128 GB/s" (Gen 5) are both directions added and rounded.
    """
    if generation not in PCIE:
        raise ValueError(f"PCIe generation must be one of {sorted(PCIE)}, got {generation!r}")
    if lanes not in PCIE_LANES:
        raise ValueError(f"lanes must be one of {PCIE_LANES}, got {lanes!r}")
    rate, efficiency = PCIE[generation]
    one_way = rate * efficiency / 8 * lanes
    return 2 * one_way if both_directions else one_way


@dataclass(frozen=True)
class PCIeRow:
    """One PCIe generation of ``pcie_table``: GT/s, encoding, GB/s per lane, for the table's lanes (per
    direction) and both directions added, and the bibliography keys of its source."""

    generation: int
    gt_s: float
    encoding: str
    per_lane_gbs: float
    gbs: float
    both_directions_gbs: float
    source: tuple[str, ...]


def pcie_table(lanes: int = 16) -> list[PCIeRow]:
    """One row per PCIe generation: GT/s, encoding, GB/s per lane and for ``lanes`` lanes (per direction),
    and the bibliography keys of its source."""
    return [PCIeRow(generation=g, gt_s=rate, encoding="8b/10b" if eff == 0.8 else "128b/130b",
                    per_lane_gbs=pcie_bandwidth_gbs(g, 1), gbs=pcie_bandwidth_gbs(g, lanes),
                    both_directions_gbs=pcie_bandwidth_gbs(g, lanes, True), source=PCIE_SOURCES[g])
            for g, (rate, eff) in PCIE.items()]


def nvlink_bandwidth_gbs(generation: int, links: int | None = None) -> float:
    """Total NVLink GB/s of one GPU, both directions added (links × per-link per direction × 2).

    ``links`` defaults to the full count of that generation (e.g. NVLink 4: 18 × 25 × 2 = 900).
    """
    if generation not in NVLINK:
        raise ValueError(f"NVLink generation must be one of {sorted(NVLINK)}, got {generation!r}")
    _, _, per_dir, full = NVLINK[generation]
    links = full if links is None else links
    if not 0 <= links <= full:
        raise ValueError(f"NVLink {generation} has at most {full} links per GPU, got {links}")
    return links * per_dir * 2


@dataclass(frozen=True)
class NVLinkRow:
    """One NVLink generation of ``nvlink_table``: its GPU and year, GB/s per link per direction, links per GPU,
    the total per GPU (both directions), the ratio to PCIe 5.0 ×16 and the bibliography keys of its sources."""

    generation: int
    gpu: str
    year: int
    per_link_per_direction_gbs: float
    links: int
    total_gbs: float
    vs_pcie5_x16: float
    source: tuple[str, ...]


def nvlink_table() -> list[NVLinkRow]:
    """One row per NVLink generation with the total per GPU, the ratio to PCIe 5.0 ×16 (both directions)
    and the bibliography keys of its sources."""
    pcie5 = pcie_bandwidth_gbs(5, 16, True)
    return [NVLinkRow(generation=g, gpu=gpu, year=year, per_link_per_direction_gbs=per, links=links,
                      total_gbs=nvlink_bandwidth_gbs(g), vs_pcie5_x16=nvlink_bandwidth_gbs(g) / pcie5,
                      source=NVLINK_SOURCES[g])
            for g, (gpu, year, per, links) in NVLINK.items()]


# ---------------------------------------------------------------------------------------
# Topologies as graphs: nodes with positions, edges with a kind


@dataclass
class Topology:
    """A drawing-ready graph: node name → (x, y), edges (a, b, kind), and a caption naming the source."""

    name: str
    nodes: dict[str, tuple[float, float]]
    edges: list[tuple[str, str, str]]
    caption: str

    def degree(self, node: str, kind: str | None = None) -> int:
        return sum(node in (a, b) for a, b, k in self.edges if kind is None or k == kind)

    def gpu_pairs_direct(self, kind: str) -> int:
        """How many GPU pairs share an edge of ``kind``."""
        return len({frozenset((a, b)) for a, b, k in self.edges if k == kind
                    and a.startswith("GPU") and b.startswith("GPU")})


def pcie_tree(gpus: int = 4, switches: int = 2) -> Topology:
    """A desktop or PCIe server: CPU root complex → PCIe switches → GPUs; GPU-to-GPU traffic crosses a switch."""
    if gpus < 1 or switches < 1 or gpus % switches:
        raise ValueError(f"need gpus ≥ 1 divisible by switches ≥ 1, got {gpus} GPUs and {switches} switches")
    nodes = {"CPU": (0.0, 2.0)}
    edges: list[tuple[str, str, str]] = []
    per = gpus // switches
    for s in range(switches):
        sx = (s - (switches - 1) / 2) * 2.0 * per
        nodes[f"switch {s}"] = (sx, 1.0)
        edges.append(("CPU", f"switch {s}", "pcie"))
        for j in range(per):
            g = s * per + j
            nodes[f"GPU{g}"] = (sx + (j - (per - 1) / 2) * 1.6, 0.0)
            edges.append((f"switch {s}", f"GPU{g}", "pcie"))
    return Topology("PCIe tree", nodes, edges,
                    f"{gpus} GPUs on {switches} PCIe switch(es): every GPU-to-GPU transfer crosses a switch, "
                    "and across switches it also crosses the CPU's root complex")


def hybrid_cube_mesh() -> Topology:
    """DGX-1's eight GPUs (NVIDIA's DGX-1 whitepaper; bibliography: nvidia_dgx1_v100_whitepaper): a cube
    with GPUs at the corners, all twelve edges NVLink, and the diagonals of two opposite faces too (16 GPU
    pairs directly linked)."""
    front = {"GPU0": (0, 1), "GPU1": (1, 1), "GPU2": (0, 0), "GPU3": (1, 0)}
    back = {f"GPU{int(k[3]) + 4}": (x + 1.6, y + 0.5) for k, (x, y) in front.items()}
    nodes: dict[str, tuple[float, float]] = {**front, **back}
    edges: list[tuple[str, str, str]] = []
    for quad in (list(front), list(back)):
        for a, b in itertools.combinations(quad, 2):  # four edges + two diagonals per face
            edges.append((a, b, "nvlink"))
    for i in range(4):
        edges.append((f"GPU{i}", f"GPU{i + 4}", "nvlink"))
    return Topology("hybrid cube-mesh (DGX-1)", nodes, edges,
                    "12 cube edges + 2 face diagonals each on 2 faces = 16 directly linked pairs of 28; "
                    "each V100 has 6 links, 24 in all, so 8 of the edges carry two links (which ones is not drawn); "
                    "pairs such as GPU0–GPU5 need two hops")


def nvswitch(gpus: int = 8, switches: int = 4) -> Topology:
    """An HGX/DGX board with NVSwitch chips: every GPU links to every switch, so any pair talks at full speed.

    The defaults are the DGX H100: eight GPUs, four NVSwitch chips (bibliography: nvidia_nvswitch_blog,
    nvidia_hopper_whitepaper).
    """
    if gpus < 2 or switches < 1:
        raise ValueError(f"need at least 2 GPUs and 1 switch, got {gpus} and {switches}")
    nodes = {f"GPU{g}": ((g - (gpus - 1) / 2) * 1.2, 0.0) for g in range(gpus)}
    nodes.update({f"NVSwitch {s}": ((s - (switches - 1) / 2) * 2.0, 1.2) for s in range(switches)})
    edges = [(f"GPU{g}", f"NVSwitch {s}", "nvlink") for g in range(gpus) for s in range(switches)]
    return Topology("NVSwitch", nodes, edges,
                    f"{gpus} GPUs, each linked to all {switches} NVSwitch chips: any two GPUs communicate at the full "
                    "per-GPU NVLink bandwidth (DGX H100: 900 GB/s per GPU, four NVSwitch chips)")


def hop_counts(topology: Topology, kind: str = "nvlink") -> dict[tuple[str, str], int | None]:
    """Shortest number of ``kind`` links between every GPU pair (None if unreachable by that kind alone).

    Switches count as pass-through (a GPU→switch→GPU route is one hop).
    """
    gpus = sorted(n for n in topology.nodes if n.startswith("GPU"))
    adj: dict[str, set[str]] = {n: set() for n in topology.nodes}
    for a, b, k in topology.edges:
        if k == kind:
            adj[a].add(b)
            adj[b].add(a)
    result: dict[tuple[str, str], int | None] = {}
    for src in gpus:
        dist = {src: 0}
        frontier = [src]
        while frontier:
            nxt = []
            for n in frontier:
                for m in adj[n]:
                    if m not in dist:
                        dist[m] = dist[n] + (1 if m.startswith("GPU") else 0)
                        nxt.append(m)
            frontier = nxt
        for dst in gpus:
            if dst > src:
                result[(src, dst)] = dist.get(dst)
    return result


# ---------------------------------------------------------------------------------------
# Power budget


@dataclass(frozen=True)
class PowerBudget:
    """``power_budget``: the GPUs, their watts together, the CPU's and the rest's, the load, the supply and the
    part of it that may be used, the margin, whether the load fits, and the supply the load would need."""

    gpus: int
    gpu_total: float
    cpu: float
    other: float
    load: float
    psu: float
    usable: float
    margin: float
    fits: bool
    psu_needed: float


def power_budget(gpus: int, gpu_watts: float, cpu_watts: float = 150.0, other_watts: float = 100.0,
                 psu_watts: float = 1000.0, headroom: float = 0.2) -> PowerBudget:
    """Does a power supply carry the machine? Load = GPUs × board power + CPU + the rest.

    ``headroom``: fraction of the supply kept free (0.2: run it at most at 80 %). Two sourced reasons:
    graphics cards draw brief power excursions above their rated board power, and Intel's ATX 3 power
    supply design guide specifies the fast load steps a supply must carry on the rails that feed them
    (bibliography: intel_atx3_psu_guide); and the 80 PLUS efficiency levels are highest at half load
    (Gold, 115 V internal: 87 / 90 / 87 % at 20 / 50 / 100 % load; bibliography: clearesult_80plus).
    The 20 % default itself is a rule of thumb, not a sourced figure.
    Returns load, usable capacity, the margin and ``fits``. The CPU and "other" defaults
    are placeholders to change, not measured figures.
    """
    for name, v in (("gpu_watts", gpu_watts), ("cpu_watts", cpu_watts), ("other_watts", other_watts)):
        if v < 0:
            raise ValueError(f"{name} must not be negative, got {v}")
    if gpus < 0:
        raise ValueError(f"gpus must not be negative, got {gpus}")
    if psu_watts <= 0:
        raise ValueError(f"psu_watts must be positive, got {psu_watts}")
    if not 0 <= headroom < 1:
        raise ValueError(f"headroom is a fraction in [0, 1), got {headroom}")
    load = gpus * gpu_watts + cpu_watts + other_watts
    usable = psu_watts * (1 - headroom)
    return PowerBudget(gpus=gpus, gpu_total=gpus * gpu_watts, cpu=cpu_watts, other=other_watts, load=load,
                       psu=psu_watts, usable=usable, margin=usable - load, fits=load <= usable,
                       psu_needed=load / (1 - headroom))
