"""A small GPT: a decoder-only transformer language model, written out so that every step can be read.

Token and learned position embeddings, then ``layers`` pre-LayerNorm blocks (causal multi-head
self-attention, then a GELU MLP of width 4h, each added back to the residual stream), a final LayerNorm
and the LM head, which by default reuses the token embedding (tied weights). Biases sit in every linear
layer and LayerNorm, as in GPT-2 (Radford et al., 2019; ``radford2019language``); the weights start from
N(0, 0.02) (GPT, ``radford2018improving``) and the two projections that write into the residual stream
from N(0, 0.02/√(2·layers)), GPT-2's scaling by the number of residual layers. The file follows the plan of
nanoGPT's model (``karpathy_nanogpt``). :class:`GPTConfig` holds the shape (its :meth:`~GPTConfig.shape`
is what ``transformer_accounting`` counts); ``PRESETS`` range from a few thousand parameters to ~10 M, all
without dropout (so that two computations of the same model agree exactly) until asked for.

The same model is an ``nn.Sequential`` of stages, ``[embed, block1, ..., blockN, head]``
(:meth:`GPT.sequential`), for the pipeline code. Tied weights are then one Parameter shared by the first
and the last stage: in one process that is exact; cut into pipeline stages on different ranks, each of the
two ranks holds its own copy, and the copies stay equal only if each gets the sum of both gradients (an
all-reduce between the first and the last stage). A pipeline builds ``tied=False``, or sums them itself.

Weight layout, for tensor parallelism (Megatron-LM; ``shoeybi2019megatron``). Linear weights are
``(out, in)``. ``attn.qkv`` is one fused ``(3h, h)`` matrix: rows ``[0, h)`` give Q, ``[h, 2h)`` K,
``[2h, 3h)`` V, and within each, head ``i`` owns rows ``[i·d, (i+1)·d)`` (d = h / heads). A rank that
keeps some heads takes the rows :func:`head_rows` lists (its Q rows, then K, then V: the same layout with
fewer heads) from the weight and the bias: the column-parallel split. ``attn.proj`` (``(h, h)``) is split
by its input columns, the same per-head ranges (row-parallel: partial outputs are summed, the bias added
once). ``mlp.fc`` ``(4h, h)`` splits by rows, ``mlp.proj`` ``(h, 4h)`` by the matching columns.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from d2lmp.model.transformer_accounting import RECOMPUTE, Transformer
from d2lmp.model.vocabulary import Recompute

__all__ = ["GPTConfig", "PRESETS", "preset", "causal_attention", "AttentionCore", "CausalSelfAttention", "MLP",
           "Block", "Embedding", "Head", "GPT", "gpt_sequential", "head_rows", "lm_loss", "generate"]

INIT_STD = 0.02  # GPT-2's initial weight scale


@dataclass(frozen=True)
class GPTConfig:
    """A GPT's shape and options.

    ``dropout``: probability after the embeddings, on the attention weights and on each block's two
    residual branches (0: off, outputs are deterministic). ``tied``: the LM head reuses the token
    embedding. ``flash``: attention by ``F.scaled_dot_product_attention`` instead of the written-out
    product. ``recompute``: "none", "selective" (each attention core is recomputed in backward) or
    "full" (each block keeps only its input and runs again in backward).
    """

    layers: int = 2
    hidden: int = 16
    heads: int = 2
    seq: int = 16
    vocab: int = 96
    dropout: float = 0.0
    bias: bool = True
    tied: bool = True
    flash: bool = False
    recompute: Recompute = "none"

    def __post_init__(self) -> None:
        self.shape()  # validates the sizes
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")
        if self.recompute not in RECOMPUTE:
            raise ValueError(f"recompute must be one of {RECOMPUTE}, got {self.recompute!r}")

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def shape(self) -> Transformer:
        """The shape ``transformer_accounting`` counts (learned positions, a 4h GELU MLP)."""
        return Transformer(layers=self.layers, hidden=self.hidden, heads=self.heads, seq=self.seq,
                           vocab=self.vocab, bias=self.bias, tied_embeddings=self.tied)


PRESETS: dict[str, GPTConfig] = {
    "tiny": GPTConfig(layers=2, hidden=16, heads=2, seq=16),  # ~8 thousand parameters: tests, quick mode
    "mini": GPTConfig(layers=4, hidden=64, heads=4, seq=64),  # ~0.2 M: a CPU trains it in minutes
    "small": GPTConfig(layers=6, hidden=384, heads=6, seq=256),  # ~10.8 M: full-size runs
}


def preset(name: str, **changes: object) -> GPTConfig:
    """The preset ``name`` ("tiny", "mini", "small") with ``changes`` applied, e.g. ``preset("tiny", vocab=65)``."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
    return replace(PRESETS[name], **changes)  # type: ignore[arg-type]


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor,
                     dropout: float = 0.0, training: bool = False) -> torch.Tensor:
    """softmax(q·kᵀ/√d, masked so that position i sees positions ≤ i) · v, on ``(batch, heads, seq, d)``.

    ``mask`` is True where a query must not look (above the diagonal). The scores are the full
    ``seq × seq`` square; the mask only sets the future to -inf before the softmax.
    """
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    scores = scores.masked_fill(mask, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    weights = F.dropout(weights, dropout, training)
    return weights @ v


class AttentionCore(nn.Module):
    """The part of attention without weights: scores, mask, softmax, dropout, weighted sum of the values."""

    causal_mask: torch.Tensor  # (seq, seq) bool, True above the diagonal: a buffer, moved with the model

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.dropout, self.flash = config.dropout, config.flash
        self.recompute = config.recompute == "selective"
        mask = torch.ones(config.seq, config.seq, dtype=torch.bool).triu(1)
        self.register_buffer("causal_mask", mask, persistent=False)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        p = self.dropout if self.training else 0.0
        if self.flash:
            return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        s = q.size(-2)
        return causal_attention(q, k, v, self.causal_mask[:s, :s], p, self.training)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if self.recompute and torch.is_grad_enabled():  # keep q, k, v; run attend again in backward
            out: torch.Tensor = checkpoint(self.attend, q, k, v, use_reentrant=False)
            return out
        return self.attend(q, k, v)


class CausalSelfAttention(nn.Module):
    """Fused QKV projection, split into heads, the attention core, heads merged, output projection, dropout."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        h = config.hidden
        self.heads = config.heads
        self.qkv = nn.Linear(h, 3 * h, bias=config.bias)  # rows: Q, K, V; head i at rows i*d:(i+1)*d of each
        self.core = AttentionCore(config)
        self.proj = nn.Linear(h, h, bias=config.bias)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(x).split(h, dim=2)  # each (b, s, h)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))  # (b, a, s, d)
        y = self.core(q, k, v)
        y = y.transpose(1, 2).contiguous().view(b, s, h)  # heads side by side again
        out: torch.Tensor = self.drop(self.proj(y))
        return out


class MLP(nn.Module):
    """Linear h → 4h, GELU, linear 4h → h, dropout."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        h = config.hidden
        self.fc = nn.Linear(h, 4 * h, bias=config.bias)
        self.act = nn.GELU()
        self.proj = nn.Linear(4 * h, h, bias=config.bias)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.drop(self.proj(self.act(self.fc(x))))
        return out


class Block(nn.Module):
    """x + attention(LayerNorm(x)), then x + MLP(LayerNorm(x)): a pre-LayerNorm transformer block."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(config.hidden, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln2 = nn.LayerNorm(config.hidden, bias=config.bias)
        self.mlp = MLP(config)
        self.recompute = config.recompute == "full"

    def body(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        out: torch.Tensor = x + self.mlp(self.ln2(x))
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.recompute and torch.is_grad_enabled():  # keep only x; run the block again in backward
            out: torch.Tensor = checkpoint(self.body, x, use_reentrant=False)
            return out
        return self.body(x)


class Embedding(nn.Module):
    """The first stage: token embedding + position embedding, dropout; ``(batch, seq)`` ids → ``(batch, seq, h)``."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.seq = config.seq
        self.token = nn.Embedding(config.vocab, config.hidden)
        self.position = nn.Embedding(config.seq, config.hidden)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        s = idx.size(-1)
        if s > self.seq:
            raise ValueError(f"a sequence of {s} tokens is longer than the model's context of {self.seq}")
        positions = torch.arange(s, device=idx.device)
        out: torch.Tensor = self.drop(self.token(idx) + self.position(positions))
        return out


class Head(nn.Module):
    """The last stage: final LayerNorm and the LM head (hidden → vocabulary logits, no bias)."""

    def __init__(self, config: GPTConfig, tied_weight: torch.Tensor | None = None) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(config.hidden, bias=config.bias)
        self.lm_head = nn.Linear(config.hidden, config.vocab, bias=False)
        if tied_weight is not None:
            self.lm_head.weight = tied_weight  # one Parameter, the token embedding's: (vocab, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.lm_head(self.ln(x))
        return out


class GPT(nn.Module):
    """The whole model: ``GPT(config, seed)(idx)`` gives logits of shape ``(batch, seq, vocab)``.

    The weights depend only on ``config`` and ``seed`` (a private generator draws them, so building a
    model leaves the global random state as it was).
    """

    def __init__(self, config: GPTConfig, seed: int = 0) -> None:
        super().__init__()
        self.config = config
        with torch.random.fork_rng(devices=[]):  # the default initialisers below draw from the global RNG
            self.embed = Embedding(config)
            self.blocks = nn.ModuleList(Block(config) for _ in range(config.layers))
            self.head = Head(config, self.embed.token.weight if config.tied else None)
        _init_weights(self, seed, config.layers)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x)
        out: torch.Tensor = self.head(x)
        return out

    def sequential(self) -> nn.Sequential:
        """This model's own modules (shared, not copied) as the stages ``embed, block1, ..., blockN, head``."""
        blocks = [(f"block{i + 1}", block) for i, block in enumerate(self.blocks)]
        return nn.Sequential(OrderedDict([("embed", self.embed), *blocks, ("head", self.head)]))


