"""The parallelism cost model on screen: step time and memory of every strategy.

It draws step-time and memory bars for every strategy, and a widget that changes the hardware, the batch, the
model's size and the optimizer.

The numbers are the library's (``model.model_size.predictions``, ``widen``, ``fits`` and
``memory_by_size`` over ``model.costmodel.predict``); this module only draws them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from d2lmp.views.figure import fig_ax, show
from d2lmp.views.memory import MEMORY_PART_COLOURS, part_label

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from d2lmp.model.costmodel import Hardware, Prediction
    from d2lmp.models import LayerRow

__all__ = ["costmodel_widget", "plot_memory", "plot_memory_by_size", "plot_step_time"]

STEP_PARTS = (("compute_s", "compute", "#4c72b0"), ("comm_s", "communication", "#c44e52"),
              ("bubble_s", "bubble", "#bbbbbb"))


def plot_step_time(preds: Mapping[str, Prediction], ax: Axes | None = None, title: str = "",
                   highlight: str | None = None, fitting: Mapping[str, bool] | None = None,
                   legend: bool = True) -> Figure:
    """Stacked bars of compute, communication and bubble (ms) per strategy; a strategy that does not fit
    is hatched and marked. The axis leaves room above the tallest bar. Returns the Figure."""
    fig, ax = fig_ax(ax, figsize=(5, 3.2))
    names = list(preds)
    bottom = [0.0] * len(names)
    for attr, label, colour in STEP_PARTS:
        values = [getattr(preds[s], attr) * 1e3 for s in names]
        ax.bar(names, values, bottom=bottom, color=colour, label=label)
        bottom = [b + v for b, v in zip(bottom, values)]
    top = max(bottom) or 1.0
    for i, s in enumerate(names):
        if fitting is not None and not fitting[s]:
            ax.bar([s], [bottom[i]], fill=False, hatch="///", edgecolor="white", lw=0, gid=f"no fit:{s}")
            ax.text(i, bottom[i] + 0.02 * top, "does not\nfit", ha="center", va="bottom", fontsize=7)
    ax.set_ylim(0, 1.2 * top)
    ax.set(ylabel="ms per step", title=title)
    for tick in ax.get_xticklabels():
        tick.set_fontweight("bold" if tick.get_text() == highlight else "normal")
    if legend:
        ax.legend(fontsize=7, loc="upper left", ncol=3)
        ax.set_ylim(0, 1.45 * top)
    return fig


def plot_memory(preds: Mapping[str, Prediction], memory_bytes: float, ax: Axes | None = None,
                title: str = "memory per device", highlight: str | None = None) -> Figure:
    """Stacked bars of parameters, gradients, optimizer state and activations (GiB) per strategy, against
    the device's memory (dashed). Returns the Figure."""
    fig, ax = fig_ax(ax, figsize=(5, 3.2))
    names = list(preds)
    bottom = [0.0] * len(names)
    for part, colour in MEMORY_PART_COLOURS.items():
        if part not in preds[names[0]].memory:
            continue
        values = [preds[s].memory[part] / 2**30 for s in names]
        ax.bar(names, values, bottom=bottom, color=colour, label=part_label(part))
        bottom = [b + v for b, v in zip(bottom, values)]
    device = memory_bytes / 2**30
    ax.axhline(device, color="k", ls="--", label="device memory")
    ax.set_ylim(0, 1.45 * max(max(bottom), device))
    ax.set(ylabel="GiB per device", title=title)
    ax.legend(fontsize=7, loc="upper left", ncol=3)
    for label in ax.get_xticklabels():
        label.set_fontweight("bold" if label.get_text() == highlight else "normal")
    return fig


def plot_memory_by_size(sizes: Sequence[float], curves: Mapping[str, Sequence[float]], memory_bytes: float,
                        ax: Axes | None = None, title: str = "") -> Figure:
    """Memory per device (GiB, log) against the model's parameters (log) for each strategy, with the device's
    memory dashed: where a curve crosses the line, that strategy stops fitting. Returns the Figure."""
    fig, ax = fig_ax(ax, figsize=(6.5, 3.8))
    for s, values in curves.items():
        ax.plot(sizes, [v / 2**30 for v in values], "o-", ms=3, label=s)
    ax.axhline(memory_bytes / 2**30, color="k", ls="--", label="device memory")
    ax.set(xscale="log", yscale="log", xlabel="parameters", ylabel="GiB per device", title=title)
    ax.grid(True, which="both", alpha=0.2)
    ax.legend(fontsize=8)
    return fig


def _size_label(n: float) -> str:
    return f"{n / 1e9:.3g} B" if n >= 1e9 else f"{n / 1e6:.3g} M"


def costmodel_widget(rows: list[LayerRow], presets: Mapping[str, Hardware],
                     batch_of_table: int = 1) -> ipywidgets.interactive:
    """Strategy, hardware, devices, batch, model size and optimizer → predicted time and memory per device."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    from d2lmp.model.costmodel import STRATEGIES, WEIRD_TRICK
    from d2lmp.model.model_size import fits, predictions, widen
    from d2lmp.model.training_state import OPTIMIZERS

    first_preset = next(iter(presets))
    own = sum(r.params for r in rows)
    sizes = [(f"{_size_label(own)} (as built)", own)] + [(_size_label(n), n) for n in
                                                        (2.5e8, 1e9, 4e9, 16e9, 64e9) if n > own]

    def draw(strategy: str = WEIRD_TRICK, preset: str = first_preset, devices: int = 8, batch: int = 1024,
             params: float = own, optimizer: str = "momentum") -> None:
        hw = presets[preset].with_devices(devices)
        preds = predictions(widen(rows, params), hw, batch, optimizer, batch_of_table=batch_of_table)
        ok = fits(preds, hw.memory_bytes)
        fitting = [s for s in preds if ok[s]]
        best = min(fitting, key=lambda s: preds[s].step_s) if fitting else None
        p, dp = preds[strategy], preds["data"]
        print(f"{_size_label(params)} parameters, {OPTIMIZERS[optimizer].label}: data parallelism needs "
              f"{dp.memory_bytes / 2**30:.1f} GiB per device of {hw.memory_bytes / 2**30:.1f} GiB "
              f"({'fits' if ok['data'] else 'does not fit'}).")
        print(f"{strategy} on {devices} x {preset.split('(')[0].split('x ')[-1].strip()}: step {p.step_s * 1e3:.1f} ms "
              f"(compute {p.compute_s * 1e3:.1f}, communication {p.comm_s * 1e3:.1f}, bubble {p.bubble_s * 1e3:.1f}); "
              f"memory {p.memory_bytes / 2**30:.2f} GiB per device. "
              f"Fastest that fits: {best or 'none: add devices or shrink the batch'}.")
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
        plot_step_time(preds, axes[0], f"batch {batch} on {devices} devices", strategy, ok)
        plot_memory(preds, hw.memory_bytes, axes[1], highlight=strategy)
        fig.tight_layout()
        show(fig)

    return w.interactive(
        draw,
        strategy=w.Dropdown(options=list(STRATEGIES), value=WEIRD_TRICK, description="strategy"),
        preset=w.Dropdown(options=list(presets), description="hardware"),
        devices=w.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64], value=8, description="devices"),
        batch=w.SelectionSlider(options=[32, 128, 512, 1024, 4096, 16384], value=1024, description="batch"),
        params=w.SelectionSlider(options=sizes, value=own, description="parameters"),
        optimizer=w.Dropdown(options=[(o.label, key) for key, o in OPTIMIZERS.items()], value="momentum",
                             description="optimizer"),
    )
