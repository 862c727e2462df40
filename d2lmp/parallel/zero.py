"""ZeRO: data parallelism that shards the training state over the ranks instead of copying it.

Plain data parallelism (stage 0) keeps on every rank the full parameters, the full gradients
and the full optimizer state. ZeRO (Rajbhandari et al. 2020, arXiv:1910.02054) removes the
copies, one kind of state per stage, with the same two ring collectives as the all-reduce:

* stage 0: all-reduce the gradients; every rank runs Adam on everything (the reference).
* stage 1: Adam's m and v are sharded. A rank needs only its shard of the summed gradient, so
  the gradient is reduce-scattered, the rank updates its shard of the parameters, and an
  all-gather hands every rank the updated parameters: the all-reduce's two halves, so the
  same bytes as stage 0. The full gradient buffer is still kept.
* stage 2: the gradients are sharded too: after the reduce-scatter only the shard is kept.
  (Here backward still builds the whole gradient before the reduce-scatter; DeepSpeed
  reduce-scatters bucket by bucket during backward, so it never exists at once.)
* stage 3: the parameters are sharded too. Before a layer's forward its parameters are
  all-gathered and freed after it; before its backward they are gathered again, and its
  gradients are reduce-scattered and freed as soon as backward has produced them.

The parameters of a unit (the whole model in stages 0-2, one layer in stage 3) live in one flat
buffer padded to a multiple of the world size, so every rank owns an equal, contiguous shard;
the padding is zero and stays zero. Adam is written out on the shard, so the optimizer state a
rank keeps is the two tensors ``m`` and ``v`` you can see. Each rank counts the bytes it keeps
(``held_bytes``) and logs its collectives (``log``) as the traffic log records them (``p2p_log.Message``: the
collective's size, and the bytes a rank sends for it on a ring from the bus factors).
Every rank must start from the same model (build it with the same seed), and in stage 3 each
layer must run once per forward (no shared weights).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from d2lmp.models import mlp
from d2lmp.parallel.collectives import ring_all_gather, ring_all_reduce, ring_reduce_scatter
from d2lmp.parallel.p2p_log import Message

__all__ = ["STAGES", "FlatBuffers", "flat_views", "gradient_views", "FlatUnit", "LoggedCall", "LoggedCollectives",
           "shard_parameters", "ZeroAdam", "adam_update", "ShardedRun", "ZeroRun", "zero_train",
           "fsdp2_train", "held_fsdp2_bytes"]

STAGES = (0, 1, 2, 3)


def adam_update(param: torch.Tensor, grad: torch.Tensor, m: torch.Tensor, v: torch.Tensor, step: int, lr: float,
                betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
    """One Adam step in place on matching 1-D tensors (the formula of ``torch.optim.Adam``)."""
    beta1, beta2 = betas
    m.mul_(beta1).add_(grad, alpha=1 - beta1)  # first moment: running mean of the gradient
    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)  # second moment: of its square
    bias1, bias2 = 1 - beta1**step, 1 - beta2**step  # both start at zero: undo that bias
    denom = (v.sqrt() / math.sqrt(bias2)).add_(eps)
    param.addcdiv_(m, denom, value=-lr / bias1)


def _views(flat: torch.Tensor, params: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """The front of ``flat`` cut into views shaped like ``params``, in order (the rest is padding)."""
    sizes = [p.numel() for p in params]
    return [piece.view_as(p) for piece, p in zip(flat[:sum(sizes)].split(sizes), params)]


class FlatBuffers:
    """The bookkeeping of a ``FlatUnit``: its full gradient, its memory freed and refilled, its views.

    ``my_grad``: this rank's shard of the gradient; ``local_flat_grad``: this rank's own full gradient as one
    flat tensor; ``drop_param_grads``: forget the parameters' ``.grad`` (only the shard is kept); ``free`` and
    ``materialise``: release the full parameters' storage, and refill it from all-gathered shards.
    """

    params: list[nn.Parameter]
    padded: int
    lo: int
    hi: int
    full: torch.Tensor
    grad: torch.Tensor

    def my_grad(self) -> torch.Tensor:
        """This rank's shard of the gradient (the summed one once it is synchronised)."""
        return self.grad[self.lo:self.hi] if self.grad.numel() == self.padded else self.grad

    def local_flat_grad(self) -> torch.Tensor:
        """This rank's own full gradient as one padded flat tensor, from the parameters' ``.grad``."""
        flat = self.full.new_zeros(self.padded)
        for p, view in zip(self.params, _views(flat, self.params)):
            view.copy_(p.grad)  # type: ignore[arg-type]  # every parameter has one after backward
        return flat

    def drop_param_grads(self) -> None:
        """Forget the parameters' own gradients: only this rank's shard of the sum is kept."""
        for p in self.params:
            p.grad = None

    def free(self) -> None:
        """Release the full parameters' memory; the tensor and its views stay, with no storage."""
        self.full.untyped_storage().resize_(0)

    def materialise(self, shards: torch.Tensor) -> None:
        """Refill ``full`` in place from the all-gathered shards, one row per rank."""
        self.full.untyped_storage().resize_(self.padded * self.full.element_size())
        with torch.no_grad():
            self.full.copy_(shards.reshape(-1))


