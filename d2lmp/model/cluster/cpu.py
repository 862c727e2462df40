"""This machine's CPU as a preset of the cluster model, so that the same ``predict`` predicts steps of CPU ranks.

``CPUCalibration`` holds what a calibration measured on ``ranks`` gloo ranks busy at once (``bench.scale_bridge``
measures it; nothing here is typed in). Each term of the GPU model maps onto one measured number:

- matrix products: the preset's "peak" is the measured FLOP rate of the GPT's matrix products on one rank's
  thread, and ``gemm`` is 1 (the rate is already the achieved one);
- HBM: the rank's memory. Its rate is the one at which the model's ``OPTIMIZER_BYTES_PER_PARAM`` bytes per
  parameter of an Adam step pass on this rank (timed on torch's AdamW in float32, which moves more bytes than a
  fused mixed-precision Adam: the rate absorbs that); ``memory_passes`` is measured too, as the seconds a
  one-rank forward and backward spends outside its matrix products, in passes over the activation bytes the
  model counts, at that rate (``memory_passes_from`` inverts the model's own term);
- NVLink: gloo over loopback between the ranks of this machine, one "node" of as many ranks as the plan has, so
  no group crosses the network; the bus bandwidth is 1/β of the fitted ring step and α its latency (instead of
  ``LATENCY_S``); a pipeline's send runs at the measured send rate;
- 16-bit values: the model counts every message in 2-byte values, the CPU ranks send 4-byte float32 ones, so a
  measured rate in bytes/s enters the preset × ``MODEL_VALUE_BYTES / CPU_VALUE_BYTES``;
- overlap: none (``Plan.dp_overlap=False``): a rank's one thread computes, then communicates.

``predict_cpu`` is ``predict`` on a ``Cluster`` of that preset; ``phases`` adds the model's parts up into the
phases a CPU step is timed in (forward and backward, the gradient all-reduce, the optimizer).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from d2lmp.model.cluster.efficiency import OPTIMIZER_BYTES_PER_PARAM, Efficiency
from d2lmp.model.cluster.hardware import Cluster, GPUPreset
from d2lmp.model.cluster.layout import Plan
from d2lmp.model.cluster.predict import Prediction, predict
from d2lmp.model.transformer_accounting import Transformer

__all__ = ["MODEL_VALUE_BYTES", "CPU_VALUE_BYTES", "CPUCalibration", "MEANINGS", "MAPPING", "PHASES", "cpu_preset",
           "cpu_efficiency", "cpu_cluster", "predict_cpu", "phases", "memory_passes_from", "describe_calibration"]

MODEL_VALUE_BYTES = 2  # the model's messages and activations are 16-bit values
CPU_VALUE_BYTES = 4  # the CPU ranks compute and send float32

# The phases a CPU step is timed in, and the model's parts that add up to each (every part exactly once).
PHASES: dict[str, tuple[str, ...]] = {
    "forward+backward": ("compute", "memory_bound", "tp", "cp", "host", "pp_p2p", "bubble", "embedding_sync"),
    "gradient all-reduce": ("dp", "zero"),
    "optimizer": ("optimizer_step",),
}


@dataclass(frozen=True)
class CPUCalibration:
    """What a calibration measured here, with ``ranks`` ranks busy at once (see ``MEANINGS``)."""

    ranks: int
    matmul_flops: float
    memory_bytes_per_s: float
    alpha_s: float
    allreduce_bytes_per_s: float
    p2p_bytes_per_s: float
    memory_gb: float
    memory_passes: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.ranks, int) or self.ranks < 1:
            raise ValueError(f"ranks must be a positive integer, got {self.ranks!r}")
        for name in ("matmul_flops", "memory_bytes_per_s", "allreduce_bytes_per_s", "p2p_bytes_per_s", "memory_gb"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)!r}")
        for name in ("alpha_s", "memory_passes"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be non-negative, got {getattr(self, name)!r}")


MEANINGS: dict[str, str] = {
    "ranks": "ranks computing (or talking) at once while it was measured",
    "matmul_flops": "FLOP/s of the GPT's matrix products, forward and backward, on one rank's thread",
    "memory_bytes_per_s": f"the rank's memory rate: the model's {OPTIMIZER_BYTES_PER_PARAM} bytes per parameter of "
                          "an Adam step over the seconds torch's AdamW step takes",
    "alpha_s": "α, seconds per ring step, fitted to gloo all-reduces of several sizes",
    "allreduce_bytes_per_s": "1/β, float32 bytes per second of a ring step, from the same fit",
    "p2p_bytes_per_s": "float32 bytes per second of one send/recv between two ranks, fitted over sizes",
    "memory_gb": "the machine's memory over the ranks (only the planner's 'fits' reads it)",
    "memory_passes": "the seconds a one-rank forward and backward spends outside its matrix products, in passes "
                     "over the activation bytes the model counts, at the rank's memory rate",
}


# Each figure of the GPU model and what stands in for it on CPU ranks (the module docstring says why).
MAPPING: dict[str, str] = {
    "dense 16-bit peak × gemm": "matmul_flops, the GPT's products measured on one rank's thread (gemm = 1)",
    "HBM bandwidth": f"memory_bytes_per_s, the rate of an AdamW step's {OPTIMIZER_BYTES_PER_PARAM} bytes per parameter",
    "memory_passes": "measured: a one-rank forward and backward's time outside its products, in passes",
    "NVLink bus bandwidth × nvlink": f"1/β of gloo's ring step over loopback, × {MODEL_VALUE_BYTES}/{CPU_VALUE_BYTES} "
                                     "(16-bit values counted, float32 sent); nvlink = 1",
    "network": "not crossed: every rank is on this machine, one node",
    "α (LATENCY_S)": "alpha_s, the fitted ring step's latency",
    "a pipeline send": f"p2p_bytes_per_s, × {MODEL_VALUE_BYTES}/{CPU_VALUE_BYTES}",
    "overlap of the gradient all-reduce": "none (dp_overlap False): a rank's one thread computes, then talks",
}


def cpu_preset(cal: CPUCalibration) -> GPUPreset:
    """The measured figures as a preset: rates per rank, in the model's 16-bit bytes where they move values."""
    values = MODEL_VALUE_BYTES / CPU_VALUE_BYTES
    link = cal.allreduce_bytes_per_s * values / 1e9
    return GPUPreset(
        name=f"CPU rank, {cal.ranks} busy (measured)", spec="", peak_tflops=cal.matmul_flops / 1e12,
        memory_gb=cal.memory_gb, hbm_GBps=cal.memory_bytes_per_s / 1e9, nvlink_GBps=link, network_GBps_per_gpu=link,
        gpus_per_node=cal.ranks, node="this machine: gloo ranks over loopback", source=(),
        note=(f"measured here with {cal.ranks} ranks busy: matrix products {cal.matmul_flops / 1e9:.1f} GFLOP/s; "
              f"memory {cal.memory_bytes_per_s / 1e9:.2f} GB/s (Adam's {OPTIMIZER_BYTES_PER_PARAM} B/parameter); "
              f"ring step α {cal.alpha_s * 1e6:.0f} µs, 1/β {cal.allreduce_bytes_per_s / 1e9:.2f} GB/s; send "
              f"{cal.p2p_bytes_per_s / 1e9:.2f} GB/s; link rates × {MODEL_VALUE_BYTES}/{CPU_VALUE_BYTES} "
              "(the model counts 16-bit values, the ranks send float32)"),
        latency_s=cal.alpha_s, p2p_GBps=cal.p2p_bytes_per_s * values / 1e9, binary_gb=False)


