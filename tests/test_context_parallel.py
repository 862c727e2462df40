"""Ring attention equals one device's attention on the whole sequence, forward and backward, on 2, 3 and 4 ranks;
sends what the formula says; keeps 1/p of the memory; and the balanced layout evens out the causal work.

One launch per world size runs every check (tests/cp_workers.py); the tests below read its findings.
"""

from __future__ import annotations

import functools

import cp_workers as W
import pytest
import torch

from d2lmp.model.context_layout import LAYOUTS, block_kind, chunks_of, ring_attention_schedule, workload
from d2lmp.parallel.context_parallel import ring_traffic
from d2lmp.parallel.launch import WorkerError, launch
from d2lmp.parallel.sequence_chunks import gather_sequence, split_sequence

WORLDS = (2, 3, 4)


@functools.cache
def findings(world: int) -> list[W.RingFindings]:
    return launch(W.everything, world)


@pytest.mark.parametrize("world", WORLDS)
def test_ring_attention_equals_one_device_forward_and_backward(world):
    for rank, found in enumerate(findings(world)):
        # 2 layouts x causal or not x 2 block kernels x (output, dq, dk, dv)
        assert len(found.errors) == 32, found.errors
        for name, error in found.errors.items():
            torch.testing.assert_close(error, 0.0, atol=1e-5, rtol=0, msg=f"rank {rank}, {name}: {error:.2e}")


@pytest.mark.parametrize("world", WORLDS)
def test_bytes_sent_match_the_formula(world):
    for rank, found in enumerate(findings(world)):
        traffic = ring_traffic(world, found.kv_chunk_bytes)
        assert traffic.forward == (world - 1) * 2 * found.kv_chunk_bytes
        assert traffic.backward == (2 * world - 1) * 2 * found.kv_chunk_bytes
        expected = {"forward": traffic.forward, "backward": traffic.backward}
        for layout in LAYOUTS:  # counted around dist.isend / dist.irecv while the ring ran
            assert found.sent[layout] == expected, (rank, layout, found.sent)
            assert found.received[layout] == expected, (rank, layout, found.received)
            assert found.logged[layout] == {"K/V": 2 * (world - 1) * 2 * found.kv_chunk_bytes,
                                            "dK/dV": world * 2 * found.kv_chunk_bytes}


@pytest.mark.parametrize("world", WORLDS)
def test_score_memory_and_saved_bytes_per_rank(world):
    for found in findings(world):
        whole = found.one_device_scores
        # the largest matrix product a rank computes is one block: (S/p)^2, or (S/2p)^2 in the balanced layout
        assert found.largest_product["plain"] * world**2 == whole
        assert found.largest_product["balanced"] * (2 * world) ** 2 == whole
        assert max(found.largest_product.values()) <= whole / world
        # what autograd keeps for backward: this rank's q, k, v, output and log-sum-exp, 1/p of one device's
        for layout in LAYOUTS:
            assert found.saved_bytes[layout] * world == found.one_device_saved_bytes


@pytest.mark.parametrize("world", WORLDS)
def test_causal_work_per_rank_follows_the_schedule(world):
    measured = {layout: [f.score_elements[layout] for f in findings(world)] for layout in LAYOUTS}
    for layout in LAYOUTS:
        assert measured[layout] == [f.expected_elements[layout] for f in findings(world)]
    plain, balanced = measured["plain"], measured["balanced"]
    assert plain == sorted(plain) and plain[-1] == world * plain[0]  # the last rank does p times the first's work
    assert len(set(balanced)) == 1  # every rank alike
    assert max(balanced) < max(plain)


