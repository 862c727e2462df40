import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from d2lmp import layer_profile as LP
from d2lmp.model import pipeline_balance as B
from d2lmp.model import pipeline_schedule as S
from d2lmp.model.timeline import TimelineEvent
from d2lmp.parallel import data_parallel as DP
from d2lmp.parallel import pipeline as P
from d2lmp.parallel.launch import launch


def _brute_force(costs, stages):
    n = len(costs)
    best = float("inf")
    for cuts in itertools.combinations(range(1, n), stages - 1):
        bounds = (0, *cuts, n)
        best = min(best, max(sum(costs[a:b]) for a, b in zip(bounds, bounds[1:])))
    return best


@settings(max_examples=150, deadline=None)
@given(costs=st.lists(st.floats(0, 100, allow_nan=False), min_size=1, max_size=9), data=st.data())
def test_balance_is_optimal(costs, data):
    stages = data.draw(st.integers(1, len(costs)))
    sizes = B.balance(costs, stages)
    assert len(sizes) == stages and sum(sizes) == len(costs) and min(sizes) >= 1
    assert max(B.stage_costs(costs, sizes)) == pytest.approx(_brute_force(costs, stages))


@pytest.mark.parametrize("costs, stages, message", [
    ([1, 2], 3, "cannot split 2 layers into 3"),
    ([1, -2], 1, "non-negative"),
    ([1, 2], 0, ">= 1"),
])
def test_balance_bad_input(costs, stages, message):
    with pytest.raises(ValueError, match=message):
        B.balance(costs, stages)


def _simulated_step(costs, kind, ranks, m, chunks, sizes):
    return S.step_span(S.simulate(kind, ranks, m, 1 / 3, 2 / 3, chunks=chunks, weights=B.stage_costs(costs, sizes)))


@settings(max_examples=60, deadline=None)
@given(costs=st.lists(st.integers(0, 20), min_size=4, max_size=7), data=st.data())
def test_balance_schedule_finds_the_shortest_simulated_step(costs, data):
    ranks, chunks = data.draw(st.sampled_from([(1, 1), (2, 1), (3, 1), (2, 2)]))
    kind = "interleaved" if chunks > 1 else data.draw(st.sampled_from(["gpipe", "1f1b", "zero-bubble"]))
    m = ranks * data.draw(st.integers(1, 3))
    sizes = B.balance_schedule(costs, kind, ranks, m, chunks)
    assert len(sizes) == ranks * chunks and sum(sizes) == len(costs) and min(sizes) >= 1
    every = [list(b - a for a, b in zip((0, *cuts), (*cuts, len(costs))))
             for cuts in itertools.combinations(range(1, len(costs)), ranks * chunks - 1)]
    best = min(_simulated_step(costs, kind, ranks, m, chunks, split) for split in every)
    assert _simulated_step(costs, kind, ranks, m, chunks, sizes) == pytest.approx(best)


def test_interleaving_needs_more_than_even_stages():
    """Layer costs shaped like the half-width AlexNet's (a costly normalisation early, a costly fc7 late): the split
    that evens out the 4 virtual stages leaves the 2 ranks' totals far apart and simulates a longer step than the
    split balance_schedule picks; with one stage per rank the two agree."""
    costs = [25, 4, 97, 14, 41, 2, 56, 11, 21, 1, 16, 0, 11, 0, 1, 0, 9, 0, 2, 54, 0, 0, 0]
    even = B.balance(costs, 4)
    totals = B.rank_costs(costs, even, 2)
    assert max(totals) > 1.5 * min(totals)
    best = B.balance_schedule(costs, "interleaved", 2, 4, 2)
    assert _simulated_step(costs, "interleaved", 2, 4, 2, best) < 0.95 * _simulated_step(costs, "interleaved", 2, 4,
                                                                                         2, even)
    assert B.balance_schedule(costs, "1f1b", 2, 4) == B.balance(costs, 2)
    assert B.rank_costs([1, 2, 3, 4], [1, 1, 1, 1], 2) == [4.0, 6.0]
    with pytest.raises(ValueError, match="do not go round 2 ranks"):
        B.rank_costs([1, 2, 3], [1, 1, 1], 2)
    with pytest.raises(ValueError, match="cannot split 3 layers into 4"):
        B.balance_schedule([1, 2, 3], "interleaved", 2, 2, 2)


