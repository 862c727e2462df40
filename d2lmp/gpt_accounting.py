"""The small GPT's accounting measured on the running model, against ``transformer_accounting``'s formulas.

Three counts, each compared under the same assumptions as the formula (dtype, dropout, recomputation):

- **parameters**: ``numel`` of the model's tensors by part against ``parameter_count`` (a tied LM head
  is the token embedding, counted once);
- **FLOPs**: ``torch.utils.flop_counter.FlopCounterMode`` counts matrix products only (``mm``, ``addmm``,
  ``bmm``, ...; 2 per multiply-add), as the formulas do, and the written-out attention computes the full
  ``seq × seq`` square before masking it, as the formulas count it. (It counts ``scaled_dot_product_attention``
  as the full square too on CUDA, and not at all on the CPU, whose fused kernel has no formula in it:
  these comparisons use the written-out attention.) With recomputation, PyTorch's checkpoint stops
  running a segment again once the last tensor it saves is back; what it skips is itemised;
- **saved activation bytes** of one block: every storage autograd saves for backward, counted once and
  credited to the module running (``saved_tensors_hooks``), against ``activation_parts``. The formula
  leaves out the LayerNorms' mean and 1/σ and, in our attention, the causal mask buffer that
  ``masked_fill`` keeps: :func:`saved_extras` itemises them, so measured = formula + extras exactly.
  (With more than one sequence, the two attention products first copy the per-head views of Q, K and V into
  contiguous tensors and keep the copies: they are exactly the formula's Q, K and V bytes; with one
  sequence it keeps views of the fused QKV output instead, again 3·s·b·h values.)

Each comparison is a :class:`Comparison` (name, formula, measured, difference, explanation);
:func:`comparison_table` prints a list of them. :func:`block_comparisons` compares saved bytes measured on
one rank of a tensor-parallel block (``parallel.tp_accounting``) with the same formula per rank.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import cast

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from d2lmp.gpt import GPT, Block, GPTConfig, lm_loss
from d2lmp.model.transformer_accounting import (
    activation_bytes_per_layer,
    activation_parts,
    forward_flops,
    layer_flop_parts,
    layernorm_statistics,
    parameter_count,
    training_flops,
)
from d2lmp.report import table

__all__ = ["Extra", "Comparison", "comparison_table", "parameter_comparisons", "count_flops",
           "recompute_flops_skipped", "flop_comparisons", "MODULE_OF_PART", "saved_bytes_by_module",
           "dropout_mask_bytes", "layernorm_stat_bytes", "saved_extras", "activation_comparisons", "block_comparisons",
           "activation_summary"]


@dataclass(frozen=True)
class Extra:
    """One itemised gap between a formula and a measurement: what it is, how much, and why."""

    name: str
    amount: int
    why: str


@dataclass(frozen=True)
class Comparison:
    """A formula's value against the running model's, with the gap itemised in ``extras``."""

    name: str
    unit: str  # "parameters", "FLOP" or "bytes"
    formula: int
    measured: int
    extras: tuple[Extra, ...] = ()
    note: str = ""

    @property
    def difference(self) -> int:
        return self.measured - self.formula

    @property
    def itemised(self) -> int:
        return sum(e.amount for e in self.extras)

    @property
    def explained(self) -> bool:
        """The measurement equals the formula plus the itemised extras, exactly."""
        return self.difference == self.itemised

    @property
    def explanation(self) -> str:
        items = [f"{e.name} {e.amount:+,}" for e in self.extras]
        text = "; ".join([self.note] * bool(self.note) + items)
        return text or ("exact" if self.difference == 0 else "not itemised")


def comparison_table(rows: list[Comparison]) -> str:
    """The comparisons as an aligned text table."""
    body = [[r.name, f"{r.formula:,}", f"{r.measured:,}", f"{r.difference:+,}", r.explanation] for r in rows]
    return table(body, ["", f"formula ({rows[0].unit})" if rows else "formula", "measured", "difference",
                        "explanation"])


def _numel(params: object) -> int:
    return sum(p.numel() for p in params)  # type: ignore[attr-defined]


def parameter_comparisons(model: GPT) -> list[Comparison]:
    """The model's parameters by part against ``parameter_count`` of its shape."""
    count, layers = parameter_count(model.config.shape()), model.config.layers
    blocks = [cast(Block, b) for b in model.blocks]
    tied = model.head.lm_head.weight is model.embed.token.weight
    rows = [("token embedding", count.token_embedding, model.embed.token.weight.numel(), ""),
            ("position embedding", count.position_embedding, model.embed.position.weight.numel(), ""),
            (f"attention ({layers} blocks)", layers * count.attention,
             _numel(p for b in blocks for p in b.attn.parameters()), ""),
            (f"MLP ({layers} blocks)", layers * count.mlp, _numel(p for b in blocks for p in b.mlp.parameters()), ""),
            (f"LayerNorms ({layers} blocks)", layers * count.norms,
             _numel(p for b in blocks for ln in (b.ln1, b.ln2) for p in ln.parameters()), ""),
            ("final LayerNorm", count.final_norm, _numel(model.head.ln.parameters()), ""),
            ("LM head", count.lm_head, 0 if tied else model.head.lm_head.weight.numel(),
             "tied: it is the token embedding" if tied else ""),
            ("total", count.total, _numel(model.parameters()), "each tensor once")]
    return [Comparison(name, "parameters", f, m, note=note) for name, f, m, note in rows]


