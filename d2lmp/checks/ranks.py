"""Rank functions that prove each parallel version equals one device.

Each runs on every rank (``rank, world`` first) and returns what it found. They live in a module (not a
notebook) so every start method can run them: ``launch`` with fork or spawn, and ``torchrun`` through the
entry point ``d2lmp.commands.demo``; the NCCL self-checks run them on GPUs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch
import torch.distributed as dist

from d2lmp.model.pipeline_balance import equal_split
from d2lmp.parallel import collectives as C
from d2lmp.parallel import data_parallel as DP
from d2lmp.parallel.launch import rank_device
from d2lmp.parallel.pipeline import Reference, StepResult, pipeline_step, sequential_reference

__all__ = ["SIZES", "check_collectives", "check_data_parallel", "check_pipeline", "check_interleaved_pipeline",
           "check_tensor_parallel", "check_zero", "check_hybrid", "DTensorCheck", "dtensor_mlp_check",
           "torch_pipelining_check", "check_context_parallel"]

SIZES = (1, 2, 3, 5, 7, 16, 1001, 2**19 + 3)  # includes one element and sizes not divisible by any world size


def check_collectives(rank: int, world: int, sizes: Sequence[int] = SIZES, device: str = "auto") -> dict[str, bool]:
    """Our collectives against torch.distributed's on integer-valued tensors (sums are exact)."""
    ok: dict[str, bool] = {}

    def record(name: str, value: object) -> None:
        ok[name] = ok.get(name, True) and bool(value)

    for n in sizes:
        g = torch.Generator().manual_seed(1000 * rank + n)
        x = torch.randint(-50, 50, (n,), generator=g).float().to(rank_device(device))
        reference = x.clone()
        dist.all_reduce(reference)
        for name, fn in (("ring_all_reduce", C.ring_all_reduce), ("naive_all_reduce", C.naive_all_reduce),
                         ("tree_all_reduce", C.tree_all_reduce)):
            record(name, torch.equal(fn(x.clone()), reference))
        record("ring_reduce_scatter", torch.equal(C.ring_reduce_scatter(x), torch.tensor_split(reference, world)[rank]))
        gathered = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(gathered, x)
        record("ring_all_gather", torch.equal(C.ring_all_gather(x), torch.stack(gathered)))
    block = torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(rank)).to(rank_device(device))
    reference = block.clone()
    dist.all_reduce(reference)
    record("ring_all_reduce_3d_float",
           torch.allclose(C.ring_all_reduce(block.clone()), reference, rtol=1e-5, atol=1e-5))
    return ok


def check_data_parallel(rank: int, world: int, versions: Sequence[str] = DP.VERSIONS, batch: int = 23,
                        device: str = "auto") -> dict[str, float]:
    """Max |difference| between each version's gradients and the single-process full-batch gradients."""
    spec = DP.MLPSpec((16, 32, 32, 5), seed=0)
    x, y = DP.synthetic_data(spec, batch)
    reference = DP.single_process_gradients(spec, x, y)
    errors: dict[str, float] = {}
    for version in versions:
        grads = DP.dp_gradients(rank, world, spec, x, y, version, bucket_bytes=512, device=device)
        errors[version] = max(float((g - r).abs().max()) for g, r in zip(grads, reference))
    return errors


@dataclass(frozen=True)
class DTensorCheck:
    """What ``dtensor_mlp_check`` found on a rank: outputs equal, the local shape of the first weight, and
    whether its gradient equals this rank's rows of the unsplit gradient."""

    output_equal: bool
    local_weight_shape: tuple[int, ...]
    grad_equal: bool


def dtensor_mlp_check(rank: int, world: int) -> DTensorCheck:
    """PyTorch's own tensor parallelism (DTensor ColwiseParallel/RowwiseParallel) on an MLP vs the unsplit MLP."""
    from torch import nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    torch.manual_seed(0)
    full = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
    split = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
    split.load_state_dict(full.state_dict())
    mesh = init_device_mesh(rank_device("auto").type, (world,))
    parallelize_module(split, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(1))
    full(x).sum().backward()
    split(x.to(rank_device("auto"))).sum().backward()
    first: Any = split[0]  # its weight and gradient are DTensors now
    reference = cast(torch.Tensor, cast(nn.Linear, full[0]).weight.grad)
    local = first.weight.grad.to_local().cpu()
    rows = 16 // world
    return DTensorCheck(output_equal=torch.allclose(split(x.to(rank_device("auto"))).cpu(), full(x), atol=1e-6),
                        local_weight_shape=tuple(first.weight.to_local().shape),
                        grad_equal=torch.allclose(local, reference[rank * rows:(rank + 1) * rows], atol=1e-6))


