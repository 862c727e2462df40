import dataclasses

import numpy as np
import parallel_workers as W
import pytest

from d2lmp.bibliography import SOURCES
from d2lmp.checks.ranks import check_collectives
from d2lmp.model import allreduce_steps as AS
from d2lmp.model import alpha_beta as AB
from d2lmp.model import collective_schedules as CS
from d2lmp.parallel import collectives as C
from d2lmp.parallel.launch import launch


@pytest.mark.parametrize("world", [2, 3, 4])
def test_collectives_equal_torch_distributed(world):
    for rank, ok in enumerate(launch(check_collectives, world)):
        assert ok and all(ok.values()), f"rank {rank}: {ok}"


def test_single_rank_collectives_are_identity():
    (ok,) = launch(check_collectives, 1, (1, 5))
    assert all(ok.values())


def test_ring_schedule_sends_one_chunk_per_rank_to_the_right():
    for messages in CS.ring_schedule(4):
        assert sorted(m[0] for m in messages) == [0, 1, 2, 3]
        assert all(m[1] == (m[0] + 1) % 4 for m in messages)
    with pytest.raises(ValueError):
        CS.ring_schedule(1)
    with pytest.raises(ValueError, match="phase"):
        CS.ring_send_chunk("broadcast", 0, 0, 4)


@pytest.mark.parametrize("world", [2, 3, 5])
def test_ring_schedule_leaves_every_rank_with_every_sum(world):
    """The schedule ring_all_reduce follows, run on numbers (allreduce_steps): every rank ends with every chunk's sum,
    and after the reduce-scatter half rank r holds the full sum of chunk r."""
    start = np.random.default_rng(world).random((world, world))  # start[rank, chunk]
    steps = AS.ring_steps(world, start)
    assert len(steps.states) == 2 * (world - 1) + 1 and steps.phases[0] == "start"
    np.testing.assert_allclose(steps.states[0], start)
    np.testing.assert_allclose(steps.states[-1], np.tile(start.sum(axis=0), (world, 1)))
    halfway = steps.states[world - 1]
    np.testing.assert_allclose([halfway[r][r] for r in range(world)], start.sum(axis=0))
    counts = AS.ring_steps(world)  # one contribution per rank and chunk: the picture's numbers
    assert all(v == world and isinstance(v, int) for row in counts.states[-1] for v in row)
    with pytest.raises(ValueError, match="chunks"):
        AS.ring_steps(world, np.ones((world, world + 1)))


