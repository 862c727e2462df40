"""Network (pipeline) partitioning: consecutive layers on consecutive ranks.

Rank r holds stage r, a contiguous slice of an ``nn.Sequential``. A minibatch is cut into
m micro-batches; activations travel forward rank r → r+1 and their gradients back r+1 → r,
by point-to-point send/recv. Schedules:

* naive: one micro-batch (m = 1): each stage waits for the whole batch.
* GPipe: every micro-batch's forward, then every backward (in reverse).
* 1F1B: after a warm-up of (p - r - 1) forwards, each stage alternates one forward and one
  backward, so at most p micro-batches' activations are alive at once (p - r on stage r).

Each step also counts, per stage, the micro-batches in flight and the bytes autograd saved for
them (``pipeline_memory.ActivationLedger``): GPipe's stage 0 holds all m, 1F1B's at most p.

With equal stage times the idle share ("bubble") of GPipe and 1F1B is (p-1)/(m+p-1).
Every rank builds the whole model from the same seed and keeps its own slice, so shapes
are known everywhere without extra messages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from .collectives import global_rank
from .launch import rank_device
from .pipeline_memory import ActivationLedger
from .timeline import Timeline, TimelineEvent

__all__ = ["SCHEDULES", "micro_batch_count", "balance", "stage_costs", "bubble_fraction", "flat_sequential",
           "LayerProfile", "profile_layers", "layer_costs", "schedule", "pipeline_step", "pipeline_steps",
           "sequential_reference", "equal_split", "step_span", "measured_bubble", "simulate"]

SCHEDULES = ("naive", "gpipe", "1f1b")


def micro_batch_count(kind: str, micro_batches: int) -> int:
    """How many micro-batches schedule ``kind`` cuts the batch into: the naive one runs it whole (1)."""
    return 1 if kind == "naive" else micro_batches


# ---------------------------------------------------------------------------------------
# Balancing


def balance(costs, num_stages: int) -> list[int]:
    """Layers per stage for a contiguous split minimising the largest stage cost (exact).

    Dynamic programming over (layers used, stages used); ties prefer earlier cuts.
    """
    costs = [float(c) for c in costs]
    n = len(costs)
    if not isinstance(num_stages, int) or num_stages < 1:
        raise ValueError(f"num_stages must be an integer >= 1, got {num_stages!r}")
    if num_stages > n:
        raise ValueError(f"cannot split {n} layers into {num_stages} non-empty stages")
    if any(c < 0 for c in costs):
        raise ValueError("layer costs must be non-negative")
    prefix = [0.0]
    for c in costs:
        prefix.append(prefix[-1] + c)
    inf = float("inf")
    # best[s][i]: the smallest possible largest-stage cost for the first i layers in s stages
    best = [[inf] * (n + 1) for _ in range(num_stages + 1)]
    cut = [[0] * (n + 1) for _ in range(num_stages + 1)]
    best[0][0] = 0.0
    for s in range(1, num_stages + 1):
        for i in range(s, n - (num_stages - s) + 1):
            for j in range(s - 1, i):
                value = max(best[s - 1][j], prefix[i] - prefix[j])
                if value < best[s][i]:
                    best[s][i], cut[s][i] = value, j
    sizes, i = [], n
    for s in range(num_stages, 0, -1):
        j = cut[s][i]
        sizes.append(i - j)
        i = j
    return sizes[::-1]


def stage_costs(costs, sizes) -> list[float]:
    """Sum of layer costs in each stage of a split given as layers per stage."""
    out, start = [], 0
    for size in sizes:
        out.append(float(sum(costs[start:start + size])))
        start += size
    return out


def bubble_fraction(stages: int, micro_batches: int) -> float:
    """Idle share of a GPipe or 1F1B step with equal stage times: (p - 1) / (m + p - 1)."""
    if stages < 1 or micro_batches < 1:
        raise ValueError("stages and micro_batches must be >= 1")
    return (stages - 1) / (micro_batches + stages - 1)


def flat_sequential(model: nn.Module, prefix: str = "") -> nn.Sequential:
    """Nested ``nn.Sequential`` containers flattened into one, layer by layer ("features.conv1" → "features_conv1")."""
    layers = []

    def walk(module, name):
        if isinstance(module, nn.Sequential):
            for child_name, child in module.named_children():
                walk(child, f"{name}_{child_name}" if name else child_name)
        else:
            layers.append((name or type(module).__name__, module))

    walk(model, prefix)
    from collections import OrderedDict

    return nn.Sequential(OrderedDict(layers))


# ---------------------------------------------------------------------------------------
# Profiling


@dataclass
class LayerProfile:
    name: str
    seconds: float  # forward + backward
    activation_bytes: int  # the layer's output
    parameter_bytes: int


def profile_layers(model: nn.Sequential, sample: torch.Tensor, min_time: float = 0.05,
                   rounds: int = 1) -> list[LayerProfile]:
    """Per-layer forward+backward time, output bytes and parameter bytes of an ``nn.Sequential``.

    With ``rounds`` > 1 the whole sweep over the layers is repeated and each layer keeps its
    median time: a burst of machine noise then spoils one round of one layer, not the partition.
    """
    import statistics

    from ..timing import benchmark

    if not isinstance(model, nn.Sequential):
        raise ValueError(f"profile_layers needs an nn.Sequential, got {type(model).__name__}")
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    inputs, names, sizes = [], [], []
    x = sample
    for index, (name, layer) in enumerate(model.named_children()):
        # As in training, the data needs no gradient; every later activation does.
        inputs.append(x.detach().requires_grad_(index > 0 and x.is_floating_point()))
        with torch.no_grad():
            x = layer(inputs[-1])
        names.append(f"{name}: {type(layer).__name__}")
        sizes.append(x.numel() * x.element_size())
    times = [[] for _ in inputs]
    for _ in range(rounds):
        for layer, inp, samples in zip(model, inputs, times):
            def fwd_bwd(layer=layer, inp=inp):
                out = layer(inp)
                if out.requires_grad:
                    out.backward(torch.ones_like(out))

            samples.append(benchmark(fwd_bwd, inp.device, min_time=min_time, warmup=1).median)
    model.zero_grad(set_to_none=True)
    return [LayerProfile(name, statistics.median(samples), size,
                         sum(p.numel() * p.element_size() for p in layer.parameters()))
            for name, samples, size, layer in zip(names, times, sizes, model)]


def layer_costs(model: nn.Sequential, sample: torch.Tensor, min_time: float = 0.05, rounds: int = 1,
                threads: int = 1) -> list[float]:
    """Each layer's forward+backward seconds, profiled with ``threads`` compute threads (a rank's count).

    Profile at the micro-batch size the pipeline will run: layer costs are not proportional to
    the batch, so a partition balanced for one micro-batch size can be unbalanced for another.
    """
    from ..config import set_threads

    previous = set_threads(threads)
    try:
        return [p.seconds for p in profile_layers(model, sample, min_time=min_time, rounds=rounds)]
    finally:
        set_threads(previous)


# ---------------------------------------------------------------------------------------
# Running a pipeline on ranks


def schedule(kind: str, stages: int, rank: int, micro_batches: int) -> list[tuple[str, int]]:
    """The order of ("F", i) and ("B", i) operations that ``rank`` performs."""
    if kind not in SCHEDULES:
        raise ValueError(f"unknown schedule {kind!r}; available: {', '.join(SCHEDULES)}")
    m = micro_batch_count(kind, micro_batches)
    if kind in ("naive", "gpipe"):
        return [("F", i) for i in range(m)] + [("B", i) for i in reversed(range(m))]
    warmup = min(stages - rank - 1, m)
    ops = [("F", i) for i in range(warmup)]
    f, b = warmup, 0
    while f < m:
        ops += [("F", f), ("B", b)]
        f, b = f + 1, b + 1
    ops += [("B", i) for i in range(b, m)]
    return ops


def _stage_bounds(sizes: list[int], rank: int) -> tuple[int, int]:
    start = sum(sizes[:rank])
    return start, start + sizes[rank]


def _recv(timeline: Timeline, tensor: torch.Tensor, src: int, label: str, i: int, group=None) -> None:
    """Receive into ``tensor`` from stage ``src`` of ``group``, recorded as a "recv" event (waiting included)."""
    with timeline.span("recv", label, micro_batch=i, nbytes=tensor.numel() * tensor.element_size()):
        dist.recv(tensor, global_rank(group, src), group)


def _send(timeline: Timeline, tensor: torch.Tensor, dst: int, label: str, i: int, group=None):
    """Post a send of ``tensor`` to stage ``dst`` of ``group``, recorded as a "send" event (isend returns at once)."""
    with timeline.span("send", label, micro_batch=i, nbytes=tensor.numel() * tensor.element_size()):
        return dist.isend(tensor, global_rank(group, dst), group)


def pipeline_step(rank: int, world: int, build: Callable[[], nn.Sequential], sizes: list[int], x: torch.Tensor,
                  y: torch.Tensor, kind: str = "gpipe", micro_batches: int = 4, loss_fn=None,
                  device: str = "auto", group=None) -> dict:
    """Worker: one forward+backward of the pipeline; returns this stage's gradients, outputs, events and memory.

    ``build`` makes the whole model (same weights on every rank, e.g. a seeded ``MLPSpec.build``);
    ``sizes`` gives layers per stage (``balance`` computes one). The loss is the sum over the
    batch divided by the batch size, so gradients equal the unsplit model's mean-loss gradients.
    "memory" is ``ActivationLedger.summary()``: the most micro-batches this stage held in flight,
    the most saved-activation bytes it held at once, and each micro-batch's bytes.
    ``group`` holds the pipeline's ranks (None: all); ``rank`` and ``world`` are then this rank's
    place in it (its stage) and its size (the stage count).
    """
    if len(sizes) != world or sum(sizes) != len(build()):
        raise ValueError(f"sizes {sizes} must give one stage per rank ({world}) and cover every layer")
    dev = rank_device(device)
    full = build().to(dev)
    start, end = _stage_bounds(sizes, rank)
    stage = full[start:end]
    loss_fn = loss_fn or (lambda out, target: nn.functional.cross_entropy(out, target, reduction="sum"))
    m = micro_batch_count(kind, micro_batches)
    if m > len(x):
        raise ValueError(f"{m} micro-batches need at least {m} examples, got {len(x)}")
    # Each micro-batch in its own memory, as a data loader delivers it (the ledger counts whole storages).
    xs = [t.clone() for t in torch.tensor_split(x.to(dev), m)]
    ys = [t.clone() for t in torch.tensor_split(y.to(dev), m)]
    with torch.no_grad():  # input shape of this stage for every micro-batch
        in_shapes = [tuple(full[:start](xi).shape) for xi in xs]
    timeline, ledger = Timeline(rank), ActivationLedger(stage.parameters())
    inputs, outputs, pending, results = {}, {}, [], {}
    dist.barrier(group)  # start the clocks together: set-up above is not part of the step
    total_loss = torch.zeros((), device=dev)
    for op, i in schedule(kind, world, rank, m):
        if op == "F":
            if rank == 0:
                inp = xs[i]
            else:
                inp = torch.empty(in_shapes[i], device=dev)
                _recv(timeline, inp, rank - 1, f"F{i}", i, group)
                inp.requires_grad_(True)
            with timeline.span("forward", f"F{i}", micro_batch=i), ledger.forward(i):
                out = stage(inp)
                if rank == world - 1:
                    results[i] = out.detach()
                    out = loss_fn(out, ys[i]) / len(x)
                    total_loss += out.detach()
            inputs[i], outputs[i] = inp, out
            if rank < world - 1:
                pending.append(_send(timeline, out.detach().contiguous(), rank + 1, f"F{i}", i, group))
        else:
            out = outputs.pop(i)
            if rank == world - 1:
                grad = None
            else:
                grad = torch.empty_like(out)
                _recv(timeline, grad, rank + 1, f"B{i}", i, group)
            with timeline.span("backward", f"B{i}", micro_batch=i):
                torch.autograd.backward(out, grad)
            ledger.backward_done(i)
            inp = inputs.pop(i)
            if rank > 0:
                pending.append(_send(timeline, inp.grad.contiguous(), rank - 1, f"B{i}", i, group))
    for request in pending:
        request.wait()
    return dict(
        grads={k: p.grad.cpu().clone() for k, p in stage.named_parameters()},  # a slice keeps the full model's names
        outputs=torch.cat([results[i] for i in range(m)]).cpu() if rank == world - 1 else None,
        loss=total_loss.item() if rank == world - 1 else None,
        events=timeline.events,
        memory=ledger.summary(),
    )


def pipeline_steps(rank: int, world: int, build, sizes, x, y, steps: int, kind: str = "gpipe",
                   micro_batches: int = 4) -> list[list[TimelineEvent]]:
    """Worker: ``steps`` pipeline steps in one process; returns each step's events.

    The first step is cold (allocations, autograd start-up): measure from the second on.
    """
    return [pipeline_step(rank, world, build, sizes, x, y, kind, micro_batches)["events"] for _ in range(steps)]


def sequential_reference(build: Callable[[], nn.Sequential], x: torch.Tensor, y: torch.Tensor, loss_fn=None) -> dict:
    """The unsplit model's outputs, mean loss and gradients, computed in this process."""
    model = build()
    loss_fn = loss_fn or (lambda out, target: nn.functional.cross_entropy(out, target, reduction="sum"))
    out = model(x)
    loss = loss_fn(out, y) / len(x)
    loss.backward()
    return dict(outputs=out.detach(), loss=loss.item(),
                grads={k: p.grad.clone() for k, p in model.named_parameters()})


