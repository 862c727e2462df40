"""Per-layer profiles of a network on one device: forward + backward seconds, output and parameter bytes.

``profile_layers`` times each layer of an ``nn.Sequential`` (the medians of several sweeps), ``layer_costs``
gives the seconds a pipeline partition balances (``d2lmp.model.pipeline_balance``), and ``flat_sequential``
flattens nested containers so every layer can be a cut point.
"""

from __future__ import annotations

import statistics
from collections import OrderedDict
from dataclasses import dataclass

import torch
from torch import nn

from d2lmp import timing
from d2lmp.config import set_threads

__all__ = ["LayerProfile", "flat_sequential", "layer_costs", "profile_layers"]


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


def _block_time(min_time: float) -> float:
    """``timing.benchmark``'s blocks (at least 5, of 0.01 s each by default) made short enough that 5 fit in
    ``min_time``: a fast layer then takes about ``min_time``, not 0.05 s (the same blocks from ``min_time`` = 0.05 s
    up)."""
    return min(0.01, min_time / 5)


def profile_layers(model: nn.Sequential, sample: torch.Tensor, min_time: float = 0.05,
                   rounds: int = 1, block_time: float | None = None) -> list[LayerProfile]:
    """Per-layer forward+backward time, output bytes and parameter bytes of an ``nn.Sequential``.

    Each layer is timed in blocks of calls lasting about ``block_time`` seconds (None: 0.01 s, or ``min_time`` / 5
    where that is shorter), at least 5 blocks and ``min_time`` seconds (``timing.benchmark``).

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

            block = _block_time(min_time) if block_time is None else block_time
            samples.append(timing.benchmark(fwd_bwd, inp.device, min_time=min_time, warmup=1, block_time=block).median)
    model.zero_grad(set_to_none=True)
    return [LayerProfile(name, statistics.median(samples), size,
                         sum(p.numel() * p.element_size() for p in layer.parameters()))
            for name, samples, size, layer in zip(names, times, sizes, model)]


def layer_costs(model: nn.Sequential, sample: torch.Tensor, min_time: float = 0.05, rounds: int = 1,
                threads: int = 1, block_time: float = 0.01) -> list[float]:
    """Each layer's forward+backward seconds, profiled with ``threads`` compute threads (a rank's count).

    Profile at the micro-batch size the pipeline will run: layer costs are not proportional to
    the batch, so a partition balanced for one micro-batch size can be unbalanced for another.
    """
    previous = set_threads(threads)
    try:
        return [p.seconds for p in profile_layers(model, sample, min_time=min_time, rounds=rounds,
                                                        block_time=block_time)]
    finally:
        set_threads(previous)