def test_stage_weights_stretch_each_virtual_stage():
    plain = S.simulate("interleaved", 2, 4, chunks=2)
    halves = S.simulate("interleaved", 2, 4, chunks=2, weights=[0.5] * 4)
    assert [(e.rank, e.label, e.start, e.end) for e in plain] == [(e.rank, e.label, e.start, e.end) for e in halves]
    slow = S.simulate("1f1b", 2, 3, weights=[1.0, 3.0])  # stage 1 three times as slow
    for e in slow:
        assert e.duration == pytest.approx((1.0 if e.kind == "forward" else 2.0) * (3.0 if e.rank == 1 else 1.0))
    assert S.step_span(slow) > S.step_span(S.simulate("1f1b", 2, 3))
    with pytest.raises(ValueError, match="each of the 4 virtual stages"):
        S.simulate("interleaved", 2, 4, chunks=2, weights=[1.0, 1.0])


def test_bubble_fraction():
    assert S.bubble_fraction(1, 8) == 0
    assert S.bubble_fraction(4, 1) == pytest.approx(0.75)
    assert S.bubble_fraction(4, 8) == pytest.approx(3 / 11)
    with pytest.raises(ValueError):
        S.bubble_fraction(0, 4)


@pytest.mark.parametrize("kind", S.SCHEDULES)
@pytest.mark.parametrize("stages, m", [(2, 1), (2, 4), (4, 3), (4, 8)])
def test_schedules_run_every_micro_batch_once_forward_before_backward(kind, stages, m):
    for rank in range(stages):
        ops = S.schedule(kind, stages, rank, m)
        expected_m = S.micro_batch_count(kind, m)
        assert sorted(ops) == sorted([("F", i) for i in range(expected_m)] + [("B", i) for i in range(expected_m)])
        assert all(ops.index(("F", i)) < ops.index(("B", i)) for i in range(expected_m))
        if kind == "1f1b":  # at most p - rank micro-batches in flight: the point of 1F1B
            alive = peak = 0
            for op, _ in ops:
                alive += 1 if op == "F" else -1
                peak = max(peak, alive)
            assert peak <= min(stages - rank, m)


def _check(world, sizes, kinds=S.SCHEDULES, ms=(1, 3, 5)):
    spec = DP.MLPSpec((16, 32, 32, 32, 32, 5), seed=0)
    x, y = DP.synthetic_data(spec, 22)
    ref = P.sequential_reference(spec.build, x, y)
    for kind in kinds:
        for m in ms:
            res = launch(P.pipeline_step, world, spec.build, sizes, x, y, kind, m)
            grads = {k: v for r in res for k, v in r.grads.items()}
            assert set(grads) == set(ref.grads)
            for k in grads:
                torch.testing.assert_close(grads[k], ref.grads[k], rtol=1e-5, atol=1e-6, msg=f"{kind} m={m} {k}")
            torch.testing.assert_close(res[-1].outputs, ref.outputs, rtol=1e-5, atol=1e-6)
            assert res[-1].loss == pytest.approx(ref.loss, rel=1e-5)


def test_two_stages_equal_the_sequential_model():
    _check(2, [4, 5])

@pytest.mark.slow

def test_four_stages_equal_the_sequential_model():
    _check(4, [2, 2, 2, 3])


