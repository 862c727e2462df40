"""Recomputation benchmark: the step time with checkpointed segments against the plain step, and its prediction.

Recomputation runs the checkpointed segments' forward once more during backward, so a step should
take (F + B + F_r) / (F + B) of the plain one, F + B being the plain step and F_r the forward of the
checkpointed segments (the last segment is not recomputed). Every term is measured here, in the
same run, on the same inputs: the plain and checkpointed steps, the whole forward (F) and the
checkpointed segments' forward (F_r). Rounds alternate the four so that drifting machine load hits
all alike; each figure is the median over rounds. The saved bytes are measured and predicted too.
"""

from __future__ import annotations

import statistics

import torch
from torch import nn

from ..models import alexnet_small, mlp
from ..recompute import checkpointed, measure_saved_with_recompute, predict_saved_with_recompute, split_segments
from ..report import table
from ..timing import benchmark

__all__ = ["recompute_bench", "recompute_cases", "time_recompute"]


def recompute_cases(batch: int = 64) -> list[dict]:
    """The two models of the benchmark: the small AlexNet (five segments) and an MLP (three), seeded."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return [
        dict(name="alexnet_small", model=alexnet_small(), segments=[3, 3, 4, 4, 7],
             x=torch.randn(batch, 1, 32, 32, generator=g), y=torch.randint(0, 10, (batch,), generator=g)),
        dict(name="mlp 784-1024x4-10", model=mlp(784, [1024] * 4, 10), segments=3,
             x=torch.randn(4 * batch, 1, 28, 28, generator=g), y=torch.randint(0, 10, (4 * batch,), generator=g)),
    ]


def time_recompute(model: nn.Sequential, x: torch.Tensor, y: torch.Tensor, segments, rounds: int = 5,
                   min_time: float = 0.2) -> dict:
    """Median seconds of the plain step, the checkpointed step, the forward and the recomputed forward.

    A step is zero_grad, forward, cross-entropy and backward (no optimizer: it is the same in both).
    Both forwards run with autograd recording, as recomputation does. Returns the four medians
    ("plain_s", "checkpointed_s", "forward_s", "recomputed_forward_s") and "ratio" (checkpointed /
    plain), "predicted" (1 + F_r / (F + B)) and "one_extra_forward" (1 + F / (F + B)).
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    model.train()
    ck = checkpointed(model, segments)
    recomputed = nn.Sequential(*split_segments(model, segments)[:-1])  # what backward runs again

    def step(m):
        m.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(m(x), y).backward()

    fns = {"plain_s": lambda: step(model), "checkpointed_s": lambda: step(ck),
           "forward_s": lambda: model(x), "recomputed_forward_s": lambda: recomputed(x)}
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for key, fn in fns.items():
            samples[key].append(benchmark(fn, min_time=min_time, warmup=1).median)
    out = {k: statistics.median(v) for k, v in samples.items()}
    plain = out["plain_s"]
    out.update(ratio=out["checkpointed_s"] / plain, predicted=1 + out["recomputed_forward_s"] / plain,
               one_extra_forward=1 + out["forward_s"] / plain)
    model.zero_grad(set_to_none=True)
    return out


def recompute_bench(batch: int = 64, rounds: int = 5, min_time: float = 0.2, verbose: bool = True) -> list[dict]:
    """Saved bytes (predicted and measured) and step-time ratio (measured and predicted) of each case.

    Prints a table and the goal line "measured ratio within 0.1 of the predicted one" when ``verbose``.
    """
    rows = []
    for case in recompute_cases(batch):
        model, x, y, segments = case["model"], case["x"], case["y"], case["segments"]
        predicted = predict_saved_with_recompute(model, tuple(x.shape), segments)
        measured = measure_saved_with_recompute(model, x, segments)
        times = time_recompute(model, x, y, segments, rounds=rounds, min_time=min_time)
        rows.append(dict(name=case["name"], sizes=predicted["sizes"], predicted_bytes=predicted,
                         measured_bytes=measured, **times))
    if verbose:
        kib = 2**10
        print(f"Activation recomputation, batch {batch} (MLP {4 * batch}): saved activations, KiB "
              "(predicted = measured?)")
        print(table([[r["name"], r["sizes"], f"{r['measured_bytes']['plain'] / kib:,.0f}",
                      f"{r['measured_bytes']['after_forward'] / kib:,.0f}",
                      f"{r['measured_bytes']['peak'] / kib:,.0f}",
                      "yes" if r["measured_bytes"] == r["predicted_bytes"] else "NO"] for r in rows],
                    ["model", "layers per segment", "plain", "after forward", "peak in backward", "exact"]))
        print("\nStep time (forward + backward), median of rounds: checkpointed / plain vs 1 + F_r / (F + B)")
        print(table([[r["name"], f"{r['plain_s'] * 1e3:.1f}", f"{r['checkpointed_s'] * 1e3:.1f}",
                      f"{r['forward_s'] * 1e3:.1f}", f"{r['recomputed_forward_s'] * 1e3:.1f}", f"{r['ratio']:.3f}",
                      f"{r['predicted']:.3f}", f"{r['one_extra_forward']:.3f}"] for r in rows],
                    ["model", "plain ms", "checkpointed ms", "F ms", "F_r ms", "ratio", "predicted",
                     "1 + F/(F+B)"]))
        worst = max(abs(r["ratio"] - r["predicted"]) for r in rows)
        print(f"\ngoal: measured ratio within 0.1 of the predicted one: worst difference {worst:.3f} "
              f"({'met' if worst <= 0.1 else 'NOT met'})")
    return rows
