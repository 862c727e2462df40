"""Expert parallelism equals one device: same routing, same dropped tokens, same output, same gradients."""

import moe_workers as W
import pytest
import torch

from d2lmp.checks.experts import expert_parallel_case
from d2lmp.moe import MoE
from d2lmp.parallel.expert_parallel import counts_per_rank, dispatch_counts
from d2lmp.parallel.launch import launch


def _grads_or_none(module):
    return [p.grad for p in module.parameters()]


@pytest.mark.parametrize("world", [2, 4])
def test_expert_parallel_equals_one_device_on_the_concatenated_batch(world):
    """One launch per world size: top-1 and top-2 compared here with the full layer run in this process,
    the rank check's errors, the check catching router gradients left unsummed, and uneven experts refused."""
    results = launch(W.expert_parallel_run, world)
    for top_k in (1, 2):
        spec, x, probe = expert_parallel_case(world, top_k)
        full = MoE(spec)
        whole = full.run(x)
        ((whole.output * probe).sum() + whole.aux_loss).backward()
        runs = [r[0][top_k] for r in results]
        assert 0 < sum(whole.load.dropped) < sum(whole.load.routed), "the capacity must drop some, not all"
        torch.testing.assert_close(torch.cat([r["output"] for r in runs]), whole.output.detach())
        assert torch.equal(torch.cat([r["expert"] for r in runs]), whole.routing.expert)
        assert torch.equal(torch.cat([r["kept"] for r in runs]), whole.routing.kept)  # the same tokens dropped
        tokens = [len(part.reshape(-1, spec.hidden)) for part in torch.tensor_split(x, world)]
        dispatch = dispatch_counts(counts_per_rank(whole.routing, tokens), whole.routing.capacity, world)
        held = {}
        for rank, r in enumerate(runs):
            assert r["load"] == whole.load and r["capacity"] == whole.routing.capacity
            assert r["sent"] == dispatch.sent[rank], "the dispatch sends what the counts predict"
            torch.testing.assert_close(r["aux"][0], whole.aux_loss.detach())
            torch.testing.assert_close(r["router_grad"], full.router.weight.grad)
            held.update(r["expert_grads"])
        assert sorted(held) == list(range(spec.experts)), "every expert lives on exactly one rank"
        for e, grads in held.items():
            for ours, theirs in zip(grads, _grads_or_none(full.experts[e])):
                assert (ours is None) == (theirs is None), e
                if theirs is not None:
                    torch.testing.assert_close(ours, theirs)
    for rank, (_, errors, broken, uneven) in enumerate(results):
        assert len(errors) == 12 and all(e <= 1e-5 for e in errors.values()), f"rank {rank}: {errors}"
        assert all(errors[f"top-{k} {name}"] == 0 for k in (1, 2)  # counts: exactly equal
                   for name in ("routing (mismatched choices)", "load per expert")), errors
        assert all(broken[f"top-{k} router gradient"] > 1e-3 for k in (1, 2)), f"rank {rank}: {broken}"
        assert f"{2 * world + 1} experts cannot be split evenly over {world} ranks" in uneven
