"""GPUs drawn from the sourced ``gpu_specs`` tables: their rates over the years, and one streaming multiprocessor
with its memory hierarchy.

``plot_notable_gpus`` plots each notable GPU's FP32 and FP16 tensor rates and memory bandwidth against its year,
with the GPUs' names beside their FP32 points, placed so that no two overlap. ``plot_sm_hierarchy`` draws one SM
(its processing blocks, each with its FP32 lanes, tensor cores, warp scheduler and share of the register file,
above the SM's L1 / shared memory) beside the memory levels of the whole chip, registers to device memory, on a
logarithmic scale of bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from d2lmp.views.figure import fig_ax

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from d2lmp.gpu_specs import GPUSpec, SMLayout

__all__ = ["plot_notable_gpus", "plot_sm_hierarchy"]

# Where a name may sit beside its point (offset in points, horizontal alignment), tried in this order.
_LABEL_PLACES = (((5, -12), "left"), ((5, 4), "left"), ((-5, -12), "right"), ((-5, 4), "right"), ((5, -24), "left"),
                 ((-5, -24), "right"), ((5, 16), "left"), ((-5, 16), "right"))


def plot_notable_gpus(specs: Sequence[GPUSpec], ax: Axes | None = None,
                      title: str = "Notable GPUs (vendor figures, sources in d2lmp.gpu_specs)") -> Figure:
    """FP32 and dense FP16 tensor TFLOPS and memory bandwidth (TB/s) against the year, on a log scale, each FP32
    point named (GPUs that share a year and a figure share one name); names never overlap or leave the axes."""
    fig, ax = fig_ax(ax, figsize=(7.5, 4.5))
    specs = sorted(specs, key=lambda g: (g.year, g.fp32_tflops))
    ax.plot([g.year for g in specs], [g.fp32_tflops for g in specs], "o", label="FP32 TFLOPS")
    tensor = [(g.year, g.fp16_tensor_tflops) for g in specs if g.fp16_tensor_tflops]
    ax.plot([year for year, _ in tensor], [rate for _, rate in tensor], "s", label="FP16 tensor TFLOPS (dense)")
    ax.plot([g.year for g in specs], [g.bandwidth_gbs / 1000 for g in specs], "^", label="memory bandwidth, TB/s")
    ax.set(yscale="log", xlabel="year", ylabel="TFLOPS or TB/s", title=title)
    ax.set_xlim(specs[0].year - 1, specs[-1].year + 1)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=9, loc="upper left")
    fig.tight_layout()
    names: dict[tuple[int, float], list[str]] = {}
    for g in specs:
        names.setdefault((g.year, g.fp32_tflops), []).append(g.name)
    _place_names(ax, {point: _shared_name(group) for point, group in names.items()})
    return fig


def _shared_name(names: list[str]) -> str:
    """One name for GPUs at the same point: their common first words once, then the rest of each ('A100 SXM4
    40GB / 80GB')."""
    words = [name.split() for name in names]
    common = 0
    while all(len(w) > common + 1 and w[common] == words[0][common] for w in words):
        common += 1
    return " ".join(words[0][:common] + [" / ".join(" ".join(w[common:]) for w in words)])


def _place_names(ax: Axes, names: dict[tuple[int, float], str]) -> None:
    """Write each name beside its point at the first place (``_LABEL_PLACES``) that stays inside the axes and
    overlaps no marker, no name already written and not the legend; the first place if none does."""
    from matplotlib.transforms import Bbox

    inside = ax.get_window_extent()
    legend = ax.get_legend()
    taken = [legend.get_window_extent()] if legend is not None else []
    for line in ax.get_lines():  # every marker, as a small square around its centre
        for x, y in ax.transData.transform(line.get_xydata()):
            taken.append(Bbox.from_extents(x - 4, y - 4, x + 4, y + 4))
    for (year, tflops), name in names.items():
        for offset, align in _LABEL_PLACES:
            label = ax.annotate(name, (year, tflops), textcoords="offset points", xytext=offset,
                                ha=align, fontsize=8)
            box = label.get_window_extent()
            fits = box.x0 >= inside.x0 and box.x1 <= inside.x1 and box.y0 >= inside.y0 and box.y1 <= inside.y1
            if fits and not any(box.overlaps(other) for other in taken):
                break
            label.remove()
        else:
            label = ax.annotate(name, (year, tflops), textcoords="offset points", xytext=_LABEL_PLACES[0][0],
                                ha="left", fontsize=8)
        taken.append(label.get_window_extent())


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
