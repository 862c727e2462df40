"""Where to cut a network into pipeline stages: the partition that balances per-layer costs.

A pipeline runs as fast as its slowest stage, so layers with measured costs (``d2lmp.layer_profile``) are
split into contiguous stages whose largest cost is as small as possible (``balance``, exact dynamic
programming). Under interleaved 1F1B a rank holds several stages, and evening out the stages no longer
evens out the step: ``balance_schedule`` picks the split whose simulated step is shortest, and
``rank_costs`` adds up what each rank computes. ``equal_split`` is the naive split by layer count and
``stage_costs`` adds up a split. Plain arithmetic on a list of costs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import accumulate, combinations

from d2lmp.model.pipeline_schedule import simulate, step_span

__all__ = ["balance", "balance_schedule", "equal_split", "rank_costs", "stage_costs"]


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
