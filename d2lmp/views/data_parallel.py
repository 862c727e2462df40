"""Data-parallel scaling: a widget predicting step time and efficiency from devices, buckets and
link bandwidth."""

from __future__ import annotations

from .figure import show

__all__ = ["dp_scaling_widget"]


def dp_scaling_widget(single_device_s: float, grad_bytes: float, alpha: float, default_gbs: float = 15.75):
    """World size, bucket size and link bandwidth → predicted data-parallel step and efficiency."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    from ..parallel.dp_model import buckets_needed, predict_step

    def draw(world=8, bucket_mb=25.0, bandwidth_gbs=default_gbs, overlap=True):
        beta = 1 / (bandwidth_gbs * 1e9)
        p = predict_step(single_device_s, grad_bytes, world, alpha, beta, bucket_mb * 2**20, overlap)
        print(f"{buckets_needed(grad_bytes, bucket_mb * 2**20)} bucket(s); compute {p.compute_s * 1e3:.1f} ms, "
              f"all-reduce {p.comm_s * 1e3:.1f} ms of which {p.exposed_comm_s * 1e3:.1f} ms exposed; "
              f"step {p.step_s * 1e3:.1f} ms, efficiency {p.efficiency(single_device_s):.0%}")
        worlds = [1, 2, 4, 8, 16, 32, 64]
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for ov in (False, True):
            ax.plot(worlds, [predict_step(single_device_s, grad_bytes, n, alpha, beta, bucket_mb * 2**20, ov)
                             .efficiency(single_device_s) for n in worlds], "o-",
                    label="with overlap" if ov else "no overlap")
        ax.axvline(world, color="gray", ls=":")
        ax.set(xscale="log", xlabel="devices", ylabel="scaling efficiency", ylim=(0, 1.05),
               title=f"Predicted, {bandwidth_gbs:g} GB/s links, α = {alpha * 1e6:.0f} µs")
        ax.set_xticks(worlds)
        ax.set_xticklabels(worlds)
        ax.grid(True, alpha=0.3)
        ax.legend()
        show(fig)

    return w.interactive(
        draw,
        world=w.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64], value=8, description="devices"),
        bucket_mb=w.FloatLogSlider(value=25, base=2, min=-2, max=9, step=1, description="bucket MiB"),
        bandwidth_gbs=w.FloatLogSlider(value=default_gbs, base=10, min=-1, max=3, step=0.05, description="GB/s"),
        overlap=w.Checkbox(value=True, description="overlap"),
    )
