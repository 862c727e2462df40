"""The model shapes the run tables share, each read from a model configuration its source names.

A shape is the ``RunRecord`` keyword arguments of one model: layers, width, heads, KV heads, MLP size (per expert
for a mixture of experts), gated MLP, vocabulary, experts (and the dense blocks before the MoE blocks, with their MLP
width). Where a model has a feature a ``RunRecord`` cannot say (MLA, a head size other than width/heads,
sliding-window layers), ``caveat``
says so and the source modules copy it into their notes.

Sources, all read at the commits the run modules name: NVIDIA/NeMo ``nemo/collections/llm/gpt/model/`` (``base.py``
GPTConfig5B/20B/175B, ``llama.py`` Llama2Config7B/13B/70B, Llama3Config8B/70B, Llama31Config405B, ``nemotron.py``
Nemotron3Config8B/22B and Nemotron4Config340B, squared-ReLU MLP, ``qwen3.py`` Qwen3Config30B_A3B/235B_A22B,
``gpt_oss.py`` GPTOSSConfig120B); the vocabularies of NeMo's benchmark scripts (``scripts/performance/llm/
pretrain_*.py``: 51,200 for GPT-3, 128,256 for Llama 3, 256,000 for Nemotron, 129,280 for DeepSeek-V3; Llama 2's
32,000 from the Touvron et al. 2023 Llama 2 paper, §2.1, "32k tokens"); DeepSeek-V3 from deepseek-ai/DeepSeek-V3
``inference/configs/config_671B.json``; the Llama 3 shapes agree with Table 3 of the Llama 3 paper and with
torchtitan's ``torchtitan/models/llama/__init__.py``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SHAPES", "caveat"]

_LLAMA3 = {"kv_heads": 8, "gated_mlp": True, "vocab": 128256}
_LLAMA2 = {"gated_mlp": True, "vocab": 32000}
_NEMOTRON = {"gated_mlp": False, "vocab": 256000}

SHAPES: dict[str, dict[str, Any]] = {
    "gpt3-5b": {"layers": 24, "hidden": 4096, "heads": 32, "ffn": 16384, "vocab": 51200},
    "gpt3-20b": {"layers": 44, "hidden": 6144, "heads": 48, "ffn": 24576, "vocab": 51200},
    "gpt3-175b": {"layers": 96, "hidden": 12288, "heads": 96, "ffn": 49152, "vocab": 51200},
    "llama2-7b": {"layers": 32, "hidden": 4096, "heads": 32, "ffn": 11008, **_LLAMA2},
    "llama2-13b": {"layers": 40, "hidden": 5120, "heads": 40, "ffn": 13824, **_LLAMA2},
    "llama2-70b": {"layers": 80, "hidden": 8192, "heads": 64, "kv_heads": 8, "ffn": 28672, **_LLAMA2},
    "llama3-8b": {"layers": 32, "hidden": 4096, "heads": 32, "ffn": 14336, **_LLAMA3},
    "llama3-70b": {"layers": 80, "hidden": 8192, "heads": 64, "ffn": 28672, **_LLAMA3},
    "llama3-405b": {"layers": 126, "hidden": 16384, "heads": 128, "ffn": 53248, **_LLAMA3},
    "nemotron3-8b": {"layers": 32, "hidden": 4096, "heads": 32, "ffn": 16384, **_NEMOTRON},
    "nemotron3-22b": {"layers": 40, "hidden": 6144, "heads": 48, "ffn": 24576, **_NEMOTRON},
    "nemotron4-340b": {"layers": 96, "hidden": 18432, "heads": 96, "kv_heads": 8, "ffn": 73728, **_NEMOTRON},
    "qwen3-30b-a3b": {"layers": 48, "hidden": 2048, "heads": 32, "kv_heads": 4, "ffn": 768, "gated_mlp": True,
                      "vocab": 151936, "experts": 128, "top_k": 8},
    "qwen3-235b-a22b": {"layers": 94, "hidden": 4096, "heads": 64, "kv_heads": 4, "ffn": 1536, "gated_mlp": True,
                        "vocab": 151936, "experts": 128, "top_k": 8},
    "gpt-oss-120b": {"layers": 36, "hidden": 2880, "heads": 64, "kv_heads": 8, "ffn": 2880, "gated_mlp": True,
                     "vocab": 201088, "experts": 128, "top_k": 4},
    "deepseek-v3": {"layers": 61, "hidden": 7168, "heads": 128, "ffn": 2048, "gated_mlp": True, "vocab": 129280,
                    "experts": 256, "top_k": 8, "shared_experts": 1, "dense_layers": 3, "dense_ffn": 18432},
}

_CAVEATS = {
    "qwen3-30b-a3b": "Qwen3-30B-A3B: heads of 128 (kv_channels), so attention is 4,096 wide on a 2,048-wide model.",
    "gpt-oss-120b": "gpt-oss-120b: heads of 64 (attention 4,096 wide on a 2,880-wide model); every other layer "
                    "attends over a 128-token sliding window; biases on the linear layers.",
    "deepseek-v3": "DeepSeek-V3: multi-head latent attention (q rank 1,536, kv rank 512, head 128 + 64 rotary), "
                   "not the plain attention the fields describe (counted as 128 plain heads).",
}


def caveat(shape: str) -> str:
    """What the fields of ``shape`` cannot say about the model ('' when nothing)."""
    return _CAVEATS.get(shape, "")
