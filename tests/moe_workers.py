"""Rank workers for the all-to-all and expert-parallel tests (importable, so any start method can run them)."""

import torch
import torch.distributed as dist

from d2lmp.checks.experts import all_to_all_block, check_all_to_all, check_expert_parallel, expert_parallel_case
from d2lmp.moe import MoE, MoESpec
from d2lmp.parallel import all_to_all as A2A
from d2lmp.parallel import collectives as C
from d2lmp.parallel.expert_parallel import ExpertParallelMoE


def all_to_all_checks(rank, world):
    """The rank check, the same check with a broken all-to-all (blocks returned in reverse order), and the
    ValueErrors of bad input, all in one launch."""
    errors = check_all_to_all(rank, world)
    original = C.all_to_all
    C.all_to_all = lambda inputs, group=None, **kw: original(inputs, group, **kw)[::-1]
    try:
        broken = check_all_to_all(rank, world)
    finally:
        C.all_to_all = original
    messages = {}
    block = torch.zeros(2, 3)
    bad = {"count": ([block] * (world + 1), {}),
           "trailing shape": ([block] * (world - 1) + [torch.zeros(2, 4)], {}),
           "dtype": ([block] * (world - 1) + [torch.zeros(2, 3, dtype=torch.float64)], {}),
           "0-d": ([torch.tensor(1.0)] * world, {}),
           "output_sizes": ([block] * world, {"output_sizes": [5] * world}),
           "out shape": ([block] * world, {"out": [torch.zeros(2, 4)] * world}),
           "out not contiguous": ([block] * world, {"out": [torch.zeros(3, 2).t()] * world})}
    for name, (inputs, kwargs) in bad.items():
        try:
            C.all_to_all(inputs, **kwargs)
            messages[name] = None
        except ValueError as e:
            messages[name] = str(e)
    dist.barrier()  # no rank leaves while a peer might still send
    return errors, broken, messages, equal_reference_checks(rank, world)


def equal_reference_checks(rank, world):
    """torch_all_to_all_equal against the exchange written out: as it runs here, by all_to_all_single, and where the
    backend lacks all_to_all (simulated: the error gloo raises before torch 2.12); another error is not swallowed,
    uneven blocks are refused."""
    blocks = [all_to_all_block(rank, d, torch.device("cpu"), equal=True) for d in range(world)]
    written_out = [all_to_all_block(src, rank, torch.device("cpu"), equal=True) for src in range(world)]

    def same(got):
        return len(got) == world and all(torch.equal(g, e) for g, e in zip(got, written_out))

    results = {"here": same(A2A.torch_all_to_all_equal(blocks)),
               "by all_to_all_single": same(A2A.torch_all_to_all_equal(blocks, use_single=True))}
    original = dist.all_to_all

    def lacking(*args, **kwargs):
        raise RuntimeError("Backend gloo does not support alltoall")

    def failing(*args, **kwargs):
        raise RuntimeError("some other failure")

    try:
        dist.all_to_all = lacking
        results["backend without all_to_all"] = same(A2A.torch_all_to_all_equal(blocks))
        dist.all_to_all = failing
        try:
            A2A.torch_all_to_all_equal(blocks)
            results["other error raised"] = False
        except RuntimeError as e:
            results["other error raised"] = "some other failure" in str(e)
    finally:
        dist.all_to_all = original
    try:
        A2A.torch_all_to_all_equal([torch.zeros(d + 1, 2) for d in range(world)])
        results["uneven refused"] = world == 1
    except ValueError as e:
        results["uneven refused"] = "equal blocks only" in str(e)
    dist.barrier()
    return results


def expert_parallel_run(rank, world):
    """For top-1 and top-2: this rank's output, routing, load, summed auxiliary loss, gradients and dispatch;
    the rank check's errors; and the check's errors when the router's gradients are not summed over ranks."""
    runs = {}
    for top_k in (1, 2):
        spec, x, probe = expert_parallel_case(world, top_k)
        layer = ExpertParallelMoE(MoE(spec))
        part = layer.run(torch.tensor_split(x, world)[rank])
        ((part.output * torch.tensor_split(probe, world)[rank]).sum() + part.aux_loss).backward()
        layer.all_reduce_router_grads()
        aux = part.aux_loss.detach().clone().view(1)
        C.ring_all_reduce(aux)
        runs[top_k] = dict(
            output=part.output.detach(), expert=part.routing.expert, kept=part.routing.kept, load=part.load,
            aux=aux, router_grad=layer.router.weight.grad,
            expert_grads={layer.first + i: [p.grad for p in m.parameters()] for i, m in enumerate(layer.experts)},
            counts=part.routing.counts, capacity=part.routing.capacity, sent=layer.sent)
    errors = check_expert_parallel(rank, world)
    original = ExpertParallelMoE.all_reduce_router_grads
    ExpertParallelMoE.all_reduce_router_grads = lambda self: None
    try:
        broken = check_expert_parallel(rank, world)
    finally:
        ExpertParallelMoE.all_reduce_router_grads = original
    try:
        ExpertParallelMoE(MoE(MoESpec(experts=2 * world + 1)))
        uneven = None
    except ValueError as e:
        uneven = str(e)
    dist.barrier()
    return runs, errors, broken, uneven

