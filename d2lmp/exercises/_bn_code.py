"""The SyncBatchNorm exercise of notebook 13, checked on real gloo ranks: statistics from per-rank sums, and traffic.

The student writes the statistics ``SyncBatchNorm2d`` normalises with: each channel's mean and biased variance over
a global batch split unevenly over 2 and 3 ranks, from this rank's slice. Every rank's answer is compared with one
device's statistics of the whole batch; the typical mistakes (this rank's own statistics, the ranks' statistics
averaged, the variance without the spread between the ranks' means, the unbiased variance) are recognised by
computing each of them here. Only a few numbers per channel may travel: a rank that gathers the examples gets the
right numbers and fails, with a message that says so (``_code.logged``). The question is in ``data_parallelism``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.distributed as dist

from d2lmp.exercises._code import Logged, code_checker, logged, max_error, on_ranks, sent_at_most
from d2lmp.model.alpha_beta import BUS_FACTORS

__all__ = ["STATS_CASES", "STATS_CHANNELS", "stats_batch", "my_global_stats", "global_stats_checker",
           "GLOBAL_STATS_WRONG"]

STATS_CASES = ((2, 9), (3, 10))  # (ranks, global batch): 5 + 4 examples, and 4 + 3 + 3
STATS_CHANNELS = 3


def stats_batch(batch: int) -> torch.Tensor:
    """A global batch of (batch, C, 4, 4) features whose mean drifts along the batch, so that the ranks' slices have
    different means (as slices of real data do) and averaging per-rank statistics shows its error."""
    g = torch.Generator().manual_seed(100 + batch)
    x = 1.5 * torch.randn(batch, STATS_CHANNELS, 4, 4, generator=g) + 0.5
    return x + torch.linspace(0.0, 3.0, batch).view(-1, 1, 1, 1)


def my_global_stats(rank: int, world: int, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each channel's mean and biased variance over the whole global batch, from this rank's slice x (N_r, C, H, W)."""
    c = x.shape[1]
    x = x.double()
    sums = torch.cat([x.sum(dim=(0, 2, 3)), (x * x).sum(dim=(0, 2, 3)), x.new_tensor([x.numel() // c])])
    dist.all_reduce(sums)  # one message: every rank's Σx and Σx² per channel, and its count, summed
    n = sums[2 * c]
    mean = sums[:c] / n
    return mean, sums[c:2 * c] / n - mean * mean  # Σx²/N − mean²: the variance BatchNorm divides by


def _channel_stats(x: torch.Tensor, unbiased: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    x = x.double()
    return x.mean(dim=(0, 2, 3)), x.var(dim=(0, 2, 3), correction=1 if unbiased else 0)


def _stats_worker(rank: int, world: int, fn: Callable[..., Any], x: torch.Tensor) -> Logged:
    xs = torch.tensor_split(x, world)[rank]
    return logged(fn, rank, world, xs.clone())


def _stats_run(fn: Callable[..., Any]) -> list[tuple[str, Logged, Any]]:
    results = []
    for world, batch in STATS_CASES:
        x = stats_batch(batch)
        slices = torch.tensor_split(x, world)
        counts = [len(s) for s in slices]
        own = [_channel_stats(s) for s in slices]
        weights = torch.tensor(counts, dtype=torch.float64) / batch
        mean = _channel_stats(x)[0]
        mistakes = {
            "mean_of_stats": (sum(m for m, _ in own) / world, sum(v for _, v in own) / world),
            "within_only": (mean, sum(w * v for w, (_, v) in zip(weights, own))),
            "unbiased": _channel_stats(x, unbiased=True),
        }
        for rank, run in enumerate(on_ranks(_stats_worker, world, fn, x)):
            results.append((f"{world} ranks, a batch of {batch} split {counts}, rank {rank}", run,
                            (_channel_stats(x), {**mistakes, "local": own[rank]}, counts, world)))
    return results


def _pair_matches(got: Any, want: Sequence[torch.Tensor]) -> bool:
    if not (isinstance(got, (tuple, list)) and len(got) == 2):
        return False
    return all(isinstance(g, torch.Tensor) and g.shape == w.shape
               and torch.allclose(g.detach().double(), w, rtol=1e-5, atol=1e-6) for g, w in zip(got, want))


def _stats_traffic(run: Logged, world: int) -> str | None:
    other = [m.op for m in run.messages if m.op != "all_reduce"]
    if other:
        return (f"your function called dist.{other[0]}: only a few numbers per channel may travel, its count, Σx "
                "and Σx², summed over the ranks by an all-reduce; the examples stay on their rank")
    # at most three float64 numbers a channel, and the count
    limit = BUS_FACTORS["all_reduce"](world) * (3 * STATS_CHANNELS + 1) * 8
    return sent_at_most(run, limit, "an all-reduce of each channel's count, Σx and Σx²",
                        "the statistics follow from these sums, whatever the batch's size")


def _stats_judge(case: str, run: Logged, context: Any) -> str | None:
    expected, mistakes, counts, world = context
    got = run.result
    if _pair_matches(got, expected):
        return _stats_traffic(run, world)
    if not (isinstance(got, (tuple, list)) and len(got) == 2 and all(isinstance(t, torch.Tensor) for t in got)):
        return f"return a pair (mean, variance), each a tensor of shape ({STATS_CHANNELS},): one value per channel"
    explanations = {
        "local": "you returned this rank's own statistics, what a plain BatchNorm layer uses under data parallelism; "
                 "sum each channel's count, Σx and Σx² over the ranks first",
        "mean_of_stats": "you averaged the ranks' means and variances: with an uneven split "
                         f"({' + '.join(map(str, counts))}) that weighs the ranks wrongly, and a mean of variances "
                         "leaves out how far the ranks' means lie apart. Sums add over ranks; means and variances "
                         "do not",
        "within_only": "your mean is right, but your variance is the count-weighted mean of the ranks' variances: it "
                       "leaves out how far each rank's mean lies from the global one. Take it from Σx²/N − mean²",
        "unbiased": "your variance divides by N − 1: BatchNorm normalises with the biased variance, divided by the "
                    "count N (the running variance alone is kept unbiased)",
    }
    for name, why in explanations.items():
        if _pair_matches(got, mistakes[name]):
            return why
    worst = max(max_error(g, e) if g.shape == e.shape else math.inf for g, e in zip(got, expected))
    return f"your statistics differ from one device's over the whole batch by up to {worst:.3g}"


def _stats_local(rank: int, world: int, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x.mean(dim=(0, 2, 3)), x.var(dim=(0, 2, 3), correction=0)


def _stats_mean_of_stats(rank: int, world: int, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    stats = torch.stack([x.mean(dim=(0, 2, 3)), x.var(dim=(0, 2, 3), correction=0)])
    dist.all_reduce(stats)
    return stats[0] / world, stats[1] / world


def _stats_gather(rank: int, world: int, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Right numbers, not SyncBatchNorm: every rank gathers every example and computes the statistics itself."""
    pieces: list[Any] = [None] * world
    dist.all_gather_object(pieces, x)
    whole = torch.cat(pieces)
    return whole.mean(dim=(0, 2, 3)), whole.var(dim=(0, 2, 3), correction=0)


def _stats_unbiased(rank: int, world: int, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    c = x.shape[1]
    sums = torch.cat([x.double().sum(dim=(0, 2, 3)), (x.double() ** 2).sum(dim=(0, 2, 3)),
                      torch.tensor([x.numel() / c], dtype=torch.float64)])
    dist.all_reduce(sums)
    n = sums[2 * c]
    mean = sums[:c] / n
    return mean, (sums[c:2 * c] - n * mean * mean) / (n - 1)


global_stats_checker = code_checker(_stats_run, _stats_judge, "on 2 and 3 ranks, with uneven splits, every rank "
                                                              "holds one device's mean and variance of every channel, "
                                                              "and only the per-channel sums travelled.")
GLOBAL_STATS_WRONG = [(_stats_local, "this rank's own statistics"), (_stats_mean_of_stats, "you averaged the ranks'"),
                      (_stats_unbiased, "divides by N − 1"),
                      (_stats_gather, "your function called dist.all_gather_object")]
