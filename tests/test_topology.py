"""Link bandwidth tables (facts.md §5), topologies, the power budget and the bandwidth helpers."""

import pytest
import torch

from d2lmp import bandwidth, topology


def test_pcie_matches_facts():
    assert topology.pcie_bandwidth_gbs(3, 16) == pytest.approx(15.75, abs=0.01)
    assert topology.pcie_bandwidth_gbs(4, 16) == pytest.approx(31.5, abs=0.02)
    assert topology.pcie_bandwidth_gbs(5, 16, both_directions=True) == pytest.approx(126, abs=0.1)
    assert topology.pcie_bandwidth_gbs(2, 1) == 0.5
    with pytest.raises(ValueError, match="generation"):
        topology.pcie_bandwidth_gbs(7)
    with pytest.raises(ValueError, match="lanes"):
        topology.pcie_bandwidth_gbs(4, 3)


def test_nvlink_matches_facts():
    totals = {r["generation"]: r["total_gbs"] for r in topology.nvlink_table()}
    assert totals == {1: 160, 2: 300, 3: 600, 4: 900, 5: 1800}
    assert topology.nvlink_table()[3]["vs_pcie5_x16"] > 7  # "over 7X the bandwidth of PCIe Gen5"
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
    matrix, sentence = topology.nvml_topology()
    assert isinstance(sentence, str)
    if torch.cuda.device_count() < 2:
        assert matrix is None


def test_power_budget():
    b = topology.power_budget(4, 250, 150, 100, 1500, 0.2)
    assert b["load"] == 1250 and b["usable"] == 1200 and not b["fits"]
    assert b["psu_needed"] == pytest.approx(1562.5)
    assert topology.power_budget(1, 70, psu_watts=500)["fits"]
    with pytest.raises(ValueError):
        topology.power_budget(1, 250, headroom=1.0)


def test_bus_bandwidth_and_table():
    assert bandwidth.bus_bandwidth_gbs(352, 14) == 616  # RTX 2080 Ti (facts.md §4)
    rows = {r["name"]: r for r in bandwidth.gpu_memory_table()}
    assert rows["H200 SXM"]["gbps_per_pin"] == pytest.approx(6.25)
    assert rows["T4"]["gbps_per_pin"] == pytest.approx(10)
    with pytest.raises(ValueError):
        bandwidth.bus_bandwidth_gbs(0, 1)


def test_device_copy_sweep_on_cpu_and_gpu_only_transfer():
    rows = bandwidth.device_copy_sweep("cpu", megabytes=(1, 2), min_time=0.01)
    assert [r["megabytes"] for r in rows] == [1, 2] and all(r["gbs"] > 0 for r in rows)
    with pytest.raises(ValueError, match="CUDA"):
        bandwidth.host_device_copy("cpu", 1, pinned=False)
    with pytest.raises(ValueError, match="direction"):
        bandwidth.host_device_copy("cpu", 1, pinned=False, direction="up")
