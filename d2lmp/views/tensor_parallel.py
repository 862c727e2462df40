"""Tensor parallelism: a widget comparing how many bytes each way of splitting a Linear layer
communicates."""

from __future__ import annotations

from .figure import show

__all__ = ["comm_volume_widget"]


def comm_volume_widget():
    """Batch, layer width and ranks → bytes per rank that each way of splitting a Linear layer communicates."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    from ..parallel.tensor_parallel import comm_volume

    def draw(batch=128, width=4096, world=2):
        volume = comm_volume(batch, width, width, world)
        for name, v in volume.items():
            print(f"{name:<28} forward {v['forward'] / 2**20:8.2f} MiB, backward {v['backward'] / 2**20:8.2f} MiB")
        fig, ax = plt.subplots(figsize=(6, 3))
        names = list(volume)
        ax.barh(names, [v["forward"] / 2**20 for v in volume.values()], label="forward")
        ax.barh(names, [v["backward"] / 2**20 for v in volume.values()],
                left=[v["forward"] / 2**20 for v in volume.values()], label="backward")
        ax.set(xlabel="MiB per rank per step", title=f"Linear({width}, {width}), batch {batch}, {world} ranks")
        ax.legend()
        show(fig)

    return w.interactive(draw, batch=w.IntSlider(128, 1, 4096, description="batch"),
                         width=w.SelectionSlider(options=[256, 512, 1024, 2048, 4096, 8192], value=4096,
                                                 description="features"),
                         world=w.SelectionSlider(options=[2, 4, 8], value=2, description="ranks"))