def _init_weights(model: nn.Module, seed: int, layers: int) -> None:
    g = torch.Generator().manual_seed(seed)
    norms = {id(p) for m in model.modules() if isinstance(m, nn.LayerNorm) for p in m.parameters()}
    with torch.no_grad():
        for name, p in model.named_parameters():  # a tied weight appears once
            if name.endswith("bias"):
                p.zero_()
            elif id(p) in norms:
                p.fill_(1.0)
            else:
                std = INIT_STD / math.sqrt(2 * layers) if name.endswith("proj.weight") else INIT_STD
                nn.init.normal_(p, 0.0, std, generator=g)


def gpt_sequential(config: GPTConfig, seed: int = 0) -> nn.Sequential:
    """``GPT(config, seed).sequential()``: the same weights, as stages for the pipeline (``build``)."""
    return GPT(config, seed).sequential()


def head_rows(config: GPTConfig, heads: range) -> torch.Tensor:
    """Indices of the fused QKV rows (weight and bias) that belong to ``heads``: their Q rows, then K, then V.

    ``weight[head_rows(c, range(0, 2))]`` is the QKV weight of a model with heads 0 and 1 only, in the
    same layout; the matching input columns of ``attn.proj`` are ``head_rows(c, heads)[:len(heads)*d]``.
    """
    if not heads or heads.start < 0 or heads.stop > config.heads or heads.step != 1:
        raise ValueError(f"heads must be a non-empty range of consecutive heads within 0..{config.heads}, "
                         f"got {heads}")
    d = config.head_dim
    rows = torch.arange(heads.start * d, heads.stop * d)
    return torch.cat([rows, rows + config.hidden, rows + 2 * config.hidden])


def lm_loss(logits: torch.Tensor, targets: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy of next-token predictions: logits ``(batch, seq, vocab)``, targets ``(batch, seq)``."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction=reduction)


@torch.no_grad()
def generate(model: nn.Module, idx: torch.Tensor, new_tokens: int, context: int, temperature: float = 1.0,
             seed: int = 0) -> torch.Tensor:
    """``idx`` ``(batch, t)`` followed by ``new_tokens`` sampled tokens, each from the last ``context`` ones."""
    g = torch.Generator(device=idx.device).manual_seed(seed)
    was_training = model.training
    model.eval()
    for _ in range(new_tokens):
        logits = model(idx[:, -context:])[:, -1, :] / temperature
        nxt = torch.multinomial(F.softmax(logits, dim=-1), 1, generator=g)
        idx = torch.cat([idx, nxt], dim=1)
    model.train(was_training)
    return idx
