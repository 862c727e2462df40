"""Rank functions that prove a distributed checkpoint reshards: saved by 4 ranks, loaded into 2 and into 1, equal.

Two sharded training states: an MLP under PyTorch's FSDP2 (``fully_shard`` on every layer: each parameter
and its Adam moments split along dimension 0, unevenly where a width does not divide) and a tensor-parallel
MLP (``parallelize_module``: the first layer's columns and the second layer's rows split, its last bias
replicated). A few Adam steps on ``SAVE_WORLD`` ranks, a DCP save, then a fresh model on fewer ranks (one
rank: a plain, unsplit model) loads it, and every parameter and every optimizer tensor, gathered whole, must
equal the saved one exactly (``torch.equal``). ``reshard_roundtrip`` runs the three launches and reports the
bytes each rank wrote and holds, the save and load times, and the verdicts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from d2lmp.models import mlp
from d2lmp.parallel import checkpoint as ckpt
from d2lmp.parallel.launch import launch

__all__ = ["KINDS", "SAVE_WORLD", "RankState", "ReshardReport", "build", "save_rank", "load_rank",
           "state_difference", "reshard_roundtrip"]

KINDS = ("fsdp2", "tensor")
SAVE_WORLD = 4
FSDP_SIZES = (33, 64, 47, 10)  # 47 rows split 12/12/12/11 over 4 ranks, 24/23 over 2: uneven shards
TP_SIZES = (24, 48, 24)  # 48 columns and rows: 12 per rank on 4 ranks, 24 on 2


@dataclass(frozen=True)
class RankState:
    """What one rank found: the whole training state, the bytes it holds and wrote, the seconds it took."""

    state: ckpt.FullState  # full_training_state: every tensor gathered whole
    held_bytes: int  # this rank's own shards of parameters and optimizer state
    seconds: float  # the save (or load) as this rank timed it
    written: dict[int, int]  # bytes of data each rank wrote (after a save; empty after a load)
    read: int = 0  # bytes of saved records this rank read (after a load)


@dataclass(frozen=True)
class ReshardReport:
    """One round trip: saved on ``SAVE_WORLD`` ranks, loaded into each of ``worlds``."""

    kind: str
    written: dict[int, int]  # bytes of data files per saving rank
    held: dict[int, int]  # world -> bytes one rank holds (its shards, after saving or loading)
    read: dict[int, int]  # world -> bytes of saved records the busiest loading rank read
    save_seconds: float  # the slowest saving rank
    load_seconds: dict[int, float]  # world -> the slowest loading rank
    difference: dict[int, float]  # world -> max |difference| of any tensor from the saved state
    equal: dict[int, bool]  # world -> every tensor equal (torch.equal) and the same tensors present


def build(kind: str, world: int, sizes: tuple[int, ...] | None = None) -> tuple[nn.Module, torch.optim.Optimizer]:
    """The model and its Adam, split over ``world`` ranks (``world == 1``: one plain model), same weights.

    ``sizes``: the layer widths (default ``FSDP_SIZES`` or ``TP_SIZES``; the tensor-parallel MLP has one
    hidden layer, whose width every world size must divide).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; available: {', '.join(KINDS)}")
    sizes = sizes or (FSDP_SIZES if kind == "fsdp2" else TP_SIZES)
    if kind == "tensor" and (len(sizes) != 3 or sizes[1] % max(world, 1)):
        raise ValueError(f"the tensor-parallel MLP needs (in, hidden, out), hidden divisible by {world}; got {sizes}")
    torch.manual_seed(0)
    model = mlp(sizes[0], sizes[1:-1], sizes[-1], flatten=False)
    if world > 1:
        from torch.distributed.device_mesh import init_device_mesh

        mesh = init_device_mesh("cpu", (world,))
        if kind == "fsdp2":
            from torch.distributed.fsdp import fully_shard

            for layer in model:
                if isinstance(layer, nn.Linear):
                    fully_shard(layer, mesh=mesh)
            fully_shard(model, mesh=mesh)
        else:
            from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

            parallelize_module(model, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    return model, torch.optim.Adam(model.parameters(), lr=1e-2, foreach=False)


def _batch(sizes: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.randn(16, sizes[0], generator=g), torch.randint(0, sizes[-1], (16,), generator=g)


def _held_bytes(state: dict[str, Any]) -> int:
    """Bytes of this rank's own pieces of every tensor in a ``training_state``."""
    total = 0
    tensors = list(state["model"].values()) + [v for per in state["optim"]["state"].values() for v in per.values()]
    for t in tensors:
        if torch.is_tensor(t):
            local = t.to_local() if hasattr(t, "to_local") else t
            total += local.numel() * local.element_size()
    return total


def save_rank(rank: int, world: int, kind: str, folder: str, steps: int = 3,
              sizes: tuple[int, ...] | None = None) -> RankState:
    """Worker: train ``steps`` Adam steps on ``world`` ranks, save with DCP under ``folder``, return the state."""
    model, optimizer = build(kind, world, sizes)
    x, y = _batch(sizes or (FSDP_SIZES if kind == "fsdp2" else TP_SIZES))
    for _ in range(steps):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    state = ckpt.training_state(model, optimizer)
    report = ckpt.save(state, folder, steps)
    return RankState(ckpt.full_training_state(model, optimizer), _held_bytes(state), report.seconds,
                     report.bytes_per_rank)


def load_rank(rank: int, world: int, kind: str, path: str, sizes: tuple[int, ...] | None = None) -> RankState:
    """Worker: a fresh model on ``world`` ranks, sharded its own way, loads ``path``; return the whole state."""
    model, optimizer = build(kind, world, sizes)
    state = ckpt.training_state(model, optimizer)  # allocated, sharded for this world: DCP fills it in place
    start = time.perf_counter()
    report = ckpt.load(state, path)
    ckpt.restore_training_state(model, optimizer, state)
    seconds = time.perf_counter() - start
    return RankState(ckpt.full_training_state(model, optimizer), _held_bytes(state), seconds, {}, report.bytes_read)


def state_difference(a: ckpt.FullState, b: ckpt.FullState) -> tuple[bool, float]:
    """(exactly equal, max |difference|) of two ``full_training_state`` results; different names differ."""
    ta, tb = a.tensors(), b.tensors()
    if set(ta) != set(tb) or any(ta[k].shape != tb[k].shape for k in ta):
        return False, float("inf")
    worst = max(((ta[k].double() - tb[k].double()).abs().max().item() for k in ta if ta[k].numel()), default=0.0)
    return all(torch.equal(ta[k], tb[k]) for k in ta), worst


def reshard_roundtrip(folder: str, kind: str, worlds: tuple[int, ...] = (2, 1),
                      sizes: tuple[int, ...] | None = None, timeout: float = 120.0) -> ReshardReport:
    """Save on ``SAVE_WORLD`` ranks under ``folder`` (created if need be), load into each of ``worlds``, compare."""
    _import_before_fork()
    Path(folder).mkdir(parents=True, exist_ok=True)
    steps = 3
    saved = launch(save_rank, SAVE_WORLD, kind, folder, steps, sizes, backend="gloo", timeout=timeout)
    path = str(ckpt.step_dir(folder, steps))
    held, read, load_seconds, difference, equal = {SAVE_WORLD: saved[0].held_bytes}, {}, {}, {}, {}
    for world in worlds:
        loaded = launch(load_rank, world, kind, path, sizes, backend="gloo", timeout=timeout)
        equal[world], difference[world] = state_difference(loaded[0].state, saved[0].state)
        held[world] = max(r.held_bytes for r in loaded)
        read[world] = max(r.read for r in loaded)
        load_seconds[world] = max(r.seconds for r in loaded)
    return ReshardReport(kind, saved[0].written, held, read, max(r.seconds for r in saved), load_seconds,
                         difference, equal)


def _import_before_fork() -> None:
    """Import here what every rank needs: a forked rank inherits a module instead of importing it again.

    DTensor, FSDP2 and the optimizers reach ``torch._dynamo`` on first use, an import of several seconds
    that every rank would otherwise repeat at the same time on the same cores.
    """
    import torch._dynamo  # noqa: F401
    import torch.distributed.fsdp  # noqa: F401
    import torch.distributed.tensor.parallel  # noqa: F401
