"""Pipeline parallelism: a widget drawing a simulated schedule's timeline (messages free or timed) and its bubble."""

from __future__ import annotations

from dataclasses import replace

from .figure import show
from .timeline import plot_timeline

__all__ = ["pipeline_widget"]


def pipeline_widget():
    """Schedule, stages, micro-batches and message time → the simulated pipeline's timeline and its bubble."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    from ..parallel.pipeline import SCHEDULES, bubble_fraction, measured_bubble, micro_batch_count, simulate
    from ..parallel.pipeline_memory import peak_in_flight

    def draw(kind="gpipe", stages=4, micro_batches=4, message=0.0):
        events = simulate(kind, stages, micro_batches, message=message)
        bubble = measured_bubble(events, stages)
        m = micro_batch_count(kind, micro_batches)
        print(f"{kind}: bubble {bubble:.3f} (formula (p-1)/(m+p-1) = {bubble_fraction(stages, m):.3f}); "
              f"peak micro-batches held by stage 0: {peak_in_flight(events)}")
        lanes = ("compute", "comm") if message > 0 else ("compute",)
        fig, ax = plt.subplots(figsize=(9, 0.6 + 0.45 * stages * len(lanes)))
        plot_timeline([replace(e, start=e.start / 1e3, end=e.end / 1e3) for e in events], ax=ax,
                      title=f"{kind}, {stages} stages, {m} micro-batch(es); forward 1 unit, backward 2, "
                            f"message {message:g}", lanes=lanes)
        ax.set_xlabel("time (units)")
        show(fig)

    return w.interactive(draw,
                         kind=w.Dropdown(options=list(SCHEDULES), value="gpipe", description="schedule"),
                         stages=w.IntSlider(4, 2, 8, description="stages"),
                         micro_batches=w.IntSlider(4, 1, 16, description="micro-batches"),
                         message=w.FloatSlider(0.0, min=0.0, max=2.0, step=0.25, description="message"))

