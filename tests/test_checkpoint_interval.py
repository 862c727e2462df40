"""How often to checkpoint: Young's and Daly's intervals, Daly's figures, and a simulation agreeing with his model."""

import math
import statistics

import pytest

from d2lmp.bibliography import SOURCES
from d2lmp.model import checkpoint_interval as CI

MINUTE = 60.0


def test_young_is_the_square_root_of_twice_save_times_mtbf():
    assert CI.young_interval(300, 6 * CI.HOUR) == pytest.approx(math.sqrt(2 * 300 * 6 * 3600))


@pytest.mark.parametrize("mtbf_min, expected_min", [(24 * 60, 117), (6 * 60, 57), (15, 9.1)])
def test_daly_reproduces_the_intervals_of_his_figures(mtbf_min, expected_min):
    """Daly (2006), Figs. 3-5: δ = 5 min, R = 10 min; the model predicts these optima."""
    tau = CI.daly_interval(5 * MINUTE, mtbf_min * MINUTE) / MINUTE
    assert tau == pytest.approx(expected_min, abs=0.5 if expected_min > 10 else 0.05)


def test_daly_is_the_exact_optimum_and_young_is_close_when_saves_are_short():
    save, mtbf = 60.0, 3 * CI.HOUR
    best = CI.best_interval(save, mtbf, restart_s=600)
    assert CI.daly_interval(save, mtbf) == pytest.approx(best, rel=1e-3)
    assert CI.young_interval(save, mtbf) == pytest.approx(best, rel=0.05)
    assert CI.waste(best, save, mtbf) < CI.waste(best / 2, save, mtbf)
    assert CI.waste(best, save, mtbf) < CI.waste(best * 2, save, mtbf)
    assert CI.first_order_waste(best, save, mtbf) == pytest.approx(CI.waste(best, save, mtbf), rel=0.1)
    assert CI.daly_interval(3 * mtbf, mtbf) == mtbf, "a save longer than 2M: checkpoint every M"


@pytest.mark.parametrize("interval_min", [20, 57, 180])
def test_simulated_jobs_take_the_wall_time_dalys_model_predicts(interval_min):
    save, restart, mtbf = 5 * MINUTE, 10 * MINUTE, 6 * CI.HOUR
    tau = interval_min * MINUTE
    work = round(100 * CI.HOUR / tau) * tau
    walls = [CI.simulate(work, tau, save, mtbf, restart, seed=s).wall_s for s in range(200)]
    expected = CI.expected_wall_time(work, tau, save, mtbf, restart)
    stderr = statistics.stdev(walls) / math.sqrt(len(walls))
    assert abs(statistics.mean(walls) - expected) < 4 * stderr, (statistics.mean(walls), expected, stderr)


def test_a_timeline_adds_up():
    timeline = CI.simulate(10 * CI.HOUR, CI.HOUR, 60, 2 * CI.HOUR, 300, seed=1)
    starts = [s.start for s in timeline.segments]
    assert starts == sorted(starts) and timeline.failures > 0
    assert timeline.total("work") == pytest.approx(10 * CI.HOUR)
    assert sum(s.length for s in timeline.segments) == pytest.approx(timeline.wall_s)
    assert timeline.total("lost") > 0 and timeline.total("restart") >= 300
    calm = CI.simulate(3 * CI.HOUR, CI.HOUR, 60, 1e12, 300)  # no failure in sight
    assert calm.failures == 0 and calm.wall_s == pytest.approx(3 * CI.HOUR + 3 * 60)


def test_the_published_reports_and_the_job_mtbf():
    llama = CI.REPORTS[0]
    assert llama.mtbf_hours == pytest.approx(54 * 24 / 419)
    assert CI.job_mtbf(llama.gpus, llama.per_gpu_hour) / CI.HOUR == pytest.approx(llama.mtbf_hours)
    assert CI.job_mtbf(2 * llama.gpus, llama.per_gpu_hour) == pytest.approx(CI.job_mtbf(llama.gpus, llama.per_gpu_hour)
                                                                             / 2), "twice the GPUs, half the MTBF"
    assert all(k in SOURCES for r in CI.REPORTS for k in r.source)
    s = CI.summarise(llama.gpus, llama.per_gpu_hour, 60, 600)
    assert s.daly_s < s.young_s and s.waste_daly <= s.waste_young


@pytest.mark.parametrize("call", [
    lambda: CI.job_mtbf(0, 1e-5), lambda: CI.job_mtbf(8, 0), lambda: CI.young_interval(0, 10),
    lambda: CI.daly_interval(10, -1), lambda: CI.simulate(0, 1, 1, 1), lambda: CI.expected_wall_time(1, 0, 1, 1),
    lambda: CI.failures_per_gpu_hour(0, 1, 1),
])
def test_bad_input_is_a_value_error(call):
    with pytest.raises(ValueError):
        call()
