"""A latency-bandwidth model of one data-parallel training step.

compute: the single-device step time for the global batch, split evenly: forward takes
1/3 and backward 2/3 of it (backward computes two products per layer, forward one).
communication: gradients of G bytes go in buckets of B bytes; each bucket is one ring
all-reduce, 2(n-1)·(α + B/n·β). Without overlap all of it follows backward; with overlap
buckets go out while backward runs, so only what outlasts backward, and at least the last
bucket (ready only when backward ends), is exposed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .alpha_beta import predicted_all_reduce_time

__all__ = ["StepPrediction", "predict_step", "buckets_needed"]


@dataclass
class StepPrediction:
    world: int
    compute_s: float
    comm_s: float
    exposed_comm_s: float

    @property
    def step_s(self) -> float:
        return self.compute_s + self.exposed_comm_s

    def efficiency(self, single_device_s: float) -> float:
        """Speed-up over one device divided by the number of devices (1.0 is perfect scaling)."""
        return single_device_s / self.step_s / self.world


def predict_step(single_device_s: float, grad_bytes: float, world: int, alpha: float, beta: float,
                 bucket_bytes: float = 25 * 2**20, overlap: bool = True) -> StepPrediction:
    """Predicted step time on ``world`` devices (α in seconds, β in seconds per byte)."""
    if single_device_s <= 0 or grad_bytes <= 0 or bucket_bytes <= 0 or alpha < 0 or beta < 0:
        raise ValueError("times, sizes and bucket size must be positive; alpha and beta non-negative")
    if not isinstance(world, int) or world < 1:
        raise ValueError(f"world must be an integer >= 1, got {world!r}")
    compute = single_device_s / world
    if world == 1:
        return StepPrediction(1, compute, 0.0, 0.0)
    full, rest = divmod(grad_bytes, bucket_bytes)
    sizes = [bucket_bytes] * int(full) + ([rest] if rest else [])
    per_bucket = [predicted_all_reduce_time("ring", world, b, alpha, beta) for b in sizes]
    comm = sum(per_bucket)
    if not overlap:
        return StepPrediction(world, compute, comm, comm)
    backward = compute * 2 / 3
    exposed = max(per_bucket[-1], comm - backward)
    return StepPrediction(world, compute, comm, exposed)


def buckets_needed(grad_bytes: float, bucket_bytes: float) -> int:
    """How many buckets a gradient of ``grad_bytes`` fills."""
    return math.ceil(grad_bytes / bucket_bytes)
