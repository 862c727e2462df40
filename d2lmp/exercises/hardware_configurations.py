"""Exercises of notebook 05 (GPU hardware configurations): PCIe lanes shared by two GPUs, a ring over the
DGX-1 cube-mesh, gradient exchange in FP16, the link reached by pinned copies, and a power supply for T4s.
"""

from __future__ import annotations

from typing import Any

from d2lmp.exercises._answers import gpu
from d2lmp.exercises.core import Exercise, Verdict, number_checker
from d2lmp.topology import hop_counts, hybrid_cube_mesh, pcie_bandwidth_gbs

__all__ = ["EXERCISES", "shared_lanes", "cube_mesh_ring", "fp16_exchange", "link_fraction", "t4_power_supply"]

shared_lanes = Exercise(
    key="shared_lanes", number=1,
    title="Sharing the lanes",
    question="A desktop CPU offers 20 PCIe 4.0 lanes for slots. With two GPUs at ×8 each, how "
             "much bandwidth does each GPU get per direction (GB/s)? Would a PCIe 5.0 ×8 slot be faster than "
             "PCIe 4.0 ×16?",
    hint_text="Per direction: GT/s per lane × encoding efficiency (128b/130b from PCIe 3.0 on) / 8 bits × lanes; "
              "`topology.pcie_bandwidth_gbs(generation, lanes)` does the arithmetic.",
    solution_text="PCIe 4.0 ×8: 16 GT/s × 128/130 / 8 × 8 lanes = 15.75 GB/s per direction for each GPU, as much as "
                  "PCIe 3.0 ×16. PCIe 5.0 ×8 is 32 × 128/130 / 8 × 8 = 31.5 GB/s per direction, exactly PCIe 4.0 ×16: "
                  "equal, not faster. Each generation doubles the rate per lane, so halving the lanes one generation "
                  "later keeps the bandwidth.",
    checker=number_checker(pcie_bandwidth_gbs(4, 8), "GB/s", rel_tol=0.005, near_misses=[
        (pcie_bandwidth_gbs(4, 16), "31.5 GB/s is ×16 (or ×8 with both directions added); each GPU has 8 lanes, and "
                                    "the question asks per direction."),
        (16.0, "that leaves out the encoding: 128b/130b spends 2 bits of every 130, so ×8 carries 15.75 GB/s."),
        (pcie_bandwidth_gbs(4, 8) * 8, "that is in gigabits per second; divide by 8 for gigabytes."),
        (pcie_bandwidth_gbs(3, 8), "that is PCIe 3.0 ×8; PCIe 4.0 runs 16 GT/s per lane."),
        (pcie_bandwidth_gbs(4, 1), "that is one lane; each GPU has 8."),
    ], why="A PCIe 5.0 ×8 slot carries 31.5 GB/s per direction, the same as PCIe 4.0 ×16: equal, not faster."),
    reference=pcie_bandwidth_gbs(4, 8),
    wrong=[(pcie_bandwidth_gbs(4, 16), "each GPU has 8 lanes"), (16.0, "encoding")],
    how_to_answer="Answer in GB/s, e.g. ex.shared_lanes.check(10.0).",
)

# ---------------------------------------------------------------------------------------------------
# 2. A ring over direct links only


def _gpu_index(item: Any) -> int:
    text = str(item).strip().upper().removeprefix("GPU")
    return int(text)


def _check_ring(answer: Any) -> Verdict:
    if isinstance(answer, (str, bytes)) or not hasattr(answer, "__iter__"):
        return Verdict(False, f"give the ring as a list of GPU numbers, e.g. [0, 1, ...], got {answer!r}.")
    try:
        ring = [_gpu_index(g) for g in answer]
    except ValueError:
        return Verdict(False, "name the GPUs by number (0-7) or as 'GPU0'...'GPU7'.")
    if len(ring) == 9 and ring[0] == ring[-1]:
        ring = ring[:-1]  # a ring written with its start repeated at the end
    if sorted(ring) != list(range(8)):
        missing = sorted(set(range(8)) - set(ring))
        twice = sorted({g for g in ring if ring.count(g) > 1})
        detail = "; ".join(part for part in (f"missing {missing}" if missing else "",
                                             f"visited twice {twice}" if twice else "") if part)
        return Verdict(False, f"a ring visits each of the 8 GPUs exactly once ({detail or 'GPUs are 0-7'}).")
    hops = hop_counts(hybrid_cube_mesh(), "nvlink")
    for a, b in zip(ring, ring[1:] + ring[:1]):
        first, second = sorted((f"GPU{a}", f"GPU{b}"))
        pair = (first, second)
        if hops[pair] != 1:
            closing = " (the ring closes from the last GPU back to the first)" if (a, b) == (ring[-1], ring[0]) else ""
            return Verdict(False, f"GPU{a} and GPU{b} are not directly linked{closing}: that pair needs "
                                  f"{hops[pair]} NVLink hops. In the cube-mesh GPU i (0-3) links to GPU i+4 only, "
                                  "besides its own group of four.")
    return Verdict(True, "every step of the ring, and the step back to the start, is a direct NVLink link, so NCCL "
                         "could run a ring all-reduce over it without relaying through a third GPU.")


