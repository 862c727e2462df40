"""An analytic model of one training step under each way of splitting the work.

The model is described by ``models.layer_table`` rows (read through ``layer_rows.LayerRowLike``: FLOPs,
parameters, activation bytes per layer). The hardware by a ``Hardware`` preset: per-device FLOP/s, per-device
link bandwidth per direction, a per-message latency α, and memory per device. ``PRESETS``
derive these from the sourced tables (the notable-GPU table for FLOP/s and memory,
``topology`` for PCIe and NVLink, ``alpha_beta.GPU_ALPHA_S`` for α, NCCL's per-step latency over
NVLink, on every preset) and carry those rows' bibliography keys as their ``source``.

The strategies (``STRATEGIES``, the layer table's view of ``vocabulary.Axis``) are data parallelism, the
pipeline, tensor parallelism (every layer split by its outputs, each output gathered) and Krizhevsky's "one
weird trick" (``WEIRD_TRICK``: convolutions data parallel, fully connected layers split); ``GRID`` is a
data × tensor grid of process groups, predicted with ``grid=``.
Time per step = compute + exposed communication + bubble:
* compute: 3 × the forward FLOPs (forward once, backward twice) divided over the devices
  that share the work, at the device's FLOP/s;
* communication: ring collectives over the preset's ``terms.Link``, 2(n-1)(α + S/n·β) for an all-reduce of S
  bytes, (n-1)(α + S/n·β) for an all-gather or reduce-scatter; point-to-point α + S·β;
* data parallelism overlaps its gradient all-reduce with backward (``dp_model``) where the
  hardware can (GPUs: yes; CPU ranks, whose cores also move the bytes: no); the others
  are charged in full;
* pipeline: the bubble adds (p-1)/m of a stage's compute per micro-batch sweep.
Memory per device = parameters + gradients + optimizer state (bytes per parameter from
``training_state.OPTIMIZERS``; the default, SGD with momentum, keeps one more copy) + saved
activations (every layer's output for the examples it holds). How much of the training state a
strategy keeps is a ZeRO stage (``STRATEGY_STAGE``): data parallelism keeps it whole, the
partitionings divide it, and ``terms.ZERO_SHARDED`` says what each stage divides (``terms.state_per_device``,
the memory term the cluster model shares). ``predict`` returns a ``StrategyStep``.
These are teaching approximations: they ignore kernel efficiency, overlap inside layers
and memory fragmentation, and say so.

``Hardware`` and the cluster model's ``cluster.hardware.GPUPreset`` are two preset types on purpose, both read
from the notable-GPU table: a ``Hardware`` is one whole machine (its device count, one link between the devices,
the FP32 peak, NCCL's α ``alpha_beta.GPU_ALPHA_S``, whether communication overlaps compute) and may be measured
here (``this_machine``); a ``GPUPreset`` is one GPU kind in its usual node (16-bit tensor peak, HBM bandwidth,
NVLink and the network per GPU, GPUs per node, the α its efficiencies were fitted with) that a ``Cluster`` scales
to any GPU count. Both price a message with the same ``terms.Link``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from d2lmp.gpu_specs import gpu_spec
from d2lmp.model.alpha_beta import BUS_FACTORS, GPU_ALPHA_S, GPU_ALPHA_SOURCE
from d2lmp.model.dp_model import predict_step
from d2lmp.model.layer_rows import LayerRowLike as LayerRow
from d2lmp.model.terms import ZERO_SHARDED, ZERO_STAGES, Link, compute_seconds, state_per_device
from d2lmp.model.training_state import STATE_PARTS, OptimizerBytes, optimizer_bytes
from d2lmp.model.vocabulary import GRID, WEIRD_TRICK, Collective, TableStrategy, ZeroStage
from d2lmp.model.vocabulary import TABLE_STRATEGIES as STRATEGIES
from d2lmp.topology import NVLINK, NVLINK_SOURCES, PCIE_SOURCES, pcie_bandwidth_gbs

__all__ = ["STRATEGIES", "WEIRD_TRICK", "GRID", "STRATEGY_STAGE", "Hardware", "PRESETS", "this_machine",
           "StrategyStep", "predict", "Messages", "message_sizes", "comm_bytes", "ZERO_STAGES", "ZERO_SHARDED",
           "state_per_device", "zero_memory", "zero_memory_by_stage", "zero_traffic"]

# A data × tensor grid of process groups (``vocabulary.GRID``): ``predict(rows, GRID, hw, batch, grid=(d, t))``.
_TABLE_ACTIVATION_BYTES = 4  # the layer table's activations are float32 (``models.layer_table``'s default)


@dataclass(frozen=True)
class Hardware:
    """Devices of one kind joined by one link (``link``), as the layer-table model sees them."""

    name: str
    devices: int
    flops: float  # FLOP/s per device
    link_bytes_per_s: float  # per device, per direction
    alpha: float  # seconds per message
    memory_bytes: float  # per device
    source: tuple[str, ...]  # keys in d2lmp.bibliography.SOURCES; empty for a measured machine
    note: str = ""  # how the figures were taken from the sources, or measured
    overlap: bool = True  # can communication run while the device computes? (not when CPU cores do both)

    def with_devices(self, n: int) -> Hardware:
        """The same hardware with ``n`` devices."""
        return replace(self, devices=n)

    @property
    def link(self) -> Link:
        """The link between the devices: its bandwidth per direction and α, the ``terms.Link`` both models use."""
        return Link(self.link_bytes_per_s, self.alpha)


def _pcie(generation: int, lanes: int = 16) -> tuple[float, str, tuple[str, ...]]:
    """(bytes/s per direction, how, source keys) of a PCIe link, from ``topology.PCIE``."""
    gbs = pcie_bandwidth_gbs(generation, lanes)
    return gbs * 1e9, f"PCIe gen {generation} x{lanes}: {gbs:g} GB/s per direction", PCIE_SOURCES[generation]


def _nvlink(generation: int) -> tuple[float, str, tuple[str, ...]]:
    """(bytes/s per GPU per direction, how, source keys) over all NVLink links of a generation, from
    ``topology.NVLINK``."""
    _, _, per_link, links = NVLINK[generation]
    how = f"NVLink {generation}: {links} links x {per_link} GB/s per direction"
    return links * per_link * 1e9, how, NVLINK_SOURCES[generation]


def _preset(name: str, devices: int, gpu: str, link: tuple[float, str, tuple[str, ...]],
            memory_gb: float | None = None, note: str = "") -> Hardware:
    """A preset whose FLOP/s and memory come from a GPU table row, and whose link from the topology tables."""
    spec = gpu_spec(gpu)
    link_bytes, link_how, link_source = link
    memory_gb = spec.memory_gb if memory_gb is None else memory_gb
    source = tuple(dict.fromkeys(spec.source + link_source + GPU_ALPHA_SOURCE))
    how = (f"{spec.name} (notable-GPU table): FP32 {spec.fp32_tflops:g} TFLOPS, {memory_gb:g} GB; "
           f"{link_how} (topology tables){note}; α {GPU_ALPHA_S * 1e6:g} µs per message (NCCL's ring step)")
    return Hardware(name, devices, spec.fp32_tflops * 1e12, link_bytes, GPU_ALPHA_S, memory_gb * 1e9,
                    source, how)


PRESETS = {hw.name: hw for hw in (
    _preset("2x GTX 580 (PCIe 2.0)", 2, "GTX 580", _pcie(2), memory_gb=3,
            note="; 3 GB as on AlexNet's partner boards, not the reference board's 1.5 GB"),
    _preset("8x V100 (NVLink 2, hybrid cube-mesh)", 8, "V100 SXM2", _nvlink(2),
            note=", an upper bound for a ring on the cube-mesh"),
    _preset("8x A100 (NVSwitch)", 8, "A100 SXM4 40GB", _nvlink(3)),
    _preset("8x H100 (NVSwitch)", 8, "H100 SXM5", _nvlink(4)),
)}


def this_machine(flops: float, alpha: float, beta: float, devices: int = 2,
                 memory_bytes: float = 24 * 2**30) -> Hardware:
    """A preset calibrated from measurements here: FLOP/s of one rank, and the fitted α and β."""
    if flops <= 0 or alpha < 0 or beta <= 0:
        raise ValueError("flops and beta must be positive, alpha non-negative")
    return Hardware("this machine (measured)", devices, flops, 1 / beta, alpha, memory_bytes,
                    (), "FLOP/s and α, β measured in this run", overlap=False)


@dataclass(frozen=True)
class StrategyStep:
    """One strategy's predicted step on a layer table: seconds by term, and bytes per device by memory part."""

    strategy: str
    devices: int
    compute_s: float
    comm_s: float
    bubble_s: float
    memory: dict[str, float]
    parts: dict[str, float] = field(default_factory=dict)  # compute and each communication term, where named

    @property
    def step_s(self) -> float:
        return self.compute_s + self.comm_s + self.bubble_s

    @property
    def memory_bytes(self) -> float:
        return sum(self.memory.values())


