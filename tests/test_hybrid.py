"""A 2 × 2 grid of process groups trains equal to one device, and every group-aware piece equals its whole-world self.

The group tests run 4 ranks split into the subgroups {0, 2} and {1, 3}: both halves work at the
same time, so a message sent to a group rank instead of its global rank would land in the wrong half.
"""

import pytest
import torch
import torch.distributed as dist
from torch import nn

from d2lmp.model.costmodel import predict, this_machine
from d2lmp.parallel import collectives as C
from d2lmp.parallel import data_parallel as DP
from d2lmp.parallel import hybrid as H
from d2lmp.parallel import pipeline as P
from d2lmp.parallel import tensor_parallel as TP
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
    assert [(r.data_rank, r.tensor_rank) for r in per_rank] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for r in per_rank:
        torch.testing.assert_close(r.parameters, H.one_device_shards(reference, r.tensor_rank, 2))
        torch.testing.assert_close(r.losses, losses)
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
    out["pipeline"] = all(torch.allclose(g, reference.grads[k], atol=1e-6) for k, g in result.grads.items())
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


def test_grid_prediction_charges_each_message_the_hybrid_sends():
    from d2lmp.models import layer_table

    rows = layer_table(SPEC.build(), (8, 12))  # Linear 12->16, 16->16, 16->6; 4 examples per replica
    a, b = 1e-5, 1e-9
    hw = this_machine(1e9, a, b, devices=4)
    grid = predict(rows, "hybrid", hw, 8, batch_of_table=8, grid=(2, 2), gradient_tensors=6)
    tensor = predict(rows, "tensor", hw.with_devices(2), 4, batch_of_table=8)
    assert grid.compute_s == pytest.approx(tensor.compute_s)
    # rows: all-gather of each output (256, 256, 96 bytes: α + S/2·β), all-reduce of the inputs of
    # layers 2 and 3 (256 bytes each: 2(α + S/2·β)); the first layer's input needs no gradient
    tensor_comm = (a + 128 * b) * 2 + (a + 48 * b) + 2 * 2 * (a + 128 * b)
    # columns: the 582 parameters / 2 = 1164 bytes, in 6 all-reduces of 2(α + S_k/2·β)
    data_comm = 6 * 2 * a + 1164 * b
    assert grid.parts == pytest.approx({"compute": tensor.compute_s, "tensor-group collectives": tensor_comm,
                                        "data-group all-reduce": data_comm})
    assert grid.comm_s == pytest.approx(tensor_comm + data_comm)
    flat = predict(rows, "hybrid", hw, 8, batch_of_table=8, grid=(2, 2))  # one all-reduce of a flat buffer
    assert flat.parts["data-group all-reduce"] == pytest.approx(2 * a + 1164 * b)
    with pytest.raises(ValueError, match="must multiply to the 4 devices"):
        predict(rows, "hybrid", hw, 8, grid=(2, 3))
    with pytest.raises(ValueError, match="gradient_tensors must be an integer >= 1"):
        predict(rows, "hybrid", hw, 8, grid=(2, 2), gradient_tensors=0)


def test_breakdown_splits_the_slowest_step_at_its_column_s_last_backward():
    from d2lmp.bench.hybrid import breakdown
    from d2lmp.model.timeline import TimelineEvent as E

    def rank(r, backward_end, all_reduces, end):
        return [E(r, "forward+backward", "", 0.0, backward_end), *[E(r, "allreduce", "", s, e) for s, e in all_reduces],
                E(r, "optimizer", "", all_reduces[-1][1], end), E(r, "step", "", 0.0, end)]

    steps = [rank(0, 6.0, [(6.0, 7.0), (7.5, 8.5)], 9.0),  # rank 2's column partner: finishes backward last
             rank(1, 4.0, [(4.0, 5.0), (5.0, 6.0)], 7.0),
             rank(2, 5.0, [(5.0, 7.0), (7.0, 8.5)], 10.0),  # the slowest step
             rank(3, 4.0, [(4.0, 5.0), (5.0, 6.0)], 7.0)]
    parts = breakdown(steps, [0, 1, 0, 1])
    # from rank 0's backward end (6) to rank 2's last all-reduce (8.5); its second all-reduce waited 7 -> 7.5
    assert parts == pytest.approx({"forward+backward": 6.0, "data-group all-reduce": 2.5, "waiting": 0.5,
                                   "optimizer": 1.5, "step": 10.0})
    assert parts["forward+backward"] + parts["data-group all-reduce"] + parts["optimizer"] == parts["step"]


@pytest.mark.parametrize("argv, message", [
    (["--steps", "1"], "--steps must be at least 2"), (["--batch", "1"], "--batch must be at least 2"),
    (["--rounds", "0"], "--rounds must be at least 1"),
])
def test_bench_hybrid_checks_its_options_before_anything_runs(monkeypatch, capsys, argv, message):
    from d2lmp.bench import hybrid as bench_hybrid
    from d2lmp.commands.main import main

    monkeypatch.setattr(bench_hybrid, "launch", lambda *a, **k: pytest.fail("launched before checking the options"))
    assert main(["bench", "hybrid", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("d2lmp: ") and message in err


def test_bench_hybrid_prints_predicted_measured_and_the_goal(monkeypatch, capsys):
    from d2lmp.bench import hybrid as bench_hybrid
    from d2lmp.commands.main import main

    result = bench_hybrid.HybridResult(
        predicted_s=0.1, measured_s=0.08, ratio=1.25, compute_s=0.09, comm_s=0.01, flops=5e9, alpha=2e-4, beta=2e-9,
        gradient_tensors=8,
        parts_predicted={"compute": 0.09, "tensor-group collectives": 0.004, "data-group all-reduce": 0.006},
        parts_measured={"forward+backward": 0.07, "data-group all-reduce": 0.008, "waiting": 0.001,
                        "optimizer": 0.002, "step": 0.08})
    monkeypatch.setattr(bench_hybrid, "hybrid_bench", lambda **k: result)
    assert main(["bench", "hybrid"]) == 0
    out = capsys.readouterr().out
    lines = {line.strip().split("  ")[0]: line.split() for line in out.splitlines() if "  " in line.strip()}
    assert lines["forward+backward"][-4:] == ["90.0", "+", "4.0", "70.0"]
    assert lines["data-group all-reduces (8 tensors)"][-2:] == ["6.0", "8.0"]
    assert lines["of which waiting for the partner"][-1] == "1.0"
    assert lines["optimizer update"][-3:] == ["not", "modelled", "2.0"]
    assert lines["step (median step of the slowest rank)"][-2:] == ["100.0", "80.0"]
    assert "goal: hybrid predicted / measured step within 0.75–1.33×: 1.25× (met)" in out
