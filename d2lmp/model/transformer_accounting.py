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
  (no dropout, 32-bit values, a gated MLP) changes only the tensors it changes; :func:`layernorm_statistics`
  lists the small tensors that count leaves out.
- :func:`layer_flop_parts` and :func:`block_anatomy` split one block by part (``BLOCK_PARTS``): where its
  parameters, FLOPs and saved bytes are.
- :func:`layer_communication` counts one block's tensor-parallel collectives and the bytes a rank sends
  for them, with and without sequence parallelism (Korthikanti et al. 2022, §4).

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

from d2lmp.model.alpha_beta import ring_bytes_per_rank
from d2lmp.model.vocabulary import RECOMPUTE, Recompute

__all__ = ["RECOMPUTE", "Transformer", "ParameterCount", "layer_parameters", "parameter_count",
           "narayanan_parameters", "layer_forward_flops", "forward_flops", "training_flops", "narayanan_flops",
           "attention_core_flops", "LayerFlops", "layer_flop_parts", "ActivationPart", "activation_parts",
           "activation_bytes_per_layer", "korthikanti_bytes_per_layer", "layernorm_statistics", "BLOCK_PARTS",
           "BlockAnatomy", "block_anatomy", "LayerCommunication", "layer_communication"]

# ``RECOMPUTE`` (what the backward recomputes) is the vocabulary's, re-exported here.
# The parts of a block, in the order data flows through them (attention core: scores, softmax, weighted values).
BLOCK_PARTS = ("LayerNorms", "QKV projection", "attention core", "output projection", "MLP")


@dataclass(frozen=True)
class Transformer:
    """The shape of a decoder-only transformer language model.

    ``ffn`` None means ``4 * hidden``; ``kv_heads`` None means one key/value head per query head
    (multi-head attention; fewer is grouped-query attention). ``gated_mlp`` is a SwiGLU-style MLP
    (three matrices of ``hidden × ffn``). ``bias`` adds biases to every linear layer and LayerNorm
    (GPT-2 and Megatron's GPT do; Llama does not). ``tied_embeddings``: the LM head reuses the token
    embedding. ``learned_positions``: a ``seq × hidden`` position embedding (rotary embeddings have none).
    ``dropout``: the model applies dropout in training, so its backward keeps the masks (Megatron's GPT does,
    Korthikanti et al. 2022, §4.1; MPT and the Llama of nanotron and torchtitan train without: ``cluster.runs``);
    the activation counts below read it where not told otherwise.
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
    dropout: bool = True

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


def _projection_parameters(m: Transformer) -> tuple[int, int]:
    """(Q, K and V projections, output projection) parameters of one block."""
    h, kv, b = m.hidden, m.kv_hidden, 1 if m.bias else 0
    return h * (h + 2 * kv) + b * (h + 2 * kv), h * h + b * h


def layer_parameters(m: Transformer) -> tuple[int, int, int]:
    """(attention, MLP, LayerNorm) parameters of one block."""
    h, f = m.hidden, m.ffn_size
    b = 1 if m.bias else 0
    attention = sum(_projection_parameters(m))
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


@dataclass(frozen=True)
class LayerFlops:
    """Forward FLOPs of one block by matrix product; ``scores + values`` is :func:`attention_core_flops`."""

    qkv: int  # the Q, K and V projections
    scores: int  # Q·Kᵀ over the full seq × seq square
    values: int  # softmax(...)·V
    output: int  # the output projection
    mlp: int  # the MLP's two (gated: three) matrices

    @property
    def total(self) -> int:
        return self.qkv + self.scores + self.values + self.output + self.mlp


def layer_flop_parts(m: Transformer, batch: int = 1) -> LayerFlops:
    """Forward FLOPs of one block for ``batch`` sequences, product by product (2 per multiply-add)."""
    tokens, h, f = batch * m.seq, m.hidden, m.ffn_size
    core = attention_core_flops(m, batch)
    return LayerFlops(qkv=2 * tokens * h * (h + 2 * m.kv_hidden), scores=core // 2, values=core // 2,
                      output=2 * tokens * h * h, mlp=2 * tokens * h * f * (3 if m.gated_mlp else 2))


def layer_forward_flops(m: Transformer, batch: int = 1) -> int:
    """Forward FLOPs of one block for ``batch`` sequences: its matrix products, 24·b·s·h² + 4·b·s²·h for GPT."""
    return layer_flop_parts(m, batch).total


def forward_flops(m: Transformer, batch: int = 1) -> int:
    """Forward FLOPs of the whole model: every block and the logits (2·b·s·h·V)."""
    return m.layers * layer_forward_flops(m, batch) + 2 * batch * m.seq * m.hidden * m.vocab


def training_flops(m: Transformer, batch: int = 1, recompute: Recompute = "none") -> int:
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
    ``a·s²`` wide (what selective recomputation and flash attention do not keep); ``part``: the part of
    the block (one of ``BLOCK_PARTS``) whose backward needs it.
    """

    name: str
    nbytes: int
    tensor_parallel: bool
    scores: bool = False
    part: str = ""


