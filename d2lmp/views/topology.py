"""How GPUs are connected and powered: link bandwidth per generation, topology drawings, and the
power budget of a machine (with a widget)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from d2lmp.views.figure import fig_ax, show

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from d2lmp.topology import NVLinkRow, PCIeRow, PowerBudget, Topology

__all__ = ["plot_link_bandwidth", "plot_topology", "plot_power_budget", "power_budget_widget"]


def plot_link_bandwidth(pcie_rows: Sequence[PCIeRow], nvlink_rows: Sequence[NVLinkRow], ax: Axes | None = None,
                        title: str = "Link bandwidth per GPU (both directions)") -> Figure:
    """Bars: PCIe ×16 and NVLink per generation (rows from ``topology.pcie_table`` / ``nvlink_table``)."""
    fig, ax = fig_ax(ax, figsize=(8, 3.8))
    names = [f"PCIe {r.generation}.0\n×16" for r in pcie_rows] + [f"NVLink {r.generation}\n({r.gpu})"
                                                                  for r in nvlink_rows]
    values = [r.both_directions_gbs for r in pcie_rows] + [r.total_gbs for r in nvlink_rows]
    colours = ["#1f77b4"] * len(pcie_rows) + ["#2ca02c"] * len(nvlink_rows)
    bars = ax.bar(range(len(names)), values, color=colours)
    for b, v in zip(bars, values):
        ax.annotate(f"{v:,.0f}", (b.get_x() + b.get_width() / 2, v), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, fontsize=7)
    ax.set(yscale="log", ylabel="GB/s (both directions)", title=title)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    return fig


def plot_topology(topology: Topology, ax: Axes | None = None) -> Figure:
    """Draw a ``topology.Topology``: GPUs as boxes, switches and CPUs as grey boxes, NVLink green, PCIe blue."""
    fig, ax = fig_ax(ax, figsize=(4.5, 3.6))
    colours = {"nvlink": "#2ca02c", "pcie": "#1f77b4"}
    for a, b, kind in topology.edges:
        (x1, y1), (x2, y2) = topology.nodes[a], topology.nodes[b]
        ax.plot([x1, x2], [y1, y2], color=colours.get(kind, "k"), lw=2, alpha=0.8, zorder=1)
    for name, (x, y) in topology.nodes.items():
        gpu = name.startswith("GPU")
        ax.text(x, y, name, ha="center", va="center", fontsize=7 if gpu else 6, zorder=2,
                bbox=dict(boxstyle="round,pad=0.3", fc="#fde0b6" if gpu else "#dddddd", ec="k"))
    for kind, c in colours.items():
        if any(k == kind for *_, k in topology.edges):
            ax.plot([], [], color=c, lw=2, label="NVLink" if kind == "nvlink" else "PCIe")
    ax.set_title(topology.name, fontsize=10)
    ax.margins(0.15)
    ax.axis("off")
    ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, -0.15), ncol=2)
    return fig


def plot_power_budget(budget: PowerBudget, ax: Axes | None = None) -> Figure:
    """One stacked bar of the load (GPUs, CPU, rest) against the supply and its usable part."""
    fig, ax = fig_ax(ax, figsize=(7, 2.4))
    left = 0.0
    for label, value, colour in (("GPUs", budget.gpu_total, "#2ca02c"), ("CPU", budget.cpu, "#1f77b4"),
                                 ("rest", budget.other, "#8c8c8c")):
        ax.barh([0], [value], left=left, color=colour, label=f"{label}: {value:,.0f} W")
        left += value
    ax.axvline(budget.usable, color="orange", ls="--", label=f"usable ({budget.usable:,.0f} W)")
    ax.axvline(budget.psu, color="red", lw=2, label=f"power supply {budget.psu:,.0f} W")
    verdict = "fits" if budget.fits else "does NOT fit"
    ax.set(yticks=[], xlabel="watts", xlim=(0, max(budget.psu, budget.load) * 1.1),
           title=f"{budget.gpus} GPU(s): load {budget.load:,.0f} W {verdict}")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.tight_layout()
    return fig


def power_budget_widget() -> ipywidgets.interactive:
    """GPUs × board power + CPU + the rest against a power supply kept below a headroom."""
    import ipywidgets as w

    from d2lmp.gpu_specs import NOTABLE_GPUS
    from d2lmp.topology import power_budget

    def draw(gpus: int = 2, gpu: str = "RTX 2080 Ti", cpu_watts: int = 150, other_watts: int = 100,
             psu_watts: int = 1000, headroom: float = 0.2) -> None:
        spec = next(s for s in NOTABLE_GPUS if s.name == gpu)
        b = power_budget(gpus, spec.tdp_w, cpu_watts, other_watts, psu_watts, headroom)
        print(f"{gpus} × {spec.name} ({spec.tdp_w:g} W board power, vendor figure) + CPU {cpu_watts} W + rest "
              f"{other_watts} W = {b.load:,.0f} W; supply needed with {headroom:.0%} headroom: "
              f"{b.psu_needed:,.0f} W → {'fits' if b.fits else 'does not fit'}")
        show(plot_power_budget(b))

    return w.interactive(draw,
                         gpus=w.IntSlider(2, 1, 8, 1, description="GPUs"),
                         gpu=w.Dropdown(options=[s.name for s in NOTABLE_GPUS], value="RTX 2080 Ti", description="GPU"),
                         cpu_watts=w.IntSlider(150, 50, 700, 10, description="CPU W"),
                         other_watts=w.IntSlider(100, 0, 1000, 10, description="rest W"),
                         psu_watts=w.IntSlider(1000, 300, 6000, 50, description="supply W"),
                         headroom=w.FloatSlider(value=0.2, min=0.0, max=0.5, step=0.05, description="headroom"))
