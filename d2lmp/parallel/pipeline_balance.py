"""Where to cut a network into pipeline stages: per-layer profiles and the partition that balances them.

A pipeline runs as fast as its slowest stage, so the layers of an ``nn.Sequential`` are profiled one by
one (forward + backward seconds, output bytes, parameter bytes; ``profile_layers``, ``layer_costs``) and
split into contiguous stages whose largest cost is as small as possible (``balance``, exact dynamic
programming). Under interleaved 1F1B a rank holds several stages, and evening out the stages no longer
evens out the step: ``balance_schedule`` picks the split whose simulated step is shortest, and
``rank_costs`` adds up what each rank computes. ``equal_split`` is the naive split by layer count,
``stage_costs`` adds up a split, and ``flat_sequential`` flattens nested containers so every layer can be a
cut point.
"""

from __future__ import annotations

import statistics
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, combinations

import torch
from torch import nn

from d2lmp import timing
from d2lmp.config import set_threads
from d2lmp.model.pipeline_schedule import simulate, step_span

__all__ = ["LayerProfile", "balance", "balance_schedule", "equal_split", "flat_sequential", "layer_costs",
           "profile_layers", "rank_costs", "stage_costs"]


def balance(costs: Sequence[float], num_stages: int) -> list[int]:
    """Layers per stage for a contiguous split minimising the largest stage cost (exact).

    Dynamic programming over (layers used, stages used); ties prefer earlier cuts.
    """
    costs = _checked(costs, num_stages)
    n, inf = len(costs), float("inf")
    prefix = [0.0, *accumulate(costs)]  # prefix[i] - prefix[j]: the cost of layers j..i-1
    # best[s][i]: the smallest possible largest-stage cost for the first i layers in s stages
    best = [[inf] * (n + 1) for _ in range(num_stages + 1)]
    cut = [[0] * (n + 1) for _ in range(num_stages + 1)]  # where that best split's last stage starts
    best[0][0] = 0.0
    for s in range(1, num_stages + 1):
        for i in range(s, n - (num_stages - s) + 1):
            for j in range(s - 1, i):
                value = max(best[s - 1][j], prefix[i] - prefix[j])
                if value < best[s][i]:
                    best[s][i], cut[s][i] = value, j
    return _walk_back(cut, n, num_stages)


def _checked(costs: Sequence[float], num_stages: int) -> list[float]:
    """The costs as floats, after checking that they split into ``num_stages`` non-empty stages."""
    costs = [float(c) for c in costs]
    if not isinstance(num_stages, int) or num_stages < 1:
        raise ValueError(f"num_stages must be an integer >= 1, got {num_stages!r}")
    if num_stages > len(costs):
        raise ValueError(f"cannot split {len(costs)} layers into {num_stages} non-empty stages")
    if any(c < 0 for c in costs):
        raise ValueError("layer costs must be non-negative")
    return costs


def _walk_back(cut: list[list[int]], n: int, num_stages: int) -> list[int]:
    """Stage sizes read off the table of cuts, from the last stage back to the first."""
    sizes, i = [], n
    for s in range(num_stages, 0, -1):
        j = cut[s][i]
        sizes.append(i - j)
        i = j
    return sizes[::-1]


def rank_costs(costs: Sequence[float], sizes: Sequence[int], ranks: int) -> list[float]:
    """What each rank computes when the virtual stages ``sizes`` go round the ranks (stage s on rank s % ranks),
    as interleaved 1F1B places them: the sum of its stages' costs."""
    if ranks < 1 or len(sizes) % ranks:
        raise ValueError(f"{len(sizes)} virtual stages do not go round {ranks} ranks evenly")
    per_stage = stage_costs(costs, sizes)
    return [sum(per_stage[r::ranks]) for r in range(ranks)]


