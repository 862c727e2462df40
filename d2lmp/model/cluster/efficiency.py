"""The cost model's free parameters: what each stands for, and the values fitted on their calibration tables.

Four numbers turn the hardware's rates into achieved ones (``RATES``, fitted on Narayanan et al.'s Table 1), and two
are fixed times (``FIXED_COSTS``): how long the host takes to launch a block's kernels, and the α of a message across
nodes, both fitted on the Ultra-Scale sweep's rows declared for calibration (``FIXED_COST_TABLE``, ``runs.ultrascale``),
where small micro-batches and tensor-parallel groups spanning nodes make them show; everything else in the model is a
formula or a sourced figure. The matrix rate starts from what a large matmul is measured to reach on each GPU
generation (``hardware.MAMF_TFLOPS``: 86.9 % of an A100's 16-bit peak, 80.3 % of an H100's), so ``gemm`` is the share
of that the transformer's products reach, the same on every GPU, not one GPU's fraction of its peak. ``FITTED`` holds
the values ``calibration.fit_all()`` derives (the rates on Table 1, the fixed times on their table, alternated until
the rates stop moving; a test re-derives them, so the constants cannot drift from the fit); ``describe`` prints them
with their meaning. Two further figures are assumptions, stated and not fitted: the latency of one message within a
node (a field of every GPU preset, ``hardware.GPUPreset.latency_s``, named ``LATENCY_S`` here too; across nodes too
where ``network_us`` is None) and the bytes Adam moves per parameter in its update (``OPTIMIZER_BYTES_PER_PARAM``).
The α across nodes is pinned by one cluster only (the Playbook's) and applied to every network: of the other
transcribed runs it moves those with the most ring steps across nodes (Narayanan et al.'s ZeRO-3 rows).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from d2lmp.model.cluster.hardware import GPUPreset

__all__ = ["Efficiency", "RATES", "FIXED_COSTS", "FIXED_COST_TABLE", "FITTED", "MEANINGS", "BOUNDS", "LATENCY_S",
           "OPTIMIZER_BYTES_PER_PARAM", "describe"]

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
    network_us: float | None = None  # None: the preset's α (GPUPreset.latency_s) across nodes too


RATES = ("gemm", "memory_passes", "nvlink", "network")  # fitted on Narayanan et al. 2021, Table 1
FIXED_COSTS = ("host_ms", "network_us")  # fitted on FIXED_COST_TABLE
FIXED_COST_TABLE = ("the Ultra-Scale sweep's rows without a pipeline on one node, and those whose one tensor-parallel "
                 "group is the whole cluster of two or four nodes (the records marked calibration)")


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
    "network_us": "microseconds a ring step or a send across nodes takes besides its bytes: an effective fixed "
                  "cost, not a measured latency; fitted on the one cluster whose rows pin it (the Ultra-Scale "
                  "Playbook's), applied to every network",
}
# The range the fit searches for each parameter: physically possible values only.
BOUNDS: dict[str, tuple[float, float]] = {
    "gemm": (0.3, 1.0), "memory_passes": (0.0, 8.0), "nvlink": (0.3, 1.0), "network": (0.3, 1.0),
    "host_ms": (0.0, 20.0), "network_us": (1.0, 200.0),
}

# Fitted by d2lmp.model.cluster.calibration.fit_all(): RATES on Table 1 of Narayanan et al. (2021), FIXED_COSTS on
# FIXED_COST_TABLE; re-derived by tests/test_scale_calibration.py.
FITTED = Efficiency(gemm=0.824, memory_passes=2.655, nvlink=0.735, network=0.785, host_ms=4.46, network_us=36.5)


def describe(efficiency: Efficiency = FITTED) -> str:
    """One line per parameter: its name, value and what it stands for."""
    def value(name: str) -> str:
        v = getattr(efficiency, name)
        return f"{'preset':>8}" if v is None else f"{v:>8.3f}"

    return "\n".join(f"{f.name:<14}{value(f.name)}  {MEANINGS[f.name]}" for f in fields(efficiency))