def activation_parts(m: Transformer, micro_batch: int = 1, dropout: bool | None = None, value_bytes: int = 2,
                     mask_bytes: int = 1) -> list[ActivationPart]:
    """The tensors one block saves, following Korthikanti et al. (2022), §4.1, for one device (t = 1).

    ``value_bytes`` is the size of an activation (2 for 16-bit), ``mask_bytes`` that of a dropout mask
    (1: a byte per element). Without dropout the three masks and the dropped-out scores disappear;
    ``dropout`` None takes the model's (``Transformer.dropout``).
    """
    dropout = m.dropout if dropout is None else dropout
    sb, h, f, kv = m.seq * micro_batch, m.hidden, m.ffn_size, m.kv_hidden
    scores = m.heads * m.seq**2 * micro_batch
    p, k = value_bytes, mask_bytes
    norms, qkv, core, out, mlp = BLOCK_PARTS
    parts = [
        ActivationPart("LayerNorm 1 input", p * sb * h, False, part=norms),
        ActivationPart("QKV input (LayerNorm 1 output)", p * sb * h, False, part=qkv),
        ActivationPart("Q", p * sb * h, True, part=core),
        ActivationPart("K", p * sb * kv, True, part=core),
        ActivationPart("V", p * sb * kv, True, part=core),
        ActivationPart("softmax output", p * scores, True, scores=True, part=core),
    ]
    if dropout:
        parts += [ActivationPart("attention dropout mask", k * scores, True, scores=True, part=core),
                  ActivationPart("attention dropout output", p * scores, True, scores=True, part=core)]
    parts.append(ActivationPart("output projection input", p * sb * h, True, part=out))
    if dropout:
        parts.append(ActivationPart("attention output dropout mask", k * sb * h, False, part=out))
    parts += [ActivationPart("LayerNorm 2 input", p * sb * h, False, part=norms),
              ActivationPart("MLP input (LayerNorm 2 output)", p * sb * h, False, part=mlp)]
    if m.gated_mlp:
        parts += [ActivationPart("gate output (activation input)", p * sb * f, True, part=mlp),
                  ActivationPart("activation output", p * sb * f, True, part=mlp),
                  ActivationPart("up projection output", p * sb * f, True, part=mlp),
                  ActivationPart("down projection input", p * sb * f, True, part=mlp)]
    else:
        parts += [ActivationPart("first linear output (GeLU input)", p * sb * f, True, part=mlp),
                  ActivationPart("GeLU output (second linear input)", p * sb * f, True, part=mlp)]
    if dropout:
        parts.append(ActivationPart("MLP dropout mask", k * sb * h, False, part=mlp))
    return parts


def activation_bytes_per_layer(m: Transformer, micro_batch: int = 1, tp: int = 1, sequence_parallel: bool = False,
                               recompute: Recompute = "none", dropout: bool | None = None, value_bytes: int = 2,
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
                                sequence_parallel: bool = False, recompute: Recompute = "none") -> float:
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