def count_flops(model: nn.Module, idx: torch.Tensor, targets: torch.Tensor | None = None) -> tuple[int, dict[str, int]]:
    """FLOPs ``FlopCounterMode`` counts in ``model(idx)`` (and the loss's backward, given ``targets``).

    Returns (total, {module path: FLOPs}), paths as the counter names them ("GPT.blocks.0.attn.qkv").
    """
    with FlopCounterMode(display=False) as counter:
        logits = model(idx)
        if targets is not None:
            torch.autograd.backward(lm_loss(logits, targets))
    return counter.get_total_flops(), {k: sum(v.values()) for k, v in counter.get_flop_counts().items()}


def recompute_flops_skipped(config: GPTConfig, batch: int) -> tuple[Extra, ...]:
    """The products PyTorch's checkpoint does not run again (it stops once the last saved tensor is back).

    A product saves its inputs before it runs, so when the last saves of a recomputed segment are a
    product's inputs, that product is skipped: softmax·V in selective recomputation; in full
    recomputation the MLP's second linear, unless a dropout after it saves a mask later.
    """
    parts, layers = layer_flop_parts(config.shape(), batch), config.layers
    if config.recompute == "selective":
        return (Extra("softmax·V not recomputed", -layers * parts.values,
                      "checkpoint stops once V, saved before that product runs, is back"),)
    if config.recompute == "full" and config.dropout == 0:
        return (Extra("MLP's second linear not recomputed", -layers * parts.mlp // 2,
                      "checkpoint stops once its inputs, saved before it runs, are back"),)
    return ()


def flop_comparisons(config: GPTConfig, batch: int = 2, seed: int = 0) -> list[Comparison]:
    """FlopCounterMode on the first block's parts, the LM head, the forward and three training steps."""
    config = replace(config, flash=False, recompute="none")
    m, g = config.shape(), torch.Generator().manual_seed(seed)
    idx, targets = (torch.randint(config.vocab, (batch, config.seq), generator=g) for _ in range(2))
    model = GPT(config, seed).train()
    total, by = count_flops(model, idx)
    fl = layer_flop_parts(m, batch)
    rows = [Comparison("block 1: QKV projection", "FLOP", fl.qkv, by["GPT.blocks.0.attn.qkv"]),
            Comparison("block 1: attention core (full square)", "FLOP", fl.scores + fl.values,
                       by["GPT.blocks.0.attn.core"]),
            Comparison("block 1: output projection", "FLOP", fl.output, by["GPT.blocks.0.attn.proj"]),
            Comparison("block 1: MLP", "FLOP", fl.mlp, by["GPT.blocks.0.mlp"]),
            Comparison("LM head (logits)", "FLOP", 2 * batch * m.seq * m.hidden * m.vocab, by["GPT.head"]),
            Comparison("forward", "FLOP", forward_flops(m, batch), total)]
    for recompute in ("none", "selective", "full"):
        variant = replace(config, recompute=recompute)
        measured, _ = count_flops(GPT(variant, seed).train(), idx, targets)
        rows.append(Comparison(f"training step, recompute {recompute}", "FLOP", training_flops(m, batch, recompute),
                               measured, recompute_flops_skipped(variant, batch)))
    return rows


