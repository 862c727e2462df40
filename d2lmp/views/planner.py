"""The planner on screen: a plan's step time and memory per GPU by part, and the planner as a widget.

It draws a plan's step time by part, memory per GPU by part, and a widget (model, GPUs, GPU type, global batch) that
runs the planner and shows its best configurations.

The arithmetic is ``scale``'s (``plan``, ``predict``, ``memory_per_gpu``); ``plan_for`` (preset names in, a
``PlanReport`` out) is the pure function the widget wraps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from d2lmp.model.cluster import Cluster, PlanReport, Prediction, model_preset, plan
from d2lmp.model.cluster.expert_step import EXPERT_PART
from d2lmp.model.cluster.hardware import GPU_PRESETS
from d2lmp.model.cluster.memory import MemoryBreakdown
from d2lmp.model.cluster.moe import MoETransformer
from d2lmp.model.cluster.presets import MODEL_PRESETS
from d2lmp.model.cluster.report import STEP_PART_LABELS, format_plan
from d2lmp.model.cluster.steptime import STEP_PARTS
from d2lmp.views.figure import fig_ax, fit_x_to_labels, show
from d2lmp.views.memory import BUFFER_COLOUR, MEMORY_PART_COLOURS, part_label

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["STEP_PART_LABELS", "PART_COLOURS", "plan_for", "plot_step_parts", "plot_memory_parts", "planner_widget"]

PART_COLOURS = {"compute": "#4c72b0", "memory_bound": "#8da0cb", "tp": "#55a868", "cp": "#a6d854", "host": "#8c8c8c",
                "pp_p2p": "#e5c494", "bubble": "#bbbbbb", "dp": "#c44e52", "zero": "#fc8d62",
                "embedding_sync": "#937860", "optimizer_step": "#da8bc3", EXPERT_PART: "#8172b2"}


def plan_for(model: str = "175B", gpus: int = 1024, gpu: str = "A100-80GB", global_batch: int = 1536,
             **restrict: Any) -> PlanReport:
    """The planner's report for a named model on ``gpus`` GPUs of a named preset; ``restrict`` (tuples) goes to
    ``plan``, which keeps its last reports, so the widget's first drawing reuses the table printed above it."""
    return plan(model_preset(model).model, Cluster(gpu=gpu, gpus=gpus), global_batch, **restrict)


def plot_step_parts(predictions: Mapping[str, Prediction], ax: Axes | None = None,
                    title: str = "Predicted step time by part") -> Figure:
    """One horizontal bar per labelled prediction, its seconds stacked by part (``steptime.STEP_PARTS``)."""
    fig, ax = fig_ax(ax, figsize=(9.5, 0.5 * max(3, len(predictions)) + 1.2))
    if not predictions:
        ax.text(0.5, 0.5, "no configuration fits in memory", ha="center", va="center", transform=ax.transAxes)
        ax.set(title=title, xticks=[], yticks=[])
        return fig
    labels = list(predictions)[::-1]
    parts = (*STEP_PARTS, EXPERT_PART)  # a mixture of experts adds its all-to-alls
    for part in parts:
        left = [sum(predictions[k].parts.seconds.get(q, 0.0) for q in parts[:parts.index(part)]) for k in labels]
        widths = [predictions[k].parts.seconds.get(part, 0.0) for k in labels]
        if any(widths):
            ax.barh(labels, widths, left=left, color=PART_COLOURS[part], label=STEP_PART_LABELS[part])
    values = [ax.annotate(f"{predictions[k].step_s:.2f} s, MFU {predictions[k].mfu:.0%}", (predictions[k].step_s, i),
                          xytext=(4, 0), textcoords="offset points", va="center", fontsize=9)
              for i, k in enumerate(labels)]
    ax.set(xlabel="seconds per step", title=title)
    ax.set_xlim(0, max(p.step_s for p in predictions.values()) * 1.05)
    ax.legend(fontsize=9, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.tight_layout()
    fit_x_to_labels(ax, values)
    return fig


def plot_memory_parts(memories: Mapping[str, MemoryBreakdown], ax: Axes | None = None,
                      title: str = "Memory per GPU by part") -> Figure:
    """One horizontal bar per labelled breakdown (GB, stacked by part), and each one's capacity as a tick."""
    if not memories:
        raise ValueError("give at least one memory breakdown")
    fig, ax = fig_ax(ax, figsize=(9.5, 0.5 * max(3, len(memories)) + 1.2))
    labels = list(memories)[::-1]
    parts = list(next(iter(memories.values())).parts())
    for j, part in enumerate(parts):
        left = [sum(memories[k].parts()[q] for q in parts[:j]) / 1e9 for k in labels]
        widths = [memories[k].parts()[part] / 1e9 for k in labels]
        ax.barh(labels, widths, left=left, color=MEMORY_PART_COLOURS.get(part, BUFFER_COLOUR), label=part_label(part))
    values = []
    for i, k in enumerate(labels):
        m = memories[k]
        ax.plot([m.capacity / 1e9] * 2, [i - 0.4, i + 0.4], "k-", lw=2)
        values.append(ax.annotate(f"{m.total / 1e9:,.0f} GB" + ("" if m.fits else " (does not fit)"),
                                  (m.total / 1e9, i), xytext=(4, 0), textcoords="offset points", va="center",
                                  fontsize=9, bbox=dict(facecolor="white", edgecolor="none", pad=1)))
    capacities = sorted({m.capacity for m in memories.values()})
    memory = ", ".join(f"{c / 2**30:,.0f} GiB = {c / 1e9:,.1f} GB" for c in capacities)  # NVIDIA's HBM "GB" are GiB
    ax.set(xlabel=f"GB per GPU; black tick: the GPU's memory ({memory})", title=title)
    ax.set_xlim(0, max(max(m.total, m.capacity) for m in memories.values()) / 1e9 * 1.05)
    ax.legend(fontsize=9, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.tight_layout()
    fit_x_to_labels(ax, values)
    return fig


def planner_widget() -> ipywidgets.interactive:
    """Model, GPU count, GPU type and global batch → the planner's best configurations and their step times. The
    models are the dense presets: a mixture of experts also searches expert parallelism, tens of seconds a move on a
    laptop (``d2lmp plan --model deepseek-v3`` plans one)."""
    import ipywidgets as w

    dense = [name for name, preset in MODEL_PRESETS.items() if not isinstance(preset.model, MoETransformer)]

    def draw(model: str = "175B", gpus: int = 1024, gpu: str = "A100-80GB", global_batch: int = 1536) -> None:
        report = plan_for(model, gpus, gpu, global_batch)
        print(format_plan(report, families=False))
        show(plot_step_parts({f"#{i} {c.plan.describe()}": c.prediction for i, c in enumerate(report.top, 1)},
                             title=f"{model} on {gpus} × {gpu}, {global_batch} sequences a step: the best plans"))

    return w.interactive(
        draw,
        model=w.Dropdown(options=dense, value="175B", description="model"),
        gpus=w.SelectionSlider(options=[8 * 2**k for k in range(10)], value=1024, description="GPUs"),
        gpu=w.Dropdown(options=list(GPU_PRESETS), value="A100-80GB", description="GPU"),
        global_batch=w.SelectionSlider(options=[64, 128, 256, 512, 1024, 1536, 2048, 3072, 4096], value=1536,
                                       description="batch"),
    )
