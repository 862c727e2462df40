"""Interconnect and power figures: link bandwidth, topologies, the power budget and its widget."""

import pytest
from matplotlib.colors import to_rgba

from d2lmp import topology
from d2lmp.gpu_specs import NOTABLE_GPUS
from d2lmp.views import topology as topology_views

GREEN, BLUE = to_rgba("#2ca02c"), to_rgba("#1f77b4")  # NVLink, PCIe


def test_link_bandwidth_has_a_bar_per_pcie_and_nvlink_generation():
    pcie, nvlink = topology.pcie_table(), topology.nvlink_table()
    ax = topology_views.plot_link_bandwidth(pcie, nvlink).axes[0]
    values = [r.both_directions_gbs for r in pcie] + [r.total_gbs for r in nvlink]
    assert [p.get_height() for p in ax.patches] == pytest.approx(values)
    assert [p.get_facecolor() for p in ax.patches] == [BLUE] * len(pcie) + [GREEN] * len(nvlink)
    assert [t.get_text() for t in ax.get_xticklabels()] == (
        [f"PCIe {r.generation}.0\n×16" for r in pcie] + [f"NVLink {r.generation}\n({r.gpu})" for r in nvlink])
    assert [t.get_text() for t in ax.texts] == [f"{v:,.0f}" for v in values]
    assert ax.get_yscale() == "log"


def test_topology_draws_every_link_between_its_two_nodes_in_its_colour():
    mesh = topology.hybrid_cube_mesh()
    ax = topology_views.plot_topology(mesh).axes[0]
    drawn = [line for line in ax.lines if len(line.get_xdata())]  # the legend's entries are empty lines
    assert len(drawn) == len(mesh.edges)
    for line, (a, b, kind) in zip(drawn, mesh.edges):
        (x1, y1), (x2, y2) = mesh.nodes[a], mesh.nodes[b]
        assert (list(line.get_xdata()), list(line.get_ydata())) == ([x1, x2], [y1, y2])
        assert to_rgba(line.get_color()) == (GREEN if kind == "nvlink" else BLUE)
    assert [t.get_text() for t in ax.texts] == list(mesh.nodes)
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {
        "NVLink" if k == "nvlink" else "PCIe" for *_, k in mesh.edges}
    assert ax.get_title() == mesh.name


def test_power_budget_stacks_the_load_against_the_supply():
    ax = topology_views.plot_power_budget(topology.power_budget(2, 250, cpu_watts=150, other_watts=100)).axes[0]
    assert [(p.get_x(), p.get_width()) for p in ax.patches] == [(0, 500), (500, 150), (650, 100)]
    assert [line.get_xdata()[0] for line in ax.lines] == [800, 1000]  # usable: 1000 W less 20 % headroom
    assert ax.get_title() == "2 GPU(s): load 750 W fits"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "usable (800 W)", "power supply 1,000 W", "GPUs: 500 W", "CPU: 150 W", "rest: 100 W"]
    over = topology_views.plot_power_budget(topology.power_budget(4, 250)).axes[0]
    assert over.get_title() == "4 GPU(s): load 1,250 W does NOT fit"


def test_widget_starts_with_two_rtx_2080_ti(displayed, capsys):
    assert topology_views.power_budget_widget().children
    watts = next(s.tdp_w for s in NOTABLE_GPUS if s.name == "RTX 2080 Ti")
    load = 2 * watts + 150 + 100
    printed = capsys.readouterr().out
    assert f"2 × RTX 2080 Ti ({watts:g} W board power, vendor figure)" in printed
    assert f"= {load:,.0f} W" in printed
    (fig,) = displayed
    assert fig.axes[0].get_title().startswith(f"2 GPU(s): load {load:,.0f} W")
