"""Network (pipeline) partitioning on ranks: consecutive layers on consecutive ranks, activations passed by send/recv.

Rank r holds stage r, a contiguous slice of an ``nn.Sequential``; under interleaved 1F1B it holds v
slices, the virtual stages r, r + p, r + 2p, ... A minibatch is cut into m micro-batches; activations
travel forward from virtual stage s to s + 1 and their gradients back, by point-to-point send/recv, in
the order ``pipeline_schedule.rank_plan`` gives. Each step also records a timeline of what the rank
computed and communicated, and counts, per stage, the micro-batches in flight and the bytes autograd
saved for them (``pipeline_memory.ActivationLedger``). Every rank builds the whole model from the same
seed and keeps its own slices, so shapes are known everywhere without extra messages;
``sequential_reference`` is the unsplit model that every schedule must equal, and ``counted_pipeline_step``
counts the messages a step really sends (``p2p_log.MessageLog``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from d2lmp.model.pipeline_schedule import micro_batch_count, rank_plan
from d2lmp.model.timeline import Timeline, TimelineEvent
from d2lmp.parallel.agreement import agree
from d2lmp.parallel.collectives import global_rank
from d2lmp.parallel.launch import rank_device
from d2lmp.parallel.p2p_log import MessageLog
from d2lmp.pipeline_memory import ActivationLedger, LedgerSummary

__all__ = ["LossFn", "Reference", "StepResult", "CountedStep", "pipeline_step", "counted_pipeline_step",
           "pipeline_steps", "sequential_reference", "RankRun", "recv", "send"]

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (outputs, targets) -> the loss summed over them


@dataclass(frozen=True)
class StepResult:
    """What one rank found in one pipeline step: its parameters' gradients (by the full model's names), the
    outputs and mean loss (on the rank holding the last stage, else None), its timeline events, and
    the ``ActivationLedger``'s summary (the most micro-batches held in flight, the most saved bytes held at once)."""

    grads: dict[str, torch.Tensor]
    outputs: torch.Tensor | None
    loss: float | None
    events: list[TimelineEvent]
    memory: LedgerSummary


@dataclass(frozen=True)
class Reference:
    """The unsplit model's outputs, mean loss and gradients."""

    outputs: torch.Tensor
    loss: float
    grads: dict[str, torch.Tensor]


def pipeline_step(rank: int, world: int, build: Callable[[], nn.Sequential], sizes: Sequence[int], x: torch.Tensor,
                  y: torch.Tensor, kind: str = "gpipe", micro_batches: int = 4, loss_fn: LossFn | None = None,
                  device: str = "auto", group: dist.ProcessGroup | None = None, chunks: int = 1) -> StepResult:
    """Worker: one forward+backward of the pipeline under schedule ``kind``; returns what this rank found.

    ``build`` makes the whole model (same weights on every rank, e.g. a seeded ``MLPSpec.build``);
    ``sizes`` gives layers per virtual stage, ``world`` × ``chunks`` of them (``balance`` computes one).
    The loss is the sum over the batch divided by the batch size, so gradients equal the unsplit
    model's mean-loss gradients. ``group`` holds the pipeline's ranks (None: all); ``rank`` and ``world``
    are then this rank's place in it and its size.
    """
    agree("pipeline_step", group, kind=kind, micro_batches=micro_batches, chunks=chunks, sizes=tuple(sizes), x=x.shape)
    if kind == "zero-bubble":
        raise ValueError("the zero-bubble schedule is simulated only (pipeline_schedule.simulate), not run on ranks")
    m = micro_batch_count(kind, micro_batches)
    plan = rank_plan(kind, world, rank, m, chunks)
    run = RankRun(rank, world, build, sizes, x, y, m, chunks, loss_fn, device, group)
    dist.barrier(group)  # start the clocks together: set-up above is not part of the step
    for op, stage, i in plan:
        if op == "F":
            run.forward(stage, i)
        else:
            run.backward(stage, i)
    return run.finish()


