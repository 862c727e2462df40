"""A GPU's streaming multiprocessor and its memory hierarchy, drawn from the sourced ``gpu_specs.SMLayout``.

``plot_sm_hierarchy`` draws one SM (its processing blocks, each with its FP32 lanes, tensor cores, warp
scheduler and share of the register file, above the SM's L1 / shared memory) beside the memory levels of
the whole chip, registers to device memory, on a logarithmic scale of bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from d2lmp.gpu_specs import SMLayout

__all__ = ["plot_sm_hierarchy"]


def _size(nbytes: float) -> str:
    """A byte count as MiB or GB, whichever reads better for the levels of one GPU."""
    return f"{nbytes / 2**20:,.0f} MiB" if nbytes < 2**30 else f"{nbytes / 1e9:,.0f} GB"


def _draw_sm(layout: SMLayout, ax: Axes) -> None:
    from matplotlib.patches import Rectangle

    blocks = layout.partitions
    lanes = layout.fp32_lanes_per_sm // blocks
    tensor = layout.tensor_cores_per_sm // blocks
    columns = 8
    rows = -(-lanes // columns)
    width = 1.0  # of one processing block; the SM is drawn in these units
    for b in range(blocks):
        x0 = b * (width + 0.08)
        ax.add_patch(Rectangle((x0, 0.3), width, 1.6, fc="#f2f2f2", ec="k", lw=1))
        ax.text(x0 + width / 2, 1.8, "warp scheduler", ha="center", va="center", fontsize=7)
        cell = (width - 0.1) / columns
        for i in range(lanes):
            r, c = divmod(i, columns)
            ax.add_patch(Rectangle((x0 + 0.05 + c * cell, 1.55 - (r + 1) * cell), cell * 0.85, cell * 0.85,
                                   fc="tab:blue", ec="none"))
        lanes_bottom = 1.55 - rows * cell
        ax.text(x0 + width / 2, lanes_bottom - 0.06, f"{lanes} FP32 lanes", ha="center", va="top", fontsize=7)
        ax.add_patch(Rectangle((x0 + 0.05, 0.72), width - 0.1, 0.22, fc="tab:orange", ec="none"))
        ax.text(x0 + width / 2, 0.83, f"{tensor} tensor core" + ("s" if tensor != 1 else ""), ha="center",
                va="center", fontsize=7)
        ax.add_patch(Rectangle((x0 + 0.05, 0.38), width - 0.1, 0.26, fc="tab:green", ec="none", alpha=0.7))
        ax.text(x0 + width / 2, 0.51, f"registers {layout.register_file_kb_per_sm / blocks:g} KB", ha="center",
                va="center", fontsize=7)
    span = blocks * width + (blocks - 1) * 0.08
    ax.add_patch(Rectangle((0, 0), span, 0.24, fc="tab:purple", ec="none", alpha=0.6))
    ax.text(span / 2, 0.12, f"L1 data cache / shared memory, {layout.l1_shared_kb_per_sm} KB", ha="center",
            va="center", fontsize=8, color="white")
    ax.set(xlim=(-0.05, span + 0.05), ylim=(-0.05, 2.0), aspect="equal",
           title=f"one SM of the {layout.gpu} ({layout.sms} of them on the chip)")
    ax.axis("off")


def _draw_levels(layout: SMLayout, ax: Axes) -> None:
    levels = layout.levels()
    colours = ["tab:green", "tab:purple", "tab:red", "tab:gray"]
    names = [f"{lv.name}\n({lv.where})" for lv in levels]
    sizes = [lv.total_bytes for lv in levels]
    ax.barh(names, sizes, color=colours[: len(levels)])
    for i, nbytes in enumerate(sizes):
        ax.text(nbytes * 1.3, i, _size(nbytes), va="center", fontsize=8)
    ax.set(xscale="log", xlim=(min(sizes) / 3, max(sizes) * 30), xlabel="bytes on the whole chip (log scale)",
           title="closer to the lanes: faster and smaller")
    ax.invert_yaxis()
    ax.tick_params(axis="y", labelsize=8)
    ax.grid(True, axis="x", which="major", alpha=0.3)


def plot_sm_hierarchy(layout: SMLayout, figsize: tuple[float, float] = (13, 4.2)) -> Figure:
    """One SM of ``layout`` (left) and the chip's memory levels with their total sizes (right)."""
    import matplotlib.pyplot as plt

    fig, (sm_ax, levels_ax) = plt.subplots(1, 2, figsize=figsize, gridspec_kw={"width_ratios": [1.25, 1]})
    _draw_sm(layout, sm_ax)
    _draw_levels(layout, levels_ax)
    fig.tight_layout()
    return fig
