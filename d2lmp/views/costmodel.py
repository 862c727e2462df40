"""The parallelism cost model on screen: step-time and memory bars for every strategy, and a widget that
changes the hardware, the batch, the model's size and the optimizer.

The arithmetic is ``parallel.costmodel``'s (``predict`` for time, ``zero_memory`` for the training state);
this module only chooses what to ask it and draws the answer. ``predictions`` is pure: a model size and an
optimizer in, a ``Prediction`` per strategy out.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

from .figure import fig_ax, show

if TYPE_CHECKING:
    from ..models import LayerRow

__all__ = ["OPTIMIZERS", "Optimizer", "costmodel_widget", "fits", "memory_by_size", "plot_memory",
           "plot_memory_by_size", "plot_step_time", "predictions", "widen"]

STEP_PARTS = (("compute_s", "compute", "#4c72b0"), ("comm_s", "communication", "#c44e52"),
              ("bubble_s", "bubble", "#bbbbbb"))
MEMORY_PARTS = (("parameters", "#8172b2"), ("gradients", "#937860"), ("optimizer", "#da8bc3"),
                ("activations", "#55a868"))


class Optimizer(NamedTuple):
    """Bytes per parameter of the weights, their gradients and the optimizer's state; bytes per activation."""

    param_bytes: float
    grad_bytes: float
    optimizer_bytes: float
    activation_bytes: float


OPTIMIZERS = {
    "SGD": Optimizer(4, 4, 0, 4),
    "SGD with momentum": Optimizer(4, 4, 4, 4),  # one velocity per weight: the cost model's default
    "Adam": Optimizer(4, 4, 8, 4),  # two moments per weight
    # fp16 weights, gradients and activations; an fp32 master copy and the two moments (ZeRO's accounting)
    "Adam, mixed precision": Optimizer(2, 2, 12, 2),
}


def widen(rows: list[LayerRow], num_params: float) -> list[LayerRow]:
    """The layer table of the same network with every layer k times wider, k = √(num_params / its parameters).

    Parameters and FLOPs grow as k², activations (and each output's channels) as k: a model of
    ``num_params`` parameters shaped like the one given (the input and the classes are widened too,
    an approximation that keeps every proportion). The counts of the rows returned are no longer whole numbers.
    """
    params = sum(r.params for r in rows)
    if params <= 0 or num_params <= 0:
        raise ValueError("the model and the requested size need parameters")
    k = (num_params / params) ** 0.5
    out = []
    for r in rows:
        shape = list(r.output_shape)
        if len(shape) > 1:
            shape[1] = max(1, round(shape[1] * k))
        out.append(replace(r, params=r.params * k * k, macs=r.macs * k * k, flops=r.flops * k * k,
                           activation_bytes=r.activation_bytes * k, output_shape=tuple(shape)))
    return out


def predictions(rows: list[LayerRow], hw, batch: int, optimizer: str = "SGD with momentum", micro_batches: int = 8,
                batch_of_table: int = 1) -> dict:
    """``predict`` for every strategy, with the training state per device from ``zero_memory``.

    Data parallelism keeps the whole state on every device (ZeRO stage 0); pipeline and tensor
    parallelism keep 1/n of it (every term divided, the figures of stage 3); the hybrid keeps the
    convolutions' state whole and 1/n of the fully connected layers'. Activations (FP32 in the layer
    table) are stored at the optimizer's activation width, and messages travel at the gradients' width;
    compute stays at the device's FP32 rate.
    """
    from ..parallel.costmodel import STRATEGIES, predict, zero_memory

    opt = OPTIMIZERS[optimizer]
    rows = [replace(r, activation_bytes=r.activation_bytes * opt.activation_bytes / 4) for r in rows]
    params = round(sum(r.params for r in rows))
    conv = round(sum(r.params for r in rows if r.kind != "Linear"))
    n = hw.devices
    sizes = dict(param_bytes=opt.param_bytes, grad_bytes=opt.grad_bytes, optimizer_bytes=opt.optimizer_bytes)
    out = {}
    for s in STRATEGIES:
        p = predict(rows, s, hw, batch, micro_batches=micro_batches, batch_of_table=batch_of_table,
                    param_bytes=opt.grad_bytes)
        whole = {"data": params, "hybrid": conv}.get(s, 0)
        state = {k: 0.0 for k in ("parameters", "gradients", "optimizer")}
        for count, stage in ((whole, 0), (params - whole, 3)):
            if count > 0:
                for k, v in zero_memory(count, n, stage, **sizes).items():
                    state[k] += v
        out[s] = replace(p, memory={**state, "activations": p.memory["activations"]})
    return out