def flat_views(params: Sequence[nn.Parameter], padded: int) -> torch.Tensor:
    """One zero-padded flat buffer holding ``params``' values; each parameter becomes a view into it."""
    full = torch.zeros(padded, dtype=params[0].dtype, device=params[0].device)
    for p, view in zip(params, _views(full, params)):
        view.copy_(p.detach())
        p.data = view
    return full


def gradient_views(params: Sequence[nn.Parameter], like: torch.Tensor) -> torch.Tensor:
    """A zero flat gradient buffer shaped like ``like``; each parameter's ``.grad`` becomes a view into it, so
    backward accumulates straight into the buffer."""
    grad = torch.zeros_like(like)
    for p, view in zip(params, _views(grad, params)):
        p.grad = view
    return grad


class FlatUnit(FlatBuffers):
    """The parameters of one unit as one flat buffer, padded to a multiple of ``world``, in equal shards.

    ``full`` holds all the unit's parameters (they become views into it); ``shard`` is rank ``rank``'s elements
    ``lo:hi``: a view of ``full`` in stages 0-2, a tensor of its own in stage 3, where ``full`` holds no memory
    between uses. ``grad``: the full gradient in stages 0-1, only this rank's shard in stages 2-3.
    """

    def __init__(self, params: list[nn.Parameter], rank: int, world: int, stage: int) -> None:
        self.params, self.numel = params, sum(p.numel() for p in params)
        self.padded = math.ceil(self.numel / world) * world  # zeros at the end: equal shards
        per_rank = self.padded // world
        self.lo, self.hi = (0, self.padded) if stage == 0 else (rank * per_rank, (rank + 1) * per_rank)
        self.full = flat_views(params, self.padded)
        if stage == 3:  # the shard is all this rank keeps; the full buffer is gathered when needed
            self.shard = self.full[self.lo:self.hi].clone()
            self.free()
        else:
            self.shard = self.full[self.lo:self.hi]
        self.grad = gradient_views(params, self.full) if stage <= 1 else torch.zeros_like(self.shard)
        self.m, self.v = torch.zeros_like(self.shard), torch.zeros_like(self.shard)  # Adam's, for the shard
        self.ready = 0  # stage 3: how many of the unit's parameters backward has given a gradient so far


@dataclass(frozen=True)
class LoggedCall:
    """One collective call of a ``ZeroAdam``: during which step, and the call as the traffic log records it."""

    step: int
    message: Message

    @property
    def bytes_sent(self) -> int:
        """Bytes this rank sends for the call on a ring (``Message.sent_bytes``)."""
        return round(self.message.sent_bytes)