def test_workload_counts():
    plain, balanced = workload(4, 64), workload(4, 64, "balanced")
    chunk = 16
    assert plain.computed == tuple((r + 1) * chunk * chunk for r in range(4))
    assert plain.imbalance == pytest.approx(2 * 4 / (4 + 1))
    assert balanced.imbalance == 1.0
    # the mask lets the same pairs through in both layouts: S(S+1)/2 in all
    assert sum(plain.unmasked) == sum(balanced.unmasked) == 64 * 65 // 2
    assert len(set(balanced.unmasked)) == 1
    assert workload(4, 64, causal=False).computed == (64 * 16,) * 4


def test_schedule_passes_each_chunk_once_round_the_ring():
    for layout in LAYOUTS:
        for world in (1, 2, 3, 5):
            steps = ring_attention_schedule(world, layout)
            for rank in range(world):
                assert sorted(s[rank].holder for s in steps) == list(range(world))  # every K/V chunk visits once
            for earlier, later in zip(steps, steps[1:]):  # what rank r holds next, rank r-1 holds now
                assert all(later[r].holder == earlier[(r - 1) % world].holder for r in range(world))
            blocks = [(b.query, b.key, b.kind) for row in steps for s in row for b in s.blocks]
            n = world * (1 if layout == "plain" else 2)
            assert sorted((q, k) for q, k, _ in blocks) == [(q, k) for q in range(n) for k in range(n)]
            assert all(kind == block_kind(q, k) for q, k, kind in blocks)


def test_split_and_gather_are_inverse_and_balanced_mirrors():
    x = torch.arange(24).view(1, 1, 24, 1)
    parts = split_sequence(x, 3, "balanced")
    assert parts[0].flatten().tolist() == [0, 1, 2, 3, 20, 21, 22, 23]  # chunks 0 and 5 of 6
    assert chunks_of(1, 3, "balanced") == (1, 4)
    for layout in LAYOUTS:
        assert torch.equal(gather_sequence(split_sequence(x, 3, layout), layout), x)


def test_a_sequence_that_does_not_split_evenly_is_refused():
    with pytest.raises(ValueError, match="does not split into 6 equal chunks.*pad it to a multiple of 6"):
        split_sequence(torch.zeros(1, 1, 10, 4), 3, "balanced")
    with pytest.raises(WorkerError, match="ValueError: the balanced layout holds 2 equal chunks per rank, but this"):
        launch(W.uneven, 2)
    with pytest.raises(ValueError, match="unknown layout"):
        chunks_of(0, 2, "zigzag")


def test_bench_measures_every_contender_and_refuses_bad_arguments():
    from d2lmp.bench.context_parallel import CONTENDERS, RingAttentionBench, RingTiming, ring_attention_bench
    from d2lmp.commands.bench.ring_attention import goals

    bench = ring_attention_bench(world=2, shape=(1, 2, 64, 16), rounds=1)
    assert [(r.layout, r.kernel) for r in bench.rows] == list(CONTENDERS)
    assert bench.reference_s > 0 and bench.transfer_s > 0
    for row in bench.rows:
        assert row.seconds > 0 and len(row.compute_s) == len(row.wait_s) == 2
        assert all(c > 0 for c in row.compute_s) and all(w >= 0 for w in row.wait_s)
        assert 0.0 <= bench.overlap(row.layout, row.kernel) <= 1.0
    # the goal's arithmetic, on made-up figures: half the reference's time, a quarter of the transfer waited
    made_up = RingAttentionBench(2, (1, 1, 4, 1), True, 1, 1.0, 0.4,
                                 (RingTiming("balanced", "fused", 0.5, (0.4, 0.4), (0.1, 0.05)),))
    assert goals(made_up) == ["goal: balanced ring (fused kernel) / one rank's SDPA <= 0.75×: 0.50× (met)",
                              "goal: transfer hidden behind compute (balanced, fused) >= 0.5: 0.75 (met)"]
    for bad in (dict(world=1), dict(rounds=0), dict(shape=(1, 2, 30, 8)), dict(shape=(1, 2, 8))):
        with pytest.raises(ValueError):
            ring_attention_bench(**bad)