class RankRun:
    """One rank's part of a pipeline step: its stages (virtual stage -> layers), its micro-batches, what is
    in flight between a forward and its backward, its timeline and its activation ledger."""

    def __init__(self, rank: int, world: int, build: Callable[[], nn.Sequential], sizes: Sequence[int],
                 x: torch.Tensor, y: torch.Tensor, m: int, chunks: int, loss_fn: LossFn | None, device: str,
                 group: dist.ProcessGroup | None) -> None:
        full = build()
        if len(sizes) != world * chunks or sum(sizes) != len(full) or min(sizes) < 1:
            raise ValueError(f"sizes {list(sizes)} must give one stage per rank and chunk ({world} × {chunks}), "
                             f"each of at least one layer, and cover every layer ({len(full)})")
        if m > len(x):
            raise ValueError(f"{m} micro-batches need at least {m} examples, got {len(x)}")
        if world == 1 and chunks > 1:
            raise ValueError("several chunks need at least 2 ranks: on one rank, consecutive chunks would message "
                             "the rank itself")
        self.dev = rank_device(device)
        full = full.to(self.dev)
        self.world, self.group, self.last, self.batch = world, group, world * chunks - 1, len(x)
        starts = [sum(sizes[:s]) for s in range(len(sizes))]
        self.stages = {s: full[starts[s]:starts[s] + sizes[s]] for s in range(rank, world * chunks, world)}
        # Each micro-batch in its own memory, as a data loader delivers it (the ledger counts whole storages).
        self.xs = [t.clone() for t in torch.tensor_split(x.to(self.dev), m)]
        self.ys = [t.clone() for t in torch.tensor_split(y.to(self.dev), m)]
        with torch.no_grad():  # the input shape of each of this rank's stages, for every micro-batch
            self.in_shapes = {s: [tuple(full[:starts[s]](xi).shape) for xi in self.xs] for s in self.stages}
        self.loss_fn = loss_fn or _summed_cross_entropy
        self.timeline = Timeline(rank)
        self.ledger = ActivationLedger([p for stage in self.stages.values() for p in stage.parameters()])
        self.inputs: dict[tuple[int, int], torch.Tensor] = {}
        self.outputs: dict[tuple[int, int], torch.Tensor] = {}
        self.results: dict[int, torch.Tensor] = {}
        self.pending: list[dist.Work | None] = []
        self.total_loss = torch.zeros((), device=self.dev)

    def forward(self, s: int, i: int) -> None:
        """Micro-batch ``i`` through virtual stage ``s``: its input from stage s - 1 (or the data), its output on
        to stage s + 1."""
        if s == 0:
            inp = self.xs[i]
        else:
            inp = torch.empty(self.in_shapes[s][i], device=self.dev)
            recv(self.timeline, inp, (s - 1) % self.world, f"F{i}", i, self.group, s)
            inp.requires_grad_(True)
        with self.timeline.span("forward", f"F{i}", micro_batch=i, stage=s), self.ledger.forward((s, i)):
            out = self.stages[s](inp)
            if s == self.last:
                out = self._loss(out, i)
        self.inputs[s, i], self.outputs[s, i] = inp, out
        if s < self.last:
            self.pending.append(send(self.timeline, out.detach().contiguous(), (s + 1) % self.world, f"F{i}", i,
                                     self.group, s))

    def backward(self, s: int, i: int) -> None:
        """Micro-batch ``i`` back through stage ``s``: its output's gradient from stage s + 1 (the loss needs none),
        its input's gradient on to stage s - 1."""
        out = self.outputs.pop((s, i))
        grad = None
        if s < self.last:
            grad = torch.empty_like(out)
            recv(self.timeline, grad, (s + 1) % self.world, f"B{i}", i, self.group, s)
        with self.timeline.span("backward", f"B{i}", micro_batch=i, stage=s):
            torch.autograd.backward(out, grad)
        self.ledger.backward_done((s, i))
        inp = self.inputs.pop((s, i))
        if s > 0:
            self.pending.append(send(self.timeline, _grad(inp).contiguous(), (s - 1) % self.world, f"B{i}", i,
                                     self.group, s))

    def _loss(self, out: torch.Tensor, i: int) -> torch.Tensor:
        """Micro-batch ``i``'s share of the mean loss; its outputs and loss are kept for the result."""
        self.results[i] = out.detach()
        loss = self.loss_fn(out, self.ys[i]) / self.batch
        self.total_loss += loss.detach()
        return loss

    def finish(self) -> StepResult:
        """Wait for the sends still in flight, then collect the gradients, outputs, loss, events and memory."""
        for request in self.pending:
            if request is not None:  # isend gives None on a rank outside the group
                request.wait()
        last = self.last in self.stages
        return StepResult(
            grads={k: _grad(p).cpu().clone() for stage in self.stages.values() for k, p in stage.named_parameters()},
            outputs=torch.cat([self.results[i] for i in range(len(self.xs))]).cpu() if last else None,
            loss=self.total_loss.item() if last else None,
            events=self.timeline.events,
            memory=self.ledger.summary(),
        )


