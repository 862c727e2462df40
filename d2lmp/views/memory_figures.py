"""A source's reported memory per GPU against the model's, one dot a run, coloured by micro-batch.

Dots on the diagonal are runs the model counts exactly; the grey band is ±20 %. Where the source reports PyTorch's
reserved memory (``RunRecord.memory_measure``), what the allocator holds beyond the peak in use (fragmentation) is in
the figure and not in the model, which counts the tensors a step keeps; at a few GB the model's fixed allowance for the
CUDA context and communication buffers, partly outside that figure, lifts the dots above the diagonal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from d2lmp.model.cluster.validation import MEMORY_GOAL, Judgement
from d2lmp.views.figure import fig_ax

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_memory_figures"]


def plot_memory_figures(judgements: Sequence[Judgement], ax: Axes | None = None,
                        title: str = "Memory per GPU, reported and predicted") -> Figure:
    """Reported (x) against predicted (y) gigabytes for every judgement with a memory ratio, coloured by the
    micro-batch on a logarithmic scale; the diagonal and the ±``MEMORY_GOAL`` band in grey. Both axes logarithmic."""
    points = [(j.record.memory_gb, ratio * j.record.memory_gb, j.record.micro_batch or 1)
              for j in judgements if (ratio := j.memory_ratio) is not None and j.record.memory_gb is not None]
    if not points:
        raise ValueError("no reported memory to plot: no judgement has a memory ratio")
    from matplotlib.colors import LogNorm

    fig, ax = fig_ax(ax, figsize=(6.5, 5))
    reported, predicted, batches = zip(*points, strict=True)
    low, high = min(reported + predicted) / 1.5, max(reported + predicted) * 1.5
    line = [low, high]
    ax.fill_between(line, [v * (1 - MEMORY_GOAL) for v in line], [v * (1 + MEMORY_GOAL) for v in line],
                    color="#dddddd", label=f"within ±{MEMORY_GOAL:.0%}")
    ax.plot(line, line, color="#8c8c8c", lw=1, label="predicted = reported")
    dots = ax.scatter(reported, predicted, c=batches, s=12, cmap="viridis", norm=LogNorm(), alpha=0.8)
    fig.colorbar(dots, ax=ax, label="micro-batch (sequences)")
    ax.set(xscale="log", yscale="log", xlim=(low, high), ylim=(low, high), xlabel="reported (GB)",
           ylabel="predicted (GB)", title=title)
    ax.legend(loc="upper left")
    return fig
