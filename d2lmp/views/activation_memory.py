"""Activation memory per GPU of a pipeline's first stage under none, selective and full recomputation (a widget).

The bytes come from ``transformer_stage_memory.korthikanti_first_stage_bytes`` (Korthikanti et al. 2022, with
sequence parallelism): the first stage holds p micro-batches in flight under 1F1B, each through L/p layers,
so L layers' worth whatever p, plus the embedding's dropout mask, and the output layer when p = 1. This
module only draws them, against a GPU's memory when one is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from d2lmp.model.cluster.presets import MODEL_PRESETS
from d2lmp.model.transformer_accounting import RECOMPUTE, Transformer
from d2lmp.model.transformer_stage_memory import korthikanti_first_stage_bytes
from d2lmp.views.figure import fig_ax, show

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["first_stage_bytes_by_recompute", "plot_activation_memory", "activation_widget"]


def first_stage_bytes_by_recompute(m: Transformer, micro_batch: int = 1, tp: int = 1, pp: int = 1,
                                   interleave: int = 1) -> dict[str, float]:
    """The first pipeline stage's activation bytes per GPU for each recomputation mode ("none", "selective",
    "full"), from ``korthikanti_first_stage_bytes``."""
    return {mode: korthikanti_first_stage_bytes(m.seq, micro_batch, m.hidden, m.heads, m.vocab, m.layers, tp, pp,
                                                interleave, mode) for mode in RECOMPUTE}


def plot_activation_memory(per_mode: Mapping[str, float], memory_bytes: float | None = None,
                           ax: Axes | None = None, title: str = "Activations of the first stage") -> Figure:
    """Bars of GB per GPU for each recomputation mode, with a GPU's memory as a dashed line when given."""
    fig, ax = fig_ax(ax, figsize=(5, 3.2))
    modes = list(per_mode)
    gb = [per_mode[k] / 1e9 for k in modes]
    ax.bar(modes, gb, color=["tab:red", "tab:orange", "tab:green"][:len(modes)])
    for i, v in enumerate(gb):
        ax.annotate(f"{v:,.1f}", (i, v), ha="center", va="bottom", fontsize=8)
    if memory_bytes:
        ax.axhline(memory_bytes / 1e9, ls="--", color="k", lw=1, label="GPU memory")
        ax.legend(fontsize=8)
    ax.set(ylabel="GB per GPU", xlabel="recomputation", title=title)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def activation_widget(memory_bytes: float | None = None) -> ipywidgets.interactive:
    """Model, micro-batch, tensor and pipeline sizes, interleaving → the first stage's activations per GPU."""
    import ipywidgets as w

    def draw(model: str = "175B", micro_batch: int = 1, tp: int = 8, pp: int = 8, interleave: int = 1) -> None:
        m = MODEL_PRESETS[model].model
        per_mode = first_stage_bytes_by_recompute(m, micro_batch, tp, pp, interleave)
        print(", ".join(f"{k}: {v / 1e9:,.1f} GB" for k, v in per_mode.items())
              + f" per GPU (sequence {m.seq}, {m.layers} layers, tensor {tp}, pipeline {pp}, interleave {interleave})")
        show(plot_activation_memory(per_mode, memory_bytes, title=f"{model}: activations of the first stage"))

    return w.interactive(draw,
                         model=w.Dropdown(options=list(MODEL_PRESETS), value="175B", description="model"),
                         micro_batch=w.IntSlider(1, 1, 8, description="micro-batch"),
                         tp=w.Dropdown(options=[1, 2, 4, 8], value=8, description="tensor"),
                         pp=w.Dropdown(options=[1, 2, 4, 8, 16], value=8, description="pipeline"),
                         interleave=w.IntSlider(1, 1, 4, description="interleave"))
