"""What training keeps in memory, by name, and how many bytes per parameter each optimizer and precision needs.

The parts of memory have one name each across the series (``MEMORY_PARTS``): the **parameters**, their
**gradients**, the **optimizer_state** (nothing for plain SGD, one velocity per weight for momentum, two
moments for Adam), the **saved_activations** that backward needs, and the **live_activations** an inference
pass holds at once. The first three are the training state (``STATE_PARTS``), the part ZeRO shards.
``OPTIMIZERS`` gives the bytes per parameter of each state part, and of each activation, for every optimizer
the series uses, each row with its source; ``optimizer_bytes`` looks one up, by key or as given.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MEMORY_PARTS", "STATE_PARTS", "BUFFERS", "OptimizerBytes", "OPTIMIZERS", "optimizer_bytes"]

MEMORY_PARTS = ("parameters", "gradients", "optimizer_state", "saved_activations", "live_activations")
STATE_PARTS = MEMORY_PARTS[:3]
# What the cluster-scale model adds to these parts: communication buffers and the allocator's slack.
BUFFERS = "buffers"


@dataclass(frozen=True)
class OptimizerBytes:
    """Bytes per parameter of the weights, their gradients and the optimizer's state, and bytes per activation."""

    label: str
    param_bytes: float
    grad_bytes: float
    state_bytes: float
    activation_bytes: float
    source: tuple[str, ...]  # keys in d2lmp.bibliography.SOURCES

    @property
    def state_per_parameter(self) -> dict[str, float]:
        """Bytes per parameter of each part of the training state, keyed by ``STATE_PARTS``."""
        return dict(zip(STATE_PARTS, (self.param_bytes, self.grad_bytes, self.state_bytes)))

    @property
    def bytes_per_parameter(self) -> float:
        return self.param_bytes + self.grad_bytes + self.state_bytes


_FP32 = 4  # bytes of a float32
_FP16 = 2  # bytes of a float16 (or bfloat16)
OPTIMIZERS = {
    "sgd": OptimizerBytes("SGD", _FP32, _FP32, 0, _FP32, ("sutskever2013momentum",)),
    "momentum": OptimizerBytes("SGD with momentum", _FP32, _FP32, _FP32, _FP32, ("sutskever2013momentum",)),
    "adam": OptimizerBytes("Adam", _FP32, _FP32, 2 * _FP32, _FP32, ("kingma2015adam",)),
    # fp16 weights, gradients and activations; an fp32 master copy of the weights and Adam's two moments,
    # 4 + 4 + 4 = 12 bytes, as the ZeRO paper counts mixed-precision Adam
    "adam_mixed": OptimizerBytes("Adam, mixed precision", _FP16, _FP16, 3 * _FP32, _FP16,
                                 ("rajbhandari2020zero", "micikevicius2018mixed")),
}


def optimizer_bytes(optimizer: str | OptimizerBytes) -> OptimizerBytes:
    """The row of ``OPTIMIZERS`` called ``optimizer``, or ``optimizer`` itself when it is already a row."""
    if isinstance(optimizer, OptimizerBytes):
        return optimizer
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {optimizer!r}; available: {', '.join(OPTIMIZERS)}")
    return OPTIMIZERS[optimizer]
