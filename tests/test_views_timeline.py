"""Gantt timelines: one row per rank and lane."""

import pytest

from d2lmp.model.timeline import TimelineEvent
from d2lmp.views.timeline import plot_timeline


def test_timeline_plot_has_a_row_per_rank_and_lane():
    events = [TimelineEvent(r, k, "", s, s + 0.001)
              for r in range(2) for k, s in (("forward", 1.0), ("backward", 1.001), ("allreduce", 1.0015))]
    fig = plot_timeline(events)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["rank 0 compute", "rank 0 comm", "rank 1 compute", "rank 1 comm"]


def test_timeline_plot_rejects_dicts_with_a_clear_message():
    with pytest.raises(TypeError, match="must be TimelineEvent records, got dict"):
        plot_timeline([dict(rank=0, kind="forward", label="", start=0.0, end=1.0)])


def test_pipeline_blocks_carry_their_micro_batch_and_messages_get_a_send_recv_lane():
    events = [TimelineEvent(0, "forward", "F0", 0.0, 1.0, micro_batch=0),
              TimelineEvent(0, "forward", "F1", 1.0, 2.0, micro_batch=1),
              TimelineEvent(0, "send", "F0", 1.0, 1.5, micro_batch=0),
              TimelineEvent(1, "recv", "F0", 1.0, 1.5, micro_batch=0),
              TimelineEvent(1, "forward", "F0", 1.5, 2.5, micro_batch=0),
              TimelineEvent(1, "backward", "B0", 2.5, 2.5001, micro_batch=0)]  # too narrow to carry a label
    ax = plot_timeline(events).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "rank 0 compute", "rank 0 send/recv", "rank 1 compute", "rank 1 send/recv"]
    assert sorted(t.get_text() for t in ax.texts) == ["0", "0", "0", "0", "1"]
    # the labels sit in the middle of their blocks: a send in the upper half of its lane, a receive in
    # the lower half (rank 0's send/recv lane is row 1, rank 1's is row 3)
    rows = sorted(round(t.get_position()[1], 2) for t in ax.texts)
    assert rows == [0.0, 0.0, 0.8, 2.0, 3.2]


def test_a_lane_without_messages_keeps_its_name_and_events_without_micro_batch_stay_unlabelled():
    events = [TimelineEvent(0, "forward", "", 0.0, 1.0), TimelineEvent(0, "allreduce", "", 0.5, 1.0)]
    ax = plot_timeline(events).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["rank 0 compute", "rank 0 comm"]
    assert len(ax.texts) == 0
