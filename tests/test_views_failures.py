"""The failure figures draw what they are given, and the widget's text follows checkpoint_interval."""

import matplotlib
import pytest

from d2lmp.model import checkpoint_interval as CI
from d2lmp.parallel.resilient import LogEvent
from d2lmp.views import failures as V


def test_job_timelines_draw_one_bar_per_job_and_a_cross_per_failure():
    rows = [("a", CI.simulate(10 * CI.HOUR, CI.HOUR, 60, 2 * CI.HOUR, 300, seed=1)),
            ("b", CI.simulate(10 * CI.HOUR, 4 * CI.HOUR, 60, 2 * CI.HOUR, 300, seed=1))]
    fig = V.plot_job_timelines(rows)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    crosses = sum(len(line.get_xdata()) for line in ax.get_lines())
    assert crosses == sum(sum(1 for s in t.segments if s.kind == "lost") for _, t in rows)


def test_waste_curve_marks_both_optima():
    fig = V.plot_waste_vs_interval(60, 3 * CI.HOUR, 600, simulated=[(1000.0, 0.1)])
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert any(label.startswith("Young:") for label in labels) and any(label.startswith("Daly:") for label in labels)
    assert "simulated jobs (mean)" in labels


def test_restart_events_draw_lost_steps_in_red():
    events = [LogEvent(attempt=0, rank=0, event="resume", step=0, time=0.0, pid=100)]
    events += [LogEvent(attempt=0, rank=0, event="step", step=s, time=float(s), pid=100) for s in (1, 2, 3)]
    events += [LogEvent(attempt=0, rank=0, event="saved", step=2, time=2.1, pid=100),
               LogEvent(attempt=0, rank=1, event="kill", step=4, time=4.0, pid=101, during="step"),
               LogEvent(attempt=1, rank=0, event="resume", step=2, time=9.0, pid=102)]
    events += [LogEvent(attempt=1, rank=0, event="step", step=s, time=9.0 + s, pid=102) for s in (3, 4)]
    fig = V.plot_restart_events(events)
    red = [p for p in fig.axes[0].collections if tuple(p.get_facecolor()[0][:3]) == matplotlib.colors.to_rgb(
        V.SEGMENT_COLOURS["lost"])]
    assert len(red) == 1, "step 3 of attempt 0 was done and then lost"
    with pytest.raises(ValueError):
        V.plot_restart_events([])


def test_interval_report_states_the_summary():
    s = CI.summarise(16384, 2e-5, 60, 600)
    text = V.interval_report(16384, 2e-5, 60, 600)
    assert f"{s.mtbf_s / CI.HOUR:.3g} h" in text and f"{s.daly_s / 60:.3g} min (Daly)" in text
    assert f"{100 * s.waste_daly:.3g} %" in text
