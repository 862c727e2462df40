"""Gantt timelines: one row per rank and lane."""

import matplotlib

matplotlib.use("Agg")

from d2lmp.views.timeline import plot_timeline  # noqa: E402


def test_timeline_plot_has_a_row_per_rank_and_lane():
    events = [dict(rank=r, kind=k, label="", start=s, end=s + 0.001)
              for r in range(2) for k, s in (("forward", 1.0), ("backward", 1.001), ("allreduce", 1.0015))]
    fig = plot_timeline(events)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["rank 0 compute", "rank 0 comm", "rank 1 compute", "rank 1 comm"]
