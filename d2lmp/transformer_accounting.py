"""The accounting of a decoder-only transformer: parameters, FLOPs per step and saved activation bytes.

Plain arithmetic on a shape (no torch import), so the small GPT that runs here and a 175-billion-parameter
model at cluster scale are counted by the same functions. The conventions are the published ones:

- Parameters and FLOPs follow Narayanan et al. (2021, §5.1; bibliography key ``narayanan2021efficient``):
  only matrix multiplications count as FLOPs (2 per multiply-add), attention scores over the full
  ``seq × seq`` square (no saving for the causal mask). Their closed forms,
  ``12·l·h²·(1 + 13/(12h) + (V+s)/(12·l·h))`` parameters and ``96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h))``
  FLOPs per step with full recomputation, are :func:`narayanan_parameters` and :func:`narayanan_flops`;
  the general functions reduce to them for a GPT-style shape (biases, LayerNorms, a 4h MLP, tied
  embeddings, learned positions).
- Saved activations follow Korthikanti et al. (2022, §4; ``korthikanti2022reducing``): bytes per layer of
  ``s·b·h·(34 + 5·a·s/h)`` for 16-bit activations with dropout, divided by tensor and sequence parallelism
  as their equations (2)-(5) say. :func:`activation_parts` lists the saved tensors one by one, so a variant
  (no dropout, 32-bit values, a gated MLP) changes only the tensors it changes.

Symbols: ``s`` sequence length, ``b`` micro-batch size, ``h`` hidden size, ``a`` attention heads, ``l``
layers, ``V`` vocabulary, ``f`` MLP width, ``t`` tensor-parallel size, ``p`` pipeline-parallel size, ``v``
interleaved (virtual) stages per device, ``m`` micro-batches per step.

A pipeline's first stage holds the most: Korthikanti et al. (§4.2.3) count ``p`` micro-batches in flight under
1F1B (``L`` layers' worth in all) and ``L·(1 + (p−1)/(p·v))`` with the interleaved schedule;
:func:`pipeline_layers_in_flight` counts them from the schedule, :func:`embedding_activation_bytes` and
:func:`output_activation_bytes` add the input embedding's dropout mask and the output layer (§4.4), and
:func:`korthikanti_first_stage_bytes` is the paper's closed form for the total.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RECOMPUTE", "Transformer", "ParameterCount", "layer_parameters", "parameter_count",
           "narayanan_parameters", "layer_forward_flops", "forward_flops", "training_flops", "narayanan_flops",
           "attention_core_flops", "ActivationPart", "activation_parts", "activation_bytes_per_layer",
           "korthikanti_bytes_per_layer", "pipeline_layers_in_flight", "embedding_activation_bytes",
           "output_activation_bytes", "korthikanti_first_stage_bytes"]

RECOMPUTE = ("none", "selective", "full")


@dataclass(frozen=True)
class Transformer:
    """The shape of a decoder-only transformer language model.

    ``ffn`` None means ``4 * hidden``; ``kv_heads`` None means one key/value head per query head
    (multi-head attention; fewer is grouped-query attention). ``gated_mlp`` is a SwiGLU-style MLP
    (three matrices of ``hidden × ffn``). ``bias`` adds biases to every linear layer and LayerNorm
    (GPT-2 and Megatron's GPT do; Llama does not). ``tied_embeddings``: the LM head reuses the token
    embedding. ``learned_positions``: a ``seq × hidden`` position embedding (rotary embeddings have none).
    """

    layers: int
    hidden: int
    heads: int
    seq: int
    vocab: int
    ffn: int | None = None
    kv_heads: int | None = None
    gated_mlp: bool = False
    bias: bool = True
    tied_embeddings: bool = True
    learned_positions: bool = True

    def __post_init__(self) -> None:
        for name in ("layers", "hidden", "heads", "seq", "vocab"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be divisible by heads ({self.heads})")
        if self.ffn is not None and (not isinstance(self.ffn, int) or self.ffn < 1):
            raise ValueError(f"ffn must be a positive integer or None, got {self.ffn!r}")
        if self.kv_heads is not None:
            if not isinstance(self.kv_heads, int) or self.kv_heads < 1 or self.heads % self.kv_heads:
                raise ValueError(f"kv_heads must divide heads ({self.heads}), got {self.kv_heads!r}")

    @property
    def ffn_size(self) -> int:
        return 4 * self.hidden if self.ffn is None else self.ffn

    @property
    def kv_head_count(self) -> int:
        return self.heads if self.kv_heads is None else self.kv_heads

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv_hidden(self) -> int:
        """Width of the key (and of the value) projection: kv_heads × head_dim."""
        return self.kv_head_count * self.head_dim


@dataclass(frozen=True)
class ParameterCount:
    """Parameters by where they live; ``total`` adds them up."""

    attention: int  # per layer
    mlp: int  # per layer
    norms: int  # per layer: the two LayerNorms
    layers: int
    token_embedding: int
    position_embedding: int
    lm_head: int  # 0 when tied to the token embedding
    final_norm: int

    @property
    def per_layer(self) -> int:
        return self.attention + self.mlp + self.norms

    @property
    def total(self) -> int:
        return (self.layers * self.per_layer + self.token_embedding + self.position_embedding + self.lm_head
                + self.final_norm)


def layer_parameters(m: Transformer) -> tuple[int, int, int]:
    """(attention, MLP, LayerNorm) parameters of one block."""
    h, f, kv = m.hidden, m.ffn_size, m.kv_hidden
    b = 1 if m.bias else 0
    attention = h * (h + 2 * kv) + b * (h + 2 * kv) + h * h + b * h  # Q, K, V, then the output projection
    matrices = 3 if m.gated_mlp else 2
    mlp = matrices * h * f + b * ((matrices - 1) * f + h)
    norms = 2 * (2 if m.bias else 1) * h  # weight (and bias) of two LayerNorms
    return attention, mlp, norms


def parameter_count(m: Transformer) -> ParameterCount:
    """Every parameter of the model, by part."""
    attention, mlp, norms = layer_parameters(m)
    h = m.hidden
    return ParameterCount(
        attention=attention, mlp=mlp, norms=norms, layers=m.layers,
        token_embedding=m.vocab * h, position_embedding=m.seq * h if m.learned_positions else 0,
        lm_head=0 if m.tied_embeddings else m.vocab * h, final_norm=(2 if m.bias else 1) * h)


def narayanan_parameters(layers: int, hidden: int, vocab: int, seq: int) -> float:
    """Narayanan et al. (2021), §5.1: P = 12·l·h²·(1 + 13/(12h) + (V + s)/(12·l·h)) (no final LayerNorm)."""
    h = hidden
    return 12 * layers * h**2 * (1 + 13 / (12 * h) + (vocab + seq) / (12 * layers * h))


def attention_core_flops(m: Transformer, batch: int = 1) -> int:
    """Forward FLOPs of one layer's scores (Q·Kᵀ) and weighted sum (softmax·V): 4·b·s²·h."""
    return 4 * batch * m.seq**2 * m.hidden


def layer_forward_flops(m: Transformer, batch: int = 1) -> int:
    """Forward FLOPs of one block for ``batch`` sequences: its matrix products, 24·b·s·h² + 4·b·s²·h for GPT."""
    tokens, h, f = batch * m.seq, m.hidden, m.ffn_size
    projections = 2 * tokens * h * (h + 2 * m.kv_hidden) + 2 * tokens * h * h
    mlp = 2 * tokens * h * f * (3 if m.gated_mlp else 2)
    return projections + attention_core_flops(m, batch) + mlp


def forward_flops(m: Transformer, batch: int = 1) -> int:
    """Forward FLOPs of the whole model: every block and the logits (2·b·s·h·V)."""
    return m.layers * layer_forward_flops(m, batch) + 2 * batch * m.seq * m.hidden * m.vocab


def training_flops(m: Transformer, batch: int = 1, recompute: str = "none") -> int:
    """FLOPs of one training step on ``batch`` sequences.

    The backward pass costs twice the forward (one product for the input's gradient, one for the
    weights'), so without recomputation a step is 3× the forward: these are the *model* FLOPs.
    Recomputation adds the *hardware* FLOPs of running part of the forward again: every block's forward
    for ``"full"``, each block's attention core for ``"selective"`` (the logits are never recomputed).
    """
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute must be one of {RECOMPUTE}, got {recompute!r}")
    extra = {"none": 0, "selective": attention_core_flops(m, batch), "full": layer_forward_flops(m, batch)}[recompute]
    return 3 * forward_flops(m, batch) + m.layers * extra


def narayanan_flops(batch: int, seq: int, layers: int, hidden: int, vocab: int) -> float:
    """Narayanan et al. (2021), §5.1: F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)), full recomputation."""
    h = hidden
    return 96 * batch * seq * layers * h**2 * (1 + seq / (6 * h) + vocab / (16 * layers * h))


@dataclass(frozen=True)
class ActivationPart:
    """One tensor a block saves for its backward pass: its name, its bytes, and whether it is split.

    ``tensor_parallel``: it lies inside a tensor-parallel region (divided by t); ``scores``: it is
    ``a·s²`` wide (what selective recomputation and flash attention do not keep).
    """

    name: str
    nbytes: int
    tensor_parallel: bool
    scores: bool = False


def activation_parts(m: Transformer, micro_batch: int = 1, dropout: bool = True, value_bytes: int = 2,
                     mask_bytes: int = 1) -> list[ActivationPart]:
    """The tensors one block saves, following Korthikanti et al. (2022), §4.1, for one device (t = 1).

    ``value_bytes`` is the size of an activation (2 for 16-bit), ``mask_bytes`` that of a dropout mask
    (1: a byte per element). Without dropout the three masks and the dropped-out scores disappear.
    """
    sb, h, f, kv = m.seq * micro_batch, m.hidden, m.ffn_size, m.kv_hidden
    scores = m.heads * m.seq**2 * micro_batch
    p, k = value_bytes, mask_bytes
    parts = [
        ActivationPart("LayerNorm 1 input", p * sb * h, False),
        ActivationPart("QKV input (LayerNorm 1 output)", p * sb * h, False),
        ActivationPart("Q", p * sb * h, True),
        ActivationPart("K", p * sb * kv, True),
        ActivationPart("V", p * sb * kv, True),
        ActivationPart("softmax output", p * scores, True, scores=True),
    ]
    if dropout:
        parts += [ActivationPart("attention dropout mask", k * scores, True, scores=True),
                  ActivationPart("attention dropout output", p * scores, True, scores=True)]
    parts.append(ActivationPart("output projection input", p * sb * h, True))
    if dropout:
        parts.append(ActivationPart("attention output dropout mask", k * sb * h, False))
    parts += [ActivationPart("LayerNorm 2 input", p * sb * h, False),
              ActivationPart("MLP input (LayerNorm 2 output)", p * sb * h, False)]
    if m.gated_mlp:
        parts += [ActivationPart("gate output (activation input)", p * sb * f, True),
                  ActivationPart("activation output", p * sb * f, True),
                  ActivationPart("up projection output", p * sb * f, True),
                  ActivationPart("down projection input", p * sb * f, True)]
    else:
        parts += [ActivationPart("first linear output (GeLU input)", p * sb * f, True),
                  ActivationPart("GeLU output (second linear input)", p * sb * f, True)]
    if dropout:
        parts.append(ActivationPart("MLP dropout mask", k * sb * h, False))
    return parts


def activation_bytes_per_layer(m: Transformer, micro_batch: int = 1, tp: int = 1, sequence_parallel: bool = False,
                               recompute: str = "none", dropout: bool = True, value_bytes: int = 2,
                               mask_bytes: int = 1) -> float:
    """Bytes one block keeps per device for its backward pass (Korthikanti et al. 2022, §4).

    Tensor parallelism divides what lies inside its regions by ``tp``; sequence parallelism divides the
    rest too. ``"selective"`` recomputation drops the attention scores; ``"full"`` keeps only the block's
    input (``value_bytes·s·b·h``, split by ``tp`` under sequence parallelism).
    """
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute must be one of {RECOMPUTE}, got {recompute!r}")
    if tp < 1:
        raise ValueError(f"tp must be at least 1, got {tp}")
    if recompute == "full":
        return value_bytes * m.seq * micro_batch * m.hidden / (tp if sequence_parallel else 1)
    total = 0.0
    for part in activation_parts(m, micro_batch, dropout, value_bytes, mask_bytes):
        if part.scores and recompute == "selective":
            continue
        total += part.nbytes / tp if (part.tensor_parallel or sequence_parallel) else part.nbytes
    return total


def korthikanti_bytes_per_layer(seq: int, micro_batch: int, hidden: int, heads: int, tp: int = 1,
                                sequence_parallel: bool = False, recompute: str = "none") -> float:
    """The paper's closed forms (16-bit activations, dropout), Korthikanti et al. (2022), eq. (1)-(4) and §5:

    no parallelism s·b·h·(34 + 5as/h); tensor parallel s·b·h·(10 + 24/t + 5as/(ht)); with sequence parallelism
    s·b·h·(34/t + 5as/(ht)); selective recomputation drops the 5as/h term; full recomputation keeps 2·s·b·h.
    """
    sbh, t = seq * micro_batch * hidden, tp
    scores = 0.0 if recompute == "selective" else 5 * heads * seq / (hidden * t)
    if recompute == "full":
        return 2 * sbh / (t if sequence_parallel else 1)
    if sequence_parallel:
        return sbh * (34 / t + scores)
    return sbh * (10 + 24 / t + scores)


def pipeline_layers_in_flight(layers: int, pp: int = 1, interleave: int = 1, microbatches: int | None = None,
                              stage: int = 0) -> float:
    """How many layers' activations (of one micro-batch each) pipeline stage ``stage`` holds at its peak.

    1F1B (``interleave`` 1): stage ``r`` runs ``p − r`` forwards before its first backward, so the first stage
    holds ``min(p, m)`` micro-batches, each through ``L/p`` layers: ``L`` layers' worth when ``m ≥ p``.
    Interleaved: stage ``r`` runs ``2(p−r−1) + (v−1)·p`` chunk forwards before its first backward and one more
    in the steady state; the first stage holds ``p·v + p − 1`` chunks of ``L/(p·v)`` layers, ``L·(1 + (p−1)/(p·v))``
    (Korthikanti et al. 2022, §4.2.3). ``microbatches`` None means enough to fill the pipeline.
    """
    if pp < 1 or interleave < 1:
        raise ValueError(f"pp and interleave must be at least 1, got pp={pp}, interleave={interleave}")
    if not 0 <= stage < pp:
        raise ValueError(f"stage must be in 0..{pp - 1}, got {stage}")
    if layers % (pp * interleave):
        raise ValueError(f"layers ({layers}) must be divisible by pp × interleave ({pp} × {interleave})")
    if interleave == 1:
        in_flight = pp - stage if microbatches is None else min(pp - stage, microbatches)
        return in_flight * layers / pp
    chunks = 2 * (pp - stage - 1) + (interleave - 1) * pp + 1
    if microbatches is not None:
        chunks = min(chunks, microbatches * interleave)
    return chunks * layers / (pp * interleave)


def embedding_activation_bytes(m: Transformer, micro_batch: int = 1, tp: int = 1, sequence_parallel: bool = False,
                               in_flight: int = 1, dropout: bool = True, mask_bytes: int = 1) -> float:
    """The input embedding's saved tensor on the first stage: its dropout mask, ``s·b·h`` bytes per micro-batch
    (split by ``tp`` under sequence parallelism), for each of the ``in_flight`` micro-batches (Korthikanti §4.4:
    ``s·b·h·p/t``)."""
    if not dropout:
        return 0.0
    return mask_bytes * m.seq * micro_batch * m.hidden * in_flight / (tp if sequence_parallel else 1)


def output_activation_bytes(m: Transformer, micro_batch: int = 1, tp: int = 1, sequence_parallel: bool = False,
                            value_bytes: int = 2, logit_bytes: int = 4) -> float:
    """The output layer's saved tensors on the last stage (Korthikanti §4.4), for one micro-batch: the final
    LayerNorm's input and the projection's input (``value_bytes·s·b·h`` each, split by ``tp`` under sequence
    parallelism) and the 32-bit logits the cross-entropy keeps (``4·s·b·V/t``): ``4·s·b·h/t·(1 + V/h)``
    with sequence parallelism."""
    sbh = m.seq * micro_batch * m.hidden
    return (2 * value_bytes * sbh / (tp if sequence_parallel else 1)
            + logit_bytes * m.seq * micro_batch * m.vocab / tp)


def korthikanti_first_stage_bytes(seq: int, micro_batch: int, hidden: int, heads: int, vocab: int, layers: int,
                                  tp: int = 1, pp: int = 1, interleave: int = 1, recompute: str = "none") -> float:
    """Korthikanti et al. (2022), eq. (5) and §4.2.3-§4.4, with sequence parallelism: the first stage's activations
    ``L`` layers' worth (× ``1 + (p−1)/(p·v)`` interleaved) of the per-layer closed form, the embedding dropout
    ``s·b·h·p/t``, and with ``p = 1`` (the last stage is the first) the output layer ``4·s·b·h/t·(1 + V/h)``."""
    per_layer = korthikanti_bytes_per_layer(seq, micro_batch, hidden, heads, tp, True, recompute)
    factor = 1 + (pp - 1) / (pp * interleave) if interleave > 1 else 1
    sbh = seq * micro_batch * hidden
    total = per_layer * layers * factor + sbh * pp / tp
    if pp == 1:
        total += 4 * sbh / tp * (1 + vocab / hidden)
    return total
