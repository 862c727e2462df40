"""Hybrid benchmark: the measured step of a 2 × 2 data × tensor grid against the cost model's prediction.

The model (``parallel.costmodel.predict(..., "hybrid", grid=(2, 2))``) is calibrated on this machine the
way the grid runs: every rank's share of the compute timed while all four compute at once, and α, β
fitted from all-reduces inside the two-rank groups while both groups talk at once.
"""

from __future__ import annotations

import statistics
import time

import torch
import torch.distributed as dist
from torch import nn

from ..models import layer_table
from ..parallel import data_parallel as DP
from ..parallel.alpha_beta import fit_alpha_beta
from ..parallel.costmodel import predict, this_machine
from ..parallel.hybrid import grid_groups, hybrid_train
from ..parallel.launch import launch
from ..timing import benchmark

__all__ = ["GOAL", "HYBRID_SPEC", "calibrate", "hybrid_bench", "print_hybrid_bench"]

GOAL = (0.75, 1.33)  # predicted / measured
HYBRID_SPEC = DP.MLPSpec((512, 1024, 1024, 1024, 10), seed=0)
CALIBRATION_SIZES = (2**14, 2**16, 2**18, 2**20, 2**22)


def _share_seconds(rank, world, spec, batch, tensor, min_time):
    """Median seconds of this rank's compute in one hybrid step, without its messages: each layer's
    1/tensor of the outputs, forward and backward, for ``batch`` examples (one replica's slice)."""
    torch.manual_seed(rank)
    widths = spec.sizes
    layers = [nn.Linear(a, b // tensor) for a, b in zip(widths, widths[1:])]
    inputs = [torch.randn(batch, a, requires_grad=i > 0) for i, a in enumerate(widths[:-1])]

    def one_step():
        for layer, x in zip(layers, inputs):
            out = layer(x)
            out.backward(torch.ones_like(out))

    dist.barrier()
    return benchmark(one_step, min_time=min_time).median


def _group_all_reduce_seconds(rank, world, data, tensor, sizes, repeats=7):
    """(bytes, seconds) of an all-reduce inside this rank's tensor group, both groups at once (slowest rank)."""
    grid = grid_groups(data, tensor)
    out = []
    for size in sizes:
        t = torch.ones(size // 4)
        dist.all_reduce(t, group=grid.tensor_group)  # warm-up
        samples = []
        for _ in range(repeats):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(t, group=grid.tensor_group)
            samples.append(time.perf_counter() - start)
        slowest = torch.tensor([statistics.median(samples)], dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        out.append((size, slowest.item()))
    return out


def calibrate(spec: DP.MLPSpec, batch: int, data: int = 2, tensor: int = 2, min_time: float = 0.3):
    """``Hardware`` for the grid from measurements here: FLOP/s of a rank's share, fitted α and β."""
    world = data * tensor
    rows = layer_table(spec.build(), (batch, spec.sizes[0]))
    share = max(launch(_share_seconds, world, spec, -(-batch // data), tensor, min_time))
    flops = 3 * sum(r.flops for r in rows) / world / share
    points = launch(_group_all_reduce_seconds, world, data, tensor, CALIBRATION_SIZES)[0]
    intercept, slope = fit_alpha_beta([s for s, _ in points], [t for _, t in points])
    messages = 2 * (tensor - 1)  # a ring all-reduce: 2(n-1)(α + S/n·β)
    alpha, beta = intercept / messages, slope * tensor / messages
    return rows, this_machine(flops, max(alpha, 0.0), beta, devices=world)


def hybrid_bench(batch: int = 128, steps: int = 8, data: int = 2, tensor: int = 2,
                 spec: DP.MLPSpec | None = None) -> dict:
    """Predicted and measured step of the ``data × tensor`` hybrid (median step of the slowest rank, first skipped)."""
    for name, value, least in (("batch", batch, data), ("steps", steps, 2), ("data", data, 1), ("tensor", tensor, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
    spec = spec or HYBRID_SPEC
    torch.optim.SGD(nn.Linear(1, 1).parameters())  # its first use imports lazily: once here, not in each rank
    rows, hw = calibrate(spec, batch, data, tensor)
    p = predict(rows, "hybrid", hw, batch, batch_of_table=batch, grid=(data, tensor))
    x, y = DP.synthetic_data(spec, batch)
    per_rank = launch(hybrid_train, data * tensor, spec, x, y, data, tensor, steps, 0.01, timeout=600)
    measured = statistics.median(max(r["step_seconds"][i] for r in per_rank) for i in range(1, steps))
    return dict(predicted_s=p.step_s, measured_s=measured, ratio=p.step_s / measured, compute_s=p.compute_s,
                comm_s=p.comm_s, flops=hw.flops, alpha=hw.alpha, beta=1 / hw.link_bytes_per_s,
                met=GOAL[0] <= p.step_s / measured <= GOAL[1])


def print_hybrid_bench(batch: int = 128, steps: int = 8) -> int:
    """``d2lmp bench hybrid``: run ``hybrid_bench`` and print predicted, measured and the goal line; returns 0."""
    print(f"Data x tensor hybrid on a 2 x 2 grid of CPU ranks: MLP {HYBRID_SPEC.sizes}, batch {batch}; "
          "cost model calibrated here (a rank's share of the FLOPs, α and β fitted inside the 2-rank groups)",
          flush=True)
    r = hybrid_bench(batch=batch, steps=steps)
    print(f"calibration: {r['flops'] / 1e9:.2f} GFLOP/s per rank, α {r['alpha'] * 1e6:.1f} µs, "
          f"1/β {1 / r['beta'] / 1e9:.2f} GB/s")
    print(f"predicted: {r['predicted_s'] * 1e3:.1f} ms (compute {r['compute_s'] * 1e3:.1f} ms + "
          f"communication {r['comm_s'] * 1e3:.1f} ms)")
    print(f"measured:  {r['measured_s'] * 1e3:.1f} ms (median step of the slowest rank)")
    print(f"\ngoal: hybrid predicted/measured within {GOAL[0]}–{GOAL[1]}×: {r['ratio']:.2f} "
          f"({'met' if r['met'] else 'missed'})")
    return 0
