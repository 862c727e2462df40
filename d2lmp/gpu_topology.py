"""This machine's GPU topology, read from the NVIDIA driver through NVML, as ``nvidia-smi topo -m`` prints it.

Returns a matrix ("X", "NV<n>" for n NVLink links, or the PCIe level) and one sentence; without NVML, a driver or
two GPUs it says why instead of raising. The sourced link tables and drawn topologies are ``d2lmp.topology``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["nvml_topology"]


def nvml_topology() -> tuple[list[list[str]] | None, str]:
    """(matrix like ``nvidia-smi topo -m``: "X", "NV<n>" or a PCIe level, one sentence).

    NVLink counts come from each link's remote PCI bus id; otherwise the common PCIe ancestor:
    INTERNAL (one board), PIX (same switch), PXB (several switches), PHB (host bridge), NODE (same NUMA node), SYS.
    Returns (None, reason) with fewer than two NVIDIA GPUs or no NVML.
    """
    try:
        import pynvml
    except ImportError:
        return None, "The pynvml module (package nvidia-ml-py) is not installed."
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        return None, (f"No NVIDIA driver (NVML could not start: {type(exc).__name__}), "
                      "so there is no GPU topology to read.")
    try:
        count = pynvml.nvmlDeviceGetCount()
        if count < 2:
            return None, f"NVML sees {count} GPU(s); a topology needs two or more."
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        bus = [_bus_id(pynvml.nvmlDeviceGetPciInfo(h)) for h in handles]
        links = [[0] * count for _ in range(count)]
        for i, h in enumerate(handles):
            for link in range(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18)):
                try:
                    if pynvml.nvmlDeviceGetNvLinkState(h, link) != 1:
                        continue
                    remote = _bus_id(pynvml.nvmlDeviceGetNvLinkRemotePciInfo(h, link))
                except Exception:
                    continue
                if remote in bus:
                    links[i][bus.index(remote)] += 1
        # nvmlGpuTopologyLevel_t: INTERNAL (0, two GPUs on one board), SINGLE, MULTIPLE, HOSTBRIDGE, NODE, SYSTEM,
        # the last five under nvidia-smi's names
        levels = {0: "INTERNAL", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
        matrix = []
        for i in range(count):
            row = []
            for j in range(count):
                if i == j:
                    row.append("X")
                elif links[i][j]:
                    row.append(f"NV{links[i][j]}")
                else:
                    try:
                        level = pynvml.nvmlDeviceGetTopologyCommonAncestor(handles[i], handles[j])
                        row.append(levels.get(int(level), str(level)))
                    except Exception:
                        row.append("?")
            matrix.append(row)
        return matrix, f"NVML topology of {count} GPUs (NV<n>: n NVLink links; otherwise the PCIe path)."
    finally:
        pynvml.nvmlShutdown()


def _bus_id(pci: Any) -> str:
    bus = pci.busId
    bus = bus.decode() if isinstance(bus, bytes) else bus
    return bus.lower()[-12:]
