"""Data-parallel training in pictures: accuracy against the global batch, and BatchNorm's per-rank gap.

It draws test accuracy against the global batch with the linear scaling rule on and off, and BatchNorm's per-rank
against synchronised statistics (their distance from one device, and the accuracy)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from d2lmp.parallel.dp_batchnorm import BatchNormAccuracy, BatchNormGap
from d2lmp.parallel.dp_training import LRScalingRow
from d2lmp.views.figure import fig_ax

__all__ = ["plot_lr_scaling", "plot_batchnorm_gaps", "plot_batchnorm_accuracy"]

_RULE_COLOURS = {False: "#c44e52", True: "#4c72b0"}


def plot_lr_scaling(rows: Sequence[LRScalingRow], ax: Any = None) -> Any:
    """Final test accuracy against the global batch (log scale), the rule off and on: solid lines on the ranks,
    dotted lines on one device."""
    if not rows:
        raise ValueError("no rows to plot: pass the rows lr_scaling_table returned")
    fig, ax = fig_ax(ax, figsize=(6.5, 4))
    for rule in (False, True):
        mine = sorted((r for r in rows if r.rule == rule), key=lambda r: r.global_batch)
        if not mine:
            continue
        batches = [r.global_batch for r in mine]
        name = "linear scaling + warm-up" if rule else "same learning rate"
        ax.plot(batches, [r.ranks_acc for r in mine], "o-", color=_RULE_COLOURS[rule],
                label=f"{name}, {mine[0].ranks} ranks")
        ax.plot(batches, [r.one_device_acc for r in mine], "x:", color=_RULE_COLOURS[rule], label=f"{name}, 1 device")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted({r.global_batch for r in rows}))
    ax.set_xticklabels([str(b) for b in sorted({r.global_batch for r in rows})])
    ax.set(xlabel="global batch (examples per step)", ylabel="test accuracy",
           title="The same epochs, a growing global batch")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig


# One colour pair per kind of statistics (red: per rank, blue: synchronised), dark for the fewest ranks.
_KIND_PAIRS = (("#c44e52", "#e8a3a5"), ("#4c72b0", "#a5b9d8"), ("#dd8452", "#f0c3a7"))
_QUANTITIES = ("output", "running_mean", "running_var", "input_grad", "weight_grad", "bias_grad")


def plot_batchnorm_gaps(rows: Sequence[BatchNormGap], ax: Any = None) -> Any:
    """Grouped bars (log scale): each quantity's relative distance from one device's BatchNorm on the whole batch,
    per kind of statistics and number of ranks. A kind that could not run (NaN) is left out; exact zeros sit on
    the axis's floor."""
    shown = [r for r in rows if not r.note]
    if not shown:
        raise ValueError("no measured rows to plot: every row has a note saying why it could not run")
    fig, ax = fig_ax(ax, figsize=(9, 4))
    floor = 1e-9
    width = 0.8 / len(shown)
    kinds = list(dict.fromkeys(r.statistics for r in shown))
    worlds = sorted({r.world for r in shown})
    for i, r in enumerate(shown):
        values = [max(getattr(r, q), floor) for q in _QUANTITIES]
        colour = _KIND_PAIRS[kinds.index(r.statistics) % len(_KIND_PAIRS)][min(worlds.index(r.world), 1)]
        ax.bar([q + (i - (len(shown) - 1) / 2) * width for q in range(len(_QUANTITIES))], values, width,
               color=colour, label=f"{r.statistics}, {r.world} ranks, batch {r.batch}")
    ax.set_yscale("log")
    ax.set_ylim(bottom=floor)
    ax.set_xticks(range(len(_QUANTITIES)))
    ax.set_xticklabels([q.replace("_", " ") for q in _QUANTITIES])
    ax.set(ylabel="max |difference| / max |one device|", title="BatchNorm on ranks against one device's whole batch")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def plot_batchnorm_accuracy(rows: Sequence[BatchNormAccuracy], ax: Any = None) -> Any:
    """Test accuracy against the per-rank batch: per-rank statistics, synchronised ones, and one device."""
    if not rows:
        raise ValueError("no rows to plot: pass the rows batchnorm_accuracy_table returned")
    fig, ax = fig_ax(ax, figsize=(6.5, 4))
    rows = sorted(rows, key=lambda r: r.per_rank_batch)
    b = [r.per_rank_batch for r in rows]
    ax.plot(b, [r.per_rank_acc for r in rows], "o-", color="#c44e52", label="per-rank BatchNorm")
    ax.plot(b, [r.synchronised_acc for r in rows], "s-", color="#4c72b0", label="SyncBatchNorm2d")
    ax.plot(b, [r.one_device_acc for r in rows], "x:", color="black", label="1 device, whole batch")
    ax.set_xscale("log", base=2)
    ax.set_xticks(b)
    ax.set_xticklabels([str(v) for v in b])
    low = min(min(r.per_rank_acc, r.synchronised_acc, r.one_device_acc) for r in rows)
    ax.set_ylim(max(0.0, math.floor(low * 20) / 20 - 0.05), 1.0)
    ax.set(xlabel=f"examples per rank ({rows[0].ranks} ranks)", ylabel="test accuracy",
           title="Small per-rank batches: BatchNorm's statistics and accuracy")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig
