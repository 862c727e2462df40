"""A source's reported memory per GPU against the model's: one dot a run, and the ratio against the micro-batch.

Left, reported against predicted gigabytes (10⁹ bytes), coloured by micro-batch: dots on the diagonal are runs the
model counts exactly; the grey band is ±20 %. Right, predicted / reported against the micro-batch, layouts with and
without a pipeline apart, with their medians. Where the source reports PyTorch's reserved memory
(``RunRecord.memory_measure``), what the allocator holds beyond the peak in use (fragmentation) is in the figure and
not in the model, which counts the tensors a step keeps; at a few GB the model's fixed allowance for the CUDA context
and communication buffers, partly outside that figure, lifts the dots above the diagonal.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING

from d2lmp.model.cluster.validation import MEMORY_GOAL, Judgement, memory_ratios_by_micro_batch

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_memory_figures"]

_KINDS = (("no pipeline", "o", "#4c72b0"), ("pipelined", "^", "#dd8452"))


def plot_memory_figures(judgements: Sequence[Judgement],
                        title: str = "Memory per GPU, reported and predicted") -> Figure:
    """Two panels over every judgement with a memory ratio: reported (x) against predicted (y) gigabytes, coloured by
    the micro-batch (both axes logarithmic; the diagonal and the ±``MEMORY_GOAL`` band in grey); and the ratio against
    the micro-batch, without a pipeline and pipelined apart (dots spread a little sideways), with each kind's median."""
    rows = [(j.record.memory_gb, ratio, j.record.micro_batch or 1, (j.record.pp or 1) > 1)
            for j in judgements if (ratio := j.memory_ratio) is not None and j.record.memory_gb is not None]
    if not rows:
        raise ValueError("no reported memory to plot: no judgement has a memory ratio")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8), width_ratios=(1.15, 1))
    reported = [r[0] for r in rows]
    predicted = [r[0] * r[1] for r in rows]
    low, high = min(reported + predicted) / 1.5, max(reported + predicted) * 1.5
    line = [low, high]
    left.fill_between(line, [v * (1 - MEMORY_GOAL) for v in line], [v * (1 + MEMORY_GOAL) for v in line],
                      color="#dddddd", label=f"within ±{MEMORY_GOAL:.0%}")
    left.plot(line, line, color="#8c8c8c", lw=1, label="predicted = reported")
    dots = left.scatter(reported, predicted, c=[r[2] for r in rows], s=12, cmap="viridis", norm=LogNorm(), alpha=0.8)
    fig.colorbar(dots, ax=left, label="micro-batch (sequences)")
    left.set(xscale="log", yscale="log", xlim=(low, high), ylim=(low, high), xlabel="reported (GB, 10⁹ bytes)",
             ylabel="predicted (GB, 10⁹ bytes)", title=title)
    left.legend(loc="upper left")
    right.axhspan(1 - MEMORY_GOAL, 1 + MEMORY_GOAL, color="#dddddd")
    right.axhline(1, color="#8c8c8c", lw=1)
    for offset, (kind, marker, colour) in zip((-0.08, 0.08), _KINDS, strict=True):
        pipelined = kind == "pipelined"
        by_batch = memory_ratios_by_micro_batch(j for j in judgements if ((j.record.pp or 1) > 1) == pipelined)
        if not by_batch:
            continue
        mine = [r for r in rows if r[3] == pipelined]
        right.scatter([r[2] * 2 ** (offset + 0.06 * ((i % 5) - 2) / 2) for i, r in enumerate(mine)],
                      [r[1] for r in mine], s=8, marker=marker, color=colour, alpha=0.35)
        right.plot(list(by_batch), [statistics.median(r) for r in by_batch.values()], "-" + marker,
                   color=colour, lw=2, label=f"{kind}, median")
    batches = sorted({r[2] for r in rows})
    right.set_xscale("log", base=2)
    right.set_xticks(batches, [str(b) for b in batches])
    right.set(xlabel="micro-batch (sequences)", ylabel="predicted / reported", title="The ratio by micro-batch")
    right.legend(loc="upper right")
    fig.tight_layout()
    return fig
