"""Rank functions that prove our all-to-all equals the exchange and expert parallelism equals one device.

``check_all_to_all`` compares ``collectives.all_to_all`` with torch's (``dist.all_to_all`` for equal
blocks, through ``all_to_all.torch_all_to_all_equal``, which sends them by ``dist.all_to_all_single`` where
gloo lacks ``all_to_all``, before torch 2.12; ``all_to_all.torch_all_to_all``, ``dist.all_to_all_single`` with
split sizes, for uneven ones, since gloo's ``all_to_all`` refuses uneven blocks) and with the exchange written out
from every rank's inputs, and counts the bytes it puts on the wire with ``p2p_log.MessageLog``.
``check_expert_parallel`` runs ``ExpertParallelMoE`` against ``MoE`` on the concatenated batch, top-1 and top-2,
with a capacity that drops tokens. Both return the largest error by name (0 where equal) and run under ``launch``
and torchrun alike.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from d2lmp.moe import MoE, MoESpec
from d2lmp.parallel import collectives as C
from d2lmp.parallel.all_to_all import torch_all_to_all, torch_all_to_all_equal
from d2lmp.parallel.expert_parallel import ExpertParallelMoE
from d2lmp.parallel.launch import rank_device
from d2lmp.parallel.p2p_log import Message, MessageLog

__all__ = ["all_to_all_block", "check_all_to_all", "expert_parallel_case", "check_expert_parallel"]


def all_to_all_block(src: int, dst: int, device: torch.device, equal: bool = False) -> torch.Tensor:
    """What rank ``src`` sends rank ``dst`` here: [rows, 2, 3] floats; rows uneven (some 0) unless ``equal``."""
    rows = 2 if equal else (3 * src + 2 * dst + 1) % 4
    g = torch.Generator().manual_seed(100 * src + dst + (7 if equal else 0))
    return torch.randn(rows, 2, 3, generator=g).to(device)


def _message_bytes(messages: list[Message]) -> int:
    """The bytes of ``messages``, as ``MessageLog`` counted them."""
    return sum(m.nbytes for m in messages)


def check_all_to_all(rank: int, world: int, device: str = "auto") -> dict[str, float]:
    """Max |difference| of our all-to-all from torch's and from the exchange written out; bytes off the count."""
    dev = rank_device(device)
    errors: dict[str, float] = {}

    def worst(got: list[torch.Tensor], expected: list[torch.Tensor]) -> float:
        if [g.shape for g in got] != [e.shape for e in expected]:
            return float("inf")
        return max((float((g - e).abs().max()) for g, e in zip(got, expected) if e.numel()), default=0.0)

    equal = [all_to_all_block(rank, d, dev, equal=True) for d in range(world)]
    reference = torch_all_to_all_equal(equal)
    errors["all_to_all = dist.all_to_all (equal blocks)"] = worst(C.all_to_all(equal), reference)

    uneven = [all_to_all_block(rank, d, dev) for d in range(world)]
    written_out = [all_to_all_block(src, rank, dev) for src in range(world)]  # block `rank` of every source
    with MessageLog() as log:
        got = C.all_to_all(uneven)
    errors["all_to_all = the exchange written out (uneven blocks)"] = worst(got, written_out)
    errors["all_to_all = torch's all_to_all_single (uneven blocks)"] = worst(got, torch_all_to_all(uneven))
    # Each other rank gets one int64 size and its block; a block of no rows is never sent.
    data_sent = sum(t.numel() * t.element_size() for d, t in enumerate(uneven) if d != rank)
    data_received = sum(t.numel() * t.element_size() for s, t in enumerate(written_out) if s != rank)
    errors["all_to_all bytes sent - expected"] = float(abs(_message_bytes(log.sent) - data_sent - 8 * (world - 1)))
    errors["all_to_all bytes received - expected"] = float(abs(_message_bytes(log.received) - data_received
                                                             - 8 * (world - 1)))
    buffers = [torch.full_like(t, float("nan")) for t in written_out]
    with MessageLog() as log:  # into buffers given, whose sizes say what to expect: no sizes sent
        into = C.all_to_all(uneven, out=buffers)
    errors["all_to_all into given buffers = the exchange written out"] = worst(into, written_out) + float(
        any(a is not b for a, b in zip(into, buffers)))
    errors["all_to_all into given buffers: bytes - expected"] = float(
        abs(_message_bytes(log.sent) - data_sent) + abs(_message_bytes(log.received) - data_received))

    if world >= 3:  # within a group of ranks 1 .. n-1, whose rank numbers differ from the global ones
        members = list(range(1, world))
        group = dist.new_group(members)
        if rank in members:
            me, n = members.index(rank), len(members)
            inputs = [all_to_all_block(me, d, dev) for d in range(n)]
            expected = [all_to_all_block(s, me, dev) for s in range(n)]
            errors["all_to_all in a group of ranks 1..n-1"] = worst(C.all_to_all(inputs, group), expected)
        else:
            errors["all_to_all in a group of ranks 1..n-1"] = 0.0  # rank 0 takes no part
        dist.destroy_process_group(group)
    return errors


