"""Activation recomputation as a picture: which boundaries are kept, which segment is recomputed when, and the peak.

A schematic chain of layers, each saving one unit for backward, cut into segments as ``recompute.checkpointed``
cuts it (every segment checkpointed but the last). ``held_over_time`` steps through forward and backward and
counts the units held, as ``recompute.predict_saved_with_recompute`` adds them up: after forward the
checkpointed segments' inputs and the last segment's saves; during backward, while segment ``k`` is recomputed,
its saves and the inputs of segments ``0..k``. ``plot_recompute`` draws the chain and the two curves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from d2lmp.views.figure import fig_ax

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["held_over_time", "plot_recompute"]

_KEPT, _SAVED, _RECOMPUTED = "#1f77b4", "#55a868", "#dd8452"


def held_over_time(sizes: Sequence[int], checkpointed: bool = True) -> list[tuple[str, int]]:
    """(phase, units held after it) for each step of one forward and backward of a chain cut into segments of
    ``sizes`` layers, one unit saved per layer; phases are "forward", "recompute <k>" and "backward". Without
    ``checkpointed`` every layer keeps its unit from its forward to its backward."""
    if not sizes or min(sizes) < 1:
        raise ValueError(f"need at least one segment of at least one layer, got {list(sizes)}")
    trace, held = [], 0
    last = len(sizes) - 1
    for k, n in enumerate(sizes):
        for i in range(n):
            if not checkpointed or k == last or i == 0:  # a checkpointed segment keeps only its input
                held += 1
            trace.append(("forward", held))
    for k in range(last, -1, -1):
        n = sizes[k]
        if checkpointed and k != last:
            held -= 1  # its kept input becomes the first layer's save again
            for _ in range(n):
                held += 1
                trace.append((f"recompute {k}", held))
        for _ in range(n):
            held -= 1
            trace.append(("backward", held))
    return trace


def plot_recompute(sizes: Sequence[int], ax: Axes | None = None) -> Figure:
    """Top: the chain, segment by segment, the kept inputs marked and the recomputed segments hatched. Bottom:
    units held over one step, plain and checkpointed, each peak marked. Returns the Figure."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    if ax is None:
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.5, 4.6), gridspec_kw={"height_ratios": [1, 2.2]})
    else:
        fig, bottom = fig_ax(ax)
        top = None
    last = len(sizes) - 1
    if top is not None:
        x = 0
        for k, n in enumerate(sizes):
            for i in range(n):
                recomputed = k != last
                top.add_patch(Rectangle((x + 0.05, 0), 0.9, 1, facecolor="white" if recomputed else _SAVED,
                                            edgecolor=_RECOMPUTED if recomputed else "black",
                                            hatch="///" if recomputed else None, lw=1))
                if i == 0 and recomputed:
                    top.plot([x + 0.05, x + 0.05], [-0.15, 1.15], color=_KEPT, lw=4)
                x += 1
            top.text(x - n / 2, 1.25, f"segment {k}" + ("" if k != last else "\nnot checkpointed"), ha="center",
                     va="bottom", fontsize=8)
        top.set_xlim(-0.2, x + 0.2)
        top.set_ylim(-0.4, 2.3)
        top.axis("off")
        top.set_title("kept input (blue bar), recomputed in backward (hatched), saved in forward (green)", fontsize=8)
    for checkpointed, colour, label in ((False, "#999999", "plain"), (True, _KEPT, "checkpointed")):
        trace = held_over_time(sizes, checkpointed)
        ys = [0] + [h for _, h in trace]
        bottom.step(range(len(ys)), ys, where="post", color=colour, lw=1.8, label=label)
        peak = max(ys)
        at = ys.index(peak)
        bottom.annotate(f"peak {peak}", (at, peak), textcoords="offset points", xytext=(4, 4), fontsize=8,
                        color=colour)
        if checkpointed:
            for step, (phase, _) in enumerate(trace):
                if phase.startswith("recompute"):
                    bottom.axvspan(step, step + 1, color=_RECOMPUTED, alpha=0.15, lw=0)
    bottom.set(xlabel="step of one forward and backward (recomputation shaded)", ylabel="units held (one per layer)")
    bottom.set_ylim(0, 1.2 * sum(sizes))
    bottom.legend(fontsize=8, loc="upper right")
    bottom.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig
