"""Gantt timelines: one row per rank and lane."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from d2lmp.parallel.timeline import TimelineEvent  # noqa: E402
from d2lmp.views.timeline import plot_timeline  # noqa: E402


def test_timeline_plot_has_a_row_per_rank_and_lane():
    events = [TimelineEvent(r, k, "", s, s + 0.001)
              for r in range(2) for k, s in (("forward", 1.0), ("backward", 1.001), ("allreduce", 1.0015))]
    fig = plot_timeline(events)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["rank 0 compute", "rank 0 comm", "rank 1 compute", "rank 1 comm"]


def test_timeline_plot_rejects_dicts_with_a_clear_message():
    with pytest.raises(TypeError, match="must be TimelineEvent records, got dict"):
        plot_timeline([dict(rank=0, kind="forward", label="", start=0.0, end=1.0)])