# Which module of a Block saves each of Korthikanti et al.'s tensors ("" is the block itself).
MODULE_OF_PART = {
    "LayerNorm 1 input": "ln1", "QKV input (LayerNorm 1 output)": "attn.qkv",
    "Q": "attn.core", "K": "attn.core", "V": "attn.core", "softmax output": "attn.core",
    "attention dropout mask": "attn.core", "attention dropout output": "attn.core",
    "output projection input": "attn.proj", "attention output dropout mask": "attn.drop",
    "LayerNorm 2 input": "ln2", "MLP input (LayerNorm 2 output)": "mlp.fc",
    "first linear output (GeLU input)": "mlp.act", "GeLU output (second linear input)": "mlp.proj",
    "MLP dropout mask": "mlp.drop",
}


@contextlib.contextmanager
def _running_modules(block: nn.Module) -> Iterator[list[str]]:
    """Within the ``with``, the list yielded holds the paths of the modules running a forward, innermost last."""
    running: list[str] = []

    def enter(name: str) -> Callable[[nn.Module, object], None]:
        def pre(mod: nn.Module, args: object) -> None:
            running.append(name)
        return pre

    def leave(mod: nn.Module, args: object, out: object) -> None:
        running.pop()  # returns None: the output stays as it is

    hooks = [h for name, module in block.named_modules()
             for h in (module.register_forward_pre_hook(enter(name)),
                       module.register_forward_hook(leave, always_call=True))]
    try:
        yield running
    finally:
        for h in hooks:
            h.remove()


def saved_bytes_by_module(block: nn.Module, x: torch.Tensor) -> dict[str, int]:
    """Run ``block(x)`` and credit every storage autograd saves to the innermost module running.

    Each storage counts once, with its full size; parameters are left out (buffers are not). Keys
    are module paths inside ``block`` ("attn.core"; "" for the block itself).
    """
    params = {p.untyped_storage().data_ptr() for p in block.parameters()}
    seen: set[int] = set()
    saved: dict[str, int] = {}
    with _running_modules(block) as running:
        def pack(t: torch.Tensor) -> torch.Tensor:
            key = t.untyped_storage().data_ptr()
            if key not in params and key not in seen:
                seen.add(key)
                where = running[-1] if running else ""
                saved[where] = saved.get(where, 0) + t.untyped_storage().nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            block(x)
    return saved


def dropout_mask_bytes(device_type: str, value_bytes: int) -> int:
    """Bytes per element of the dropout mask PyTorch keeps: CUDA's fused kernel keeps a bool; the CPU
    multiplies by a scaled random tensor of the input's type and keeps that."""
    return 1 if device_type == "cuda" else value_bytes


def layernorm_stat_bytes(device_type: str, value_bytes: int) -> int:
    """Bytes of a LayerNorm's saved mean and 1/σ: float32 on CUDA (at least), the input's type on the CPU."""
    return max(4, value_bytes) if device_type == "cuda" else value_bytes


