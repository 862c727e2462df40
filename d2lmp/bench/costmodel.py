"""Cost-model benchmark: the analytic model's predicted step time against steps measured here.

The model (``model.costmodel``) is calibrated on this machine (one rank's FLOP/s and a fitted
all-reduce α and β), then data, pipeline and tensor parallelism of an MLP run on 2 CPU ranks; one
``StrategyTiming`` per strategy holds the prediction, its parts and the measurement.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from d2lmp.bench.allreduce import measure_all_reduces
from d2lmp.model.alpha_beta import fit_alpha_beta, ring_alpha_beta
from d2lmp.model.costmodel import predict, this_machine
from d2lmp.model.pipeline_balance import balance
from d2lmp.model.pipeline_schedule import step_span
from d2lmp.model.vocabulary import TableStrategy
from d2lmp.models import layer_table
from d2lmp.parallel import data_parallel as DP
from d2lmp.parallel.launch import launch
from d2lmp.parallel.pipeline import pipeline_steps
from d2lmp.parallel.tensor_parallel import ColumnParallelLinear
from d2lmp.timing import benchmark

__all__ = ["CALIBRATE_TIME", "StrategyTiming", "costmodel_bench"]


@dataclass(frozen=True)
class StrategyTiming:
    """One strategy's predicted step (and its compute, communication and bubble parts) against the measured one."""

    strategy: TableStrategy  # "data", "pipeline" or "tensor"
    predicted_s: float
    measured_s: float
    ratio: float  # predicted / measured
    compute_s: float
    comm_s: float
    bubble_s: float


def _tp_mlp_worker(rank: int, world: int, spec: DP.MLPSpec, batch: int, steps: int) -> float:
    full = spec.build()
    layers = [ColumnParallelLinear(m, gather_output=True) if isinstance(m, nn.Linear) else m for m in full]
    model = nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = DP.synthetic_data(spec, batch)
    times: list[float] = []
    for _ in range(steps):
        dist.barrier()
        start = time.perf_counter()
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


def _measure_strategies(spec: DP.MLPSpec, batch: int, steps: int,
                        sizes: Sequence[int]) -> dict[TableStrategy, float]:
    out: dict[TableStrategy, float] = {}
    result = launch(DP.dp_train, 2, spec, *DP.synthetic_data(spec, batch), "bucketed", steps, 0.01, 4 * 2**20)
    out["data"] = statistics.median(max(r.step_seconds[i] for r in result) for i in range(1, steps))
    x, y = DP.synthetic_data(spec, batch)
    per_rank = launch(pipeline_steps, 2, spec.build, sizes, x, y, steps)
    out["pipeline"] = statistics.median(step_span(per_rank[0][s] + per_rank[1][s]) for s in range(1, steps))
    out["tensor"] = max(launch(_tp_mlp_worker, 2, spec, batch, steps))
    return out


def _step_time_worker(rank: int, world: int, spec: DP.MLPSpec, batch: int, min_time: float) -> float:
    """Median time of one full-batch training step on this rank, timed while every rank does the same."""
    model = spec.build()
    x, y = DP.synthetic_data(spec, batch)

    def one_step() -> None:
        model.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()

    dist.barrier()
    return benchmark(one_step, min_time=min_time).median


CALIBRATE_TIME = 0.5  # seconds each rank times the full-batch step for, to calibrate the FLOP rate


def costmodel_bench(batch: int = 256, steps: int = 6, spec: DP.MLPSpec | None = None,
                    calibrate_time: float = CALIBRATE_TIME) -> list[StrategyTiming]:
    """Predicted vs measured step time on 2 CPU ranks for data, pipeline and tensor parallelism of an MLP;
    ``calibrate_time``: seconds each rank times the full-batch step for to calibrate the FLOP rate."""
    spec = spec or DP.MLPSpec((1024, 2048, 2048, 2048, 10), seed=0)
    rows = layer_table(spec.build(), (batch, spec.sizes[0]))

    # Calibrate the FLOP rate the way the ranks will run: one thread each, both ranks computing at once.
    # One process timed alone runs faster than each of two concurrent ones (they share caches, memory
    # bandwidth and possibly a physical core), and would make every prediction come out low.
    single = max(launch(_step_time_worker, 2, spec, batch, calibrate_time))
    flops = 3 * sum(r.flops for r in rows) / single
    timings = launch(measure_all_reduces, 2, [2**16, 2**20, 2**22, 2**24], ("torch",), 0.05)[0]
    intercept, slope = fit_alpha_beta([t.size_bytes for t in timings], [t.seconds for t in timings])
    hw = this_machine(flops, *ring_alpha_beta(intercept, slope, 2), devices=2)
    sizes = balance([r.flops for r in rows], 2)  # the pipeline split, balanced by FLOPs
    measured = _measure_strategies(spec, batch, steps, sizes)
    out = []
    for strategy, seconds in measured.items():
        p = predict(rows, strategy, hw, batch, micro_batches=4, batch_of_table=batch, stage_sizes=sizes)
        out.append(StrategyTiming(strategy=strategy, predicted_s=p.step_s, measured_s=seconds,
                                  ratio=p.step_s / seconds, compute_s=p.compute_s, comm_s=p.comm_s,
                                  bubble_s=p.bubble_s))
    return out
