"""A 2 × 2 grid of process groups trains equal to one device, and every group-aware piece equals its whole-world self.

The group tests run 4 ranks split into the subgroups {0, 2} and {1, 3}: both halves work at the
same time, so a message sent to a group rank instead of its global rank would land in the wrong half.
"""

import pytest
import torch
import torch.distributed as dist
from torch import nn

from d2lmp.parallel import collectives as C
from d2lmp.parallel import data_parallel as DP
from d2lmp.parallel import hybrid as H
from d2lmp.parallel import pipeline as P
from d2lmp.parallel import tensor_parallel as TP
from d2lmp.parallel.costmodel import predict, this_machine
from d2lmp.parallel.launch import launch
from d2lmp.parallel.zero import ZeroAdam

SPEC = DP.MLPSpec((12, 16, 16, 6), seed=0)


def test_hybrid_trains_equal_to_one_device():
    x, y = DP.synthetic_data(SPEC, 21)  # 11 and 10 examples per replica: the parts still add to the mean
    steps, lr = 4, 0.1
    model = SPEC.build()  # the reference first: its optimizer's first use imports torch's lazy modules once, here
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = DP.local_loss(model, x, y, len(x))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    reference = [p.detach() for p in model.parameters()]
    per_rank = launch(H.hybrid_train, 4, SPEC, x, y, 2, 2, steps, lr)
    assert [(r["data_rank"], r["tensor_rank"]) for r in per_rank] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for r in per_rank:
        torch.testing.assert_close(r["parameters"], H.one_device_shards(reference, r["tensor_rank"], 2))
        torch.testing.assert_close(r["losses"], losses)
    assert losses[-1] < losses[0]


def _halves():
    """Both subgroups, created on every rank in the same order; returns (this rank's group, its ranks)."""
    members = [[0, 2], [1, 3]]
    groups = [dist.new_group(m) for m in members]
    half = dist.get_rank() % 2
    return groups[half], members[half]


def _collectives_on_halves(rank, world):
    group, members = _halves()
    me = dist.get_rank(group)
    out = {}
    for n in (1, 7, 1000):
        x = torch.arange(n, dtype=torch.float32) * (rank + 1) + rank
        expected = x.clone()
        dist.all_reduce(expected, group=group)
        for name in ("ring_all_reduce", "naive_all_reduce", "tree_all_reduce"):
            out[f"{name} {n}"] = torch.equal(getattr(C, name)(x.clone(), group), expected)
        out[f"ring_reduce_scatter {n}"] = torch.equal(C.ring_reduce_scatter(x, group), expected.tensor_split(2)[me])
        gathered = [torch.empty_like(x) for _ in members]
        dist.all_gather(gathered, x, group=group)
        out[f"ring_all_gather {n}"] = torch.equal(C.ring_all_gather(x, group), torch.stack(gathered))
    # data parallel: both versions sum the gradients over the group only
    for version in ("allreduce", "bucketed"):
        model = SPEC.build()
        x, y = DP.synthetic_data(SPEC, 8, seed=rank)
        bucketer = DP.BucketedAllReduce(model, bucket_bytes=256, group=group) if version == "bucketed" else None
        DP.local_loss(model, x, y, 8).backward()
        bucketer.finish() if bucketer else DP.allreduce_gradients(model, group=group)
        ref = SPEC.build()
        for peer in members:
            DP.local_loss(ref, *DP.synthetic_data(SPEC, 8, seed=peer), 8).backward()
        expected = [p.grad for p in ref.parameters()]
        out[version] = all(torch.allclose(p.grad, e, atol=1e-6) for p, e in zip(model.parameters(), expected))
    return out


def test_group_collectives_equal_torch_on_subgroups():
    for rank, ok in enumerate(launch(_collectives_on_halves, 4)):
        assert ok and all(ok.values()), f"rank {rank}: {[k for k, v in ok.items() if not v]}"


