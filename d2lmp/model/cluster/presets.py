"""Named model shapes for the planner and the command line: the calibration table's GPTs and well-known open models.

``MODEL_PRESETS`` maps a name to a ``ModelPreset``: the ``Transformer`` shape, the bibliography keys of
where it is published and what is read there. The ten GPT models of Narayanan et al. (2021, Table 1), the
22B of Korthikanti et al. (2022), GPT-3 175B (Brown et al. 2020, Table 2.1; Megatron's vocabulary of
51,200) and Llama 3 8B, 70B and 405B (Llama Team 2024, Table 3: SwiGLU MLP, grouped-query attention, no
biases, untied embeddings, rotary positions; pre-training sequence 8,192, vocabulary 128,000; no dropout, as the
released model definition has none, meta-llama/llama3 ``llama/model.py``), and one mixture of
experts, DeepSeek-V3 (DeepSeek-V3 report, §4.2: 61 layers, width 7,168, 128 heads, the first three blocks dense, then
1 shared and 256 routed experts of width 2,048, 8 routed a token; 4K-token sequences; the dense MLP's 18,432 and the
vocabulary of 129,280 from its ``config_671B.json``, ``runs.shapes``), its multi-head latent attention counted as
plain attention of 128 heads, and Mixtral 8x7B (Jiang et al. 2024, Table 1: 32 layers, width 4,096, 32 heads of 128
with 8 key/value heads, 8 SwiGLU experts of width 14,336, top 2, context 32,768, vocabulary 32,000; untied embeddings,
which Table 1 does not give). DeepSeek-V3 and Mixtral keep no dropout masks either: their released model definitions
(deepseek-ai/DeepSeek-V3 ``inference/model.py``, mistralai/mistral-inference: inference code, the training code is
not public) have no dropout layer; the GPTs keep Megatron's. ``model_preset`` finds one by name, ignoring case
("175b", "Llama3-70B").
"""

from __future__ import annotations

from dataclasses import dataclass

from d2lmp.model.cluster.moe import MoETransformer
from d2lmp.model.cluster.published import NARAYANAN_TABLE1, gpt
from d2lmp.model.cluster.runs.shapes import SHAPES
from d2lmp.model.transformer_accounting import Transformer

__all__ = ["ModelPreset", "MODEL_PRESETS", "model_preset"]


@dataclass(frozen=True)
class ModelPreset:
    """A published shape: ``model``, its ``source`` keys and ``note`` (where in them)."""

    name: str
    model: Transformer
    source: tuple[str, ...]
    note: str


def _llama3(layers: int, hidden: int, ffn: int, heads: int) -> Transformer:
    return Transformer(layers=layers, hidden=hidden, heads=heads, seq=8192, vocab=128000, ffn=ffn, kv_heads=8,
                       gated_mlp=True, bias=False, tied_embeddings=False, learned_positions=False, dropout=False)


def _deepseek_v3() -> MoETransformer:
    shape = SHAPES["deepseek-v3"]
    return MoETransformer(layers=shape["layers"], hidden=shape["hidden"], heads=shape["heads"], seq=4096,
                          vocab=shape["vocab"], gated_mlp=True, bias=False, tied_embeddings=False,
                          learned_positions=False, dropout=False, experts=shape["experts"], top_k=shape["top_k"],
                          expert_ffn=shape["ffn"], shared_experts=shape["shared_experts"],
                          dense_layers=shape["dense_layers"], dense_ffn=shape["dense_ffn"])


def _mixtral_8x7b() -> MoETransformer:
    return MoETransformer(layers=32, hidden=4096, heads=32, seq=32768, vocab=32000, kv_heads=8, gated_mlp=True,
                          bias=False, tied_embeddings=False, learned_positions=False, dropout=False, experts=8, top_k=2,
                          expert_ffn=14336)


_TABLE1_NAMES = {"1.7B": "1.7B", "3.6B": "3.6B", "7.5B": "7.5B", "18.4B": "18B", "39.1B": "39B", "76.1B": "76B",
                 "145.6B": "145B", "310.1B": "310B", "529.6B": "530B", "1008.0B": "1T"}
MODEL_PRESETS: dict[str, ModelPreset] = {p.name: p for p in (
    *(ModelPreset(_TABLE1_NAMES[run.row], run.model, run.source, f"Table 1, the {run.row} row")
      for run in NARAYANAN_TABLE1),
    ModelPreset("22B", gpt(48, 6144, 64), ("korthikanti2022reducing",), "the 22B model of the evaluation"),
    ModelPreset("175B", gpt(96, 12288, 96), ("brown2020language", "narayanan2021efficient"),
                "GPT-3 175B, Table 2.1 of Brown et al.; vocabulary 51,200 as in Narayanan et al."),
    ModelPreset("llama3-8b", _llama3(32, 4096, 14336, 32), ("dubey2024llama3", "meta_llama3_repo"),
                "Table 3, 8B; no dropout layer in llama/model.py"),
    ModelPreset("llama3-70b", _llama3(80, 8192, 28672, 64), ("dubey2024llama3", "meta_llama3_repo"),
                "Table 3, 70B; no dropout layer in llama/model.py"),
    ModelPreset("llama3-405b", _llama3(126, 16384, 53248, 128), ("dubey2024llama3", "meta_llama3_repo"),
                "Table 3, 405B; no dropout layer in llama/model.py"),
    ModelPreset("deepseek-v3", _deepseek_v3(), ("deepseek2024v3", "deepseek_v3_repo"),
                "§4.2 (layers, width, heads, experts, 4K sequence); dense MLP and vocabulary from config_671B.json; "
                "MLA counted as plain attention; no dropout layer in inference/model.py"),
    ModelPreset("mixtral-8x7b", _mixtral_8x7b(), ("jiang2024mixtral", "mistral_inference_repo"),
                "Table 1 (dim, layers, heads, key/value heads, expert width, experts, top 2, context, vocabulary); "
                "embeddings untied; no dropout layer in mistral-inference's model"),
)}


def model_preset(name: str) -> ModelPreset:
    """The preset called ``name`` (case ignored; "GPT-3" means 175B; "18.4B" and the other Table 1 sizes work)."""
    key = name.strip().lower().replace("gpt-3", "175b").replace("gpt3", "175b")
    for preset in MODEL_PRESETS.values():
        if preset.name.lower() == key:
            return preset
    for row, short in _TABLE1_NAMES.items():
        if row.lower() == key:
            return MODEL_PRESETS[short]
    raise ValueError(f"unknown model {name!r}: the presets are {', '.join(MODEL_PRESETS)}")
