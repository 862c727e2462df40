"""Notebook 17's exercises rest on two pieces of their own: the traffic watch that tells a library collective from the
messages asked for, and the seeded bug, which must stay visible in the balanced causal layout only (else the bug hunt's
answer would change under the student). The references and the typical wrong answers, the library shortcuts among
them, are checked with every other notebook's in tests/test_exercises.py."""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch.nn import functional as F

from d2lmp.exercises import long_sequences_and_experts as ex
from d2lmp.exercises._traffic import COLLECTIVES, TrafficWatch, collective_used
from d2lmp.parallel.context_layout import LAYOUTS, split_sequence
from d2lmp.parallel.launch import launch


def _watched(rank: int, world: int):
    originals = {name: getattr(dist, name) for name in COLLECTIVES if hasattr(dist, name)}
    t = torch.full((3,), float(rank))
    with TrafficWatch() as watch:
        incoming = torch.empty_like(t)
        requests = [dist.irecv(incoming, (rank - 1) % world), dist.isend(t, (rank + 1) % world)]
        for request in requests:
            request.wait()
        dist.all_reduce(t)  # runs as usual, and is recorded
    restored = all(getattr(dist, name) is f for name, f in originals.items())
    dist.barrier()
    return watch.traffic(), float(t[0]), float(incoming[0]), restored


def test_the_traffic_watch_records_messages_and_collectives_and_restores_torch():
    for rank, (traffic, summed, incoming, restored) in enumerate(launch(_watched, 3, backend="gloo")):
        assert traffic.sent == (((rank + 1) % 3, 12),) and traffic.received == (((rank - 1) % 3, 12),)
        assert traffic.collectives == ("all_reduce",) and summed == 3.0 and incoming == (rank - 1) % 3
        assert restored
        assert "dist.all_reduce" in collective_used(traffic, "do it")


def _bug_errors(rank: int, world: int) -> dict[tuple[str, bool], float]:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 8 * world, 4, generator=g) for _ in range(3))
    errors = {}
    for layout in LAYOUTS:
        for causal in (False, True):
            mine = [split_sequence(t, world, layout)[rank].requires_grad_(True) for t in (q, k, v)]
            out = ex.ring_attention_with_a_bug(*mine, causal=causal, layout=layout)
            out.sum().backward()
            expected = split_sequence(F.scaled_dot_product_attention(q, k, v, is_causal=causal), world, layout)[rank]
            errors[layout, causal] = float((out.detach() - expected).abs().max())
    return errors


def test_the_seeded_bug_shows_in_the_balanced_causal_layout_only():
    for world in (2, 4):
        for errors in launch(_bug_errors, world, backend="gloo"):
            assert errors["balanced", True] > 1e-2, errors  # every rank's late chunk is wrong
            assert max(errors[key] for key in errors if key != ("balanced", True)) < 1e-5, errors
    assert ex.find_the_bug.check("balanced").correct
