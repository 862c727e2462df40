"""Seconds a transformer block takes for one micro-batch, forward and backward, published and predicted.

A step of a run without a pipeline runs ``m`` micro-batches through ``L`` blocks, so step ÷ (m·L) is what one block
and micro-batch cost, the embedding, the loss and the gradient reduction spread over them. Where that figure stays the
same as the blocks grow four times wider, the GPU is not what sets it: the host, which launches every block's kernels,
is (``efficiency.MEANINGS["host_ms"]``). ``block_times`` gives, per model and micro-batch, the medians of the published
figure, of the model's, and of the model's with other parameters (by default without the host's launch time), over the
judged rows of one tensor-parallel size.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from d2lmp.model.cluster.efficiency import FITTED, Efficiency
from d2lmp.model.cluster.predict import predict
from d2lmp.model.cluster.validation import Judgement

__all__ = ["BlockTime", "block_times"]


@dataclass(frozen=True)
class BlockTime:
    """Medians over ``rows`` runs of one model (``label``) at one micro-batch: milliseconds a block and micro-batch,
    published, predicted, and predicted with the alternative parameters (``block_times``'s ``alternative``)."""

    label: str
    micro_batch: int
    rows: int
    published_ms: float
    predicted_ms: float
    alternative_ms: float


def _per_block_ms(step_s: float, j: Judgement) -> float:
    assert j.prediction is not None and j.converted.model is not None
    return 1e3 * step_s / (j.prediction.layout.microbatches * j.converted.model.layers)


def block_times(judgements: Sequence[Judgement], tp: int, label_of: dict[tuple[int, int], str],
                max_gpus: int | None = None, efficiency: Efficiency = FITTED,
                alternative: Efficiency | None = None) -> list[BlockTime]:
    """Per model (its (layers, hidden) named by ``label_of``) and micro-batch, over the judged rows with tensor
    parallelism ``tp``, no pipeline and at most ``max_gpus`` GPUs (None: any): the published and predicted
    milliseconds a block and micro-batch, and those predicted with ``alternative`` (None: ``efficiency`` without the
    host's launch time); medians. ``judgements`` were made with ``efficiency``."""
    groups: dict[tuple[str, int], list[Judgement]] = {}
    for j in judgements:
        model, cluster, plan = j.converted.model, j.converted.cluster, j.converted.plan
        if j.ratio is None or model is None or cluster is None or plan is None:
            continue
        label = label_of.get((model.layers, model.hidden))
        if label is None or plan.tp != tp or plan.pp != 1 or (max_gpus is not None and plan.gpus > max_gpus):
            continue
        groups.setdefault((label, plan.micro_batch), []).append(j)
    other = replace(efficiency, host_ms=0.0) if alternative is None else alternative
    out = []
    for (label, micro_batch), rows in groups.items():
        published, predicted, free = [], [], []
        for j in rows:
            c, p = j.converted, j.prediction
            assert c.model is not None and c.cluster is not None and c.plan is not None and p is not None
            published.append(_per_block_ms(p.step_s * (j.ratio or 0.0), j))  # ratio = published / predicted step
            predicted.append(_per_block_ms(p.step_s, j))
            free.append(_per_block_ms(predict(c.model, c.cluster, c.plan, other).step_s, j))
        out.append(BlockTime(label, micro_batch, len(rows), statistics.median(published),
                             statistics.median(predicted), statistics.median(free)))
    return sorted(out, key=lambda b: (b.label, b.micro_batch))
