"""Pipeline benchmark: balanced against equal-layer partitions, and measured against theoretical bubbles.

The network is ``models.pipeline_model`` (a half-width AlexNet) on 115×115 inputs, split over
ranks by ``parallel.pipeline`` and run with real processes.
"""

from __future__ import annotations

import statistics

import torch

from ..models import pipeline_model
from ..parallel.launch import launch
from ..parallel.pipeline import (
    balance,
    bubble_fraction,
    equal_split,
    layer_costs,
    measured_bubble,
    pipeline_steps,
    step_span,
)

__all__ = ["pipeline_bench"]


def pipeline_bench(worlds=(2, 4), micro_batches=(1, 2, 4, 8), batch: int = 128, steps: int = 4) -> dict:
    """Balanced vs equal-layer partitions (GPipe, m=4) and measured vs theoretical bubbles (balanced).

    Layer costs are not proportional to the batch (a small batch uses the vector units less well,
    and each operator has a fixed overhead), so every partition is balanced on costs profiled at
    the micro-batch size it will run: batch / m. Each configuration runs ``steps`` steps; the
    first is a warm-up and the rest give medians.
    """
    if steps < 2:
        raise ValueError(f"steps must be at least 2 (the first is a warm-up), got {steps}")
    if batch < max(4, *micro_batches):
        raise ValueError(f"batch {batch} is too small for {max(4, *micro_batches)} micro-batches")
    model = pipeline_model()
    profiled = {}

    def costs_at(micro):
        if micro not in profiled:
            sample = torch.randn(micro, 3, 115, 115, generator=torch.Generator().manual_seed(1))
            profiled[micro] = layer_costs(model, sample, min_time=0.05, rounds=3)
        return profiled[micro]

    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(batch, 3, 115, 115, generator=g), torch.randint(0, 10, (batch,), generator=g)

    def run(world, sizes, kind, m):
        per_rank = launch(pipeline_steps, world, pipeline_model, sizes, x, y, steps, kind, m, timeout=600)
        steps_events = [sum((r[s] for r in per_rank), []) for s in range(1, steps)]  # step 0 is the warm-up
        return (statistics.median(step_span(e) for e in steps_events),
                statistics.median(measured_bubble(e, world) for e in steps_events))

    out = {"partitions": [], "bubbles": []}
    costs = costs_at(batch // 4)
    for world in worlds:
        for name, sizes in (("equal layers", equal_split(len(costs), world)), ("balanced", balance(costs, world))):
            span, _ = run(world, sizes, "gpipe", 4)
            out["partitions"].append(dict(world=world, partition=name, sizes=sizes, step_s=span))
    for m in micro_batches:
        sizes = balance(costs_at(batch // m), 2)
        _, bubble = run(2, sizes, "gpipe", m)
        out["bubbles"].append(dict(world=2, micro_batches=m, sizes=sizes, measured=bubble,
                                   theory=bubble_fraction(2, m)))
    return out
