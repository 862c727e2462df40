"""Recomputation benchmark: the step time with checkpointed segments against the plain step, and its prediction.

Recomputation runs the checkpointed segments' forward once more during backward, so a step should
take (F + B + F_r) / (F + B) of the plain one, F + B being the plain step and F_r the forward of the
checkpointed segments (the last segment is not recomputed). Every term is measured here, in the
same run, on the same inputs: the plain and checkpointed steps, the whole forward (F) and the
checkpointed segments' forward (F_r). Rounds alternate the four so that drifting machine load hits
all alike; each figure is the median over rounds (a ``RecomputeTiming``). The saved bytes are
measured and predicted too (``RecomputeResult``).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from d2lmp.models import alexnet_small, mlp
from d2lmp.recompute import (
    SavedWithRecompute,
    checkpointed,
    measure_saved_with_recompute,
    predict_saved_with_recompute,
    split_segments,
)
from d2lmp.timing import benchmark

__all__ = ["RecomputeCase", "RecomputeTiming", "RecomputeResult", "recompute_bench", "recompute_cases",
           "time_recompute"]


@dataclass(frozen=True)
class RecomputeCase:
    """One model of the benchmark, how it is cut into checkpointed segments, and its seeded inputs."""

    name: str
    model: nn.Sequential
    segments: int | list[int]  # a number of equal segments, or layers per segment
    x: torch.Tensor
    y: torch.Tensor


@dataclass(frozen=True)
class RecomputeTiming:
    """Median seconds of the plain step, the checkpointed step, the forward and the recomputed forward.

    ``ratio`` is checkpointed / plain, ``predicted`` 1 + F_r / (F + B) and ``one_extra_forward`` 1 + F / (F + B).
    """

    plain_s: float
    checkpointed_s: float
    forward_s: float
    recomputed_forward_s: float
    ratio: float
    predicted: float
    one_extra_forward: float


@dataclass(frozen=True)
class RecomputeResult:
    """One case of ``recompute_bench``: its saved bytes, predicted and measured, and its step times."""

    name: str
    sizes: list[int]  # layers per segment
    predicted_bytes: SavedWithRecompute  # recompute.predict_saved_with_recompute
    measured_bytes: SavedWithRecompute  # recompute.measure_saved_with_recompute
    timing: RecomputeTiming


def recompute_cases(batch: int = 64) -> list[RecomputeCase]:
    """The two models of the benchmark: the small AlexNet (five segments) and an MLP (three), seeded."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return [
        RecomputeCase("alexnet_small", alexnet_small(), [3, 3, 4, 4, 7],
                      torch.randn(batch, 1, 32, 32, generator=g), torch.randint(0, 10, (batch,), generator=g)),
        RecomputeCase("mlp 784-1024x4-10", mlp(784, [1024] * 4, 10), 3,
                      torch.randn(4 * batch, 1, 28, 28, generator=g), torch.randint(0, 10, (4 * batch,), generator=g)),
    ]


def time_recompute(model: nn.Sequential, x: torch.Tensor, y: torch.Tensor, segments: int | Sequence[int],
                   rounds: int = 5, min_time: float = 0.2) -> RecomputeTiming:
    """Median seconds of the plain step, the checkpointed step, the forward and the recomputed forward.

    A step is zero_grad, forward, cross-entropy and backward (no optimizer: it is the same in both).
    Both forwards run with autograd recording, as recomputation does. Returns the four medians and
    the measured and predicted ratios (see ``RecomputeTiming``).
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    model.train()
    ck = checkpointed(model, segments)
    recomputed = nn.Sequential(*split_segments(model, segments)[:-1])  # what backward runs again

    def step(m: nn.Module) -> None:
        m.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(m(x), y).backward()

    fns: dict[str, Callable[[], object]] = {
        "plain_s": lambda: step(model), "checkpointed_s": lambda: step(ck),
        "forward_s": lambda: model(x), "recomputed_forward_s": lambda: recomputed(x)}
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for key, fn in fns.items():
            samples[key].append(benchmark(fn, min_time=min_time, warmup=1).median)
    out = {k: statistics.median(v) for k, v in samples.items()}
    plain = out["plain_s"]
    model.zero_grad(set_to_none=True)
    return RecomputeTiming(plain_s=plain, checkpointed_s=out["checkpointed_s"], forward_s=out["forward_s"],
                           recomputed_forward_s=out["recomputed_forward_s"], ratio=out["checkpointed_s"] / plain,
                           predicted=1 + out["recomputed_forward_s"] / plain,
                           one_extra_forward=1 + out["forward_s"] / plain)


def recompute_bench(batch: int = 64, rounds: int = 5, min_time: float = 0.2) -> list[RecomputeResult]:
    """Saved bytes (predicted and measured) and step-time ratio (measured and predicted) of each case."""
    rows: list[RecomputeResult] = []
    for case in recompute_cases(batch):
        predicted = predict_saved_with_recompute(case.model, tuple(case.x.shape), case.segments)
        measured = measure_saved_with_recompute(case.model, case.x, case.segments)
        times = time_recompute(case.model, case.x, case.y, case.segments, rounds=rounds, min_time=min_time)
        rows.append(RecomputeResult(name=case.name, sizes=predicted.sizes, predicted_bytes=predicted,
                                    measured_bytes=measured, timing=times))
    return rows
