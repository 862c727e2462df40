"""The records ``d2lmp.memory`` returns: saved activations per layer, a training step's parts, CUDA peaks.

Frozen dataclasses, one per kind of result, so a notebook reads ``result.total_bytes`` and a type checker
knows every field. They live here so that ``memory`` keeps to its measurements and formulas.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

__all__ = ["LayerSaves", "SavedActivations", "MeasuredSaves", "LayerComparison", "SavedComparison", "StepMemory",
           "InferenceMemory", "CudaPeak", "PeakVerdict", "MemoryBar"]


@dataclass(frozen=True)
class LayerSaves:
    """One layer's saved activations: its name, its kind (class name; "" outside any layer), the bytes of the
    storages it saved first, and how many."""

    name: str
    kind: str
    bytes: int
    tensors: int


@dataclass(frozen=True)
class SavedActivations:
    """Saved-activation bytes in all, and per layer in the order the layers ran (``predict_saved_activations``)."""

    total_bytes: int
    per_layer: list[LayerSaves]


@dataclass(frozen=True)
class MeasuredSaves(SavedActivations):
    """``measure_saved_activations``: the bytes, how many saves autograd made, how many distinct storages they
    were, and the model's output."""

    saved_tensors: int
    unique_storages: int
    output: torch.Tensor


@dataclass(frozen=True)
class LayerComparison:
    """One layer's measured and predicted saved bytes (``compare_saved_activations``)."""

    name: str
    kind: str
    measured: int
    predicted: int


@dataclass(frozen=True)
class SavedComparison:
    """Measured and predicted saved-activation bytes, measured / predicted, and the layers side by side."""

    measured_bytes: int
    predicted_bytes: int
    ratio: float
    per_layer: list[LayerComparison]


@dataclass(frozen=True)
class StepMemory:
    """Bytes of each part of one training step's memory (``predict_step_memory``, ``measure_step_memory``)."""

    parameters: float
    gradients: float
    optimizer_state: float
    saved_activations: float

    @property
    def total(self) -> float:
        return self.parameters + self.gradients + self.optimizer_state + self.saved_activations


@dataclass(frozen=True)
class InferenceMemory:
    """Bytes an inference pass holds at its peak: the parameters, and the activations alive together."""

    parameters: int
    live_activations: int

    @property
    def total(self) -> int:
        return self.parameters + self.live_activations


@dataclass(frozen=True)
class CudaPeak:
    """``cuda_peak_memory``: the allocator's peak counted as the predictions count, the parameters, input and
    optimizer state within it, what was allocated before and left out, and what the call itself added."""

    peak_bytes: int
    parameter_bytes: int
    input_bytes: int
    optimizer_state_bytes: int
    other_bytes: int
    step_bytes: int


@dataclass(frozen=True)
class PeakVerdict:
    """``judge_cuda_peaks``: inference's predicted peak, measured / predicted and whether it is within the
    tolerance; training's lower bound, the sum of its four parts, the peak over that sum, and whether the peak
    reaches the bound."""

    inference_predicted: float
    inference_ratio: float
    inference_ok: bool
    train_lower_bound: float
    train_formula_total: float
    train_over_formula: float
    train_ok: bool


@dataclass(frozen=True)
class MemoryBar:
    """One bar of ``breakdown_rows``: a label and the bytes of each component (0 where it holds none)."""

    label: str
    parameters: float
    gradients: float
    optimizer_state: float
    saved_activations: float
    live_activations: float

    @property
    def total(self) -> float:
        return self.parameters + self.gradients + self.optimizer_state + self.saved_activations + self.live_activations