def fits(preds: dict, memory_bytes: float) -> dict[str, bool]:
    """Which strategies' memory per device fits in ``memory_bytes``."""
    return {s: p.memory_bytes <= memory_bytes for s, p in preds.items()}


def plot_step_time(preds: dict, ax=None, title: str = "", highlight: str | None = None,
                   fitting: dict[str, bool] | None = None, legend: bool = True):
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
    for label in ax.get_xticklabels():
        label.set_fontweight("bold" if label.get_text() == highlight else "normal")
    if legend:
        ax.legend(fontsize=7, loc="upper left", ncol=3)
        ax.set_ylim(0, 1.45 * top)
    return fig


def plot_memory(preds: dict, memory_bytes: float, ax=None, title: str = "memory per device",
                highlight: str | None = None):
    """Stacked bars of parameters, gradients, optimizer state and activations (GiB) per strategy, against
    the device's memory (dashed). Returns the Figure."""
    fig, ax = fig_ax(ax, figsize=(5, 3.2))
    names = list(preds)
    bottom = [0.0] * len(names)
    for part, colour in MEMORY_PARTS:
        values = [preds[s].memory[part] / 2**30 for s in names]
        ax.bar(names, values, bottom=bottom, color=colour, label=part)
        bottom = [b + v for b, v in zip(bottom, values)]
    device = memory_bytes / 2**30
    ax.axhline(device, color="k", ls="--", label="device memory")
    ax.set_ylim(0, 1.45 * max(max(bottom), device))
    ax.set(ylabel="GiB per device", title=title)
    ax.legend(fontsize=7, loc="upper left", ncol=3)
    for label in ax.get_xticklabels():
        label.set_fontweight("bold" if label.get_text() == highlight else "normal")
    return fig


def memory_by_size(rows: list[LayerRow], hw, batch: int, optimizer: str, sizes, micro_batches: int = 8,
                   batch_of_table: int = 1) -> dict[str, list[float]]:
    """Bytes per device of every strategy for the network widened to each of ``sizes`` parameters."""
    curves: dict[str, list[float]] = {}
    for size in sizes:
        preds = predictions(widen(rows, size), hw, batch, optimizer, micro_batches, batch_of_table)
        for s, p in preds.items():
            curves.setdefault(s, []).append(p.memory_bytes)
    return curves


def plot_memory_by_size(sizes, curves: dict[str, list[float]], memory_bytes: float, ax=None, title: str = ""):
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


def costmodel_widget(rows: list[LayerRow], presets: dict, batch_of_table: int = 1):
    """Strategy, hardware, devices, batch, model size and optimizer → predicted time and memory per device."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    from ..parallel.costmodel import STRATEGIES

    first_preset = next(iter(presets))
    own = sum(r.params for r in rows)
    sizes = [(f"{_size_label(own)} (as built)", own)] + [(_size_label(n), n) for n in
                                                        (2.5e8, 1e9, 4e9, 16e9, 64e9) if n > own]

    def draw(strategy="hybrid", preset=first_preset, devices=8, batch=1024, params=own,
             optimizer="SGD with momentum"):
        hw = presets[preset].with_devices(devices)
        preds = predictions(widen(rows, params), hw, batch, optimizer, batch_of_table=batch_of_table)
        ok = fits(preds, hw.memory_bytes)
        fitting = [s for s in preds if ok[s]]
        best = min(fitting, key=lambda s: preds[s].step_s) if fitting else None
        p, dp = preds[strategy], preds["data"]
        print(f"{_size_label(params)} parameters, {optimizer}: data parallelism needs "
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
        strategy=w.Dropdown(options=list(STRATEGIES), value="hybrid", description="strategy"),
        preset=w.Dropdown(options=list(presets), description="hardware"),
        devices=w.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64], value=8, description="devices"),
        batch=w.SelectionSlider(options=[32, 128, 512, 1024, 4096, 16384], value=1024, description="batch"),
        params=w.SelectionSlider(options=sizes, value=own, description="parameters"),
        optimizer=w.Dropdown(options=list(OPTIMIZERS), value="SGD with momentum", description="optimizer"),
    )
