"""How large a model each strategy can train: the cost model asked about a network grown to any size.

``widen`` grows a layer table to a given number of parameters, keeping its shape; ``predictions`` asks
``costmodel.predict`` for every strategy with one optimizer's training state; ``fits`` says which of them fit
a device's memory, and ``memory_by_size`` gives each strategy's memory per device over a range of sizes,
where the curves cross the device's memory. Plain arithmetic, as the cost model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TypeVar

from d2lmp.model.costmodel import STRATEGIES, Hardware, StrategyStep, predict
from d2lmp.model.layer_rows import LayerRowLike
from d2lmp.model.training_state import OptimizerBytes

LayerRows = Sequence[LayerRowLike]  # ``models.LayerRow`` records, read through the protocol (``models`` imports torch)
_Row = TypeVar("_Row", bound=LayerRowLike)

__all__ = ["widen", "predictions", "fits", "memory_by_size"]


def widen(rows: Sequence[_Row], num_params: float) -> list[_Row]:
    """The layer table of the same network with every layer k times wider, k = √(num_params / its parameters).

    Parameters and FLOPs grow as k², activations (and each output's channels) as k: a model of
    ``num_params`` parameters shaped like the one given (the input and the classes are widened too,
    an approximation that keeps every proportion). The counts of the rows returned are no longer whole numbers.
    """
    params = sum(r.params for r in rows)
    if params <= 0 or num_params <= 0:
        raise ValueError("the model and the requested size need parameters")
    k = (num_params / params) ** 0.5
    out = []
    for r in rows:
        shape = list(r.output_shape)
        if len(shape) > 1:
            shape[1] = max(1, round(shape[1] * k))
        out.append(replace(r, params=r.params * k * k, macs=r.macs * k * k, flops=r.flops * k * k,
                           activation_bytes=r.activation_bytes * k, output_shape=tuple(shape)))
    return out


def predictions(rows: LayerRows, hw: Hardware, batch: int, optimizer: str | OptimizerBytes = "momentum",
                micro_batches: int = 8, batch_of_table: int = 1) -> dict[str, StrategyStep]:
    """``costmodel.predict`` for every strategy in ``STRATEGIES``, with ``optimizer``'s training state."""
    return {s: predict(rows, s, hw, batch, micro_batches=micro_batches, batch_of_table=batch_of_table,
                       optimizer=optimizer) for s in STRATEGIES}


def fits(preds: dict[str, StrategyStep], memory_bytes: float) -> dict[str, bool]:
    """Which strategies' memory per device fits in ``memory_bytes``."""
    return {s: p.memory_bytes <= memory_bytes for s, p in preds.items()}


def memory_by_size(rows: LayerRows, hw: Hardware, batch: int, optimizer: str | OptimizerBytes,
                   sizes: Sequence[float], micro_batches: int = 8,
                   batch_of_table: int = 1) -> dict[str, list[float]]:
    """Bytes per device of every strategy for the network widened to each of ``sizes`` parameters."""
    curves: dict[str, list[float]] = {}
    for size in sizes:
        for s, p in predictions(widen(rows, size), hw, batch, optimizer, micro_batches, batch_of_table).items():
            curves.setdefault(s, []).append(p.memory_bytes)
    return curves
