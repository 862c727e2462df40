"""The traffic log sees every message and collective a rank issues, with its bytes, and puts torch.distributed back.

One launch on 3 gloo ranks runs each kind of call inside a ``MessageLog``: the ring collectives of
``parallel.collectives`` (point-to-point only: 2(n-1) sends of one chunk for an all-reduce), the library's
collectives (one record each, with nccl-tests' size and the ring's bytes per rank), ``batch_isend_irecv``
with ``P2POp``s built from the logged functions (counted once, still delivered), and a nested log.
"""

from __future__ import annotations

import pickle

import pytest
import torch
import torch.distributed as dist

from d2lmp.model.alpha_beta import BUS_FACTORS
from d2lmp.parallel.collectives import ring_all_reduce, ring_reduce_scatter
from d2lmp.parallel.launch import launch
from d2lmp.parallel.p2p_log import (
    COLLECTIVES,
    OPS,
    CommCall,
    Message,
    MessageLog,
    active_logs,
    add_seconds,
    record,
    ring_wire_bytes,
)

N = 12  # float32 elements: 48 bytes, 16 per chunk on 3 ranks


def _worker(rank: int, world: int) -> dict[str, object]:
    out: dict[str, object] = {}
    t = torch.arange(N, dtype=torch.float32) + rank
    with MessageLog() as log:
        ring_all_reduce(t.clone())
    out["ring_all_reduce"] = list(log.messages)
    out["ring_all_reduce_received"] = log.received_bytes
    with MessageLog() as log:
        right, left = (rank + 1) % world, (rank - 1) % world
        for request in (dist.isend(t, right, None, 7), dist.irecv(torch.empty(N), left, None, 7)):
            request.wait()
    out["tags"] = [m.tag for m in log.messages]
    with MessageLog() as log:
        ring_reduce_scatter(t)
    out["ring_reduce_scatter"] = list(log.messages)
    with MessageLog() as log:
        dist.all_reduce(t.clone())
        dist.all_gather([torch.empty(N) for _ in range(world)], t)
        dist.reduce_scatter_tensor(torch.empty(N // world), t.clone())
        dist.broadcast(t.clone(), 0)
        dist.all_to_all_single(torch.empty(N), t.clone())
        dist.barrier()
        dist.all_gather_object([None] * world, {"rank": rank})
    out["library"] = list(log.messages)
    out["library_sent"] = log.sent_bytes
    with MessageLog() as outer:
        with MessageLog() as inner:
            got = torch.empty(N)
            ops = [dist.P2POp(dist.isend, t, (rank + 1) % world), dist.P2POp(dist.irecv, got, (rank - 1) % world)]
            for request in dist.batch_isend_irecv(ops):
                request.wait()
    out["batch"] = (list(inner.messages), list(outer.messages), got)
    return out


def test_the_log_records_every_call_with_its_bytes_on_each_rank():
    world = 3
    results = launch(_worker, world)
    for rank, out in enumerate(results):
        right, left = (rank + 1) % world, (rank - 1) % world
        ring = out["ring_all_reduce"]
        sends = [m for m in ring if m.op in ("send", "isend")]
        assert not any(m.collective for m in ring), "our ring calls no library collective"
        assert len(sends) == 2 * (world - 1) and {m.peer for m in sends} == {right}
        assert sum(m.sent_bytes for m in ring) == 2 * (world - 1) / world * N * 4  # 2(n-1)/n · S
        assert {m.peer for m in ring if m.op in ("recv", "irecv")} == {left}
        assert out["ring_all_reduce_received"] == 2 * (world - 1) * 16  # as many chunks in as out
        assert out["tags"] == [7, 7]
        scatter = out["ring_reduce_scatter"]
        assert sum(m.sent_bytes for m in scatter) == (world - 1) / world * N * 4

        library = out["library"]
        assert [m.op for m in library] == ["all_reduce", "all_gather", "reduce_scatter_tensor", "broadcast",
                                          "all_to_all_single", "barrier", "all_gather_object"]
        assert all(m.collective and m.peer is None and m.world == world for m in library)
        pickled = len(pickle.dumps({"rank": rank}))
        assert [m.nbytes for m in library] == [48, 3 * 48, 48, 48, 48, 0, 3 * pickled]  # nccl-tests' S: the buffer
        ring_share = [m.sent_bytes for m in library]
        assert ring_share == [2 * 2 / 3 * 48, 2 / 3 * 144, 2 / 3 * 48, 48.0, 2 / 3 * 48, 0.0, 2 * pickled]
        assert out["library_sent"] == sum(ring_share)

        inner, outer, got = out["batch"]
        assert inner == outer == [Message("isend", right, 48), Message("irecv", left, 48)]
        torch.testing.assert_close(got, torch.arange(N, dtype=torch.float32) + left)


def test_the_log_puts_torch_distributed_back_even_after_an_error():
    names = [n for n in (*OPS, *COLLECTIVES, "batch_isend_irecv") if hasattr(dist, n)]
    before = [getattr(dist, n) for n in names]
    try:
        with MessageLog():
            assert dist.all_reduce is not before[names.index("all_reduce")]
            assert dist.isend == before[names.index("isend")], "a logged isend still passes P2POp's check"
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert [getattr(dist, n) for n in names] == before
    assert all(getattr(dist, n) is b for n, b in zip(names, before))


def test_a_message_knows_what_it_sends():
    assert Message("isend", 1, 40).sent_bytes == 40 and Message("irecv", 1, 40).sent_bytes == 0
    assert not Message("send", 1, 8).collective and Message("all_reduce", None, 80, 4).collective
    assert Message("all_reduce", None, 80, 4).sent_bytes == 2 * 3 / 4 * 80
    assert Message("reduce_scatter_tensor", None, 80, 4).sent_bytes == 3 / 4 * 80


def test_named_collectives_and_seconds_reach_every_active_log_and_only_those():
    t = torch.zeros(6)  # 24 bytes
    record("all_reduce", t, "outside")  # no log active: nothing to record, nothing raised
    add_seconds("computing", 1.0)
    with MessageLog() as outer:
        with MessageLog() as inner:
            assert active_logs() == [inner, outer]
            record("all_reduce", t, "mlp")
            record("all_gather", t, "mlp (backward)")
            add_seconds("computing", 0.5)
        assert active_logs() == [outer]
        record("reduce_scatter", t, "after")
    assert active_logs() == []
    assert inner.calls == [CommCall("all_reduce", 24, "mlp"), CommCall("all_gather", 24, "mlp (backward)")]
    assert [c.label for c in outer.calls] == ["mlp", "mlp (backward)", "after"]
    assert inner.messages == [] and inner.seconds == outer.seconds == {"computing": 0.5}
    assert inner.total_bytes() == 48
    # on 4 ranks: all-reduce 2·3/4·24 = 36; all-gather of a 24-byte piece into 96: 3/4·96 = 72
    assert inner.wire_bytes(4) == 108
    assert (inner.wire_bytes(4, backward=False), inner.wire_bytes(4, backward=True)) == (36, 72)


def test_ring_wire_bytes_come_from_the_bus_factors():
    for world in (1, 2, 3, 4, 8):
        assert ring_wire_bytes("all_reduce", 24 * world, world) == round(BUS_FACTORS["all_reduce"](world) * 24 * world)
        assert ring_wire_bytes("all_reduce_max", 24, world) == ring_wire_bytes("all_reduce", 24, world)
        assert ring_wire_bytes("all_gather", 24, world) == ring_wire_bytes("reduce_scatter", 24 * world, world)
    with pytest.raises(ValueError, match="world must be at least 1, got 0"):
        ring_wire_bytes("all_reduce", 8, 0)
    with pytest.raises(ValueError, match="unknown collective 'broadcast'"):
        ring_wire_bytes("broadcast", 8, 2)
