"""A latency-bandwidth model of one data-parallel training step.

compute: the single-device step time for the global batch, split evenly: forward takes
1/3 and backward 2/3 of it (backward computes two products per layer, forward one).
communication: gradients of G bytes go in buckets of B bytes; each bucket is one ring
all-reduce, 2(n-1)·(α + B/n·β). Without overlap all of it follows backward; with overlap
buckets go out while backward runs, so only what outlasts backward, and at least the last
bucket (ready only when backward ends), is exposed. Buckets are PyTorch DDP's default size
(``DDP_BUCKET_BYTES``) unless given; ``scaling_curves`` gives the efficiency over numbers of devices.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from d2lmp.model.alpha_beta import predicted_all_reduce_time

__all__ = ["DDP_BUCKET_BYTES", "DDP_BUCKET_SOURCE", "BACKWARD_SHARE", "StepPrediction", "predict_step",
           "buckets_needed", "efficiency_curve", "scaling_curves"]

DDP_BUCKET_BYTES = 25 * 2**20  # PyTorch DDP's default bucket_cap_mb, 25 MiB
DDP_BUCKET_SOURCE = ("pytorch_ddp_docs_1_7",)
BACKWARD_SHARE = 2 / 3  # of a step's compute: backward computes two products per layer, forward one


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
                 bucket_bytes: float = DDP_BUCKET_BYTES, overlap: bool = True) -> StepPrediction:
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
    backward = compute * BACKWARD_SHARE
    exposed = max(per_bucket[-1], comm - backward)
    return StepPrediction(world, compute, comm, exposed)


def buckets_needed(grad_bytes: float, bucket_bytes: float) -> int:
    """How many buckets a gradient of ``grad_bytes`` fills."""
    return math.ceil(grad_bytes / bucket_bytes)


def efficiency_curve(single_device_s: float, grad_bytes: float, alpha: float, beta: float, worlds: Sequence[int],
                     bucket_bytes: float = DDP_BUCKET_BYTES, overlap: bool = True) -> list[float]:
    """Predicted scaling efficiency (``predict_step``) for each number of devices in ``worlds``."""
    return [predict_step(single_device_s, grad_bytes, n, alpha, beta, bucket_bytes, overlap)
            .efficiency(single_device_s) for n in worlds]


def scaling_curves(single_device_s: float, grad_bytes: float, links_gbs: dict[str, float], alpha: float,
                   worlds: Sequence[int], bucket_bytes: float = DDP_BUCKET_BYTES,
                   overlaps: Sequence[bool] = (True,)) -> dict[tuple[str, bool], list[float]]:
    """{(link, overlap): ``efficiency_curve``} for each link (name -> GB/s per direction) and overlap setting."""
    return {(name, overlap): efficiency_curve(single_device_s, grad_bytes, alpha, 1 / (gbs * 1e9), worlds,
                                              bucket_bytes, overlap)
            for name, gbs in links_gbs.items() for overlap in overlaps}
