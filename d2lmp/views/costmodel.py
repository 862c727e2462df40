"""The parallelism cost model: a widget with predicted step time and memory for every strategy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .figure import show

if TYPE_CHECKING:
    from ..models import LayerRow

__all__ = ["costmodel_widget"]


def costmodel_widget(rows: list[LayerRow], presets: dict, batch_of_table: int = 1):
    """Strategy, devices, hardware preset and batch → predicted time and memory bars for every strategy."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    from ..parallel.costmodel import STRATEGIES, predict

    first_preset = next(iter(presets))

    def draw(strategy="hybrid", preset=first_preset, devices=8, batch=1024):
        hw = presets[preset].with_devices(devices)
        preds = {s: predict(rows, s, hw, batch, micro_batches=8, batch_of_table=batch_of_table) for s in STRATEGIES}
        best = min(preds, key=lambda s: preds[s].step_s)
        p = preds[strategy]
        print(f"{strategy} on {devices} x {preset.split('(')[0].split('x ')[-1].strip()}: step {p.step_s * 1e3:.1f} ms "
              f"(compute {p.compute_s * 1e3:.1f}, communication {p.comm_s * 1e3:.1f}, bubble {p.bubble_s * 1e3:.1f}); "
              f"memory {p.memory_bytes / 2**30:.2f} GiB per device. Fastest here: {best}.")
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
        names = list(preds)
        bottom = [0.0] * len(names)
        for part, colour in (("compute_s", "#4c72b0"), ("comm_s", "#c44e52"), ("bubble_s", "#bbbbbb")):
            values = [getattr(preds[s], part) * 1e3 for s in names]
            axes[0].bar(names, values, bottom=bottom, color=colour, label=part[:-2])
            bottom = [b + v for b, v in zip(bottom, values)]
        axes[0].set(ylabel="ms per step", title=f"batch {batch} on {devices} devices")
        axes[0].legend(fontsize=8)
        bottom = [0.0] * len(names)
        for part, colour in (("parameters", "#8172b2"), ("gradients", "#937860"), ("optimizer", "#da8bc3"),
                             ("activations", "#55a868")):
            values = [preds[s].memory[part] / 2**30 for s in names]
            axes[1].bar(names, values, bottom=bottom, color=colour, label=part)
            bottom = [b + v for b, v in zip(bottom, values)]
        axes[1].axhline(hw.memory_bytes / 2**30, color="k", ls="--", label="device memory")
        axes[1].set(ylabel="GiB per device", title="memory per device")
        axes[1].legend(fontsize=7)
        for ax in axes:
            for label in ax.get_xticklabels():
                label.set_fontweight("bold" if label.get_text() == strategy else "normal")
        fig.tight_layout()
        show(fig)

    return w.interactive(
        draw,
        strategy=w.Dropdown(options=list(STRATEGIES), value="hybrid", description="strategy"),
        preset=w.Dropdown(options=list(presets), description="hardware"),
        devices=w.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64], value=8, description="devices"),
        batch=w.SelectionSlider(options=[32, 128, 512, 1024, 4096, 16384], value=1024, description="batch"),
    )
