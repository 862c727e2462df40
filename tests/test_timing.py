import time

import pytest
import torch

from d2lmp import timing
from d2lmp.timing import Timer, benchmark, matmul_flops, matmul_sweep, resolve_dtype


class FakeClock:
    """perf_counter stand-in: time moves only when the benchmarked function says so."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_benchmark_with_a_fake_clock(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(timing.time, "perf_counter", clock)
    calls = []

    def fn():
        calls.append(1)
        clock.now += 0.002  # every call takes 2 ms

    m = benchmark(fn, warmup=3, min_time=0.1, block_time=0.01, min_blocks=5)
    assert m.calls_per_block == 5  # 10 ms blocks of 2 ms calls
    assert m.median == pytest.approx(0.002)
    assert m.spread == pytest.approx(0.0)
    assert len(m.times) == 10  # 10 blocks × 10 ms reach min_time = 0.1 s
    assert len(calls) == 3 + 1 + 10 * 5  # warm-up, calibration call, timed calls


def test_benchmark_honours_min_blocks_for_slow_functions(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(timing.time, "perf_counter", clock)

    def fn():
        clock.now += 1.0

    m = benchmark(fn, warmup=0, min_time=0.5, min_blocks=4)
    assert m.calls_per_block == 1 and len(m.times) == 4 and m.median == 1.0


def _slow_calls(monkeypatch, seconds):
    """A function whose every call takes ``seconds`` on a fake clock, and the list of its calls."""
    clock, calls = FakeClock(), []
    monkeypatch.setattr(timing.time, "perf_counter", clock)

    def fn():
        calls.append(clock.now)
        clock.now += seconds

    return fn, calls, clock


def test_budget_cuts_a_slow_function_to_one_warm_up_and_one_timed_call(monkeypatch):
    fn, calls, clock = _slow_calls(monkeypatch, 1.0)
    m = benchmark(fn, warmup=2, min_time=0.5, min_blocks=5, max_time=2.5)
    # warm-up (1 s); a second warm-up, a calibration call or a second block would end past 2.5 s
    assert len(calls) == 2 and clock.now == 2.0
    assert m.times == [1.0] and m.calls == 1 and m.budget_cut and m.budget_s == 2.5
    assert "cut by the 2.5 s budget" in repr(m)


def test_budget_allows_what_fits(monkeypatch):
    fn, calls, clock = _slow_calls(monkeypatch, 1.0)
    m = benchmark(fn, warmup=2, min_time=0.5, min_blocks=5, max_time=5.5)
    # two warm-ups and the calibration call end at 3 s (each left room for one timed call after it);
    # blocks end at 4 and 5 s; a third would end at 6 s, past the budget
    assert len(calls) == 5 and clock.now == 5.0
    assert len(m.times) == 2 and m.budget_cut


def test_budget_that_is_not_needed_changes_nothing(monkeypatch):
    fn, calls, _ = _slow_calls(monkeypatch, 1.0)
    m = benchmark(fn, warmup=1, min_time=0.5, min_blocks=3, max_time=100)
    assert len(calls) == 1 + 1 + 3 and len(m.times) == 3 and not m.budget_cut  # warm-up, calibration, blocks
    fn, calls, _ = _slow_calls(monkeypatch, 1.0)
    unbounded = benchmark(fn, warmup=1, min_time=0.5, min_blocks=3)
    assert len(calls) == 5 and unbounded.times == m.times and unbounded.budget_s is None


def test_budget_must_be_positive():
    with pytest.raises(ValueError, match="max_time"):
        benchmark(lambda: None, max_time=0)


def test_benchmark_measures_real_sleep():
    m = benchmark(lambda: time.sleep(0.002), min_time=0.05)
    assert 0.002 <= m.median < 0.02


def test_benchmark_rejects_bad_input():
    with pytest.raises(TypeError, match="callable"):
        benchmark(42)
    with pytest.raises(ValueError):
        benchmark(lambda: None, min_time=0)


def test_timer_synchronises_cuda_devices(monkeypatch):
    synced = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: synced.append(str(device)))
    with Timer("cuda:0") as t:
        pass
    assert synced == ["cuda:0", "cuda:0"]  # before starting and before stopping the clock
    assert t.seconds >= 0
    synced.clear()
    with Timer("cpu"):
        pass
    assert synced == []


def test_matmul_flops():
    assert matmul_flops(1) == 2
    assert matmul_flops(1024) == 2 * 1024**3


def test_resolve_dtype():
    assert resolve_dtype("bfloat16") == ("bfloat16", torch.bfloat16)
    assert resolve_dtype(torch.float16) == ("float16", torch.float16)
    with pytest.raises(ValueError, match="available: float64, float32, float16, bfloat16"):
        resolve_dtype("int8")


@pytest.mark.parametrize("kwargs, message", [
    (dict(sizes=[0]), "positive integers"),
    (dict(sizes=[-8]), "positive integers"),
    (dict(sizes=[2.5]), "positive integers"),
    (dict(sizes=[]), "empty"),
    (dict(sizes=[8], dtypes=["float8"]), "available: float64"),
    (dict(sizes=[8], devices=["cuda:7"]), "available: .*cpu"),
    (dict(sizes=[8], devices=["tpu"]), "not present"),
])
def test_matmul_sweep_bad_input_names_what_is_available(kwargs, message):
    with pytest.raises(ValueError, match=message):
        matmul_sweep(**kwargs)


def test_matmul_sweep_rows():
    rows = matmul_sweep([32, 64], ["float32", "float64"], ["cpu"], min_time=0.01)
    assert [(r["size"], r["dtype"]) for r in rows] == [(32, "float32"), (64, "float32"),
                                                       (32, "float64"), (64, "float64")]
    for r in rows:
        assert r["gflops"] == pytest.approx(matmul_flops(r["size"]) / r["median_s"] / 1e9)
        if r["peak_gflops"]:
            assert r["fraction_of_peak"] == pytest.approx(r["gflops"] / r["peak_gflops"])


def test_harness_agreement_reports_both_medians():
    a = timing.harness_agreement(64, min_time=0.03)
    assert a["ours_s"] > 0 and a["torch_s"] > 0
    assert a["ratio"] == pytest.approx(a["ours_s"] / a["torch_s"])


@pytest.mark.parametrize("kwargs, message", [
    (dict(n=-1), "positive integers, got -1"),
    (dict(n=0), "positive integers, got 0"),
    (dict(n=2.5), "positive integers, got 2.5"),
    (dict(n=64, min_time=0), "min_time must be a positive"),
    (dict(n=64, min_time=float("nan")), "min_time must be a positive"),
    (dict(n=64, dtype="int3"), "unknown dtype"),
])
def test_harness_agreement_rejects_bad_input_before_timing(monkeypatch, kwargs, message):
    monkeypatch.setattr(timing, "benchmark", lambda *a, **k: pytest.fail("timed before checking its inputs"))
    with pytest.raises(ValueError, match=message):
        timing.harness_agreement(**kwargs)


def test_linear_sweep_counts_flops_per_batch():
    rows = timing.linear_sweep([1, 8], in_features=16, out_features=32, min_time=0.01)
    assert [r["batch"] for r in rows] == [1, 8]
    for r in rows:
        assert r["gflops"] == pytest.approx(2 * r["batch"] * 16 * 32 / r["seconds"] / 1e9)
    with pytest.raises(ValueError):
        timing.linear_sweep([4], in_features=0)