def _ring(kind: Collective, n: int, nbytes: float, hw: Hardware) -> float:
    return hw.link.collective_seconds(kind, nbytes, n)


def _totals(rows: Sequence[LayerRow], batch_of_table: int) -> tuple[float, float, float]:
    """(forward FLOPs per example, parameter count, activation bytes per example)."""
    flops = sum(r.flops for r in rows) / batch_of_table
    params = sum(r.params for r in rows)
    acts = sum(r.activation_bytes for r in rows) / batch_of_table
    return flops, params, acts


# How much of the training state each strategy keeps per device, as the ZeRO stage that keeps as much: data
# parallelism keeps it whole (stage 0); the partitionings divide every part over the devices (stage 3's
# figures). The one weird trick keeps its convolutions' state as data parallelism and its fully connected
# layers' as the partitionings.
STRATEGY_STAGE: dict[TableStrategy, ZeroStage] = {"data": 0, "pipeline": 3, "tensor": 3}


def _at_width(rows: Sequence[LayerRow], opt: OptimizerBytes) -> Sequence[LayerRow]:
    """The layer table with activations stored at the optimizer's activation width."""
    scale = opt.activation_bytes / _TABLE_ACTIVATION_BYTES
    return rows if scale == 1 else [replace(r, activation_bytes=r.activation_bytes * scale) for r in rows]


def predict(rows: Sequence[LayerRow], strategy: TableStrategy | Literal["hybrid"], hw: Hardware, batch: int,
            micro_batches: int = 4, batch_of_table: int = 1, optimizer: str | OptimizerBytes = "momentum",
            stage_sizes: list[int] | None = None, grid: tuple[int, int] | None = None,
            gradient_tensors: int = 1) -> StrategyStep:
    """Predicted step time and memory per device for ``strategy`` on ``hw.devices`` devices.

    ``rows`` are the ``models.LayerRow`` records (``layer_rows.LayerRowLike``) of ``layer_table`` for an input of
    ``batch_of_table`` examples. ``optimizer`` (a key of ``training_state.OPTIMIZERS``, or a row) sets the bytes
    per parameter of the training state; activations (FP32 in the layer table) are stored and sent at its activation
    width, gradients at its gradient width; compute stays at the device's FP32 rate. For the pipeline,
    ``stage_sizes`` (rows per stage) makes the slowest stage set the pace; by default stages are assumed
    perfectly balanced. ``GRID`` ("hybrid") with ``grid`` = (data, tensor) predicts a data × tensor grid of
    process groups (``parallel.hybrid``), its gradients summed in ``gradient_tensors`` all-reduces (one per
    parameter tensor, or 1 for one flat buffer).
    """
    if strategy == GRID:
        if grid is None:
            raise ValueError(f"{GRID!r} is a data × tensor grid: pass grid=(data, tensor); Krizhevsky's split of "
                             f"convolutions and fully connected layers is {WEIRD_TRICK!r}")
        return _grid_hybrid(rows, hw, batch, grid, batch_of_table, optimizer_bytes(optimizer), gradient_tensors)
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; available: {', '.join(STRATEGIES)}, or {GRID!r} with grid=")
    if grid is not None:
        raise ValueError(f"grid= belongs to the data × tensor grid, strategy {GRID!r}, not to {strategy!r}")
    n = hw.devices
    if n < 1 or batch < 1:
        raise ValueError("devices and batch must be >= 1")
    opt = optimizer_bytes(optimizer)
    sizes = message_sizes(rows, batch, batch_of_table, opt)
    rows = _at_width(rows, opt)
    fwd, params, acts = _totals(rows, batch_of_table)
    single = compute_seconds(3 * fwd * batch, hw.flops)
    fc = [r for r in rows if r.kind == "Linear"]
    if strategy in STRATEGY_STAGE:
        state = state_per_device(params, n, STRATEGY_STAGE[strategy], opt)
    if strategy == "data":
        p = predict_step(single, sizes.gradients, n, hw.alpha, 1 / hw.link_bytes_per_s, overlap=hw.overlap)
        memory = {**state, "saved_activations": acts * batch / n}
        return StrategyStep("data", n, p.compute_s, p.exposed_comm_s, 0.0, memory)
    if strategy == "pipeline":
        m = micro_batches
        stage = single / n
        if stage_sizes is not None:
            if len(stage_sizes) != n or sum(stage_sizes) != len(rows):
                raise ValueError(f"stage_sizes {stage_sizes} must cover the {len(rows)} rows in {n} stages")
            bounds = [sum(stage_sizes[:i]) for i in range(n + 1)]
            slowest = max(sum(r.flops for r in rows[a:b]) for a, b in zip(bounds, bounds[1:]))
            stage = single * slowest / sum(r.flops for r in rows)
        # a typical layer output per step crosses each boundary, in m micro-batches, forward and back
        comm = 2 * (m + n - 1) * hw.link.p2p_seconds(sizes.boundary / m) if n > 1 else 0.0
        memory = {**state, "saved_activations": acts * batch / n}
        return StrategyStep("pipeline", n, stage, comm, stage * (n - 1) / m, memory)
    if strategy == "tensor":
        # Every conv/linear layer split by outputs: all-gather its output forward,
        # all-reduce its input's gradient backward (none for the first layer: its input is the data).
        comm = sum(_ring("all_gather", n, out_bytes, hw) + (_ring("all_reduce", n, in_bytes, hw) if in_bytes else 0.0)
                   for out_bytes, in_bytes in sizes.split_layers)
        memory = {**state, "saved_activations": acts * batch}
        return StrategyStep("tensor", n, single / n, comm, 0.0, memory)
    # the one weird trick: convolutions data parallel, fully connected layers model parallel
    comm = _ring("all_reduce", n, sizes.conv_gradients, hw)
    for in_bytes in sizes.fc_inputs:
        comm += _ring("all_gather", n, in_bytes, hw) + _ring("reduce_scatter", n, in_bytes, hw)
    conv_params = sum(r.params for r in rows if r.kind != "Linear")
    conv_state = state_per_device(conv_params, n, STRATEGY_STAGE["data"], opt)
    fc_state = state_per_device(sum(r.params for r in fc), n, STRATEGY_STAGE["tensor"], opt)
    memory = {part: conv_state[part] + fc_state[part] for part in STATE_PARTS} | {"saved_activations": acts * batch / n}
    return StrategyStep(WEIRD_TRICK, n, single / n, comm, 0.0, memory)


