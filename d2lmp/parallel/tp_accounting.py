"""One tensor-parallel block measured on its ranks: the bytes each rank saves for backward, and the bytes it sends.

``measure_block`` runs a ``TPBlock`` cut from the small GPT's first block on every rank of a tensor group.
Saved bytes are counted as ``gpt_accounting`` counts them on one device (every storage autograd saves,
credited to the module running, ``saved_bytes_by_module``) and compared module by module with the formula
per rank (``activation_bytes_per_layer`` with ``tp`` and ``sequence_parallel``), the few tensors it leaves
out itemised (``saved_extras``). The collectives are the ones a ``MessageLog`` logged during one forward and
backward, turned into bytes each rank sends (``MessageLog.wire_bytes``), against ``layer_communication``.
``closed_form`` compares a block's total with Korthikanti et al.'s closed forms (16-bit values, dropout),
sbh·(34 + 5as/h) on one device, sbh·(10 + 24/t + 5as/(ht)) under tensor parallelism and
sbh·(34/t + 5as/(ht)) with sequence parallelism, itemising the CPU's 2-byte dropout masks (the paper
counts one byte). ``activation_table`` measures every variant the table shows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import cast

import torch

from d2lmp.gpt import GPT, Block, GPTConfig
from d2lmp.gpt_accounting import (
    MODULE_OF_PART,
    Comparison,
    Extra,
    block_comparisons,
    dropout_mask_bytes,
    saved_bytes_by_module,
)
from d2lmp.model.transformer_accounting import (
    BLOCK_PARTS,
    activation_bytes_per_layer,
    activation_parts,
    korthikanti_bytes_per_layer,
    layer_communication,
)
from d2lmp.parallel.p2p_log import MessageLog
from d2lmp.parallel.transformer_tp import SEQ_DIM, TPBlock, TPGroup

__all__ = ["PARTS", "PART_OF_MODULE", "BlockMeasurement", "measure_block", "measure_full_block", "closed_form",
           "activation_table"]

PARTS = (*BLOCK_PARTS, "block input")  # "block input": all that full recomputation keeps
PART_OF_MODULE = {**{MODULE_OF_PART[p.name]: p.part for p in activation_parts(GPTConfig().shape())}, "": PARTS[-1]}


@dataclass(frozen=True)
class BlockMeasurement:
    """One rank's block: saved bytes against the formula (module rows, then the total), the same bytes by part
    of the block (``PARTS``), and its collectives (op, logged bytes, label) with the bytes it sent for them."""

    label: str
    config: GPTConfig
    batch: int
    value_bytes: int
    tp: int
    sequence_parallel: bool
    comparisons: tuple[Comparison, ...]
    saved_by_part: tuple[int, ...]
    calls: tuple[tuple[str, int, str], ...]
    wire_bytes: int
    formula_wire_bytes: int

    @property
    def total(self) -> Comparison:
        return self.comparisons[-1]


def _label(config: GPTConfig, tp: int, sequence_parallel: bool, regather: bool, dtype: torch.dtype) -> str:
    mode = "one device" if tp == 1 else f"TP{' + SP' if sequence_parallel else ''}, t={tp}"
    mode += ", input kept gathered" if sequence_parallel and not regather else ""
    dropout = "dropout" if config.dropout > 0 else "no dropout"
    return f"{mode}, recompute {config.recompute}, {dropout}, {str(dtype).removeprefix('torch.')}"


def _by_part(measured: dict[str, int]) -> tuple[int, ...]:
    return tuple(sum(n for module, n in measured.items() if PART_OF_MODULE[module] == part) for part in PARTS)


def _inputs(config: GPTConfig, batch: int, dtype: torch.dtype, seed: int) -> tuple[Block, torch.Tensor]:
    full = cast(Block, GPT(config, seed).to(dtype).train().blocks[0])
    x = torch.randn(batch, config.seq, config.hidden, generator=torch.Generator().manual_seed(seed)).to(dtype)
    return full, x


def measure_full_block(config: GPTConfig, batch: int = 2, dtype: torch.dtype = torch.float32,
                       seed: int = 0) -> BlockMeasurement:
    """The one-device block, measured the same way (no collectives)."""
    full, x = _inputs(config, batch, dtype, seed)
    value_bytes = x.element_size()
    measured = saved_bytes_by_module(full, x.requires_grad_())
    label = _label(config, 1, False, True, dtype)
    rows = block_comparisons(config, batch, measured, value_bytes, label)
    return BlockMeasurement(label, config, batch, value_bytes, 1, False, tuple(rows), _by_part(measured), (), 0, 0)


def measure_block(config: GPTConfig, tp: TPGroup, batch: int = 2, dtype: torch.dtype = torch.float32,
                  seed: int = 0) -> BlockMeasurement:
    """Call on every rank of ``tp``'s group: this rank's saved bytes and collectives for the split first block."""
    full, x = _inputs(config, batch, dtype, seed)
    block = TPBlock(full, config, tp).train()
    if tp.sequence_parallel:
        x = x.tensor_split(tp.size, SEQ_DIM)[tp.rank].contiguous()
    x.requires_grad_()
    value_bytes = x.element_size()
    torch.manual_seed(seed)  # dropout where every rank holds the whole activation: the same mask everywhere
    measured = saved_bytes_by_module(block, x)
    with MessageLog() as log:
        out = block(x)
        out.backward(torch.ones_like(out))
    label = _label(config, tp.size, tp.sequence_parallel, tp.regather, dtype)
    rows = block_comparisons(config, batch, measured, value_bytes, label, tp.size, tp.sequence_parallel,
                             _gathered_inputs(config, batch, value_bytes, tp))
    comm = layer_communication(config.shape(), batch, tp.size, tp.sequence_parallel, tp.regather, value_bytes)
    calls = tuple((c.op, c.bytes, c.label) for c in log.calls)
    return BlockMeasurement(label, config, batch, value_bytes, tp.size, tp.sequence_parallel, tuple(rows),
                            _by_part(measured), calls, log.wire_bytes(tp.size), comm.wire_bytes)


def _gathered_inputs(config: GPTConfig, batch: int, value_bytes: int, tp: TPGroup) -> dict[str, tuple[Extra, ...]]:
    """Without gathering again, each column-parallel layer keeps its whole gathered input, not its chunk."""
    if not tp.sequence_parallel or tp.regather or config.recompute == "full":
        return {}
    whole = value_bytes * batch * config.seq * config.hidden
    n = whole - whole // tp.size  # the gathered input beyond this rank's chunk
    why = "the gathered input is kept for the weight's gradient instead of being gathered again in backward"
    return {m: (Extra("whole gathered input", n, why),) for m in ("attn.qkv", "mlp.fc")}


def closed_form(measurement: BlockMeasurement) -> Comparison:
    """The block's total against Korthikanti et al.'s closed form; needs 16-bit values and dropout."""
    m, c = measurement, measurement.config
    if m.value_bytes != 2 or c.dropout == 0 or c.flash:
        raise ValueError("the closed forms count 16-bit activations with dropout and written-out attention")
    shape, recompute = c.shape(), c.recompute
    formula = korthikanti_bytes_per_layer(c.seq, m.batch, c.hidden, c.heads, m.tp, m.sequence_parallel, recompute)
    cpu_masks = (activation_bytes_per_layer(shape, m.batch, m.tp, m.sequence_parallel, recompute, True, 2,
                                            dropout_mask_bytes("cpu", 2))
                 - activation_bytes_per_layer(shape, m.batch, m.tp, m.sequence_parallel, recompute, True, 2, 1))
    masks = (Extra("dropout masks of 2 bytes, not 1", int(cpu_masks),
                   "the CPU keeps the scaled mask in the activation's type"),) if cpu_masks else ()
    return Comparison(m.label, "bytes", int(formula), m.total.measured, m.total.extras + masks)


def activation_table(tp: TPGroup, config: GPTConfig, batch: int = 2, dtype: torch.dtype = torch.bfloat16,
                     seed: int = 0) -> list[BlockMeasurement]:
    """Call on every rank of ``tp``'s group (its mode is ignored): one device, TP and TP + SP, each without
    recomputation and with selective recomputation, then TP + SP with full recomputation."""
    rows = [measure_full_block(replace(config, recompute=r), batch, dtype, seed) for r in ("none", "selective")]
    for recompute, sp in (("none", False), ("none", True), ("selective", False), ("selective", True), ("full", True)):
        mode = replace(tp, sequence_parallel=sp, regather=True)
        rows.append(measure_block(replace(config, recompute=recompute), mode, batch, dtype, seed))
    return rows