def _layers_on_halves(rank, world):
    group, members = _halves()
    me = dist.get_rank(group)
    out = {}
    # pipeline: two stages per half, both halves running the same step at once
    x, y = DP.synthetic_data(SPEC, 8, seed=rank % 2)
    reference = P.sequential_reference(SPEC.build, x, y)
    result = P.pipeline_step(me, 2, SPEC.build, [3, 2], x, y, "1f1b", 4, group=group)
    out["pipeline"] = all(torch.allclose(g, reference["grads"][k], atol=1e-6) for k, g in result["grads"].items())
    # tensor: a column-split layer over the half equals the full layer
    torch.manual_seed(0)
    full, inp = nn.Linear(5, 4), torch.randn(3, 5, requires_grad=True)
    split = TP.ColumnParallelLinear(full, gather_output=True, group=group)
    mine = inp.detach().clone().requires_grad_(True)
    split(mine).sum().backward()
    full(inp).sum().backward()
    out["tensor"] = torch.allclose(mine.grad, inp.grad, atol=1e-6) and torch.allclose(
        split.weight.grad, full.weight.grad.tensor_split(2)[me])
    # ZeRO stage 3 over the half: the same parameters as stage 0 on the same half
    params = {}
    for stage in (0, 3):
        model = SPEC.build()
        optimizer = ZeroAdam(model, stage, lr=0.01, group=group)
        xs, ys = DP.shard(*DP.synthetic_data(SPEC, 10), me, 2)
        for _ in range(2):
            optimizer.zero_grad()
            DP.local_loss(model, xs, ys, 10).backward()
            optimizer.step()
        params[stage] = optimizer.full_parameters()
    out["zero"] = all(torch.allclose(a, b, atol=1e-6) for a, b in zip(params[0], params[3]))
    return out


def test_pipeline_tensor_and_zero_on_subgroups():
    for rank, ok in enumerate(launch(_layers_on_halves, 4)):
        assert ok and all(ok.values()), f"rank {rank}: {ok}"


def test_grid_needs_the_right_number_of_ranks():
    def worker(rank, world):
        H.grid_groups(2, 2)

    with pytest.raises(Exception, match="a 2 x 2 grid needs 4 ranks, the group has 2"):
        launch(worker, 2)


def test_grid_prediction_adds_the_data_all_reduce_of_a_shard():
    from d2lmp.models import layer_table

    rows = layer_table(SPEC.build(), (8, 12))
    hw = this_machine(1e9, 1e-5, 1e-9, devices=4)
    grid = predict(rows, "hybrid", hw, 8, batch_of_table=8, grid=(2, 2))
    tensor = predict(rows, "tensor", hw.with_devices(2), 4, batch_of_table=8)
    shard = sum(r.params for r in rows) * 4 / 2
    assert grid.compute_s == pytest.approx(tensor.compute_s)
    assert grid.comm_s == pytest.approx(tensor.comm_s + 2 * (1e-5 + shard / 2 * 1e-9))
    with pytest.raises(ValueError, match="must multiply to the 4 devices"):
        predict(rows, "hybrid", hw, 8, grid=(2, 3))


@pytest.mark.parametrize("argv, message", [
    (["--steps", "1"], "--steps must be at least 2"), (["--batch", "1"], "--batch must be at least 2"),
])
def test_bench_hybrid_checks_its_options_before_anything_runs(monkeypatch, capsys, argv, message):
    from d2lmp.bench import hybrid as bench_hybrid
    from d2lmp.cli import main

    monkeypatch.setattr(bench_hybrid, "launch", lambda *a, **k: pytest.fail("launched before checking the options"))
    assert main(["bench", "hybrid", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("d2lmp: ") and message in err


def test_bench_hybrid_prints_predicted_measured_and_the_goal(monkeypatch, capsys):
    from d2lmp.bench import hybrid as bench_hybrid
    from d2lmp.cli import main

    result = dict(predicted_s=0.1, measured_s=0.08, ratio=1.25, compute_s=0.09, comm_s=0.01, flops=5e9,
                  alpha=2e-4, beta=2e-9, met=True)
    monkeypatch.setattr(bench_hybrid, "hybrid_bench", lambda **k: result)
    assert main(["bench", "hybrid"]) == 0
    out = capsys.readouterr().out
    assert "predicted: 100.0 ms" in out and "measured:  80.0 ms" in out
    assert "hybrid predicted/measured within 0.75–1.33×: 1.25 (met)" in out