def _split_layer_bytes(rows: Sequence[LayerRow], batch_of_table: int, batch: int) -> list[tuple[float, float]]:
    """(output bytes, input bytes) of each conv/linear layer for ``batch`` examples; a layer's input is what the
    row before it produced, and the first row's input (the data) counts 0 bytes: no gradient is sent for it."""
    scale = batch / batch_of_table
    return [(r.activation_bytes * scale, rows[i - 1].activation_bytes * scale if i > 0 else 0.0)
            for i, r in enumerate(rows) if r.flops > 0]


@dataclass(frozen=True)
class Messages:
    """The buffers the strategies send in one step of ``batch`` examples, in bytes, before a ring's factors.

    ``gradients``: every parameter's gradient; ``conv_gradients``: those of the layers that are not ``Linear``;
    ``boundary``: a typical layer output (a pipeline stage's boundary); ``split_layers``: (output, input) of
    each layer with FLOPs, its input 0 for the first (the data, whose gradient is never sent); ``fc_inputs``:
    each ``Linear`` layer's input. Gradients at the optimizer's gradient width, activations at its activation width.
    """

    gradients: float
    conv_gradients: float
    boundary: float
    split_layers: tuple[tuple[float, float], ...]
    fc_inputs: tuple[float, ...]


def message_sizes(rows: Sequence[LayerRow], batch: int, batch_of_table: int = 1,
                  optimizer: str | OptimizerBytes = "momentum") -> Messages:
    """The bookkeeping behind ``comm_bytes`` and ``predict``: what each message holds, read off the layer table."""
    opt = optimizer_bytes(optimizer)
    rows = _at_width(list(rows), opt)
    _, params, acts = _totals(rows, batch_of_table)
    conv = sum(r.params for r in rows if r.kind != "Linear")
    fc_inputs = tuple(r.macs / max(r.output_shape[-1], 1) / batch_of_table * batch * opt.activation_bytes
                      for r in rows if r.kind == "Linear")  # in_features × examples of each Linear layer
    split = tuple(_split_layer_bytes(rows, batch_of_table, batch))
    return Messages(gradients=params * opt.grad_bytes, conv_gradients=conv * opt.grad_bytes,
                    boundary=acts / len(rows) * batch, split_layers=split, fc_inputs=fc_inputs)


