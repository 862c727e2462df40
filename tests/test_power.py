import pytest
from hypothesis import given
from hypothesis import strategies as st

from d2lmp.power import dynamic_power, many_slow_cores


@pytest.mark.parametrize("exponent, cores, throughput", [(1, 4, 1), (2, 16, 4), (3, 64, 16)])
def test_quarter_clock_cores(exponent, cores, throughput):
    r = many_slow_cores(0.25, exponent)
    assert r.cores == pytest.approx(cores)
    assert r.throughput == pytest.approx(throughput)


@given(f=st.floats(0.05, 1.0), k=st.sampled_from([1, 2, 3]), budget=st.floats(0.1, 10))
def test_throughput_law(f, k, budget):
    r = many_slow_cores(f, k, budget=budget)
    assert r.throughput == pytest.approx(budget * f ** (1 - k))
    assert r.power_per_core * r.cores == pytest.approx(budget)


def test_amdahl_limits_speedup():
    serial_only = many_slow_cores(0.25, 3, parallel_fraction=0.0)
    assert serial_only.speedup == pytest.approx(0.25)  # one slow core does everything
    half = many_slow_cores(0.25, 3, parallel_fraction=0.5)
    assert half.speedup < 2  # can never beat 1 / (serial time on a slow core)


def test_dynamic_power():
    assert dynamic_power(1e-9, 1.0, 1e9) == pytest.approx(1.0)
    assert dynamic_power(1e-9, 2.0, 1e9) == pytest.approx(4.0)  # V² dependence
    with pytest.raises(ValueError):
        dynamic_power(1e-9, 1.0, 1e9, activity=2)


@pytest.mark.parametrize("kwargs", [dict(clock_fraction=0), dict(clock_fraction=1.5),
                                    dict(clock_fraction=0.5, exponent=4),
                                    dict(clock_fraction=0.5, parallel_fraction=1.2)])
def test_bad_input(kwargs):
    with pytest.raises(ValueError):
        many_slow_cores(**kwargs)