@pytest.mark.parametrize("world", [1, 2, 3, 4, 5, 6, 8])
def test_tree_schedule_sums_at_rank_0_then_copies_back(world):
    """The schedule tree_all_reduce follows, run on numbers (allreduce_steps); each rank takes part in at most one
    message a round, and every message carries the whole buffer."""
    start = np.random.default_rng(world).random((world, 3))
    steps = AS.tree_steps(world, start)
    schedule = CS.tree_schedule(world)
    assert len(schedule) == 2 * int(np.ceil(np.log2(world))) if world > 1 else schedule == []
    assert len(steps.states) == len(schedule) + 1 and steps.messages[1:] == [[m[:2] for m in r] for r in schedule]
    for messages in schedule:
        ranks = [r for src, dst, _ in messages for r in (src, dst)]
        assert len(ranks) == len(set(ranks)), messages
    if world > 1:
        np.testing.assert_allclose(steps.states[len(schedule) // 2][0], start.sum(axis=0))  # rank 0 holds the sum
    np.testing.assert_allclose(steps.states[-1], np.tile(start.sum(axis=0), (world, 1)))
    assert CS.tree_schedule(4)[0] == [(1, 0, "reduce"), (3, 2, "reduce")]
    with pytest.raises(ValueError):
        CS.tree_schedule(0)
    with pytest.raises(ValueError, match="rank"):
        AS.tree_steps(world, np.ones((world + 1, 2)))


def _measure(rank, world):
    rows = C.measure_collective("all_reduce", "ring", [4096, 65536], repeats=2, min_time=0.005)
    # 28 B = 7 float32: 3 per rank on 2 ranks (6 gathered), 2 per rank on 3 ranks (6 gathered)
    rows += C.measure_collective("all_gather", "torch", [4096, 28], repeats=2, min_time=0.005)
    rows += C.measure_collective("all_gather", "ring", [28], repeats=2, min_time=0.005)
    rows += C.measure_collective("reduce_scatter", "ring", [4096, 28], repeats=2, min_time=0.005)
    rows += C.measure_collective("broadcast", "torch", [4096], repeats=2, min_time=0.005)
    return rows


@pytest.mark.parametrize("world", [2, 3])
def test_measure_collective_reports_nccl_tests_figures(world):
    per_rank = launch(_measure, world)
    assert all(rows == per_rank[0] for rows in per_rank), "every rank reports the slowest rank's time"
    factors = {"all_reduce": 2 * (world - 1) / world, "all_gather": (world - 1) / world,
               "reduce_scatter": (world - 1) / world, "broadcast": 1.0}
    rows = per_rank[0]
    assert all(type(r) is C.CollectiveTiming for r in rows)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rows[0].seconds = 0.0
    assert {r.collective for r in rows} == set(factors)
    for r in rows:
        assert r.world == world
        assert r.algbw_gbs == pytest.approx(r.size_bytes / r.seconds / 1e9)
        assert r.busbw_gbs == pytest.approx(r.algbw_gbs * factors[r.collective]), r
    # S counts the bytes the collective really moves: the gathered total for all-gather, the input otherwise
    sizes = [(r.collective, r.impl, r.size_bytes) for r in rows]
    assert sizes == [("all_reduce", "ring", 4096), ("all_reduce", "ring", 65536),
                     ("all_gather", "torch", 4096 if world == 2 else 4092), ("all_gather", "torch", 24),
                     ("all_gather", "ring", 24),
                     ("reduce_scatter", "ring", 4096), ("reduce_scatter", "ring", 28), ("broadcast", "torch", 4096)]


def test_bus_factors_match_nccl_tests():
    assert AB.bus_bandwidth(10.0, "all_reduce", 8) == pytest.approx(10 * 14 / 8)
    assert AB.bus_bandwidth(10.0, "all_gather", 4) == pytest.approx(7.5)
    assert AB.bus_bandwidth(10.0, "reduce_scatter", 4) == pytest.approx(7.5)
    assert AB.bus_bandwidth(10.0, "broadcast", 4) == pytest.approx(10.0)
    assert AB.bus_bandwidth(10.0, "all_to_all", 4) == pytest.approx(7.5)
    assert AB.bus_bandwidth(10.0, "all_to_all", 2) == pytest.approx(5.0)
    with pytest.raises(ValueError, match="available"):
        AB.bus_bandwidth(1.0, "all_to_allv", 4)


def test_fit_alpha_beta_recovers_a_known_line():
    sizes = np.array([1e3, 1e4, 1e5, 1e6, 1e7])
    alpha, beta = 50e-6, 1 / 5e9
    rng = np.random.default_rng(0)
    times = (alpha + beta * sizes) * (1 + 0.01 * rng.standard_normal(len(sizes)))
    a, b = AB.fit_alpha_beta(sizes, times)
    assert a == pytest.approx(alpha, rel=0.1) and b == pytest.approx(beta, rel=0.05)
    with pytest.raises(ValueError):
        AB.fit_alpha_beta([1.0], [1.0])


def test_fit_never_returns_negative_terms():
    a, b = AB.fit_alpha_beta([1e3, 1e6, 1e7], [1e-3, 1e-3, 1e-2])  # least squares would put α below zero
    assert a >= 0 and b > 0
    with pytest.raises(ValueError, match="do not grow"):
        AB.fit_alpha_beta([1, 2, 3], [3.0, 2.0, 1.0])  # time falling with size: no bandwidth to report


def test_fit_weights_relative_error():
    """A 10 % error at the smallest size must not swamp α, as it would in an unweighted fit."""
    sizes = np.array([1e3, 1e5, 1e7])
    alpha, beta = 100e-6, 1 / 2e9
    times = alpha + beta * sizes
    times[-1] *= 1.02
    a, b = AB.fit_alpha_beta(sizes, times)
    assert a == pytest.approx(alpha, rel=0.1) and b == pytest.approx(beta, rel=0.05)


@pytest.mark.parametrize("world", [2, 4])
def test_ring_alpha_beta_reads_one_step_off_the_fitted_line(world):
    """Times made by the ring model from a known α and β, fitted as a line, give that α and β back."""
    alpha, beta = 40e-6, 1 / 3e9
    sizes = [2.0**k for k in range(10, 26, 3)]
    times = [AB.predicted_all_reduce_time("ring", world, s, alpha, beta) for s in sizes]
    assert AB.ring_alpha_beta(*AB.fit_alpha_beta(sizes, times), world) == pytest.approx((alpha, beta), rel=1e-9)
    assert AB.ring_alpha_beta(-1e-6, 1e-9, 2) == (0.0, 1e-9)  # a noisy negative intercept is no latency
    for bad in ((1e-6, 1e-9, 1), (1e-6, 0.0, 2), (1e-6, 1e-9, 2.0)):
        with pytest.raises(ValueError):
            AB.ring_alpha_beta(*bad)


def test_all_reduce_model_collects_the_three_algorithms():
    model = AB.all_reduce_model(8, 1e3, AB.GPU_ALPHA_S, 1 / 450e9, [1e3, 1e9])
    assert set(model.times) == set(model.curves) == set(AB.ALGORITHMS)
    assert model.times == {a: AB.predicted_all_reduce_time(a, 8, 1e3, AB.GPU_ALPHA_S, 1 / 450e9)
                           for a in AB.ALGORITHMS}
    assert [c[0] for c in model.curves.values()] == list(model.times.values())
    assert model.fastest == "tree" and AB.all_reduce_model(8, 1e9, AB.GPU_ALPHA_S, 1 / 450e9).fastest == "ring"
    assert AB.GPU_ALPHA_SOURCE and all(key in SOURCES for key in AB.GPU_ALPHA_SOURCE)


def test_alpha_beta_model_orders_algorithms():
    alpha, beta, n = 10e-6, 1e-9, 8
    small, large = 1e3, 1e9
    t = {a: AB.predicted_all_reduce_time(a, n, large, alpha, beta) for a in ("naive", "tree", "ring")}
    assert t["ring"] < t["tree"] < t["naive"]  # bandwidth-bound: the ring moves 2(n-1)/n·S per rank
    t_small = {a: AB.predicted_all_reduce_time(a, n, small, alpha, beta) for a in ("tree", "ring")}
    assert t_small["tree"] < t_small["ring"]  # latency-bound: log2 n steps beat n-1
    assert AB.predicted_all_reduce_time("ring", 1, large, alpha, beta) == 0
    with pytest.raises(ValueError):
        AB.predicted_all_reduce_time("butterfly", 4, 1.0, alpha, beta)


@pytest.mark.parametrize("world", [2, 3])
def test_ring_equals_torch_when_chunks_span_many_segments(world):
    """Segments of 7 elements: every receive, add and send of a chunk is cut into several messages; posted both
    as gloo needs (ring_messages.ReceivesUpFront) and as NCCL needs (ring_messages.BatchPerStep)."""
    for rank, per_posting in enumerate(launch(W.collectives_in_small_segments, world, 7)):
        assert set(per_posting) == {"receives up front", "one batch per step"}
        for posting, ok in per_posting.items():
            assert ok and all(ok.values()), f"rank {rank}, {posting}: {ok}"