def test_pipeline_bad_input():
    from d2lmp.parallel.launch import WorkerError

    spec = DP.MLPSpec((4, 8, 3), seed=0)
    x, y = DP.synthetic_data(spec, 4)
    with pytest.raises(WorkerError, match="must give one stage per rank"):
        launch(P.pipeline_step, 2, spec.build, [1, 1], x, y)
    with pytest.raises(WorkerError, match="need at least 8 examples"):
        launch(P.pipeline_step, 2, spec.build, [1, 2], x, y, "gpipe", 8)
    with pytest.raises(ValueError, match="available: naive, gpipe, 1f1b"):
        S.schedule("zero-bubble", 2, 0, 4)


def test_profile_layers():
    model = DP.MLPSpec((8, 16, 4), seed=0).build()
    profiles = LP.profile_layers(model, torch.randn(5, 8), min_time=0.005, block_time=0.001)
    assert [p.name for p in profiles] == ["0: Linear", "1: ReLU", "2: Linear"]
    assert [p.activation_bytes for p in profiles] == [5 * 16 * 4, 5 * 16 * 4, 5 * 4 * 4]
    assert [p.parameter_bytes for p in profiles] == [(8 * 16 + 16) * 4, 0, (16 * 4 + 4) * 4]
    assert all(p.seconds > 0 for p in profiles)
    with pytest.raises(ValueError, match="nn.Sequential"):
        LP.profile_layers(torch.nn.Linear(2, 2), torch.randn(1, 2))
    with pytest.raises(ValueError, match="rounds"):
        LP.profile_layers(model, torch.randn(5, 8), rounds=0)


def test_profile_layers_keeps_each_layers_median_over_rounds(monkeypatch):
    from d2lmp import timing

    calls = iter([1.0, 9.0, 2.0, 3.0, 4.0, 5.0])  # layer 0: 1, 2, 4 -> 2; layer 1: 9, 3, 5 -> 5

    class Fake:
        def __init__(self):
            self.median = next(calls)

    monkeypatch.setattr(timing, "benchmark", lambda fn, *a, **k: (fn(), Fake())[1])
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU())
    profiles = LP.profile_layers(model, torch.randn(2, 3), rounds=3)
    assert [p.seconds for p in profiles] == [2.0, 5.0]


@pytest.mark.parametrize("stages, m", [(2, 1), (2, 4), (4, 4), (4, 8), (3, 5)])
def test_simulated_bubble_matches_the_formula(stages, m):
    for kind in ("gpipe", "1f1b"):
        events = S.simulate(kind, stages, m)
        assert S.measured_bubble(events, stages) == pytest.approx(S.bubble_fraction(stages, m))
    naive = S.simulate("naive", stages, m)  # one big micro-batch: the bubble of m = 1
    assert S.measured_bubble(naive, stages) == pytest.approx(S.bubble_fraction(stages, 1))


def test_simulated_events_name_their_micro_batch():
    events = S.simulate("1f1b", 2, 3)
    assert all(isinstance(e, TimelineEvent) for e in events)
    assert sorted((e.rank, e.kind, e.micro_batch) for e in events) == sorted(
        (r, k, i) for r in range(2) for k in ("backward", "forward") for i in range(3))
    assert all(e.label == f"{e.kind[0].upper()}{e.micro_batch}" for e in events)