def cpu_efficiency(cal: CPUCalibration) -> Efficiency:
    """The parameters for the CPU: the measured rates are achieved ones (fractions 1), passes measured, and no host
    wait (``host_ms`` 0: the CPU ranks compute what they launch themselves)."""
    return Efficiency(gemm=1.0, memory_passes=cal.memory_passes, nvlink=1.0, network=1.0)


def cpu_cluster(cal: CPUCalibration, ranks: int) -> Cluster:
    """``ranks`` ranks of the measured preset on this machine: one node, so every group talks over loopback."""
    preset = cpu_preset(cal)
    return Cluster(gpu=preset.name, gpus=ranks, gpus_per_node=ranks, custom=preset)


def predict_cpu(model: Transformer, cal: CPUCalibration, plan: Plan) -> Prediction:
    """``predict``, the cluster model's own, for ``plan`` on CPU ranks of the measured preset."""
    return predict(model, cpu_cluster(cal, plan.gpus), plan, cpu_efficiency(cal))


def phases(prediction: Prediction) -> dict[str, float]:
    """The predicted seconds of each phase of ``PHASES`` (they add up to the step)."""
    seconds = prediction.parts.seconds
    return {phase: sum(seconds[p] for p in parts) for phase, parts in PHASES.items()}


def memory_passes_from(model: Transformer, cal: CPUCalibration, plan: Plan, forward_backward_s: float) -> float:
    """The ``memory_passes`` that make the model's forward and backward of ``plan`` take ``forward_backward_s``
    seconds with ``cal``'s other figures: the model's own term inverted (it is linear in the passes). A measured
    time below the matrix products' alone gives 0, not a negative count."""
    base, one = (phases(predict_cpu(model, replace(cal, memory_passes=p), plan))["forward+backward"] for p in (0, 1))
    return max(0.0, (forward_backward_s - base) / (one - base))


def describe_calibration(cal: CPUCalibration) -> str:
    """One line per measured number: its name, value with its unit, and what it stands for."""
    shown = {"ranks": f"{cal.ranks}", "matmul_flops": f"{cal.matmul_flops / 1e9:.1f} GFLOP/s",
             "memory_bytes_per_s": f"{cal.memory_bytes_per_s / 1e9:.2f} GB/s", "alpha_s": f"{cal.alpha_s * 1e6:.0f} µs",
             "allreduce_bytes_per_s": f"{cal.allreduce_bytes_per_s / 1e9:.2f} GB/s",
             "p2p_bytes_per_s": f"{cal.p2p_bytes_per_s / 1e9:.2f} GB/s", "memory_gb": f"{cal.memory_gb:.1f} GB",
             "memory_passes": f"{cal.memory_passes:.2f}"}
    return "\n".join(f"{f.name:<22}{shown[f.name]:>14}  {MEANINGS[f.name]}" for f in fields(cal))