@dataclass(frozen=True)
class LayerCommunication:
    """The collectives one block's forward and backward issue on each rank of a ``tp``-way tensor group, each on
    the block's whole activation of ``activation_bytes`` = value bytes · s·b·h; ``wire_bytes`` is what a rank
    sends for them under ring algorithms (all-reduce 2(t−1)/t of the bytes, all-gather and reduce-scatter
    (t−1)/t each)."""

    tp: int
    activation_bytes: int
    all_reduces: int
    all_gathers: int
    reduce_scatters: int

    @property
    def wire_bytes(self) -> int:
        def ring(collective: str) -> float:
            return ring_bytes_per_rank(collective, self.activation_bytes, self.tp)

        halves = self.all_gathers + self.reduce_scatters  # each (t−1)/t of the activation
        return round(self.all_reduces * ring("all_reduce") + halves * ring("all_gather"))


def layer_communication(m: Transformer, micro_batch: int = 1, tp: int = 2, sequence_parallel: bool = False,
                        regather: bool = True, value_bytes: int = 2) -> LayerCommunication:
    """One block's tensor-parallel collectives per step (Korthikanti et al. 2022, §4).

    Tensor parallelism: four all-reduces (after the attention and the MLP forward, before them backward).
    Sequence parallelism: four all-gathers and four reduce-scatters instead, the same bytes on the wire,
    since a ring all-reduce is a reduce-scatter followed by an all-gather. A column-parallel layer that
    keeps only its chunk of the gathered input (``regather``, as the activation count assumes) gathers it
    again in backward: two more all-gathers per block.
    """
    if tp < 1:
        raise ValueError(f"tp must be at least 1, got {tp}")
    n = value_bytes * m.seq * micro_batch * m.hidden
    if not sequence_parallel:
        return LayerCommunication(tp, n, all_reduces=4, all_gathers=0, reduce_scatters=0)
    return LayerCommunication(tp, n, all_reduces=0, all_gathers=4 + 2 * regather, reduce_scatters=4)


def layernorm_statistics(m: Transformer, micro_batch: int = 1, stat_bytes: int = 4) -> list[ActivationPart]:
    """What Korthikanti et al.'s count leaves out: each LayerNorm also keeps a mean and 1/σ per token.

    Two LayerNorms × two values × ``s·b`` tokens × ``stat_bytes`` (PyTorch keeps them in float32 on CUDA
    for 16-bit inputs, in the input's own type on the CPU); small next to ``s·b·h``.
    """
    sb = m.seq * micro_batch
    return [ActivationPart(f"LayerNorm {i} mean and 1/σ", 2 * stat_bytes * sb, False, part=BLOCK_PARTS[0])
            for i in (1, 2)]


@dataclass(frozen=True)
class BlockAnatomy:
    """Where one block's parameters, forward FLOPs and saved activation bytes are, by part (``parts``)."""

    parts: tuple[str, ...]
    parameters: tuple[int, ...]
    flops: tuple[int, ...]
    activation_bytes: tuple[int, ...]


def block_anatomy(m: Transformer, micro_batch: int = 1, dropout: bool | None = None, value_bytes: int = 2,
                  mask_bytes: int = 1) -> BlockAnatomy:
    """One block's parameters, forward FLOPs (``micro_batch`` sequences) and saved bytes, split by ``BLOCK_PARTS``.

    The saved bytes are :func:`activation_parts` (Q, K and V count for the attention core, whose products
    need them); the LayerNorms' own statistics are not included.
    """
    qkv_params, out_params = _projection_parameters(m)
    _, mlp_params, norm_params = layer_parameters(m)
    fl = layer_flop_parts(m, micro_batch)
    saved = activation_parts(m, micro_batch, dropout, value_bytes, mask_bytes)
    return BlockAnatomy(parts=BLOCK_PARTS, parameters=(norm_params, qkv_params, 0, out_params, mlp_params),
                        flops=(0, fl.qkv, fl.scores + fl.values, fl.output, fl.mlp),
                        activation_bytes=tuple(sum(p.nbytes for p in saved if p.part == name) for name in BLOCK_PARTS))