def saved_extras(config: GPTConfig, batch: int, value_bytes: int, device_type: str = "cpu", tp: int = 1,
                 sequence_parallel: bool = False) -> dict[str, tuple[Extra, ...]]:
    """What one block saves beyond ``activation_parts``, by module: LayerNorm statistics, the causal mask, and
    with ``flash`` the fused kernel's log-sum-exp (flash keeps no scores: compared with the selective formula).

    Per rank of a ``tp``-way tensor-parallel block: the log-sum-exp of its heads, the statistics of its
    chunk of the sequence under ``sequence_parallel``; the causal mask is whole on every rank."""
    if config.recompute == "full":
        return {}
    stat = layernorm_stat_bytes(device_type, value_bytes)
    stats = layernorm_statistics(config.shape(), batch, stat)
    why = f"LayerNorm keeps its mean and 1/σ, {stat} B per token each"
    chunks = tp if sequence_parallel else 1
    extras: dict[str, tuple[Extra, ...]] = {"ln1": (Extra(stats[0].name, stats[0].nbytes // chunks, why),),
                                           "ln2": (Extra(stats[1].name, stats[1].nbytes // chunks, why),)}
    if config.flash:
        if config.dropout > 0 and device_type == "cpu":
            raise ValueError("flash attention with dropout runs PyTorch's math fallback on the CPU: not itemised")
        extras["attn.core"] = (Extra("log-sum-exp per query and head", 4 * batch * config.seq * config.heads // tp,
                                     "float32: the fused backward rebuilds the softmax from it"),)
    elif config.recompute == "none":
        extras["attn.core"] = (Extra("causal mask buffer", config.seq**2,
                                     "masked_fill keeps the bool mask (seq × seq bytes, the whole buffer)"),)
    return extras


def _formula_by_module(config: GPTConfig, batch: int, value_bytes: int, mask_bytes: int, tp: int = 1,
                       sequence_parallel: bool = False) -> dict[str, int]:
    m = config.shape()
    if config.recompute == "full":  # the block input, which checkpoint keeps (a chunk of it under SP)
        return {"": value_bytes * batch * m.seq * m.hidden // (tp if sequence_parallel else 1)}
    selective = config.recompute == "selective" or config.flash  # flash keeps no scores either
    out: dict[str, int] = {}
    for part in activation_parts(m, batch, config.dropout > 0, value_bytes, mask_bytes):
        where = MODULE_OF_PART[part.name]
        if config.flash and where == "attn.proj":
            where = "attn.core"  # the fused kernel writes its output in (b, s, heads·d) order and keeps it:
            # merging the heads is then free, and the projection's input is that same storage
        if not (selective and part.scores):
            split = tp if part.tensor_parallel or sequence_parallel else 1
            out[where] = out.get(where, 0) + part.nbytes // split
    return out


def activation_comparisons(config: GPTConfig, batch: int = 2, dtype: torch.dtype = torch.float32,
                           seed: int = 0) -> list[Comparison]:
    """One block's saved bytes in training mode, module by module, then in total, against the formula.

    Measured on the CPU with ``config``'s dropout (on when > 0), recomputation and attention, in ``dtype``;
    the total's formula is ``activation_bytes_per_layer`` (the selective one for ``flash``).
    """
    value_bytes = torch.empty((), dtype=dtype).element_size()
    block = cast(Block, GPT(config, seed).to(dtype).train().blocks[0])
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, config.seq, config.hidden, generator=g).to(dtype).requires_grad_()
    measured = saved_bytes_by_module(block, x)
    return block_comparisons(config, batch, measured, value_bytes, _label(config, dtype))


def block_comparisons(config: GPTConfig, batch: int, measured: dict[str, int], value_bytes: int, label: str,
                      tp: int = 1, sequence_parallel: bool = False,
                      more: dict[str, tuple[Extra, ...]] | None = None) -> list[Comparison]:
    """``measured`` (``saved_bytes_by_module`` of one block on one rank of a ``tp``-way tensor-parallel group, on
    the CPU) against the formula, module by module, then in total (``activation_bytes_per_layer``, named
    ``label``); ``more`` adds itemised extras by module to those of ``saved_extras``."""
    mask_bytes = dropout_mask_bytes("cpu", value_bytes)
    formula = _formula_by_module(config, batch, value_bytes, mask_bytes, tp, sequence_parallel)
    extras = saved_extras(config, batch, value_bytes, tp=tp, sequence_parallel=sequence_parallel)
    for name, items in (more or {}).items():
        extras[name] = extras.get(name, ()) + items
    modules = list(dict.fromkeys([*formula, *measured, *extras]))
    rows = [Comparison(f"  {name or 'block input (checkpoint)'}", "bytes", formula.get(name, 0),
                       measured.get(name, 0), extras.get(name, ())) for name in modules]
    recompute = "selective" if config.flash else config.recompute
    total = activation_bytes_per_layer(config.shape(), batch, tp, sequence_parallel, recompute, config.dropout > 0,
                                       value_bytes, mask_bytes)
    rows.append(Comparison(label, "bytes", int(total), sum(measured.values()),
                           tuple(e for name in modules for e in extras.get(name, ()))))
    return rows


def _label(config: GPTConfig, dtype: torch.dtype) -> str:
    attention = "flash attention" if config.flash else f"recompute {config.recompute}"
    return f"{attention}, dropout {'on' if config.dropout > 0 else 'off'}, {str(dtype).removeprefix('torch.')}"


def activation_summary(config: GPTConfig, batch: int = 2, dropout: float = 0.1, seed: int = 0) -> list[Comparison]:
    """The block totals of :func:`activation_comparisons` for recompute none/selective/full × dropout off and
    ``dropout`` × float32 and bfloat16, then flash attention without dropout in both types."""
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        for recompute in ("none", "selective", "full"):
            for p in (0.0, dropout):
                variant = replace(config, recompute=recompute, dropout=p, flash=False)
                rows.append(activation_comparisons(variant, batch, dtype, seed)[-1])
        rows.append(activation_comparisons(replace(config, recompute="none", dropout=0.0, flash=True),
                                           batch, dtype, seed)[-1])
    return rows
