"""Interconnect and power figures: link bandwidth, topologies, the power budget and its widget."""



import matplotlib.pyplot as plt

from d2lmp import topology
from d2lmp.views import topology as topology_views


def test_figures_build():
    figs = [
        topology_views.plot_link_bandwidth(topology.pcie_table(), topology.nvlink_table()),
        topology_views.plot_topology(topology.hybrid_cube_mesh()),
        topology_views.plot_power_budget(topology.power_budget(2, 250)),
    ]
    assert all(f.axes for f in figs)
    plt.close("all")


def test_widget_builds():
    assert topology_views.power_budget_widget().children
    plt.close("all")
