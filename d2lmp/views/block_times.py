"""A block's milliseconds a micro-batch, published and predicted, against the micro-batch.

Where the dots sit level as the micro-batch grows, something other than the GPU's arithmetic sets the time: the host
that launches its kernels, or the fixed latency of many messages; the data are ``model.cluster.block_times``'s."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from d2lmp.model.cluster.block_times import BlockTime
from d2lmp.views.figure import fig_ax

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_block_times"]


def _size(label: str) -> tuple[float, str]:
    """Sort key for model names such as "8B" and "80B": by the number of parameters, names without one last."""
    number = label.rstrip("BM")
    scale = {"B": 1e9, "M": 1e6}.get(label[-1:], 1.0)
    try:
        return float(number) * scale, label
    except ValueError:
        return float("inf"), label


def plot_block_times(times: Sequence[BlockTime], host_ms: float | None, ax: Axes | None = None,
                     title: str = "One block and micro-batch, forward and backward",
                     alternative: str = "model, no launch time") -> Figure:
    """Per model (one colour each, in order of size): the published medians as dots, the model as a line, the model with
    the alternative parameters (named ``alternative`` in the legend) dashed; the host's ``host_ms`` as a grey floor
    (None: none drawn). Both axes logarithmic."""
    if not times:
        raise ValueError("no block times to plot: no judged rows matched")
    fig, ax = fig_ax(ax, figsize=(7.5, 4.5))
    colours = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b2")
    for colour, label in zip(colours, sorted(dict.fromkeys(t.label for t in times), key=_size), strict=False):
        mine = [t for t in times if t.label == label]
        x = [t.micro_batch for t in mine]
        ax.plot(x, [t.published_ms for t in mine], "o", color=colour, label=label)
        ax.plot(x, [t.predicted_ms for t in mine], "-", color=colour)
        ax.plot(x, [t.alternative_ms for t in mine], "--", color=colour, alpha=0.6)
    for style, what in (("o", "published (median)"), ("-", "model"), ("--", alternative)):
        ax.plot([], [], style, color="#555555", label=what)
    if host_ms is not None:
        ax.axhline(host_ms, color="#8c8c8c", lw=1)
        ax.annotate(f"host's launches, {host_ms:g} ms", (max(t.micro_batch for t in times), host_ms),
                    xytext=(-2, -12), textcoords="offset points", ha="right", color="#555555", fontsize=9)
    ax.set(xscale="log", yscale="log", xlabel="micro-batch (sequences)",
           ylabel="milliseconds per block per micro-batch", title=title)
    batches = sorted({t.micro_batch for t in times})
    ax.set_xticks(batches, [str(b) for b in batches])
    from matplotlib.ticker import FuncFormatter

    plain = FuncFormatter(lambda value, _: f"{value:g}")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.tight_layout()
    return fig
