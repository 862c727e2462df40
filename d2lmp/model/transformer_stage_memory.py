"""The activations of a whole pipeline stage: micro-batches in flight, the embedding and the output layer.

``transformer_accounting`` counts what one block keeps; this module adds what a pipeline stage holds at its
peak (1F1B and interleaved schedules), the input embedding's dropout mask on the first stage and the output
layer's tensors on the last, following Korthikanti et al. (2022, §4.2.3-§4.4; ``korthikanti2022reducing``).
Plain arithmetic, no torch.
"""

from __future__ import annotations

from d2lmp.model.transformer_accounting import Transformer, korthikanti_bytes_per_layer
from d2lmp.model.vocabulary import Recompute

__all__ = ["pipeline_layers_in_flight", "embedding_activation_bytes", "output_activation_bytes",
           "korthikanti_first_stage_bytes"]


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
                               in_flight: int = 1, dropout: bool | None = None, mask_bytes: int = 1) -> float:
    """The input embedding's saved tensor on the first stage: its dropout mask, ``s·b·h`` bytes per micro-batch
    (split by ``tp`` under sequence parallelism), for each of the ``in_flight`` micro-batches (Korthikanti §4.4:
    ``s·b·h·p/t``); none without dropout (``dropout`` None: the model's, ``Transformer.dropout``)."""
    if not (m.dropout if dropout is None else dropout):
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
                                  tp: int = 1, pp: int = 1, interleave: int = 1,
                                  recompute: Recompute = "none") -> float:
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