def equal_split(layers: int, stages: int) -> list[int]:
    """The naive partition: the same number of layers per stage (the first ones get the remainder)."""
    if stages < 1 or stages > layers:
        raise ValueError(f"cannot split {layers} layers into {stages} non-empty stages")
    return [layers // stages + (i < layers % stages) for i in range(stages)]


def step_span(events: list[TimelineEvent]) -> float:
    """Seconds from the first operation's start to the last one's end, over all ranks."""
    return max(e.end for e in events) - min(e.start for e in events)


def measured_bubble(events: list[TimelineEvent], world: int) -> float:
    """Idle share of the step: 1 - (busy time summed over ranks) / (ranks × span of the step)."""
    busy = sum(e.duration for e in events if e.kind in ("forward", "backward"))
    return 1 - busy / (world * step_span(events))


def simulate(kind: str, stages: int, micro_batches: int, forward: float = 1.0,
             backward: float = 2.0, message: float = 0.0) -> list[TimelineEvent]:
    """Events of an ideal pipeline: every stage takes ``forward``/``backward`` time units per
    micro-batch. Each stage runs its ``schedule`` in order, an op starting once the stage is free
    and its input (from the neighbouring stage) is ready. Messages are free by default; with
    ``message`` > 0 each activation or gradient takes that long to cross a boundary, recorded as a
    "send" event on the sender and a "recv" event on the receiver (the sender does not wait).
    """
    if forward <= 0 or backward <= 0 or message < 0:
        raise ValueError("forward and backward times must be positive, message time non-negative")
    m = micro_batch_count(kind, micro_batches)
    scale = micro_batches / m  # naive: one micro-batch as large as all of them
    plans = [schedule(kind, stages, s, micro_batches) for s in range(stages)]
    done: dict[tuple[str, int, int], float] = {}
    position, free = [0] * stages, [0.0] * stages
    events = []
    while any(position[s] < len(plans[s]) for s in range(stages)):
        progressed = False
        for s in range(stages):
            if position[s] == len(plans[s]):
                continue
            op, i = plans[s][position[s]]
            if op == "F":
                need = ("F", s - 1, i) if s > 0 else None
            else:
                need = ("B", s + 1, i) if s < stages - 1 else ("F", s, i)
            if need is not None and need not in done:
                continue
            crosses = need is not None and need[1] != s  # the input comes from the neighbouring stage
            start = max(free[s], done.get(need, 0.0) + (message * scale if crosses else 0.0))
            end = start + (forward if op == "F" else backward) * scale
            done[(op, s, i)] = free[s] = end
            events.append(TimelineEvent(s, "forward" if op == "F" else "backward", f"{op}{i}", start, end,
                                        micro_batch=i))
            to = s + 1 if op == "F" else s - 1
            if message > 0 and 0 <= to < stages:
                arrives = end + message * scale
                events += [TimelineEvent(s, "send", f"{op}{i}", end, arrives, micro_batch=i),
                           TimelineEvent(to, "recv", f"{op}{i}", end, arrives, micro_batch=i)]
            position[s] += 1
            progressed = True
        if not progressed:
            raise RuntimeError("schedule deadlocks")  # cannot happen for the schedules above
    return events
