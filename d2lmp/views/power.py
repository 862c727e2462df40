"""Many slow cores against one fast core on the same power budget: the figure and its widget."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from d2lmp.views.figure import fig_ax, show

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_power_model", "power_widget"]


def plot_power_model(exponent: int, parallel_fraction: float = 1.0, marked: float | None = None,
                     ax: Axes | None = None) -> Figure:
    """Throughput of one power budget spent on cores at each relative clock."""
    from d2lmp.power import EXPONENTS, many_slow_cores

    fig, ax = fig_ax(ax)
    clocks = np.linspace(0.1, 1.0, 91)
    results = [many_slow_cores(f, exponent, parallel_fraction=parallel_fraction) for f in clocks]
    ax.plot(clocks, [r.throughput for r in results], label="throughput, perfectly parallel work")
    if parallel_fraction < 1:
        ax.plot(clocks, [r.speedup for r in results], label=f"speedup with {parallel_fraction:.0%} parallel work")
    if marked is not None:
        r = many_slow_cores(marked, exponent, parallel_fraction=parallel_fraction)
        ax.plot([marked], [r.throughput], "ko")
        ax.annotate(f"{r.cores:.1f} cores → {r.throughput:.1f}×", (marked, r.throughput),
                    textcoords="offset points", xytext=(6, 6))
        if parallel_fraction < 1:
            ax.plot([marked], [r.speedup], "o", color="C1", mec="k")
            ax.annotate(f"{r.speedup:.2f}× speedup", (marked, r.speedup),
                        textcoords="offset points", xytext=(6, -14))
    ax.set(yscale="log", xlabel="clock of each core (fraction of the fast core)",
           ylabel="relative to one fast core", title=f"Same power budget, {EXPONENTS[exponent]}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def power_widget() -> ipywidgets.interactive:
    """Clock fraction, power exponent and parallel fraction → cores and throughput for one budget."""
    import ipywidgets as w

    from d2lmp.power import EXPONENTS, many_slow_cores

    def draw(clock: float = 0.25, exponent: int = 3, parallel: float = 1.0) -> None:
        r = many_slow_cores(clock, exponent, parallel_fraction=parallel)
        print(f"{EXPONENTS[exponent]}: each core at {clock:.0%} clock draws {r.power_per_core:.3f} of the budget, "
              f"so {r.cores:.1f} cores fit; throughput {r.throughput:.2f}×, speedup with "
              f"{parallel:.0%} parallel work {r.speedup:.2f}×")
        show(plot_power_model(exponent, parallel, marked=clock))

    return w.interactive(
        draw,
        clock=w.FloatSlider(value=0.25, min=0.1, max=1.0, step=0.05, description="clock"),
        exponent=w.Dropdown(options=[(v, k) for k, v in EXPONENTS.items()], value=3, description="power law"),
        parallel=w.FloatSlider(value=1.0, min=0.0, max=1.0, step=0.05, description="parallel"),
    )
