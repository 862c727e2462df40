"""Measurements recorded on other machines (see README.md in this folder), read through typed accessors.

Each accessor reads one check of a recorded ``d2lmp selfcheck`` report (by default the H200's) into
small frozen dataclasses or library types (``roofline.OpPoint``, ``hardware.GPUInfo``), so a field
renamed in the report fails ``tests/test_recorded.py`` with a ``RecordedFieldError`` that names it,
not a notebook.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from importlib import resources
from typing import TYPE_CHECKING, Any, TypeVar

from d2lmp.bandwidth import CopyRow
from d2lmp.hardware import GPUInfo
from d2lmp.roofline import OpPoint
from d2lmp.timing import MatmulRow

if TYPE_CHECKING:
    from torch import nn

__all__ = [
    "H200_LABEL", "H200_SELFCHECK", "ConvSpeedRow", "CopyBandwidth", "CopyRow", "GPUEnvironment",
    "RecordedInferenceRow", "Int8Inference", "MatmulRow", "MemoryPeakRow", "MixedPrecisionRuns", "PinnedCopies",
    "PrecisionRun",
    "RecordedFieldError", "conv_speed", "copy_bandwidth", "fp16_grad_scaler", "gpu_environment", "int8_inference",
    "load_json", "matmul_rows", "memory_cuda_models", "memory_cuda_rows", "pinned_copies", "roofline_points",
    "selfcheck_section",
]

H200_SELFCHECK = "selfcheck_h200_2026-11-30.json"
H200_LABEL = "recorded on 1× NVIDIA H200, 2026-11-30 (d2lmp selfcheck)"
T = TypeVar("T")


class RecordedFieldError(KeyError):
    """A check or field that an accessor needs is missing from a recorded report; the message names it."""

    def __str__(self) -> str:
        return str(self.args[0])


def load_json(name: str = H200_SELFCHECK) -> dict[str, Any]:
    """The parsed JSON file ``name`` from this folder (a JSON document: its keys and values are the file's)."""
    document: dict[str, Any] = json.loads(resources.files(__package__).joinpath(name).read_text())
    return document


def selfcheck_section(check: str, name: str = H200_SELFCHECK) -> dict[str, Any]:
    """One check's raw entry (e.g. "matmul_sweep") from a recorded selfcheck report; prefer the accessors."""
    entry: dict[str, Any]
    for entry in load_json(name)["checks"]:
        if entry["name"] == check:
            return entry
    raise RecordedFieldError(f"no check {check!r} in {name}")


def _field(record: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in record:
        raise RecordedFieldError(f"{where} has no field {key!r}")
    return record[key]


def _build(cls: type[T], record: Mapping[str, Any], where: str) -> T:
    """``cls`` from the keys of ``record`` named like its fields (each one required)."""
    return cls(**{f.name: _field(record, f.name, where) for f in fields(cls)})  # type: ignore[arg-type]


def _rows(cls: type[T], check: str, name: str) -> list[T]:
    """The "rows" of a recorded check, each as ``cls``."""
    where = f"{name}, check {check!r}"
    rows = _field(selfcheck_section(check, name), "rows", where)
    return [_build(cls, r, f"{where}, rows[{i}]") for i, r in enumerate(rows)]


def _with_rows(cls: type[T], row_cls: type[Any], check: str, name: str) -> T:
    """``cls`` built from a recorded check's entry, its "rows" each as ``row_cls``."""
    rows = tuple(_rows(row_cls, check, name))
    return _build(cls, dict(selfcheck_section(check, name), rows=rows), f"{name}, check {check!r}")


def _only(rows: list[T], attribute: str, value: object, check: str) -> list[T]:
    """The rows whose ``attribute`` equals ``value`` (all for None); none is an error naming what there is."""
    if value is None:
        return rows
    kept = [r for r in rows if getattr(r, attribute) == value]
    if not kept:
        have = sorted({getattr(r, attribute) for r in rows})
        raise ValueError(f"no {attribute} {value!r} in recorded check {check!r}; recorded: {have}")
    return kept


@dataclass(frozen=True)
class _Record:
    def as_dict(self) -> dict[str, Any]:
        """The fields as a dict, as the report stores them (to compare with the raw JSON)."""
        return asdict(self)


@dataclass(frozen=True)
class GPUEnvironment(_Record):
    """The machine the report was recorded on (check "environment")."""

    detail: str  # the accelerator sentence, e.g. "Using 1 CUDA GPU(s): NVIDIA H200."
    python: str
    torch: str
    cuda_runtime: str | None
    cpu: str
    cpu_peak_fp32_gflops: float | None
    cpu_peak_formula: str
    nvml: str
    gpus: tuple[GPUInfo, ...]


def gpu_environment(name: str = H200_SELFCHECK) -> GPUEnvironment:
    """Python, torch, CPU and NVML's GPUs of the recording machine."""
    where = f"{name}, check 'environment'"
    entry = selfcheck_section("environment", name)
    gpus = tuple(_build(GPUInfo, g, f"{where}, gpus[{i}]") for i, g in enumerate(_field(entry, "gpus", where)))
    return _build(GPUEnvironment, dict(entry, gpus=gpus), where)


def matmul_rows(dtype: str | None = None, name: str = H200_SELFCHECK) -> list[MatmulRow]:
    """The recorded matmul sweep, only ``dtype`` ("float32", "float16", "bfloat16") unless None."""
    return _only(_rows(MatmulRow, "matmul_sweep", name), "dtype", dtype, "matmul_sweep")


@dataclass(frozen=True)
class CopyBandwidth(_Record):
    """Device-memory copy bandwidth (check "bandwidth"), and its ratio to the vendor figure (None if unknown)."""

    bandwidth_gbs: float
    ratio_to_spec: float | None


def copy_bandwidth(name: str = H200_SELFCHECK) -> CopyBandwidth:
    """The recorded device-memory copy bandwidth."""
    return _build(CopyBandwidth, selfcheck_section("bandwidth", name), f"{name}, check 'bandwidth'")


def roofline_points(name: str = H200_SELFCHECK) -> list[OpPoint]:
    """The operation ladder of notebook 03 as recorded, as roofline points."""
    where = f"{name}, check 'roofline_points'"
    points: list[OpPoint] = []
    for i, r in enumerate(_field(selfcheck_section("roofline_points", name), "points", where)):
        at = f"{where}, points[{i}]"
        points.append(OpPoint.from_rates(_field(r, "name", at), _field(r, "intensity", at), _field(r, "gflops", at)))
    return points


@dataclass(frozen=True)
class PinnedCopies(_Record):
    """Host-device copies, pageable vs pinned (check "pinned_copies"), and the PCIe link's GB/s per direction."""

    detail: str
    rows: tuple[CopyRow, ...]
    pcie_link_gbs: float | None


def pinned_copies(name: str = H200_SELFCHECK) -> PinnedCopies:
    """The recorded host-device copies; ``detail`` is the check's one-sentence summary."""
    return _with_rows(PinnedCopies, CopyRow, "pinned_copies", name)


@dataclass(frozen=True)
class RecordedInferenceRow(_Record):
    """One number format of a recorded ``compare_inference`` row: the fields every recorded report holds.

    ``quantize.InferenceRow`` also says how many calls were timed and whether a time budget cut them; a report
    written before it had those fields lacks them, so the recorded rows keep only the fields below.
    """

    method: str
    device: str
    accuracy: float
    agrees_with_fp32: float
    weight_bytes: int
    median_s: float
    spread: float


@dataclass(frozen=True)
class Int8Inference(_Record):
    """FP32, BF16 and int8 inference of one MLP on the GPU (check "int8_inference")."""

    detail: str
    rows: tuple[RecordedInferenceRow, ...]


def int8_inference(name: str = H200_SELFCHECK) -> Int8Inference:
    """The recorded int8 comparison; ``detail`` is the check's one-sentence summary."""
    return _with_rows(Int8Inference, RecordedInferenceRow, "int8_inference", name)


@dataclass(frozen=True)
class PrecisionRun(_Record):
    """One training run of ``precision.train_mixed`` (final_scale is None without a GradScaler)."""

    test_acc: float
    final_loss: float
    skipped_steps: int
    final_scale: float | None


@dataclass(frozen=True)
class MixedPrecisionRuns(_Record):
    """The same MLP trained in FP32, BF16 and FP16 with a GradScaler (check "fp16_grad_scaler"), by mode."""

    detail: str
    runs: dict[str, PrecisionRun]


def fp16_grad_scaler(name: str = H200_SELFCHECK) -> MixedPrecisionRuns:
    """The recorded mixed-precision runs; ``detail`` is the check's one-sentence summary."""
    where = f"{name}, check 'fp16_grad_scaler'"
    entry = selfcheck_section("fp16_grad_scaler", name)
    runs = {mode: _build(PrecisionRun, r, f"{where}, results[{mode!r}]")
            for mode, r in _field(entry, "results", where).items()}
    return MixedPrecisionRuns(_field(entry, "detail", where), runs)


@dataclass(frozen=True)
class ConvSpeedRow(_Record):
    """One layer and implementation of the convolution timing (as ``bench.conv.benchmark_conv`` returns it)."""

    layer: str
    impl: str
    device: str
    batch: int
    seconds: float
    gflops: float
    ratio: float  # time / F.conv2d's time
    flops: int
    bytes: int


def conv_speed(batch: int | None = None, name: str = H200_SELFCHECK) -> list[ConvSpeedRow]:
    """The recorded convolution timings on AlexNet's layers, only batch ``batch`` (16 or 128) unless None."""
    return _only(_rows(ConvSpeedRow, "conv_speed", name), "batch", batch, "conv_speed")


def memory_cuda_models() -> list[tuple[str, nn.Module, tuple[int, ...]]]:
    """(name, model, input shape) of the two models the ``memory_cuda`` self-check measures, freshly built."""
    from d2lmp.models import alexnet_small, mlp

    return [("mlp", mlp(64, (256, 256), 10, dropout=0.5), (256, 1, 8, 8)),
            ("alexnet_small", alexnet_small(), (128, 1, 32, 32))]


@dataclass(frozen=True)
class MemoryPeakRow(_Record):
    """The CUDA allocator's peaks for one model (bytes), beside the predictions of ``d2lmp.memory``.

    Peaks count everything the allocator held (parameters, input batch, Adam's state during training), on a
    step after an unmeasured warm-up step; ``train_formula`` is the sum of ``predict_step_memory``'s parts (Adam).
    """

    model: str
    batch: int
    train_peak: int
    inference_peak: int
    inference_predicted: int
    train_formula: float


def memory_cuda_rows(name: str = H200_SELFCHECK) -> list[MemoryPeakRow]:
    """The recorded allocator peaks (check "memory_cuda"); a report without the "accounting" field is refused.

    Reports written before that field existed counted only the bytes allocated during each call; such a
    report must be recorded again (``tools/record_gpu.sh``), not read as if it counted everything.
    """
    from d2lmp.memory import predict_inference_memory, predict_step_memory

    where = f"{name}, check 'memory_cuda'"
    entry = selfcheck_section("memory_cuda", name)
    _field(entry, "accounting", where)
    models = _field(entry, "models", where)
    rows = []
    for model_name, model, shape in memory_cuda_models():
        at = f"{where}, models[{model_name!r}]"
        r = _field(models, model_name, f"{where}, models")
        rows.append(MemoryPeakRow(
            model=model_name, batch=shape[0], train_peak=_field(r, "train_peak", at),
            inference_peak=_field(r, "inference_peak", at),
            inference_predicted=predict_inference_memory(model, shape).total,
            train_formula=predict_step_memory(model, shape, "adam", device_type="cuda").total))
    return rows
