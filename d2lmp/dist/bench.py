"""Benchmarks of the distributed pieces, each against PyTorch's own in the same run.

``allreduce_bench``: our ring against ``dist.all_reduce`` (bus bandwidth ratio).
``dp_bench``: step time of each data-parallel version against ``DistributedDataParallel``.
Rounds alternate the implementations so that drifting machine load hits both alike;
figures are medians over rounds.
"""

from __future__ import annotations

import statistics

from . import collectives as C
from . import data_parallel as DP
from .launch import launch

KIB, MIB = 2**10, 2**20
ALLREDUCE_SIZES = tuple(KIB * 4**k for k in range(9))  # 1 KiB ... 64 MiB


def _allreduce_worker(rank, world, sizes, rounds, min_time):
    rows = []
    for size in sizes:
        samples = {"torch": [], "ring": []}
        for _ in range(rounds):
            for impl in samples:
                samples[impl].append(C.measure_collective("all_reduce", impl, [size], repeats=3, min_time=min_time)[0])
        for impl, rs in samples.items():
            seconds = statistics.median(r["seconds"] for r in rs)
            algbw = rs[0]["size_bytes"] / seconds / 1e9
            rows.append(dict(impl=impl, world=world, size_bytes=rs[0]["size_bytes"], seconds=seconds,
                             algbw_gbs=algbw, busbw_gbs=C.bus_bandwidth(algbw, "all_reduce", world)))
    return rows


def allreduce_bench(worlds=(2, 4), sizes=ALLREDUCE_SIZES, rounds: int = 3, min_time: float = 0.05) -> list[dict]:
    """Rows of (impl, world, size, seconds, algbw, busbw) for our ring and gloo's all-reduce."""
    rows = []
    for world in worlds:
        rows += launch(_allreduce_worker, world, tuple(sizes), rounds, min_time, timeout=600)[0]
    return rows


def dp_bench_spec() -> DP.MLPSpec:
    """The benchmark model: about 15 M parameters (60 MB of gradients) in five linear layers."""
    return DP.MLPSpec((1024, 2048, 2048, 2048, 2048, 10), seed=0)


def _dp_worker(rank, world, spec, batch, steps, rounds, bucket_bytes, versions):
    x, y = DP.synthetic_data(spec, batch)
    times = {v: [] for v in versions}
    for _ in range(rounds):
        for v in versions:
            result = DP.dp_train(rank, world, spec, x, y, v, steps=steps, lr=0.01, bucket_bytes=bucket_bytes)
            times[v] += result["step_seconds"][2:]  # the first steps warm up (DDP builds its buckets)
    return {v: statistics.median(t) for v, t in times.items()}


def dp_bench(world: int = 2, batch: int = 64, steps: int = 6, rounds: int = 3, bucket_bytes: int = 4 * MIB,
             versions=DP.VERSIONS, spec: DP.MLPSpec | None = None) -> dict[str, float]:
    """Median step seconds of each data-parallel version on ``world`` ranks (the slowest rank's)."""
    spec = spec or dp_bench_spec()
    per_rank = launch(_dp_worker, world, spec, batch, steps, rounds, bucket_bytes, tuple(versions), timeout=900)
    return {v: max(r[v] for r in per_rank) for v in versions}


def pipeline_model(quick: bool = False):
    """A half-width AlexNet (paper layout) on 115×115 inputs as one flat nn.Sequential."""
    from ..models import alexnet2012
    from .pipeline import flat_sequential

    import torch

    torch.manual_seed(0)
    return flat_sequential(alexnet2012(num_classes=10, width=0.5, input_size=115, init="torch"))


def _pipeline_worker(rank, world, sizes, batch, kind, micro_batches, steps):
    import torch

    from .pipeline import pipeline_step, step_span

    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(batch, 3, 115, 115, generator=g), torch.randint(0, 10, (batch,), generator=g)
    spans, events = [], []
    for _ in range(steps):
        result = pipeline_step(rank, world, pipeline_model, sizes, x, y, kind, micro_batches)
        events.append(result["events"])
    return events


def pipeline_bench(worlds=(2, 4), micro_batches=(1, 2, 4, 8), batch: int = 32, steps: int = 3) -> dict:
    """Balanced vs equal-layer partitions (GPipe, m=4) and measured vs theoretical bubbles (balanced)."""
    import statistics

    import torch

    from .pipeline import balance, bubble_fraction, equal_split, measured_bubble, profile_layers, step_span

    from ..config import set_threads

    model = pipeline_model()
    previous = set_threads(1)  # profile as a rank computes: one thread
    try:
        profiles = profile_layers(model, torch.randn(batch // 4, 3, 115, 115), min_time=0.05)
    finally:
        set_threads(previous)
    costs = [p.seconds for p in profiles]
    out = {"partitions": [], "bubbles": []}

    def run(world, sizes, kind, m):
        per_rank = launch(_pipeline_worker, world, sizes, batch, kind, m, steps, timeout=600)
        steps_events = [sum((r[s] for r in per_rank), []) for s in range(steps)]
        return (statistics.median(step_span(e) for e in steps_events),
                statistics.median(measured_bubble(e, world) for e in steps_events))

    for world in worlds:
        for name, sizes in (("equal layers", equal_split(len(costs), world)), ("balanced", balance(costs, world))):
            span, _ = run(world, sizes, "gpipe", 4)
            out["partitions"].append(dict(world=world, partition=name, sizes=sizes, step_s=span))
    sizes = balance(costs, 2)
    for m in micro_batches:
        _, bubble = run(2, sizes, "gpipe", m)
        out["bubbles"].append(dict(world=2, micro_batches=m, measured=bubble, theory=bubble_fraction(2, m)))
    return out