def check_pipeline(rank: int, world: int, kinds: Sequence[str] = ("naive", "gpipe", "1f1b"),
                   micro_batches: int = 3) -> dict[str, float]:
    """Max |difference| of each schedule's gradients and outputs from the unsplit MLP (computed on the CPU)."""
    spec = DP.MLPSpec((16, 32, 32, 32, 5), seed=0)
    x, y = DP.synthetic_data(spec, 12)
    reference = sequential_reference(spec.build, x, y)
    sizes = equal_split(len(spec.build()), world)
    return {kind: _pipeline_error(pipeline_step(rank, world, spec.build, sizes, x, y, kind, micro_batches), reference)
            for kind in kinds}


def check_interleaved_pipeline(rank: int, world: int, chunks: int = 2,
                               groups: tuple[int, ...] = (1, 2)) -> dict[str, float]:
    """Max |difference| of interleaved 1F1B's gradients, outputs and loss from the unsplit MLP, with ``chunks``
    chunks per rank and ``g`` × world micro-batches for each g of ``groups`` (m = p runs all forwards first)."""
    spec = DP.MLPSpec((16, 24, 24, 24, 24, 24, 5), seed=0)  # 11 layers: up to 5 ranks x 2 chunks
    x, y = DP.synthetic_data(spec, 4 * world + 3)  # micro-batches of unequal size
    reference = sequential_reference(spec.build, x, y)
    sizes = equal_split(len(spec.build()), world * chunks)
    errors: dict[str, float] = {}
    for g in groups:
        result = pipeline_step(rank, world, spec.build, sizes, x, y, "interleaved", g * world, chunks=chunks)
        errors[f"interleaved 1F1B v={chunks} m={g * world}"] = _pipeline_error(result, reference)
    return errors


def _pipeline_error(result: StepResult, reference: Reference) -> float:
    """The largest |difference| of this rank's gradients (and, on the last stage, outputs and loss) from one device."""
    err = max((g - reference.grads[k]).abs().max().item() for k, g in result.grads.items())
    if result.outputs is not None and result.loss is not None:
        err = max(err, (result.outputs - reference.outputs).abs().max().item(), abs(result.loss - reference.loss))
    return err


def check_tensor_parallel(rank: int, world: int) -> dict[str, float]:
    """Max |difference| of column- and row-split linear layers (on this rank's device) from the full layer."""
    from torch import nn

    from d2lmp.parallel import tensor_parallel as TP

    dev = rank_device("auto")
    torch.manual_seed(0)
    column_full, row_full = nn.Linear(8, 8 * world).to(dev), nn.Linear(8 * world, 8).to(dev)
    x_column, x_row = torch.randn(5, 8, device=dev), torch.randn(5, 8 * world, device=dev)
    column, row = TP.ColumnParallelLinear(column_full), TP.RowParallelLinear(row_full, input_is_parallel=False)
    return {"column": (column(x_column) - column_full(x_column)).abs().max().item(),
            "row": (row(x_row) - row_full(x_row)).abs().max().item()}


def torch_pipelining_check(rank: int, world: int, micro_batches: int = 4) -> dict[str, float]:
    """PyTorch's pipeline API (``torch.distributed.pipelining``, alpha in its documentation), GPipe, vs the MLP."""
    from torch import nn
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

    spec = DP.MLPSpec((16, 32, 32, 32, 5), seed=0)
    x, y = DP.synthetic_data(spec, 12)
    reference = sequential_reference(spec.build, x, y)
    sizes = equal_split(len(spec.build()), world)
    start = sum(sizes[:rank])
    stage_module = spec.build()[start:start + sizes[rank]]
    dev = rank_device("auto")
    stage = PipelineStage(stage_module.to(dev), rank, world, dev)

    # per micro-batch mean; the schedule averages over micro-batches
    def loss_fn(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(out, target)

    schedule = ScheduleGPipe(stage, micro_batches, loss_fn=loss_fn)
    if rank == 0:
        schedule.step(x.to(dev))
    elif rank == world - 1:
        schedule.step(target=y.to(dev))
    else:
        schedule.step()
    grads = {k: p.grad.cpu() for k, p in stage_module.named_parameters()}  # type: ignore[union-attr]
    return {"max_grad_error": max((g - reference.grads[k]).abs().max().item() for k, g in grads.items())}


def check_zero(rank: int, world: int, steps: int = 3, lr: float = 1e-2) -> dict[str, float]:
    """Max |difference| of each ZeRO stage's parameters after ``steps`` Adam steps from one device's Adam."""
    from d2lmp.parallel.zero import STAGES, zero_train

    sizes = (16, 24, 24, 5)
    x, y = DP.synthetic_data(DP.MLPSpec(sizes), 4 * world + 3)  # uneven over the ranks
    model = DP.MLPSpec(sizes).build()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, foreach=False)
    for _ in range(steps):
        optimizer.zero_grad()
        DP.local_loss(model, x, y, len(x)).backward()
        optimizer.step()
    reference = [p.detach() for p in model.parameters()]
    errors: dict[str, float] = {}
    for stage in STAGES:
        got = zero_train(rank, world, sizes, x, y, stage, steps, lr).parameters
        errors[f"ZeRO stage {stage}"] = max(float((g - r).abs().max()) for g, r in zip(got, reference))
    return errors


