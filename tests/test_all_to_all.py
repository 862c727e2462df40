"""Our all-to-all from send/recv: equal to torch's and to the exchange written out, on 2, 3 and 4 ranks."""

import moe_workers as W
import pytest

from d2lmp.checks.experts import check_all_to_all
from d2lmp.parallel import collectives as C
from d2lmp.parallel.launch import launch


@pytest.mark.parametrize("world", [2, 3, 4])
def test_all_to_all_equals_torch_and_the_exchange_and_counts_its_bytes(world):
    """One launch: the rank check (exact equality, bytes on the wire), a broken all-to-all the check must
    catch, and a clear ValueError for each kind of bad input."""
    for rank, (errors, broken, messages, reference) in enumerate(launch(W.all_to_all_checks, world)):
        assert errors and all(e == 0 for e in errors.values()), f"rank {rank}: {errors}"
        assert len(errors) == (8 if world >= 3 else 7)
        # A copy of torch's results sent to the wrong places is caught by every comparison of values.
        caught = [name for name, e in broken.items() if "bytes" not in name and e > 0]
        assert len(caught) >= 4, f"rank {rank}: the check missed a broken all-to-all: {broken}"
        assert all(messages.values()), f"rank {rank}: bad input accepted: {messages}"
        assert f"got {world + 1} for {world} ranks" in messages["count"]
        assert "only the first dimension may differ" in messages["trailing shape"]
        assert "only the first dimension may differ" in messages["dtype"]
        assert "0-dimensional" in messages["0-d"]
        assert f"at index {rank}" in messages["output_sizes"]
        assert "out[0]" in messages["out shape"] and "contiguous" in messages["out not contiguous"]
        # torch's equal-block reference, also where the backend lacks all_to_all (gloo before torch 2.12).
        assert reference and all(reference.values()), f"rank {rank}: {reference}"


def test_one_rank_all_to_all_is_a_copy():
    (errors,) = launch(check_all_to_all, 1)
    assert all(e == 0 for e in errors.values()), errors


def _measure(rank, world):
    return C.measure_collective("all_to_all", "pairwise", [4096, 28], repeats=2, min_time=0.005) + \
        C.measure_collective("all_to_all", "torch", [4096], repeats=2, min_time=0.005) + \
        C.measure_collective("all_to_all", "pairwise+sizes", [4096], repeats=2, min_time=0.005) + \
        C.measure_collective("all_to_all", "torch+sizes", [4096], repeats=2, min_time=0.005)


def test_measure_collective_times_all_to_all_like_nccl_tests():
    rows = launch(_measure, 2)[0]
    # S is every block a rank sends, its own included: 28 B = 7 float32 gives 2 ranks 3 each
    assert [(r.impl, r.size_bytes) for r in rows] == [("pairwise", 4096), ("pairwise", 24), ("torch", 4096),
                                                      ("pairwise+sizes", 4096), ("torch+sizes", 4096)]
    for r in rows:
        assert r.collective == "all_to_all" and r.busbw_gbs == pytest.approx(r.algbw_gbs / 2)
