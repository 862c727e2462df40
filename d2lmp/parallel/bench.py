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
    import torch.distributed as dist

    backend = dist.get_backend()  # "torch" below is this backend's own all-reduce
    rows = []
    for size in sizes:
        samples = {"torch": [], "ring": []}
        for _ in range(rounds):
            for impl in samples:
                samples[impl].append(C.measure_collective("all_reduce", impl, [size], repeats=3, min_time=min_time)[0])
        for impl, rs in samples.items():
            seconds = statistics.median(r["seconds"] for r in rs)
            algbw = rs[0]["size_bytes"] / seconds / 1e9
            rows.append(dict(impl=impl, world=world, backend=backend, size_bytes=rs[0]["size_bytes"], seconds=seconds,
                             algbw_gbs=algbw, busbw_gbs=C.bus_bandwidth(algbw, "all_reduce", world)))
    return rows


def allreduce_bench(worlds=(2, 4), sizes=ALLREDUCE_SIZES, rounds: int = 5, min_time: float = 0.1) -> list[dict]:
    """Rows of (impl, world, backend, size, seconds, algbw, busbw) for our ring and the backend's all-reduce.

    ``launch`` picks the backend per world size: NCCL when there is a GPU per rank, else gloo.
    """
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


def pipeline_model():
    """A half-width AlexNet (paper layout) on 115×115 inputs as one flat nn.Sequential."""
    import torch

    from ..models import alexnet2012
    from .pipeline import flat_sequential

    torch.manual_seed(0)
    return flat_sequential(alexnet2012(num_classes=10, width=0.5, input_size=115, init="torch"))


def pipeline_bench(worlds=(2, 4), micro_batches=(1, 2, 4, 8), batch: int = 128, steps: int = 4) -> dict:
    """Balanced vs equal-layer partitions (GPipe, m=4) and measured vs theoretical bubbles (balanced).

    Layer costs are not proportional to the batch (a small batch uses the vector units less well,
    and each operator has a fixed overhead), so every partition is balanced on costs profiled at
    the micro-batch size it will run: batch / m. Each configuration runs ``steps`` steps; the
    first is a warm-up and the rest give medians.
    """
    import statistics

    import torch

    from .pipeline import balance, bubble_fraction, equal_split, layer_costs, measured_bubble, pipeline_steps, step_span

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


def _tp_mlp_worker(rank, world, spec, batch, steps):
    import time

    import torch
    import torch.distributed as dist
    from torch import nn

    from .tensor_parallel import ColumnParallelLinear

    full = spec.build()
    layers = [ColumnParallelLinear(m, gather_output=True) if isinstance(m, nn.Linear) else m for m in full]
    model = nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = DP.synthetic_data(spec, batch)
    times = []
    for _ in range(steps):
        dist.barrier()
        start = time.perf_counter()
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


def _measure_strategies(spec, batch, steps, sizes):
    from .pipeline import pipeline_steps, step_span

    out = {}
    result = launch(DP.dp_train, 2, spec, *DP.synthetic_data(spec, batch), "bucketed", steps, 0.01, 4 * MIB)
    out["data"] = statistics.median(max(r["step_seconds"][i] for r in result) for i in range(1, steps))
    x, y = DP.synthetic_data(spec, batch)
    per_rank = launch(pipeline_steps, 2, spec.build, sizes, x, y, steps)
    out["pipeline"] = statistics.median(step_span(per_rank[0][s] + per_rank[1][s]) for s in range(1, steps))
    out["tensor"] = max(launch(_tp_mlp_worker, 2, spec, batch, steps))
    return out


def _step_time_worker(rank, world, spec, batch, min_time):
    """Median time of one full-batch training step on this rank, timed while every rank does the same."""
    import torch
    import torch.distributed as dist

    from ..timing import benchmark

    model = spec.build()
    x, y = DP.synthetic_data(spec, batch)

    def one_step():
        model.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()

    dist.barrier()
    return benchmark(one_step, min_time=min_time).median


def costmodel_bench(batch: int = 256, steps: int = 6, spec: DP.MLPSpec | None = None) -> list[dict]:
    """Predicted vs measured step time on 2 CPU ranks for data, pipeline and tensor parallelism of an MLP."""
    from ..checks.ranks import measure_all_reduces
    from ..models import layer_table
    from .collectives import fit_alpha_beta
    from .costmodel import predict, this_machine
    from .pipeline import balance

    spec = spec or DP.MLPSpec((1024, 2048, 2048, 2048, 10), seed=0)
    rows = layer_table(spec.build(), (batch, spec.sizes[0]))

    # Calibrate the FLOP rate the way the ranks will run: one thread each, both ranks computing at once. Timed alone,
    # one process ran ~15% faster than each of two concurrent ones here (they share caches, memory bandwidth and
    # possibly a physical core), and every prediction came out low (ratios 0.72-0.91; 0.81-0.90 calibrated this way).
    single = max(launch(_step_time_worker, 2, spec, batch, 0.5))
    flops = 3 * sum(r["flops"] for r in rows) / single
    timings = launch(measure_all_reduces, 2, [2**16, 2**20, 2**22, 2**24], ("torch",), 0.05)[0]
    intercept, slope = fit_alpha_beta([r["size_bytes"] for r in timings], [r["seconds"] for r in timings])
    hw = this_machine(flops, intercept / 2, slope, devices=2)
    sizes = balance([r["flops"] for r in rows], 2)  # the pipeline split, balanced by FLOPs
    measured = _measure_strategies(spec, batch, steps, sizes)
    out = []
    for strategy, seconds in measured.items():
        p = predict(rows, strategy, hw, batch, micro_batches=4, batch_of_table=batch, stage_sizes=sizes)
        out.append(dict(strategy=strategy, predicted_s=p.step_s, measured_s=seconds, ratio=p.step_s / seconds,
                        compute_s=p.compute_s, comm_s=p.comm_s, bubble_s=p.bubble_s))
    return out
