"""The communication roofline on screen: each link's roof and the strategies under it.

It draws each link's roof (as notebook 03 draws a machine's), strategies placed under them, and a widget (strategy,
model, batch, group size, link) that moves a point across the ridge.

The arithmetic is ``model.cluster.comm_roofline``'s; ``roofline_case`` (names in, a ``CommPoint`` out) is the pure
function the widget wraps. The y axis is the FLOP/s the roof allows, ``min(P, I·B)``: the flat part is the
matrix rate, the sloped parts one per link, and a point sits on the roof of the link its group crosses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from d2lmp.model.cluster.comm_roofline import (
    LINK_NAMES,
    STRATEGIES,
    CommPoint,
    LinkRoof,
    available_roofs,
    describe_point,
    link_roof,
    strategy_point,
)
from d2lmp.model.cluster.presets import MODEL_PRESETS, model_preset
from d2lmp.model.vocabulary import LinkKind, RoofStrategy
from d2lmp.views.figure import fig_ax, show

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["LINK_COLOURS", "roofline_case", "available_roofs", "plot_comm_roofline", "describe_point",
           "comm_roofline_widget"]

LINK_COLOURS: dict[LinkKind, str] = {"nvlink": "#55a868", "network": "#c44e52", "pcie": "#8172b2"}
MARKERS: dict[RoofStrategy, str] = {"dp": "o", "zero3": "D", "tp": "s", "pp": "^", "cp": "v", "ep": "P"}


def roofline_case(strategy: RoofStrategy = "tp", model: str = "175B", link: LinkKind = "nvlink",
                  gpu: str = "A100-80GB", ranks: int = 8, sequences: int = 1) -> CommPoint:
    """The point of ``strategy`` for a named model on ``gpu`` sending over ``link``, with ``ranks`` in its group
    and ``sequences`` per replica (DP), per device (ZeRO-3) or per micro-batch (TP, PP, CP)."""
    return strategy_point(strategy, model_preset(model).model, link_roof(gpu, link), ranks, sequences)


def plot_comm_roofline(points: Sequence[CommPoint], roofs: Sequence[LinkRoof] = (), ax: Axes | None = None,
                       title: str = "Communication roofline") -> Figure:
    """A log-log roofline per link (TFLOP/s the roof allows against FLOPs per byte sent) with ``points`` on them.

    ``roofs`` defaults to the roofs the points stand on; each ridge is a dotted line in its link's colour.
    """
    if not points and not roofs:
        raise ValueError("nothing to draw: give points or roofs")
    roofs = list(dict.fromkeys(list(roofs) + [p.roof for p in points]))
    fig, ax = fig_ax(ax, figsize=(10, 4.2 + 0.22 * (len(points) + len(roofs))))
    xs = [p.intensity for p in points] + [r.ridge for r in roofs]
    lo, hi = min(xs) / 8, max(xs) * 8
    for roof in roofs:  # the sloped part of each link's roof, up to its ridge
        ai = np.logspace(np.log10(lo), np.log10(roof.ridge), 100)
        ax.plot(ai, ai * roof.bytes_per_s / 1e12, "-", color=LINK_COLOURS[roof.link], lw=2,
                label=f"{roof.name}: {roof.bytes_per_s / 1e9:,.3g} GB/s, ridge {roof.ridge:,.0f} FLOP/byte")
        ax.axvline(roof.ridge, color=LINK_COLOURS[roof.link], ls=":", lw=1.2)
    for rate in sorted({r.flops_per_s for r in roofs}):  # the flat part: the matrix rate
        ax.plot([min(r.ridge for r in roofs if r.flops_per_s == rate), hi], [rate / 1e12] * 2, "k-", lw=2,
                label=f"matrix products: {rate / 1e12:,.0f} TFLOP/s")
    for p in points:
        ax.plot(p.intensity, p.attainable_flops / 1e12, MARKERS[p.strategy], ms=9, ls="none",
                color=LINK_COLOURS[p.roof.link], markeredgecolor="k",
                label=f"{p.label}: {p.bound}-bound")
    ax.set(xscale="log", yscale="log", xlabel="FLOPs a device computes per byte it sends",
           ylabel="attainable TFLOP/s", title=title, xlim=(lo, hi))
    low = min(r.attainable(lo) for r in roofs) / 1e12
    ax.set_ylim(low / 1.5, max(r.flops_per_s for r in roofs) / 1e12 * 2)
    ax.grid(True, which="both", alpha=0.3)
    from matplotlib.transforms import ScaledTranslation

    below_xlabel = ax.transAxes + ScaledTranslation(0, -0.6, fig.dpi_scale_trans)  # 0.6 inch under the axes
    ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, 0), bbox_transform=below_xlabel)
    fig.tight_layout()
    return fig


def comm_roofline_widget(gpu: str = "A100-80GB") -> ipywidgets.interactive:
    """Strategy, model, batch, group size and link → the strategy's point under ``gpu``'s roofs."""
    import ipywidgets as w

    roofs = available_roofs(gpu)
    links = [r.link for r in roofs]

    def draw(strategy: RoofStrategy = "tp", model: str = "175B", sequences: int = 1, ranks: int = 8,
             link: LinkKind = "nvlink") -> None:
        point = roofline_case(strategy, model, link, gpu, ranks, sequences)
        print(describe_point(point))
        show(plot_comm_roofline([point], roofs, title=f"{model} on {gpu}: {STRATEGIES[strategy]}"))

    return w.interactive(
        draw,
        strategy=w.Dropdown(options=[(name, key) for key, name in STRATEGIES.items()], value="tp",
                            description="strategy"),
        model=w.Dropdown(options=list(MODEL_PRESETS), value="175B", description="model"),
        sequences=w.SelectionSlider(options=[2**k for k in range(12)], value=1, description="sequences"),
        ranks=w.SelectionSlider(options=[2, 4, 8, 16, 32, 64, 128, 1024], value=8, description="ranks"),
        link=w.Dropdown(options=[(LINK_NAMES[k], k) for k in links], value="nvlink", description="link"),
    )