def balance_schedule(costs: Sequence[float], kind: str, ranks: int, micro_batches: int,
                     chunks: int = 1) -> list[int]:
    """Layers per virtual stage (``ranks`` × ``chunks`` of them, stage s on rank s % ranks) for the shortest step of
    schedule ``kind``, the step simulated with each stage's cost (``pipeline_schedule.simulate`` with ``weights``:
    forward a third of a layer's cost, backward two thirds, messages free).

    ``balance`` evens out the stages, which is what a schedule with one stage per rank needs. Interleaved, a rank
    runs several stages, and its step depends on its total and on where the schedule makes it wait. Every split
    is ranked by a lower bound on its step, m × the busiest rank's total (``rank_costs``), and simulated in that
    order until the bound reaches the best step found: exact for the simulated step. Listing every split, all
    C(n - 1, stages - 1) of them, is meant for tens of layers and a few stages.
    """
    stages = ranks * chunks
    costs = _checked(costs, stages)
    tie = 1e-9 * sum(costs)  # steps closer than this are equal: the earlier split in the ranking wins
    ranked = sorted((micro_batches * max(rank_costs(costs, sizes, ranks)), sizes)
                    for sizes in _splits(len(costs), stages))
    best, best_sizes = float("inf"), ranked[0][1]
    for bound, sizes in ranked:
        if bound >= best - tie:
            break
        events = simulate(kind, ranks, micro_batches, 1 / 3, 2 / 3, chunks=chunks,
                          weights=stage_costs(costs, sizes))
        if step_span(events) < best - tie:
            best, best_sizes = step_span(events), sizes
    return best_sizes


def _splits(layers: int, stages: int) -> Iterator[list[int]]:
    """Every split of ``layers`` into ``stages`` contiguous, non-empty stages, as layers per stage."""
    for cuts in combinations(range(1, layers), stages - 1):
        bounds = (0, *cuts, layers)
        yield [end - start for start, end in zip(bounds, bounds[1:])]


def stage_costs(costs: Sequence[float], sizes: Sequence[int]) -> list[float]:
    """Sum of layer costs in each stage of a split given as layers per stage."""
    out, start = [], 0
    for size in sizes:
        out.append(float(sum(costs[start:start + size])))
        start += size
    return out


def equal_split(layers: int, stages: int) -> list[int]:
    """The naive partition: the same number of layers per stage (the first ones get the remainder)."""
    if stages < 1 or stages > layers:
        raise ValueError(f"cannot split {layers} layers into {stages} non-empty stages")
    return [layers // stages + (i < layers % stages) for i in range(stages)]


def flat_sequential(model: nn.Module, prefix: str = "") -> nn.Sequential:
    """Nested ``nn.Sequential`` containers flattened into one, layer by layer ("features.conv1" → "features_conv1")."""
    layers: list[tuple[str, nn.Module]] = []

    def walk(module: nn.Module, name: str) -> None:
        if isinstance(module, nn.Sequential):
            for child_name, child in module.named_children():
                walk(child, f"{name}_{child_name}" if name else child_name)
        else:
            layers.append((name or type(module).__name__, module))

    walk(model, prefix)
    return nn.Sequential(OrderedDict(layers))


@dataclass(frozen=True)
class LayerProfile:
    """One layer's profile: its name, forward + backward seconds, output bytes and parameter bytes."""

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
    times: list[list[float]] = [[] for _ in inputs]
    for _ in range(rounds):
        for layer, inp, samples in zip(model, inputs, times):
            def fwd_bwd(layer: nn.Module = layer, inp: torch.Tensor = inp) -> None:
                out = layer(inp)
                if out.requires_grad:
                    out.backward(torch.ones_like(out))

            samples.append(timing.benchmark(fwd_bwd, inp.device, min_time=min_time, warmup=1).median)
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
    previous = set_threads(threads)
    try:
        return [p.seconds for p in profile_layers(model, sample, min_time=min_time, rounds=rounds)]
    finally:
        set_threads(previous)
