"""AlexNet's anatomy: where its parameters and FLOPs live (with a widget), its learned filters, and
the paper's two-GPU split."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from d2lmp.views.figure import fig_ax, show

if TYPE_CHECKING:
    import ipywidgets
    import torch
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from d2lmp.models import LayerShare

__all__ = ["plot_params_vs_flops", "alexnet_widget", "plot_filters", "plot_two_gpu_split"]


def plot_params_vs_flops(shares: list[LayerShare], ax: Axes | None = None,
                         title: str = "Where AlexNet's parameters and compute live") -> Figure:
    """Side-by-side bars: each layer's share of parameters and of FLOPs (from ``models.params_vs_flops``)."""
    fig, ax = fig_ax(ax, figsize=(8, 3.8))
    names = [s.name.split(".")[-1] for s in shares]
    x = np.arange(len(names))
    ax.bar(x - 0.2, [100 * s.param_share for s in shares], 0.4, label="share of parameters")
    ax.bar(x + 0.2, [100 * s.flop_share for s in shares], 0.4, label="share of FLOPs (one forward pass)")
    ax.set_xticks(x)
    ax.set_xticklabels(names)
    ax.set(ylabel="% of the network", title=title)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def alexnet_widget() -> ipywidgets.interactive:
    """Input size and width → AlexNet's (2012) layer shapes, parameters and FLOPs, and where they live."""
    import ipywidgets as w

    from d2lmp.models import alexnet_summary, format_layer_table, params_vs_flops

    def draw(input_size: int = 224, width: float = 1.0) -> None:
        s = alexnet_summary(input_size=input_size, width=width)
        t = s.totals
        print(f"input {input_size}×{input_size}, width ×{width}: {t.params:,} parameters, "
              f"{t.flops / 1e9:.2f} GFLOPs per image; conv layers do {s.conv_flop_share:.0%} of the FLOPs, "
              f"FC layers hold {s.fc_param_share:.0%} of the parameters")
        print(format_layer_table(s.rows, skip_kinds=("ReLU", "Dropout", "Flatten", "LocalResponseNorm")))
        show(plot_params_vs_flops(params_vs_flops(s.rows)))

    return w.interactive(draw, input_size=w.IntSlider(224, 64, 320, 16, description="input size"),
                         width=w.SelectionSlider(options=[0.25, 0.5, 0.75, 1.0, 1.5, 2.0], value=1.0,
                                                 description="width ×"))


def plot_filters(weight: torch.Tensor, ax: Axes | None = None, title: str = "First-layer filters",
                 columns: int = 8) -> Figure:
    """Show conv filters (out, in, kh, kw) as a grid of images (first input channel, or RGB if 3)."""
    import matplotlib.pyplot as plt

    w = weight.detach().float().cpu()
    count = w.shape[0]
    rows = -(-count // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(columns * 0.9, rows * 0.9 + 0.4))
    axes = np.atleast_1d(axes).ravel()
    for i, ax in enumerate(axes):
        ax.axis("off")
        if i >= count:
            continue
        f = w[i]
        if f.shape[0] == 3:
            img = ((f - f.min()) / (f.max() - f.min() + 1e-12)).permute(1, 2, 0).numpy()
            ax.imshow(img)
        else:
            ax.imshow(f[0].numpy(), cmap="gray")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_two_gpu_split(ax: Axes | None = None) -> Figure:
    """AlexNet's two-GPU split (paper §3.2, Fig. 2): each layer's half per GPU and where they talk."""
    from matplotlib.patches import FancyBboxPatch

    fig, ax = fig_ax(ax, figsize=(10, 3.6))
    layers = [("conv1", "48", False), ("conv2", "128", False), ("conv3", "192", True), ("conv4", "192", False),
              ("conv5", "128", False), ("fc6", "2048", True), ("fc7", "2048", True), ("fc8", "500", True)]
    ys = {0: 1.0, 1: 0.0}
    for i, (name, per_gpu, cross) in enumerate(layers):
        for y in ys.values():
            ax.add_patch(FancyBboxPatch((i - 0.3, y - 0.22), 0.6, 0.44, boxstyle="round,pad=0.02",
                                        fc="#cfe3f7" if name.startswith("conv") else "#f7dccf", ec="k"))
            ax.text(i, y, f"{name}\n{per_gpu}", ha="center", va="center", fontsize=8)
        if i == 0:
            continue
        for y in ys.values():  # same-GPU connection
            ax.annotate("", (i - 0.3, y), (i - 0.7, y), arrowprops=dict(arrowstyle="->", color="k"))
        if cross:  # cross-GPU connections: every kernel sees both halves
            ax.annotate("", (i - 0.3, 0.15), (i - 0.7, 0.85), arrowprops=dict(arrowstyle="->", color="crimson", lw=1.5))
            ax.annotate("", (i - 0.3, 0.85), (i - 0.7, 0.15), arrowprops=dict(arrowstyle="->", color="crimson", lw=1.5))
    ax.text(-0.9, 1.0, "GPU 1", ha="right", va="center", fontweight="bold")
    ax.text(-0.9, 0.0, "GPU 2", ha="right", va="center", fontweight="bold")
    ax.plot([], [], color="crimson", label="crosses between the GPUs")
    ax.plot([], [], color="k", label="stays on one GPU")
    ax.set(xlim=(-1.6, len(layers) - 0.4), ylim=(-0.5, 1.5),
           title="AlexNet on two GTX 580s: half of each layer's kernels or neurons per GPU")
    ax.axis("off")
    ax.legend(loc="lower center", ncol=2, fontsize=8, bbox_to_anchor=(0.5, -0.12))
    return fig
