"""An analytic model of one training step under each way of splitting the work.

The model is described by ``models.layer_table`` rows (FLOPs, parameters, activation
bytes per layer). The hardware by a ``Hardware`` preset: per-device FLOP/s, per-device
link bandwidth per direction, a per-message latency α, and memory per device.

Time per step = compute + exposed communication + bubble:
* compute: 3 × the forward FLOPs (forward once, backward twice) divided over the devices
  that share the work, at the device's FLOP/s;
* communication: ring collectives, 2(n-1)(α + S/n·β) for an all-reduce of S bytes,
  (n-1)(α + S/n·β) for an all-gather or reduce-scatter; point-to-point α + S·β;
* data parallelism overlaps its gradient all-reduce with backward (``dp_model``) where the
  hardware can (GPUs: yes; CPU ranks, whose cores also move the bytes: no); the others
  are charged in full;
* pipeline: the bubble adds (p-1)/m of a stage's compute per micro-batch sweep.
Memory per device = parameters + gradients + optimizer state (SGD with momentum: one
more copy) + saved activations (every layer's output for the examples it holds).
These are teaching approximations: they ignore kernel efficiency, overlap inside layers
and memory fragmentation, and say so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .collectives import predicted_all_reduce_time
from .dp_model import predict_step

STRATEGIES = ("data", "pipeline", "tensor", "hybrid")
ASSUMED_ALPHA = 10e-6  # seconds per message on GPU links: an assumption, not a measured or sourced figure


@dataclass(frozen=True)
class Hardware:
    name: str
    devices: int
    flops: float  # FLOP/s per device
    link_bytes_per_s: float  # per device, per direction
    alpha: float  # seconds per message
    memory_bytes: float  # per device
    source: str
    overlap: bool = True  # can communication run while the device computes? (not when CPU cores do both)

    def with_devices(self, n: int) -> Hardware:
        return replace(self, devices=n)


PRESETS = {
    "2x GTX 580 (PCIe 2.0)": Hardware(
        "2x GTX 580 (PCIe 2.0)", 2, 1.58e12, 8e9, ASSUMED_ALPHA, 3e9,
        "FP32 peak 512 x 2 x 1.544 GHz; PCIe 2.0 x16 8 GB/s per direction; 3 GB boards (facts.md §1, §4, §5.1)"),
    "8x V100 (NVLink 2, hybrid cube-mesh)": Hardware(
        "8x V100 (NVLink 2, hybrid cube-mesh)", 8, 15.7e12, 150e9, ASSUMED_ALPHA, 16e9,
        "FP32 15.7 TFLOPS; 6 NVLink 2 links x 25 GB/s per direction, an upper bound for a ring on the cube-mesh "
        "(facts.md §4, §5.2, §5.3)"),
    "8x A100 (NVSwitch)": Hardware(
        "8x A100 (NVSwitch)", 8, 19.5e12, 300e9, ASSUMED_ALPHA, 40e9,
        "FP32 19.5 TFLOPS; NVLink 3 600 GB/s total = 300 GB/s per direction; 40 GB (facts.md §4, §5.2)"),
    "8x H100 (NVSwitch)": Hardware(
        "8x H100 (NVSwitch)", 8, 67e12, 450e9, ASSUMED_ALPHA, 80e9,
        "FP32 67 TFLOPS; NVLink 4 900 GB/s total = 450 GB/s per direction; 80 GB (facts.md §4, §5.2)"),
}


def this_machine(flops: float, alpha: float, beta: float, devices: int = 2,
                 memory_bytes: float = 24 * 2**30) -> Hardware:
    """A preset calibrated from measurements here: FLOP/s of one rank, and the fitted α and β."""
    if flops <= 0 or alpha < 0 or beta <= 0:
        raise ValueError("flops and beta must be positive, alpha non-negative")
    return Hardware("this machine (measured)", devices, flops, 1 / beta, alpha, memory_bytes,
                    "FLOP/s and α, β measured in this run", overlap=False)


@dataclass
class Prediction:
    strategy: str
    devices: int
    compute_s: float
    comm_s: float
    bubble_s: float
    memory: dict[str, float]

    @property
    def step_s(self) -> float:
        return self.compute_s + self.comm_s + self.bubble_s

    @property
    def memory_bytes(self) -> float:
        return sum(self.memory.values())


def _ring(kind: str, n: int, nbytes: float, hw: Hardware) -> float:
    if n == 1:
        return 0.0
    if kind == "all_reduce":
        return predicted_all_reduce_time("ring", n, nbytes, hw.alpha, 1 / hw.link_bytes_per_s)
    return (n - 1) * (hw.alpha + nbytes / n / hw.link_bytes_per_s)  # all-gather or reduce-scatter


def _totals(rows: list[dict], batch_of_table: int) -> tuple[float, float, float]:
    """(forward FLOPs per example, parameter count, activation bytes per example)."""
    flops = sum(r["flops"] for r in rows) / batch_of_table
    params = sum(r["params"] for r in rows)
    acts = sum(r["activation_bytes"] for r in rows) / batch_of_table
    return flops, params, acts


def predict(rows: list[dict], strategy: str, hw: Hardware, batch: int, micro_batches: int = 4,
            batch_of_table: int = 1, param_bytes: int = 4, optimizer_copies: int = 1,
            stage_sizes: list[int] | None = None) -> Prediction:
    """Predicted step time and memory per device for ``strategy`` on ``hw.devices`` devices.

    ``rows`` come from ``layer_table`` for an input of ``batch_of_table`` examples. For the
    pipeline, ``stage_sizes`` (rows per stage) makes the slowest stage set the pace; by
    default stages are assumed perfectly balanced.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; available: {', '.join(STRATEGIES)}")
    n = hw.devices
    if n < 1 or batch < 1:
        raise ValueError("devices and batch must be >= 1")
    fwd, params, acts = _totals(rows, batch_of_table)
    single = 3 * fwd * batch / hw.flops
    weights = params * param_bytes
    state = dict(parameters=weights, gradients=weights, optimizer=weights * optimizer_copies)
    fc = [r for r in rows if r["kind"] == "Linear"]
    if strategy == "data":
        p = predict_step(single, weights, n, hw.alpha, 1 / hw.link_bytes_per_s, overlap=hw.overlap)
        memory = {**state, "activations": acts * batch / n}
        return Prediction("data", n, p.compute_s, p.exposed_comm_s, 0.0, memory)
    if strategy == "pipeline":
        m = micro_batches
        stage = single / n
        if stage_sizes is not None:
            if len(stage_sizes) != n or sum(stage_sizes) != len(rows):
                raise ValueError(f"stage_sizes {stage_sizes} must cover the {len(rows)} rows in {n} stages")
            bounds = [sum(stage_sizes[:i]) for i in range(n + 1)]
            slowest = max(sum(r["flops"] for r in rows[a:b]) for a, b in zip(bounds, bounds[1:]))
            stage = single * slowest / sum(r["flops"] for r in rows)
        boundary = acts / len(rows) * batch  # a typical layer output per step, crossing each boundary
        comm = 2 * (m + n - 1) * (hw.alpha + boundary / m / hw.link_bytes_per_s) if n > 1 else 0.0
        memory = {k: v / n for k, v in state.items()} | {"activations": acts * batch / n}
        return Prediction("pipeline", n, stage, comm, stage * (n - 1) / m, memory)
    if strategy == "tensor":
        # Every conv/linear layer split by outputs: all-gather its output forward,
        # all-reduce its input gradient backward.
        split = [r for r in rows if r["flops"] > 0]
        comm = 0.0
        for r in split:
            out_bytes = r["activation_bytes"] / batch_of_table * batch
            comm += _ring("all_gather", n, out_bytes, hw) + _ring("all_reduce", n, out_bytes, hw)
        memory = {k: v / n for k, v in state.items()} | {"activations": acts * batch}
        return Prediction("tensor", n, single / n, comm, 0.0, memory)
    # hybrid ("one weird trick"): convolutions data parallel, fully connected layers model parallel
    conv_params = sum(r["params"] for r in rows if r["kind"] != "Linear") * param_bytes
    comm = _ring("all_reduce", n, conv_params, hw)
    for r in fc:
        in_bytes = r["macs"] / max(r["output_shape"][-1], 1) / batch_of_table * batch * param_bytes
        comm += _ring("all_gather", n, in_bytes, hw) + _ring("reduce_scatter", n, in_bytes, hw)
    fc_weights = sum(r["params"] for r in fc) * param_bytes
    memory = dict(parameters=conv_params + fc_weights / n, gradients=conv_params + fc_weights / n,
                  optimizer=(conv_params + fc_weights / n) * optimizer_copies, activations=acts * batch / n)
    return Prediction("hybrid", n, single / n, comm, 0.0, memory)