def check_hybrid(rank: int, world: int, steps: int = 3, lr: float = 0.1) -> dict[str, float]:
    """Max |difference| of the data x tensor hybrid's parameter shards from one device's after ``steps`` SGD steps.

    The grid is world/2 replicas of 2 ranks each (2 x 2 on 4 ranks); on an odd world, world replicas of 1.
    """
    from d2lmp.parallel.hybrid import hybrid_train, one_device_shards

    tensor = 2 if world % 2 == 0 else 1
    spec = DP.MLPSpec((12, 16, 16, 6), seed=0)
    x, y = DP.synthetic_data(spec, 5 * world + 1)
    model = spec.build()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for _ in range(steps):
        optimizer.zero_grad()
        DP.local_loss(model, x, y, len(x)).backward()
        optimizer.step()
    result = hybrid_train(rank, world, spec, x, y, world // tensor, tensor, steps, lr)
    expected = one_device_shards([p.detach() for p in model.parameters()], result.tensor_rank, tensor)
    name = f"hybrid {world // tensor} x {tensor} (data x tensor)"
    return {name: max(float((g - r).abs().max()) for g, r in zip(result.parameters, expected))}


def check_context_parallel(rank: int, world: int, tokens_per_rank: int = 6, device: str = "auto") -> dict[str, float]:
    """Max |difference| of ring attention's output and dq, dk, dv (this rank's chunks) from one device's
    ``F.scaled_dot_product_attention`` on the whole sequence: both layouts, causal and not, each block kernel
    (the fused one on CPU ranks only)."""
    from torch.nn import functional as F

    from d2lmp.model.context_layout import LAYOUTS
    from d2lmp.parallel.attention_blocks import BLOCK_KERNELS
    from d2lmp.parallel.context_parallel import ring_attention
    from d2lmp.parallel.sequence_chunks import split_sequence

    dev = rank_device(device)
    kernels = BLOCK_KERNELS if dev.type == "cpu" else ("explicit",)
    g = torch.Generator().manual_seed(0)
    q, k, v, probe = (torch.randn(2, 3, tokens_per_rank * world, 8, generator=g) for _ in range(4))
    errors = {}
    for causal in (True, False):
        whole = [t.clone().requires_grad_(True) for t in (q, k, v)]
        reference = F.scaled_dot_product_attention(whole[0], whole[1], whole[2], is_causal=causal)
        reference.backward(probe)
        expected = [reference.detach()] + [cast(torch.Tensor, t.grad) for t in whole]
        for layout, kernel in ((layout, kernel) for layout in LAYOUTS for kernel in kernels):
            mine = [split_sequence(t, world, layout)[rank].to(dev).requires_grad_(True) for t in (q, k, v)]
            out = ring_attention(mine[0], mine[1], mine[2], causal=causal, layout=layout, kernel=kernel)
            out.backward(split_sequence(probe, world, layout)[rank].to(dev))
            got = [out.detach()] + [cast(torch.Tensor, t.grad) for t in mine]
            for what, ours, want in zip(("output", "dq", "dk", "dv"), got, expected):
                name = f"ring attention, {layout}, {'causal' if causal else 'no mask'}, {kernel}: {what}"
                errors[name] = float((ours.cpu() - split_sequence(want, world, layout)[rank]).abs().max())
    return errors
