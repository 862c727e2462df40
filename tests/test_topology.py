"""Link bandwidth tables (PCI-SIG and NVIDIA figures: topology.PCIE_SOURCES, NVLINK_SOURCES), topologies, the
power budget and the bandwidth helpers."""

import sys
import types

import pytest
import torch

from d2lmp import bandwidth, gpu_topology, topology


def test_pcie_matches_the_specifications():
    assert topology.pcie_bandwidth_gbs(3, 16) == pytest.approx(15.75, abs=0.01)
    assert topology.pcie_bandwidth_gbs(4, 16) == pytest.approx(31.5, abs=0.02)
    assert topology.pcie_bandwidth_gbs(5, 16, both_directions=True) == pytest.approx(126, abs=0.1)
    assert topology.pcie_bandwidth_gbs(2, 1) == 0.5
    with pytest.raises(ValueError, match="generation"):
        topology.pcie_bandwidth_gbs(7)
    with pytest.raises(ValueError, match="lanes"):
        topology.pcie_bandwidth_gbs(4, 3)


def test_nvlink_matches_nvidia():
    totals = {r.generation: r.total_gbs for r in topology.nvlink_table()}
    assert totals == {1: 160, 2: 300, 3: 600, 4: 900, 5: 1800}
    assert topology.nvlink_table()[3].vs_pcie5_x16 > 7  # "over 7X the bandwidth of PCIe Gen5"
    with pytest.raises(ValueError):
        topology.nvlink_bandwidth_gbs(2, links=7)


def test_topologies():
    cube = topology.hybrid_cube_mesh()
    assert cube.gpu_pairs_direct("nvlink") == 16
    hops = topology.hop_counts(cube)
    assert len(hops) == 28 and max(hops.values()) == 2 and list(hops.values()).count(1) == 16
    assert all(cube.degree(g) == 4 for g in cube.nodes)
    assert set(topology.hop_counts(topology.nvswitch()).values()) == {1}
    tree = topology.pcie_tree(4, 2)
    assert set(topology.hop_counts(tree, "nvlink").values()) == {None}
    with pytest.raises(ValueError):
        topology.pcie_tree(3, 2)


def test_nvml_topology_never_raises():
    matrix, sentence = gpu_topology.nvml_topology()
    assert isinstance(sentence, str)
    if torch.cuda.device_count() < 2:
        assert matrix is None


def test_power_budget():
    b = topology.power_budget(4, 250, 150, 100, 1500, 0.2)
    assert b.load == 1250 and b.usable == 1200 and not b.fits
    assert b.psu_needed == pytest.approx(1562.5)
    assert topology.power_budget(1, 70, psu_watts=500).fits
    with pytest.raises(ValueError):
        topology.power_budget(1, 250, headroom=1.0)


def test_bus_bandwidth_and_table():
    assert bandwidth.bus_bandwidth_gbs(352, 14) == 616  # RTX 2080 Ti (Turing whitepaper, Table 1)
    rows = {r.name: r for r in bandwidth.gpu_memory_table()}
    assert rows["H200 SXM"].gbps_per_pin == pytest.approx(6.25)
    assert rows["T4"].gbps_per_pin == pytest.approx(10)
    with pytest.raises(ValueError):
        bandwidth.bus_bandwidth_gbs(0, 1)


def test_device_copy_sweep_on_cpu_and_gpu_only_transfer():
    rows = bandwidth.device_copy_sweep("cpu", megabytes=(1, 2), min_time=0.01)
    assert [r.megabytes for r in rows] == [1, 2] and all(r.gbs > 0 for r in rows)
    with pytest.raises(ValueError, match="CUDA"):
        bandwidth.host_device_copy("cpu", 1, pinned=False)
    with pytest.raises(ValueError, match="direction"):
        bandwidth.host_device_copy("cpu", 1, pinned=False, direction="up")


def test_measure_bandwidth_is_positive_and_bad_size_rejected():
    assert bandwidth.measure_bandwidth("cpu", megabytes=8, min_time=0.01) > 0
    with pytest.raises(ValueError):
        bandwidth.measure_bandwidth("cpu", megabytes=0)


def test_device_copy_sweep_rows():
    rows = bandwidth.device_copy_sweep("cpu", megabytes=(1, 2), min_time=0.01)
    assert [r.megabytes for r in rows] == [1, 2]
    assert rows[1].bytes_touched == 4 * 2**20
    assert all(r.gbs > 0 for r in rows)
    with pytest.raises(ValueError):
        bandwidth.device_copy_sweep("cpu", megabytes=())


class _NvmlError(Exception):
    pass


def _fake_topology_pynvml(count=3, init_error=None):
    """A stand-in for pynvml: GPU0 and GPU1 joined by two NVLinks, GPU2 on PCIe only.

    GPU0 also has a link up to an NVSwitch (a bus id that is no GPU) and a link whose query
    fails; bus ids differ in case and domain width, as NVML's do between calls.
    """
    m = types.ModuleType("pynvml")
    m.NVML_NVLINK_MAX_LINKS = 6
    calls = []
    bus = ["00000000:1B:00.0", "00000000:3D:00.0", "00000000:B1:00.0"][:count]
    links = {  # (gpu, link) -> remote bus id as NVML reports it
        (0, 0): "0000:3d:00.0", (0, 1): "0000:3D:00.0", (0, 2): "00000000:C0:00.0",
        (1, 0): "0000:1b:00.0", (1, 1): "00000000:1B:00.0",
    }

    def init():
        if init_error:
            raise init_error
        calls.append("init")

    m.nvmlInit = init
    m.nvmlShutdown = lambda: calls.append("shutdown")
    m.nvmlDeviceGetCount = lambda: count
    m.nvmlDeviceGetHandleByIndex = lambda i: i
    m.nvmlDeviceGetPciInfo = lambda h: types.SimpleNamespace(busId=bus[h].encode())

    def state(h, link):
        if (h, link) == (0, 3):
            raise _NvmlError("link query not supported")
        return 1 if (h, link) in links else 0

    m.nvmlDeviceGetNvLinkState = state
    m.nvmlDeviceGetNvLinkRemotePciInfo = lambda h, link: types.SimpleNamespace(busId=links[(h, link)])
    levels = {frozenset((0, 2)): 20, frozenset((1, 2)): 50, frozenset((0, 1)): 10}

    def ancestor(a, b):
        return levels[frozenset((a, b))]

    m.nvmlDeviceGetTopologyCommonAncestor = ancestor
    return m, calls


def test_nvml_topology_with_fake_library(monkeypatch):
    fake, calls = _fake_topology_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    matrix, sentence = gpu_topology.nvml_topology()
    assert matrix == [["X", "NV2", "PXB"],
                      ["NV2", "X", "SYS"],
                      ["PXB", "SYS", "X"]]
    assert "3 GPUs" in sentence
    assert calls == ["init", "shutdown"]


def test_nvml_topology_unknown_level_and_failed_query(monkeypatch):
    fake, _ = _fake_topology_pynvml()
    levels = {frozenset((0, 2)): 70}

    def ancestor(a, b):
        if frozenset((a, b)) == frozenset((1, 2)):
            raise _NvmlError("not supported")
        return levels[frozenset((a, b))]

    fake.nvmlDeviceGetTopologyCommonAncestor = ancestor
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    matrix, _ = gpu_topology.nvml_topology()
    assert matrix[0][2] == "70" and matrix[1][2] == "?" and matrix[0][1] == "NV2"


def test_nvml_topology_one_gpu_or_no_driver(monkeypatch):
    fake, calls = _fake_topology_pynvml(count=1)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    matrix, sentence = gpu_topology.nvml_topology()
    assert matrix is None and "1 GPU" in sentence and calls == ["init", "shutdown"]
    fake, calls = _fake_topology_pynvml(init_error=RuntimeError("NVML Shared Library Not Found"))
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    matrix, sentence = gpu_topology.nvml_topology()
    assert matrix is None and "No NVIDIA driver" in sentence and calls == []