def expert_parallel_case(world: int, top_k: int) -> tuple[MoESpec, torch.Tensor, torch.Tensor]:
    """The layer and data ``check_expert_parallel`` uses: 2 experts per rank, a capacity that drops tokens,
    a batch of 2·world + 1 sequences (uneven over the ranks) of 3 tokens, and a fixed probe of the output."""
    spec = MoESpec(hidden=8, ffn=12, experts=2 * world, top_k=top_k, capacity_factor=1.0, seed=top_k)
    g = torch.Generator().manual_seed(10 + world)
    x = torch.randn(2 * world + 1, 3, spec.hidden, generator=g)
    return spec, x, torch.randn(x.shape, generator=g)


def _grad_error(ours: torch.Tensor, theirs: torch.Tensor) -> float:
    """Max |difference| of two parameters' gradients; an expert no token reached has none, on both or neither."""
    if ours.grad is None or theirs.grad is None:
        return 0.0 if ours.grad is None and theirs.grad is None else float("inf")
    return float((ours.grad - theirs.grad).abs().max())


def check_expert_parallel(rank: int, world: int, device: str = "auto") -> dict[str, float]:
    """Max |difference| of the expert-parallel layer from one device's on the whole batch, top-1 and top-2.

    Loss = Σ output · probe + auxiliary loss on both; compared: the output, the routing (experts
    chosen and assignments kept, as counts of mismatches), the load per expert, the auxiliary loss
    summed over ranks, and the gradients of the router and of every expert this rank holds.
    """
    dev = rank_device(device)
    errors: dict[str, float] = {}
    for top_k in (1, 2):
        spec, x, probe = expert_parallel_case(world, top_k)
        x, probe = x.to(dev), probe.to(dev)
        full = MoE(spec).to(dev)
        whole = full.run(x)
        ((whole.output * probe).sum() + whole.aux_loss).backward()
        split = ExpertParallelMoE(full)
        part = split.run(torch.tensor_split(x, world)[rank])
        ((part.output * torch.tensor_split(probe, world)[rank]).sum() + part.aux_loss).backward()
        split.all_reduce_router_grads()

        def mine(t: torch.Tensor, batch: int = len(x)) -> torch.Tensor:  # this rank's rows of a whole-batch tensor
            return torch.tensor_split(t.view(batch, -1, *t.shape[1:]), world)[rank].flatten(0, 1)
        name = f"top-{top_k}"
        expected = torch.tensor_split(whole.output.detach(), world)[rank]
        errors[f"{name} output"] = float((part.output.detach() - expected).abs().max())
        errors[f"{name} routing (mismatched choices)"] = float((part.routing.expert != mine(whole.routing.expert)).sum()
                                                               + (part.routing.kept != mine(whole.routing.kept)).sum())
        ours, theirs = part.load, whole.load
        errors[f"{name} load per expert"] = float(max(abs(a - b) for a, b in zip(
            (*ours.routed, *ours.kept, ours.capacity), (*theirs.routed, *theirs.kept, theirs.capacity))))
        aux = part.aux_loss.detach().clone().view(1)
        C.ring_all_reduce(aux)
        errors[f"{name} auxiliary loss"] = float((aux - whole.aux_loss.detach()).abs().max())
        errors[f"{name} router gradient"] = _grad_error(split.router.weight, full.router.weight)
        errors[f"{name} expert gradients"] = max(
            _grad_error(p, q) for i, module in enumerate(split.experts)
            for p, q in zip(module.parameters(), full.experts[split.first + i].parameters()))
    return errors