def recv(timeline: Timeline, tensor: torch.Tensor, src: int, label: str, i: int,
         group: dist.ProcessGroup | None = None, stage: int | None = None) -> None:
    """Receive into ``tensor`` from rank ``src`` of ``group``, recorded as a "recv" event (waiting included)."""
    with timeline.span("recv", label, micro_batch=i, nbytes=tensor.numel() * tensor.element_size(), stage=stage):
        dist.recv(tensor, global_rank(group, src), group)


def send(timeline: Timeline, tensor: torch.Tensor, dst: int, label: str, i: int,
         group: dist.ProcessGroup | None = None, stage: int | None = None) -> dist.Work | None:
    """Post a send of ``tensor`` to rank ``dst`` of ``group``, recorded as a "send" event (isend returns at once)."""
    with timeline.span("send", label, micro_batch=i, nbytes=tensor.numel() * tensor.element_size(), stage=stage):
        return dist.isend(tensor, global_rank(group, dst), group)


def _grad(t: torch.Tensor) -> torch.Tensor:
    if t.grad is None:
        raise RuntimeError("a tensor that the backward pass should have reached has no gradient")
    return t.grad


def _summed_cross_entropy(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(out, target, reduction="sum")


def pipeline_steps(rank: int, world: int, build: Callable[[], nn.Sequential], sizes: Sequence[int], x: torch.Tensor,
                   y: torch.Tensor, steps: int, kind: str = "gpipe", micro_batches: int = 4,
                   chunks: int = 1) -> list[list[TimelineEvent]]:
    """Worker: ``steps`` pipeline steps in one process; returns each step's events.

    The first step is cold (allocations, autograd start-up): measure from the second on.
    """
    return [pipeline_step(rank, world, build, sizes, x, y, kind, micro_batches, chunks=chunks).events
            for _ in range(steps)]


@dataclass(frozen=True)
class CountedStep:
    """One rank's ``StepResult`` and the point-to-point messages it really sent, as ``MessageLog`` counted them."""

    result: StepResult
    sent: int
    sent_bytes: float


def counted_pipeline_step(rank: int, world: int, build: Callable[[], nn.Sequential], sizes: Sequence[int],
                          x: torch.Tensor, y: torch.Tensor, kind: str = "gpipe", micro_batches: int = 4,
                          chunks: int = 1, loss_fn: LossFn | None = None) -> CountedStep:
    """Worker: ``pipeline_step`` with every message this rank sends counted (``p2p_log.MessageLog``)."""
    with MessageLog() as log:
        result = pipeline_step(rank, world, build, sizes, x, y, kind, micro_batches, loss_fn, chunks=chunks)
    return CountedStep(result, len(log.sent), log.sent_bytes)


def sequential_reference(build: Callable[[], nn.Sequential], x: torch.Tensor, y: torch.Tensor,
                         loss_fn: LossFn | None = None) -> Reference:
    """The unsplit model's outputs, mean loss and gradients, computed in this process."""
    model = build()
    out = model(x)
    loss = (loss_fn or _summed_cross_entropy)(out, y) / len(x)
    torch.autograd.backward(loss)
    return Reference(outputs=out.detach(), loss=loss.item(),
                     grads={k: _grad(p).clone() for k, p in model.named_parameters()})
