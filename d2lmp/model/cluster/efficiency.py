"""The cost model's free parameters: what each stands for, and the values fitted on their calibration tables.

Four numbers turn the hardware's rates into achieved ones (``RATES``, fitted on Narayanan et al.'s Table 1), and a fifth
says how long the host takes to launch a block's kernels (``HOST``, fitted on the Ultra-Scale sweep's one-node rows
without a pipeline, ``runs.ultrascale``); everything else in the model is a formula or a sourced figure. The matrix rate
starts from what a large matmul is measured to reach on each GPU generation (``hardware.MAMF_TFLOPS``: 86.9 % of an
A100's 16-bit peak, 80.3 % of an H100's), so ``gemm`` is the share of that the transformer's products reach, the same on
every GPU, not one GPU's fraction of its peak. ``FITTED`` holds the values that ``calibration.fit()`` derives from Table
1 of Narayanan et al. (2021) and ``calibration.fit_host()`` from the one-node rows (a test re-derives them, so the
constants cannot drift from the fit); ``describe`` prints them with their meaning. Two further figures are assumptions,
stated and not fitted: the latency of one message (a field of every GPU preset, ``hardware.GPUPreset.latency_s``, named
``LATENCY_S`` here too) and the bytes Adam moves per parameter in its update (``OPTIMIZER_BYTES_PER_PARAM``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from d2lmp.model.cluster.hardware import GPUPreset

__all__ = ["Efficiency", "RATES", "HOST", "FITTED", "MEANINGS", "BOUNDS", "LATENCY_S", "OPTIMIZER_BYTES_PER_PARAM",
           "describe"]

LATENCY_S = GPUPreset.latency_s  # α the fit assumes: the GPU presets' field, defined and explained there
# Mixed-precision Adam reads a 16-bit gradient, reads and writes the 32-bit master weight and both moments, and
# writes the 16-bit weight: 2 + 3 × (4 + 4) + 2 bytes per parameter through HBM (an assumption, not fitted).
OPTIMIZER_BYTES_PER_PARAM = 28


@dataclass(frozen=True)
class Efficiency:
    """Achieved fractions of the hardware's peaks (see ``MEANINGS``)."""

    gemm: float
    memory_passes: float
    nvlink: float
    network: float
    host_ms: float = 0.0  # 0: the host is never the bottleneck (a measured CPU, or a roofline's ideal)


RATES = ("gemm", "memory_passes", "nvlink", "network")  # fitted on Narayanan et al. 2021, Table 1
HOST = "host_ms"  # fitted on the Ultra-Scale sweep's one-node rows without a pipeline


MEANINGS: dict[str, str] = {
    "gemm": "fraction of the largest matmul's measured rate on that GPU (GPUPreset.matmul_flops: a share of the "
            "peak per GPU generation, measured, not fitted) that the transformer's matrix products reach",
    "memory_passes": "HBM traffic of the other operations (LayerNorm, GeLU, softmax, dropout, residual adds) "
                     "per byte of the activations Korthikanti et al. count, per forward pass",
    "nvlink": "bus bandwidth NCCL reaches within a node, as a fraction of NVLink's per-direction bandwidth",
    "network": "bus bandwidth NCCL reaches across nodes, as a fraction of the network's bandwidth per GPU",
    "host_ms": "milliseconds the host takes to launch one transformer block's kernels, forward and backward, for one "
               "micro-batch, one kernel at a time (eager PyTorch): a GPU done sooner waits; read as the host's "
               "launches, fitted, not measured",
}
# The range the fit searches for each parameter: physically possible values only.
BOUNDS: dict[str, tuple[float, float]] = {
    "gemm": (0.3, 1.0), "memory_passes": (0.0, 8.0), "nvlink": (0.3, 1.0), "network": (0.3, 1.0),
    "host_ms": (0.0, 20.0),
}

# RATES fitted by d2lmp.model.cluster.calibration.fit() on Table 1 of Narayanan et al. (2021), HOST by fit_host() on
# the Ultra-Scale sweep's one-node rows; both re-derived by tests/test_scale_calibration.py.
FITTED = Efficiency(gemm=0.824, memory_passes=2.653, nvlink=0.737, network=0.782, host_ms=4.47)


def describe(efficiency: Efficiency = FITTED) -> str:
    """One line per parameter: its name, value and what it stands for."""
    return "\n".join(f"{f.name:<14}{getattr(efficiency, f.name):>8.3f}  {MEANINGS[f.name]}"
                     for f in fields(efficiency))
