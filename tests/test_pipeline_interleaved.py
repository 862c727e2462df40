"""Interleaved 1F1B on real gloo ranks: equal to one device, and v chunks per rank cost more messages, counted."""

from functools import partial

import pytest
import torch

from d2lmp.model import pipeline_schedule as S
from d2lmp.model.pipeline_balance import equal_split
from d2lmp.parallel import data_parallel as DP
from d2lmp.parallel import pipeline as P
from d2lmp.parallel.launch import WorkerError, launch
from d2lmp.parallel.p2p_log import MessageLog

SPEC = DP.MLPSpec((12, 16, 16, 16, 16, 16, 16, 5), seed=0)  # 13 layers: up to 4 ranks x 3 chunks
WIDTH = 16  # every boundary carries 16 values per example


def _runs(rank, world, configs, x, y):
    """Each (kind, m, chunks): this rank's step result and the messages it really sent and received."""
    out = {}
    for kind, m, chunks in configs:
        sizes = equal_split(len(SPEC.build()), world * chunks)
        with MessageLog() as log:
            result = P.pipeline_step(rank, world, SPEC.build, sizes, x, y, kind, m, chunks=chunks)
        out[kind, m, chunks] = (result, log.sent, log.received)
    return out


def _peak_in_flight(plan):
    alive = peak = 0
    for op, _, _ in plan:
        alive += 1 if op == "F" else -1
        peak = max(peak, alive)
    return peak


@pytest.mark.parametrize("world", [2, 4])
def test_interleaved_1f1b_equals_one_device_and_sends_more_messages(world):
    configs = [("interleaved", world, 2), ("interleaved", 2 * world, 2), ("interleaved", 2 * world, 3),
               ("1f1b", 2 * world, 1)]
    x, y = DP.synthetic_data(SPEC, 4 * world + 2)  # micro-batches of unequal size
    reference = P.sequential_reference(SPEC.build, x, y)
    per_rank = launch(_runs, world, configs, x, y)
    sent = {}
    for kind, m, chunks in configs:
        results = [r[kind, m, chunks][0] for r in per_rank]
        grads = {k: g for r in results for k, g in r.grads.items()}
        assert set(grads) == set(reference.grads)
        for k in grads:
            torch.testing.assert_close(grads[k], reference.grads[k], rtol=1e-5, atol=1e-6, msg=f"{kind} m={m} {k}")
        torch.testing.assert_close(results[-1].outputs, reference.outputs, rtol=1e-5, atol=1e-6)
        assert results[-1].loss == pytest.approx(reference.loss, rel=1e-5)
        assert all(r.outputs is None and r.loss is None for r in results[:-1])
        # What each rank really sent and received is what its timeline recorded, one message per crossing.
        for rank, r in enumerate(per_rank):
            result, out, into = r[kind, m, chunks]
            assert len(out) == sum(e.kind == "send" for e in result.events)
            assert len(into) == sum(e.kind == "recv" for e in result.events)
            assert sum(msg.nbytes for msg in out) == sum(e.nbytes for e in result.events if e.kind == "send")
            # each of its stages sends every example's activations on and gradients back, but stage 0 no gradient
            # and the last stage no activation: 16 float32 values per example and message
            crossings = 2 * chunks - (rank == 0) - (rank == world - 1)
            assert sum(msg.nbytes for msg in out) == WIDTH * 4 * len(x) * crossings
            # the micro-batches this rank held at once are what its plan allows
            plan = S.rank_plan(kind, world, rank, m, chunks)
            assert result.memory.peak_in_flight == _peak_in_flight(plan)
        sent[kind, m, chunks] = sum(len(r[kind, m, chunks][1]) for r in per_rank)
        assert sent[kind, m, chunks] == sum(len(r[kind, m, chunks][2]) for r in per_rank)
    # every boundary between consecutive virtual stages crosses ranks: 2m(pv - 1) messages against 1F1B's 2m(p - 1)
    m = 2 * world
    assert sent["1f1b", m, 1] == 2 * m * (world - 1)
    for v in (2, 3):
        assert sent["interleaved", m, v] == 2 * m * (world * v - 1)
        assert sent["interleaved", m, v] / sent["1f1b", m, 1] == pytest.approx((world * v - 1) / (world - 1))
        assert sent["interleaved", m, v] / sent["1f1b", m, 1] >= v  # "v times as many", a little more


def test_interleaved_bad_input():
    x, y = DP.synthetic_data(SPEC, 8)
    with pytest.raises(WorkerError, match="multiple of the stages: 3 micro-batches on 2 stages"):
        launch(partial(P.pipeline_step, chunks=2), 2, SPEC.build, equal_split(13, 4), x, y, "interleaved", 3)
    with pytest.raises(WorkerError, match=r"one stage per rank and chunk \(2 × 2\)"):
        launch(partial(P.pipeline_step, chunks=2), 2, SPEC.build, equal_split(13, 2), x, y, "interleaved", 2)
    with pytest.raises(WorkerError, match="several chunks need at least 2 ranks"):
        launch(partial(P.pipeline_step, chunks=2), 1, SPEC.build, equal_split(13, 2), x, y, "interleaved", 2)
    with pytest.raises(WorkerError, match="simulated only"):
        launch(P.pipeline_step, 2, SPEC.build, equal_split(13, 2), x, y, "zero-bubble", 2)


def test_message_log_restores_torch_distributed():
    import torch.distributed as dist

    before = (dist.send, dist.isend, dist.recv, dist.irecv)
    with MessageLog() as log:
        assert dist.isend is not before[1]
    assert (dist.send, dist.isend, dist.recv, dist.irecv) == before and log.messages == []


def test_interleaved_bench_measures_the_bubble_and_counts_the_messages():
    from dataclasses import FrozenInstanceError

    from d2lmp.bench.pipeline import InterleavedBubble, interleaved_bench

    rows = interleaved_bench(world=2, micro_batches=(2, 4), chunks=2, batch=8, steps=2,
                             spec=DP.MLPSpec((8, 16, 16, 16, 4)))
    assert [(r.kind, r.micro_batches, r.chunks) for r in rows] == [
        ("1f1b", 2, 1), ("interleaved", 2, 2), ("1f1b", 4, 1), ("interleaved", 4, 2)]
    for r in rows:
        assert isinstance(r, InterleavedBubble) and len(r.sizes) == 2 * r.chunks and sum(r.sizes) == 7
        assert r.theory == pytest.approx(1 / (r.chunks * r.micro_batches))  # (p - 1)/(v·m) with p = 2
        assert r.messages == 2 * r.micro_batches * (2 * r.chunks - 1)  # counted by MessageLog on the ranks
        assert r.step_s > 0 and 0 < r.measured < 100
    with pytest.raises(FrozenInstanceError):
        rows[0].measured = 0.0
    with pytest.raises(ValueError, match="multiples of 2"):
        interleaved_bench(micro_batches=(3,))
    with pytest.raises(ValueError, match="steps must be at least 2"):
        interleaved_bench(steps=1)