class LoggedCollectives:
    """The bookkeeping of a ``ZeroAdam``: its checked settings, its ring collectives, each logged with the
    bytes this rank sends, and what a rank holds and sent (``full_parameters``, ``held_bytes``, ``bytes_sent``)."""

    units: list[FlatUnit]

    def __init__(self, model: nn.Module, stage: int, lr: float, betas: tuple[float, float], eps: float,
                 group: dist.ProcessGroup | None) -> None:
        if stage not in STAGES:
            raise ValueError(f"stage must be one of {STAGES}, got {stage!r}")
        self.model, self.group, self.stage, self.lr, self.betas, self.eps = model, group, stage, lr, betas, eps
        self.rank, self.world = dist.get_rank(group), dist.get_world_size(group)
        self.steps = 0  # steps completed: the log's index of the step in progress; Adam's t is steps + 1
        self.log: list[LoggedCall] = []  # one row per collective call

    def all_reduce(self, flat: torch.Tensor) -> None:
        """Our ring all-reduce, in place, logged."""
        self._record("all_reduce", flat)
        ring_all_reduce(flat, self.group)

    def reduce_scatter(self, flat: torch.Tensor) -> torch.Tensor:
        """Our ring reduce-scatter: this rank's shard of the sum, logged."""
        self._record("reduce_scatter", flat)
        return ring_reduce_scatter(flat, self.group)

    def all_gather(self, shard: torch.Tensor) -> torch.Tensor:
        """Our ring all-gather: every rank's shard, one row per rank, logged."""
        self._record("all_gather", shard, gathered=True)
        return ring_all_gather(shard, self.group)

    def _record(self, op: str, tensor: torch.Tensor, gathered: bool = False) -> None:
        """Log a collective of ``tensor``; its size S is the whole buffer (an all-gather's: ``world`` shards)."""
        size = tensor.numel() * tensor.element_size() * (self.world if gathered else 1)
        self.log.append(LoggedCall(self.steps, Message(op, None, size, self.world)))

    def zero_grad(self) -> None:
        for unit in self.units:
            unit.grad.zero_()

    def full_parameters(self) -> list[torch.Tensor]:
        """Copies of the model's parameters, whole and unpadded (gathered, not logged, in stage 3)."""
        out = []
        for unit in self.units:
            flat = ring_all_gather(unit.shard, self.group).reshape(-1) if self.stage == 3 else unit.full
            out += [view.clone() for view in _views(flat, unit.params)]
        return out

    def held_bytes(self) -> dict[str, int]:
        """Bytes this rank keeps between steps, summed over the distinct storages it holds."""
        params = list(self.model.parameters()) + [u.shard for u in self.units]
        grads = [p.grad for p in self.model.parameters() if p.grad is not None] + [u.grad for u in self.units]
        return dict(parameters=_storage_bytes(params), gradients=_storage_bytes(grads),
                    optimizer_state=_storage_bytes([t for u in self.units for t in (u.m, u.v)]))

    def bytes_sent(self, step: int) -> int:
        """Bytes this rank sent during step ``step`` (0 = the first), from the collective log."""
        return sum(row.bytes_sent for row in self.log if row.step == step)


def shard_parameters(opt: LoggedCollectives, layer: nn.Module, unit: FlatUnit) -> None:
    """Stage 3 for one layer: gather its parameters just before its forward and its backward, free them after
    each, and reduce-scatter its gradient as soon as backward has produced the last of it."""

    def gather(*_: object) -> None:
        unit.materialise(opt.all_gather(unit.shard))
        unit.ready = 0

    def free_until_backward(_layer: nn.Module, _args: object, output: torch.Tensor) -> None:
        unit.free()
        if output.requires_grad:  # gather again just before this layer's backward needs the parameters
            output.register_hook(gather)

    def grad_ready(_param: torch.Tensor) -> None:
        unit.ready += 1
        if unit.ready == len(unit.params):  # the whole layer's backward is done
            unit.grad.copy_(opt.reduce_scatter(unit.local_flat_grad()))
            unit.drop_param_grads()
            unit.free()

    layer.register_forward_pre_hook(gather)
    layer.register_forward_hook(free_until_backward)
    for p in unit.params:
        p.register_post_accumulate_grad_hook(grad_ready)


class ZeroAdam(LoggedCollectives):
    """Adam under ZeRO stage 0-3 for ``model`` on this rank, used like a torch optimizer; ``group`` shards the
    state (None: all ranks). The loss must be this rank's part of the global loss: gradients are summed."""

    def __init__(self, model: nn.Module, stage: int, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, group: dist.ProcessGroup | None = None) -> None:
        super().__init__(model, stage, lr, betas, eps, group)  # checks the stage, finds rank and world
        if stage < 3:  # one unit: the whole model
            self.units = [FlatUnit(list(model.parameters()), self.rank, self.world, stage)]
        else:  # one unit per layer, each gathered only while it runs
            layers = [mod for mod in model.modules() if list(mod.parameters(recurse=False))]
            self.units = [FlatUnit(list(m.parameters(recurse=False)), self.rank, self.world, stage) for m in layers]
            for layer, unit in zip(layers, self.units):
                shard_parameters(self, layer, unit)

    @torch.no_grad()
    def step(self) -> None:
        """Synchronise the gradients, update this rank's shard with Adam, share the result."""
        for unit in self.units:
            if self.stage == 0:
                self.all_reduce(unit.grad)
            elif self.stage == 1:
                unit.my_grad().copy_(self.reduce_scatter(unit.grad))
            elif self.stage == 2:
                unit.grad.copy_(self.reduce_scatter(unit.local_flat_grad()))
                unit.drop_param_grads()  # (stage 3 reduce-scattered in backward, layer by layer)
            adam_update(unit.shard, unit.my_grad(), unit.m, unit.v, self.steps + 1, self.lr, self.betas, self.eps)
            if self.stage in (1, 2):  # stage 3: the next forward gathers the updated shards
                unit.full.copy_(self.all_gather(unit.shard).reshape(-1))
        self.steps += 1


