"""The memory calculator on screen: the training state stacked under the activations and buffers, per GPU.

The numbers are ``model.memory_calculator``'s (``compare``: one bar per recomputation mode, ZeRO stage or
schedule); this module draws them against a GPU's memory, and ``memory_calculator_widget`` is a thin
ipywidgets front end in the spirit of the Ultra-Scale Playbook's memory figures (Tazi et al. 2025, section
Activation recomputation: parameters, gradients, optimizer state and activations stacked in one bar).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from d2lmp.model.cluster.memory import MemoryBreakdown
from d2lmp.model.cluster.presets import MODEL_PRESETS
from d2lmp.model.memory_calculator import COMPARISONS, MEMORY_SCHEDULES, Comparison, MemorySetting, compare
from d2lmp.model.training_state import BUFFERS, STATE_PARTS
from d2lmp.model.transformer_accounting import RECOMPUTE
from d2lmp.views.figure import fig_ax, show
from d2lmp.views.memory import BUFFER_COLOUR, MEMORY_PART_COLOURS, part_label

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["STACK", "plot_memory_stack", "describe", "memory_calculator_widget"]

# Bottom to top: the training state, then what the step adds.
STACK = (*STATE_PARTS, "saved_activations", BUFFERS)


def _colour(part: str) -> str:
    return BUFFER_COLOUR if part == BUFFERS else MEMORY_PART_COLOURS[part]


def plot_memory_stack(bars: Mapping[str, MemoryBreakdown], memory_bytes: float | None = None,
                      ax: Axes | None = None, title: str = "Memory per GPU", xlabel: str = "") -> Figure:
    """One stacked bar (GB, 1e9 bytes) per label: parameters, gradients and optimizer state at the bottom, saved
    activations and buffers on top, each total written above; the GPU's memory dashed when given."""
    fig, ax = fig_ax(ax, figsize=(5.5, 3.6))
    labels = list(bars)
    bottom = [0.0] * len(labels)
    for part in STACK:
        values = [bars[k].parts()[part] / 1e9 for k in labels]
        ax.bar(labels, values, bottom=bottom, color=_colour(part), label=part_label(part), edgecolor="white", lw=0.5)
        bottom = [b + v for b, v in zip(bottom, values)]
    for i, total in enumerate(bottom):
        ax.annotate(f"{total:,.1f}", (i, total), ha="center", va="bottom", fontsize=8)
    top = max(bottom + [1e-9])
    if memory_bytes:
        ax.axhline(memory_bytes / 1e9, ls="--", color="k", lw=1, label="GPU memory")
        top = max(top, memory_bytes / 1e9)
    ax.set_ylim(0, 1.15 * top)
    ax.set(ylabel="GB per GPU", xlabel=xlabel, title=title)
    ax.grid(True, axis="y", alpha=0.3)
    handles, names = ax.get_legend_handles_labels()
    ax.legend(handles[::-1], names[::-1], fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def describe(bars: Mapping[str, MemoryBreakdown]) -> str:
    """One line: each bar's total and whether it fits its GPU."""
    return ", ".join(f"{k}: {b.total / 1e9:,.1f} GB ({'fits' if b.fits else 'does not fit'})" for k, b in bars.items())


def memory_calculator_widget(model: str, device: str, setting: MemorySetting,
                             axis: Comparison = "recompute") -> ipywidgets.interactive:
    """Model, GPU, tensor, pipeline and data sizes, ZeRO stage, sequence parallelism, recomputation, schedule and
    micro-batches, starting from ``setting`` → memory per GPU by part, one bar per value of the choice ``axis``
    compares. ``model`` names a ``MODEL_PRESETS`` row, ``device`` a GPU of ``gpu_specs.NOTABLE_GPUS``."""
    import ipywidgets as w

    from d2lmp.gpu_specs import NOTABLE_GPUS

    devices = {g.name: g.memory_gb * 1e9 for g in NOTABLE_GPUS if g.memory_gb}

    def draw(model: str, device: str, tp: int, pp: int, dp: int, zero: int, sequence_parallel: bool,
             recompute: str, schedule: str, micro_batch: int, microbatches: int, axis: Comparison) -> None:
        chosen = MemorySetting(tp=tp, pp=pp, dp=dp, zero=zero, sequence_parallel=sequence_parallel,  # type: ignore[arg-type]
                               recompute=recompute, schedule=schedule,  # type: ignore[arg-type]
                               micro_batch=micro_batch, microbatches=microbatches)
        try:
            bars = compare(MODEL_PRESETS[model].model, chosen, axis, devices[device])
        except ValueError as error:
            print(f"Not a valid setting: {error}")
            return
        print(f"{model} on {tp * pp * dp} {device}s (tensor {tp}, pipeline {pp}, data {dp}), per GPU: "
              + describe(bars))
        show(plot_memory_stack(bars, devices[device], title=f"{model}, {_label(chosen, axis)}", xlabel=axis))

    powers = [2**k for k in range(8)]
    s = setting
    return w.interactive(
        draw,
        model=w.Dropdown(options=list(MODEL_PRESETS), value=model, description="model"),
        device=w.Dropdown(options=list(devices), value=device, description="GPU"),
        tp=w.Dropdown(options=sorted({*powers[:4], s.tp}), value=s.tp, description="tensor"),
        pp=w.Dropdown(options=sorted({*powers[:5], s.pp}), value=s.pp, description="pipeline"),
        dp=w.Dropdown(options=sorted({*powers, s.dp}), value=s.dp, description="data"),
        zero=w.Dropdown(options=[0, 1, 2, 3], value=s.zero, description="ZeRO stage"),
        sequence_parallel=w.Checkbox(value=s.sequence_parallel, description="sequence parallel"),
        recompute=w.Dropdown(options=list(RECOMPUTE), value=s.recompute, description="recompute"),
        schedule=w.Dropdown(options=list(MEMORY_SCHEDULES), value=s.schedule, description="schedule"),
        micro_batch=w.IntSlider(s.micro_batch, 1, max(powers[3], s.micro_batch), description="micro-batch"),
        microbatches=w.IntSlider(s.steps, 1, max(powers[5], s.steps), description="micro-batches"),
        axis=w.Dropdown(options=list(COMPARISONS), value=axis, description="bars by"))


def _label(s: MemorySetting, axis: Comparison) -> str:
    parts = [f"tp {s.tp} pp {s.pp} dp {s.dp}", "SP" if s.sequence_parallel else "no SP"]
    if axis != "zero":
        parts.append(f"ZeRO-{s.zero}")
    if axis != "recompute":
        parts.append(f"recompute {s.recompute}")
    if axis != "schedule":
        parts.append(str(s.schedule).upper())
    return ", ".join(parts) + f", m = {s.steps}"