cube_mesh_ring = Exercise(
    key="cube_mesh_ring", number=2,
    title="A ring on the cube-mesh",
    question="Using `topology.hop_counts`, list the GPU pairs of the hybrid cube-mesh "
             "that need two hops. Then find a ring through all eight GPUs that uses only direct links (the DGX-1 "
             "text describes the topology as three interwoven rings) and check it as a list of GPU numbers.",
    hint_text="In this model each group of four (GPU0-3 and GPU4-7) is fully linked, and GPU i links to GPU i+4. "
              "Go round one group, cross over, go round the other, and make sure the last GPU links back to the first.",
    solution_text="Two hops: GPU i and GPU j+4 for i ≠ j (i, j in 0-3), 12 pairs such as GPU0-GPU5 and GPU3-GPU4. "
                  "A ring over direct links: 0 → 1 → 2 → 3 → 7 → 6 → 5 → 4 → 0 (round one group of four, across "
                  "on 3-7, round the other, back on 4-0). Trying every order from GPU0 finds 30 such rings in this "
                  "graph. Why three in the DGX-1 text: a ring uses 2 links at every GPU, and a V100 has 6, so three "
                  "rings that do not share a link use all of them at once (8 cube edges carry two links for this).",
    checker=_check_ring,
    reference=[0, 1, 2, 3, 7, 6, 5, 4],
    wrong=[(list(range(8)), "not directly linked"), ([0, 1, 2, 3, 7, 6, 5], "exactly once"),
           ([0, 1, 2, 3, 7, 6, 4, 5], "the ring closes")],
    how_to_answer="Answer with a list of 8 GPU numbers, e.g. ex.cube_mesh_ring.check([0, 1, ...]).",
)

# ---------------------------------------------------------------------------------------------------
# 3. FP16 gradients of D2L's AlexNet

_D2L_PARAMS = 46.8e6
_EXCHANGE_MS = _D2L_PARAMS * 2 / (pcie_bandwidth_gbs(4, 16) * 1e9) * 1e3

fp16_exchange = Exercise(
    key="fp16_exchange", number=3,
    title="FP16 gradients",
    question="Repeat section 4 for D2L's AlexNet (46.8 million parameters) with gradients in "
             "FP16. How long does sending them once take over PCIe 4.0 ×16 (one direction), in milliseconds?",
    hint_text="Bytes = parameters × 2 (FP16); time = bytes / (GB/s × 10^9), then convert seconds to ms.",
    solution_text="46.8 × 10^6 × 2 bytes = 93.6 MB over 31.5 GB/s = 2.97 ms, against 15.5 ms for the 2012 AlexNet's "
                  "FP32 gradients over PCIe 3.0 ×16: 1.3× fewer parameters, half the bytes per number and twice "
                  "the link rate give 5.2× less time. It is still a lower bound: latency and protocol overheads are "
                  "left out, and a ring all-reduce sends about twice the data over each link (notebook 12).",
    checker=number_checker(_EXCHANGE_MS, "ms", rel_tol=0.01, near_misses=[
        (2 * _EXCHANGE_MS, "that is FP32 (4 bytes per gradient); FP16 is 2 bytes."),
        (_EXCHANGE_MS / 2, "you used both directions (63 GB/s); one transfer uses one direction, 31.5 GB/s."),
        (_D2L_PARAMS * 2 / 32e9 * 1e3, "that is 32 GB/s; 128b/130b encoding leaves 31.5 GB/s for ×16."),
        (_EXCHANGE_MS / 1e3, "that is in seconds; give milliseconds."),
        (_EXCHANGE_MS * 8, "you divided bytes by gigabits per second: 31.5 GB/s is 252 Gb/s."),
        (60_965_224 * 2 / (pcie_bandwidth_gbs(4, 16) * 1e9) * 1e3, "that is the 2012 AlexNet's 61 million "
                                                                     "parameters; D2L's has 46.8 million."),
    ]),
    reference=_EXCHANGE_MS,
    wrong=[(2 * _EXCHANGE_MS, "FP16 is 2 bytes"), (_EXCHANGE_MS / 2, "both directions")],
    how_to_answer="Answer in milliseconds, e.g. ex.fp16_exchange.check(1.0).",
)

link_fraction = Exercise(
    key="link_fraction", number=4,
    title="How much of the link?",
    question="On a machine with a GPU, measure pinned host-to-device copies "
             "(`bandwidth.transfer_sweep`) and compare with `topology.pcie_bandwidth_gbs` for the generation and width "
             "NVML reports. What fraction of the link do you reach?",
    hint_text="Compare with the one-direction figure, use the largest pinned copy, and check the generation NVML "
              "reports under load: an idle GPU may drop its link to a lower generation to save power.",
    solution_text="Divide your pinned rate by the one-direction PCIe figure. The recorded H200 line of notebook 04, "
                  "section 5, gives both for PCIe 5.0 ×16: its pinned copies reached most of the link. Fractions of "
                  "75-90 % are typical: each PCIe packet carries headers and the link also carries flow-control "
                  "traffic, so no transfer reaches the raw rate. Pageable copies reach far less because of the "
                  "staging copy. A much lower "
                  "fraction points to a slot wired with fewer lanes than it looks, a link trained at a lower "
                  "generation, or a copy too small to hide the fixed cost of starting it.",
)

# ---------------------------------------------------------------------------------------------------
# 5. A power supply for four T4s

_T4_W = gpu("T4").tdp_w
_T4_LOAD = 4 * _T4_W + 250 + 300
_T4_PSU = _T4_LOAD / (1 - 0.2)

t4_power_supply = Exercise(
    key="t4_power_supply", number=5,
    title="Four T4s",
    question=f"Find the smallest power supply (W) for four T4 cards ({_T4_W:g} W each, "
             "[NVIDIA, 2019](#ref-nvidia_t4_datasheet)) in a server "
             "with a 250 W CPU and 300 W for the rest, keeping 20 % headroom (the load may use at most 80 % of the "
             "supply). Why can T4 servers hold many more cards than servers of 700 W GPUs?",
    hint_text="Add up the load first; the supply's usable 80 % must carry it, so divide the load by 0.8. "
              "`topology.power_budget` returns it as psu_needed.",
    solution_text="Load 4 × 70 + 250 + 300 = 830 W; with 20 % headroom the supply must be 830 / 0.8 = 1,037.5 W, so a "
                  "1,100 W unit in practice. The four GPUs are only a third of the load. A T4 draws 70 W, a tenth of "
                  "an H100 SXM's 700 W, from the PCIe slot alone without extra cables, and it is a low-profile card "
                  "cooled by the server's airflow; twenty of them draw what two 700 W GPUs do. Eight 700 W GPUs draw "
                  "5.6 kW before the CPUs, which needs several supplies and data-centre cooling.",
    checker=number_checker(_T4_PSU, "W", rel_tol=0.01, near_misses=[
        (_T4_LOAD * 1.2, "20 % headroom means the load may use 80 % of the supply: divide by 0.8 rather than "
                         "multiply by 1.2 (996 W would run at 83 %)."),
        (_T4_LOAD, "that is the load without headroom: keep 20 % of the supply free."),
        (4 * _T4_W / 0.8, "the CPU (250 W) and the rest (300 W) draw from the same supply as the GPUs."),
        (4 * 700 / 0.8 + 550 / 0.8, f"that is four 700 W GPUs; a T4 draws {_T4_W:g} W."),
    ]),
    reference=_T4_PSU,
    wrong=[(_T4_LOAD * 1.2, "divide by 0.8"), (_T4_LOAD, "without headroom")],
    how_to_answer="Answer in watts, e.g. ex.t4_power_supply.check(900).",
)

EXERCISES = [shared_lanes, cube_mesh_ring, fp16_exchange, link_fraction, t4_power_supply]