def _storage_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """Bytes of the distinct storages under ``tensors`` (views of one buffer count once)."""
    storages: dict[tuple[int, int], int] = {}
    for t in tensors:
        s = t.untyped_storage()
        storages[(s.data_ptr(), s.nbytes())] = s.nbytes()
    return sum(storages.values())


# ---------------------------------------------------------------------------------------
# Training on a rank: ours, and PyTorch's FSDP2 for comparison

def _seeded_mlp(sizes: Sequence[int], seed: int) -> nn.Sequential:
    """The same MLP on every rank: layer widths ``sizes`` (input, hidden..., classes), weights from ``seed``."""
    torch.manual_seed(seed)
    return mlp(sizes[0], sizes[1:-1], sizes[-1], flatten=False)


def _train(rank: int, world: int, model: nn.Module, optimizer: ZeroAdam | torch.optim.Optimizer, x: torch.Tensor,
           y: torch.Tensor, steps: int) -> tuple[list[float], list[float]]:
    """``steps`` steps on this rank's slice of (x, y); the loss is its part of the global mean."""
    xs, ys = torch.tensor_split(x, world)[rank], torch.tensor_split(y, world)[rank]
    losses: list[float] = []
    seconds: list[float] = []
    for _ in range(steps):
        dist.barrier()
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(xs), ys, reduction="sum") / len(x)
        loss.backward()
        optimizer.step()
        seconds.append(time.perf_counter() - start)
        losses.append(loss.item())
    return losses, seconds


@dataclass(frozen=True)
class ShardedRun:
    """What a training worker returns: this rank's part of each step's loss, each step's seconds, the whole
    trained parameters, and the bytes this rank keeps between steps by kind ("parameters", "gradients",
    "optimizer_state")."""

    losses: list[float]
    step_seconds: list[float]
    parameters: list[torch.Tensor]
    held: dict[str, int]


@dataclass(frozen=True)
class ZeroRun(ShardedRun):
    """A ``ShardedRun`` of ``ZeroAdam``, with the bytes this rank sent in each step and each unit's padded size."""

    sent: list[int]
    padded: list[int]


def zero_train(rank: int, world: int, sizes: Sequence[int], x: torch.Tensor, y: torch.Tensor, stage: int,
               steps: int = 5, lr: float = 1e-2, seed: int = 0) -> ZeroRun:
    """Worker: train an MLP of layer widths ``sizes`` under ZeRO ``stage``; losses are this rank's parts."""
    model = _seeded_mlp(sizes, seed)
    optimizer = ZeroAdam(model, stage, lr=lr)
    losses, seconds = _train(rank, world, model, optimizer, x, y, steps)
    return ZeroRun(losses=losses, step_seconds=seconds, parameters=optimizer.full_parameters(),
                   held=optimizer.held_bytes(), sent=[optimizer.bytes_sent(s) for s in range(steps)],
                   padded=[u.padded for u in optimizer.units])


def fsdp2_train(rank: int, world: int, sizes: Sequence[int], x: torch.Tensor, y: torch.Tensor, steps: int = 5,
                lr: float = 1e-2, seed: int = 0) -> ShardedRun:
    """Worker: the same training under PyTorch's FSDP2 (``fully_shard`` on every layer, then the model)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (world,))
    model = _seeded_mlp(sizes, seed)
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)
    # sum the gradients over ranks, like ours (FSDP2 averages by default)
    fully_shard(model, mesh=mesh).set_gradient_divide_factor(1.0)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses, seconds = _train(rank, world, model, optimizer, x, y, steps)
    return ShardedRun(losses=losses, step_seconds=seconds, held=held_fsdp2_bytes(model, optimizer),
                      parameters=[p.full_tensor() for p in model.parameters()])  # type: ignore[attr-defined]  # DTensors


def held_fsdp2_bytes(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, int]:
    """Bytes an FSDP2 rank keeps between steps: the local shards of its parameters, gradients, Adam state."""
    def local(t: torch.Tensor) -> torch.Tensor:
        return t.to_local() if hasattr(t, "to_local") else t

    params = list(model.parameters())
    state = [local(v) for p in params for v in optimizer.state[p].values() if torch.is_tensor(v)]
    return dict(parameters=_storage_bytes([local(p) for p in params]),
                gradients=_storage_bytes([local(p.grad) for p in params if p.grad is not None]),
                optimizer_state=_storage_bytes(state))
