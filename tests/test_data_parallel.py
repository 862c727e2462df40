import pytest
import torch

from d2lmp.dist import data_parallel as DP
from d2lmp.dist.launch import launch
from d2lmp.dist.timeline import align, overlap_ms
from d2lmp.dist.workers import check_data_parallel


@pytest.mark.parametrize("world", [2, 4])
def test_every_version_gives_the_single_process_gradients(world):
    for rank, errors in enumerate(launch(check_data_parallel, world)):
        assert set(errors) == set(DP.VERSIONS)
        for version, err in errors.items():
            assert err < 1e-6, f"rank {rank}, {version}: max error {err}"


def test_uneven_and_too_small_batches():
    x, y = torch.arange(5.0).unsqueeze(1), torch.arange(5)
    parts = [DP.shard(x, y, r, 2)[0].squeeze(1).tolist() for r in range(2)]
    assert parts == [[0.0, 1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(ValueError, match="cannot give each of 8 ranks"):
        DP.shard(x, y, 0, 8)


def _train_both(rank, world, spec, x, y, steps):
    overlap = DP.dp_train(rank, world, spec, x, y, "bucketed", steps, 0.1, 2048)
    no_overlap = DP.dp_train(rank, world, spec, x, y, "bucketed-no-overlap", steps, 0.1, 2048)
    return overlap, no_overlap


def test_training_follows_the_single_process_curve_and_overlap_is_real():
    spec = DP.MLPSpec((16, 64, 64, 64, 5), seed=0)
    x, y = DP.synthetic_data(spec, 64)
    reference = DP.single_process_train(spec, x, y, steps=15, lr=0.1)
    results = launch(_train_both, 2, spec, x, y, 15)
    for overlap, no_overlap in results:
        torch.testing.assert_close(torch.tensor(overlap["losses"]), torch.tensor(reference), rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(torch.tensor(no_overlap["losses"]), torch.tensor(reference), rtol=1e-4, atol=1e-5)
        assert len(overlap["bucket_sizes"]) > 1
        assert reference[-1] < reference[0]
    for rank, (overlap, no_overlap) in enumerate(results):
        # A bucket's all-reduce starts from a hook inside backward: it begins before backward ends.
        events = overlap["events"]
        backward_ends = [e["end"] for e in events if e["kind"] == "backward"]
        first_comm = [min(e["start"] for e in events if e["kind"] == "allreduce" and b_start <= e["start"] <= b_end)
                      for b_start, b_end in [(e["start"], e["end"]) for e in events if e["kind"] == "backward"]]
        assert len(first_comm) == len(backward_ends) == 15
        assert overlap_ms(events, rank) >= 0
        # Without overlap every all-reduce starts after its backward pass.
        nb = no_overlap["events"]
        for b in (e for e in nb if e["kind"] == "backward"):
            assert not any(b["start"] <= e["start"] < b["end"] for e in nb if e["kind"] == "allreduce")


def test_align_and_overlap_arithmetic():
    events = [dict(rank=0, kind="backward", start=10.0, end=10.004),
              dict(rank=0, kind="allreduce", start=10.002, end=10.006)]
    aligned = align(events)
    assert aligned[0]["start"] == 0 and aligned[1]["end"] == pytest.approx(6.0)
    assert overlap_ms(aligned, 0) == pytest.approx(2.0)


def test_bad_inputs():
    from d2lmp.dist.launch import WorkerError

    with pytest.raises(WorkerError, match="unknown version 'zero'; available: allreduce"):
        launch(DP.dp_gradients, 1, DP.MLPSpec(), *DP.synthetic_data(DP.MLPSpec(), 4), "zero")
    with pytest.raises(ValueError):
        DP.MLPSpec((5,)).build()