@pytest.mark.parametrize("kind", ["naive", "gpipe", "1f1b"])
def test_simulated_messages_cross_each_boundary_as_a_send_and_a_recv(kind):
    stages, m, message = 3, 4, 0.5
    events = S.simulate(kind, stages, m, message=message)
    compute = [e for e in events if e.kind in ("forward", "backward")]
    free = S.simulate(kind, stages, m)
    assert [(e.rank, e.label) for e in compute] == [(e.rank, e.label) for e in free]  # the same work, later
    assert S.step_span(events) > S.step_span(free)
    sends = [e for e in events if e.kind == "send"]
    recvs = [e for e in events if e.kind == "recv"]
    runs = S.micro_batch_count(kind, m)
    assert len(sends) == len(recvs) == 2 * (stages - 1) * runs  # activations forward, gradients back, per boundary
    for send, recv in zip(sends, recvs):  # recorded in pairs: the same transfer on both sides
        assert (send.label, send.micro_batch, send.start, send.end) == (recv.label, recv.micro_batch, recv.start,
                                                                        recv.end)
        assert abs(send.rank - recv.rank) == 1 and recv.rank == send.rank + (1 if send.label[0] == "F" else -1)
        assert send.duration == pytest.approx(message * m / runs)
    by_key = {(e.kind, e.rank, e.micro_batch): e for e in compute}
    for recv in recvs:  # the receiving op starts only once the message has arrived
        op = by_key[("forward" if recv.label[0] == "F" else "backward", recv.rank, recv.micro_batch)]
        assert op.start >= recv.end - 1e-12


def test_messages_lengthen_fill_and_drain():
    """GPipe pays one message per boundary while filling and one while draining: 2 (p - 1) messages."""
    stages, m, message = 4, 8, 0.25
    free, timed = S.simulate("gpipe", stages, m), S.simulate("gpipe", stages, m, message=message)
    assert S.step_span(timed) == pytest.approx(S.step_span(free) + 2 * (stages - 1) * message)
    assert S.measured_bubble(timed, stages) > S.bubble_fraction(stages, m)
    with pytest.raises(ValueError):
        S.simulate("gpipe", 2, 2, message=-1.0)


def test_equal_split():
    assert B.equal_split(23, 4) == [6, 6, 6, 5]
    with pytest.raises(ValueError):
        B.equal_split(2, 3)


def test_pytorch_pipelining_api_gives_the_same_gradients():
    from d2lmp.checks.ranks import torch_pipelining_check

    for result in launch(torch_pipelining_check, 2):
        assert result["max_grad_error"] < 1e-6


def test_layer_costs_profile_at_one_thread_and_restore_the_count():
    before = torch.get_num_threads()
    costs = LP.layer_costs(DP.MLPSpec((8, 16, 4), seed=0).build(), torch.randn(5, 8), min_time=0.005, rounds=2)
    assert len(costs) == 3 and all(c > 0 for c in costs)
    assert torch.get_num_threads() == before


def test_pipeline_steps_returns_every_steps_events():
    spec = DP.MLPSpec((8, 16, 16, 4), seed=0)
    x, y = DP.synthetic_data(spec, 8)
    per_rank = launch(P.pipeline_steps, 2, spec.build, [2, 3], x, y, 3, "gpipe", 2)
    assert [len(steps) for steps in per_rank] == [3, 3]
    for steps in per_rank:
        for events in steps:  # two micro-batches: two forwards and two backwards per rank and step
            compute = [e for e in events if e.kind in ("forward", "backward")]
            assert sorted(e.kind for e in compute) == ["backward"] * 2 + ["forward"] * 2
            assert sorted(e.micro_batch for e in compute) == [0, 0, 1, 1]
            # and one activation and one gradient crossing the boundary per micro-batch
            assert sorted(e.kind for e in events if e not in compute) == ["recv"] * 2 + ["send"] * 2


def _memory_of_each_schedule(rank, world, spec, sizes, x, y, ms):
    return {(kind, m): P.pipeline_step(rank, world, spec.build, sizes, x, y, kind, m).memory
            for kind in ("gpipe", "1f1b") for m in ms}


