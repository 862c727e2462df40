"""What FP8 matrix products save in memory: the linear layers' inputs kept for the backward in one byte, not two.

A run whose linear layers multiply in FP8 (``Plan.precision == "fp8"``; E4M3 for weights and activations,
Micikevicius et al. 2022, §3) casts each linear layer's input to FP8 for the forward product and keeps that FP8 copy
for the weight gradient of the backward (DeepSeek-V3's report, §3.3.3, "Low-Precision Activation": activations
cached in FP8 for the backward of the linear layers). Of the tensors Korthikanti et al. count a block saving
(``transformer_accounting.activation_parts``), the inputs of the four linear layers (``FP8_LINEAR_INPUTS``) take
``FP8_BYTES`` a value instead of two. The rate of an FP8 product is the GPU preset's
(``hardware.GPUPreset.matmul_flops("fp8")``); the bytes FP8 saves on the wire, the MoE dispatch, are
``moe.all_to_all_bytes`` at one byte a value (``Plan.fp8_dispatch``).
"""

from __future__ import annotations

from functools import lru_cache

from d2lmp.model.transformer_accounting import Transformer, activation_parts

__all__ = ["FP8_BYTES", "FP8_LINEAR_INPUTS", "fp8_saved_bytes"]

FP8_BYTES = 1  # E4M3 or E5M2: eight bits a value (Micikevicius et al. 2022, §3)
# The tensors of ``activation_parts`` that are a linear layer's input (gated or not).
FP8_LINEAR_INPUTS = ("QKV input (LayerNorm 1 output)", "output projection input", "MLP input (LayerNorm 2 output)",
                     "down projection input", "GeLU output (second linear input)")


@lru_cache(maxsize=4096)
def fp8_saved_bytes(model: Transformer, micro_batch: int, tp: int, sequence_parallel: bool) -> float:
    """Bytes one block saves on one GPU when its linear layers' inputs are kept in FP8 rather than 16 bits."""
    saved = 0.0
    for part in activation_parts(model, micro_batch):
        if part.name in FP8_LINEAR_INPUTS:
            per_value = part.nbytes / 2
            split = tp if (part.tensor_parallel or sequence_parallel) else 1
            saved += (part.nbytes - FP8_BYTES * per_value) / split
    return saved