def comm_bytes(rows: Sequence[LayerRow], strategy: TableStrategy, devices: int, batch: int, batch_of_table: int = 1,
               optimizer: str | OptimizerBytes = "momentum") -> float:
    """Bytes one device sends per training step under ``strategy``: the messages ``predict`` charges.

    A ring all-reduce of S bytes sends 2(n-1)/n·S per device, an all-gather or reduce-scatter (n-1)/n·S
    (``BUS_FACTORS``); ``message_sizes`` reads the S of each message off the layer table. No latency, no
    overlap: what travels, not how long it waits.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; available: {', '.join(STRATEGIES)}")
    if devices < 1 or batch < 1:
        raise ValueError("devices and batch must be >= 1")
    if devices == 1:
        return 0.0
    ring = {kind: factor(devices) for kind, factor in BUS_FACTORS.items()}
    m = message_sizes(rows, batch, batch_of_table, optimizer)
    if strategy == "data":  # all-reduce every gradient
        return ring["all_reduce"] * m.gradients
    if strategy == "pipeline":  # a middle stage: activations on, their gradients back (an end stage: one of them)
        return m.boundary * (1 if devices == 2 else 2)
    if strategy == "tensor":  # every split layer: all-gather its output, all-reduce its input's gradient
        return sum(ring["all_gather"] * out + ring["all_reduce"] * inp for out, inp in m.split_layers)
    # the one weird trick: all-reduce the convolutions' gradients; gather each FC layer's input, scatter its gradient
    return ring["all_reduce"] * m.conv_gradients + sum((ring["all_gather"] + ring["reduce_scatter"]) * x
                                                       for x in m.fc_inputs)


def _grid_hybrid(rows: Sequence[LayerRow], hw: Hardware, batch: int, grid: tuple[int, int], batch_of_table: int,
                 opt: OptimizerBytes,
                 gradient_tensors: int) -> StrategyStep:
    """Data × tensor as ``parallel.hybrid`` runs it: ``data`` replicas, each with every ``Linear`` split by
    output features over ``tensor`` devices, each working on batch / data examples.

    Inside a replica (the tensor group), each split layer all-gathers its output forward and all-reduces
    its input's gradient backward; the first layer's input is the data, which needs no gradient. Then each
    gradient shard (1/tensor of the weights) is all-reduced over the ``data`` devices that hold the same
    shard, one all-reduce per parameter tensor: ``gradient_tensors`` messages carrying the shard's bytes.
    """
    data, tensor = grid
    if data < 1 or tensor < 1 or data * tensor != hw.devices:
        raise ValueError(f"grid {grid} must multiply to the {hw.devices} devices")
    if not isinstance(gradient_tensors, int) or isinstance(gradient_tensors, bool) or gradient_tensors < 1:
        raise ValueError(f"gradient_tensors must be an integer >= 1, got {gradient_tensors!r}")
    split = predict(rows, "tensor", hw.with_devices(tensor), -(-batch // data), batch_of_table=batch_of_table,
                    optimizer=opt)
    tensor_comm = split.comm_s  # a replica's messages are tensor parallelism's over its ``tensor`` devices
    shard_bytes = sum(r.params for r in rows) * opt.grad_bytes / tensor
    data_comm = _ring("all_reduce", data, shard_bytes, hw)
    if data > 1:
        data_comm += (gradient_tensors - 1) * 2 * (data - 1) * hw.alpha  # a ring all-reduce's 2(n-1) α per message
    parts = {"compute": split.compute_s, "tensor-group collectives": tensor_comm, "data-group all-reduce": data_comm}
    return StrategyStep("hybrid", hw.devices, split.compute_s, tensor_comm + data_comm, 0.0, split.memory, parts)


# ---------------------------------------------------------------------------------------
# ZeRO: the training state per rank when data parallelism shards it (see parallel/zero.py)

# ``terms.ZERO_STAGES``, ``terms.ZERO_SHARDED`` and ``terms.state_per_device`` (re-exported here) hold the rule.


def _check_zero(num_params: object, world: object, stage: object) -> None:
    for name, value in (("num_params", num_params), ("world", world)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if stage not in ZERO_STAGES or isinstance(stage, bool):
        raise ValueError(f"stage must be one of {ZERO_STAGES} (0 = plain data parallelism), got {stage!r}")


def zero_memory(num_params: int, world: int, stage: int,
                optimizer: str | OptimizerBytes = "adam_mixed") -> dict[str, float]:
    """Bytes per rank of parameters, gradients and optimizer state under ZeRO ``stage`` on ``world`` ranks.

    With Ψ = ``num_params``, n = ``world`` and p, g, K the bytes per parameter of each (the ``optimizer``'s
    row of ``training_state.OPTIMIZERS``), and ``ZERO_SHARDED[stage]`` the parts divided by n:
        stage 0 (plain data parallelism):  p·Ψ   + g·Ψ   + K·Ψ
        stage 1 (optimizer state sharded): p·Ψ   + g·Ψ   + K·Ψ/n
        stage 2 (and the gradients):       p·Ψ   + g·Ψ/n + K·Ψ/n
        stage 3 (and the parameters):      p·Ψ/n + g·Ψ/n + K·Ψ/n
    The default is mixed-precision Adam as the ZeRO paper counts it: 2 + 2 + 12 bytes. Returns
    {"parameters", "gradients", "optimizer_state"}; the total is the sum of the values. Activations and
    temporary buffers (a gathered layer in stage 3) are not included.
    """
    _check_zero(num_params, world, stage)
    return state_per_device(num_params, world, stage, optimizer)


def zero_memory_by_stage(num_params: int, world: int,
                         optimizer: str | OptimizerBytes = "adam_mixed") -> dict[int, dict[str, float]]:
    """``zero_memory`` of every stage in ``ZERO_STAGES``: {stage: {part: bytes per rank}}."""
    return {stage: zero_memory(num_params, world, stage, optimizer) for stage in ZERO_STAGES}


def zero_traffic(num_params: int, world: int, stage: int, optimizer: str | OptimizerBytes = "adam_mixed") -> float:
    """Bytes each rank sends per step under ZeRO ``stage`` with ring collectives.

    S = ``num_params`` × the optimizer's gradient bytes (parameters travel at the gradients' width). A ring
    reduce-scatter or all-gather sends (n-1)/n·S per rank, an all-reduce twice that, so
        stages 0-2: 2(n-1)/n·S   (an all-reduce; stages 1-2: reduce-scatter gradients, all-gather parameters)
        stage 3:    3(n-1)/n·S   (all-gather before forward and before backward, reduce-scatter: 1.5x stage 0)
    """
    _check_zero(num_params, world, stage)
    halves = 3 if stage == 3 else 2  # reduce-scatters and all-gathers of S (an all-reduce is one of each)
    return halves * BUS_FACTORS["all_gather"](world) * num_params * optimizer_bytes(optimizer).grad_bytes