@pytest.mark.parametrize("world, sizes", [(2, [4, 5]), (4, [2, 2, 2, 3])])
def test_gpipe_holds_every_micro_batch_and_1f1b_at_most_p_minus_r(world, sizes):
    """Measured on real ranks: stage r holds m micro-batches' activations under GPipe, min(p - r, m) under 1F1B."""
    from d2lmp.memory import predict_saved_activations

    spec, ms = DP.MLPSpec((16, 32, 32, 32, 32, 5), seed=0), (2, 4, 8)
    x, y = DP.synthetic_data(spec, 48)  # equal micro-batches for every m: each holds the same bytes
    per_rank = launch(_memory_of_each_schedule, world, spec, sizes, x, y, ms)
    full = spec.build()
    for rank, memory in enumerate(per_rank):
        start, end = sum(sizes[:rank]), sum(sizes[:rank + 1])
        for m in ms:
            gpipe, one_f_one_b = memory["gpipe", m], memory["1f1b", m]
            assert gpipe.peak_in_flight == m, (rank, m)
            assert one_f_one_b.peak_in_flight == min(world - rank, m), (rank, m)
            assert gpipe.micro_batch_bytes == one_f_one_b.micro_batch_bytes
            per_micro_batch = gpipe.micro_batch_bytes[0]
            assert gpipe.micro_batch_bytes == [per_micro_batch] * m
            for mem in (gpipe, one_f_one_b):
                assert mem.peak_saved_bytes == mem.peak_in_flight * per_micro_batch
            if rank < world - 1:  # the last stage also holds the loss's saved tensors, which no rule predicts
                shape = (48 // m, 16 if rank == 0 else 32)
                assert per_micro_batch == predict_saved_activations(full[start:end], shape).total_bytes


def test_schedule_bench_times_gpipe_and_1f1b_alike():
    from d2lmp.bench.pipeline import schedule_bench

    rows = schedule_bench(worlds=(2,), micro_batches=(2, 4), batch=8, steps=2, spec=DP.MLPSpec((8, 16, 16, 4)),
                          profile_s=0.005, profile_rounds=1)
    assert [(r.kind, r.micro_batches) for r in rows] == [("gpipe", 2), ("1f1b", 2), ("gpipe", 4), ("1f1b", 4)]
    for r in rows:
        assert r.step_s > 0 and r.bubble < 1 and r.theory == S.bubble_fraction(2, r.micro_batches)
        m = r.micro_batches
        assert r.peak_in_flight == ([m, m] if r.kind == "gpipe" else [2, 1])
        assert all(b > 0 for b in r.peak_saved_bytes)
    with pytest.raises(ValueError, match="steps must be at least 2"):
        schedule_bench(steps=1)


def test_pipeline_step_records_each_send_and_recv_with_its_bytes():
    spec = DP.MLPSpec((8, 16, 12, 4), seed=0)
    x, y = DP.synthetic_data(spec, 6)
    ranks = launch(P.pipeline_step, 2, spec.build, [2, 3], x, y, "1f1b", 3)  # the boundary carries 16 values
    for rank, result in enumerate(ranks):
        comm = [e for e in result.events if e.kind in ("send", "recv")]
        # rank 0 sends activations (F) and receives gradients (B); rank 1 the reverse
        sent, received = ("F", "B") if rank == 0 else ("B", "F")
        assert sorted((e.kind, e.label) for e in comm) == sorted(
            [("send", f"{sent}{i}") for i in range(3)] + [("recv", f"{received}{i}") for i in range(3)])
        assert all(e.nbytes == 2 * 16 * 4 and e.micro_batch == int(e.label[1:]) for e in comm)  # 2 examples each
        assert all(e.end >= e.start for e in comm)


def test_the_naive_schedule_runs_the_batch_as_one_micro_batch():
    assert [S.micro_batch_count(kind, 6) for kind in S.SCHEDULES] == [1, 6, 6]
    assert [op for op in S.schedule("naive", 2, 0, 6)] == [("F", 0), ("B", 0)]


def test_profile_blocks_fit_min_time_below_the_default_blocks_and_equal_them_above():
    assert LP._block_time(0.1) == LP._block_time(0.05) == 0.01  # timing.benchmark's default block
    assert LP._block_time(0.01) * 5 == pytest.approx(0.01)  # its default minimum of blocks fits in min_time
