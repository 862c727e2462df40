"""Llama 3 405B pre-training at 8,192 and 16,384 H100s: Table 4 of "The Llama 3 Herd of Models" (arXiv:2407.21783).

Source: §3.3.2, Table 4 ("Scaling configurations and MFU for each stage of Llama 3 405B pre-training", p. 10 of
arXiv v3): GPUs, TP, CP, PP, DP, sequence length, batch size per DP group (sequences), tokens per batch (16M),
TFLOPs per GPU and BF16 MFU. The metric is the BF16 MFU; the note keeps the TFLOPs per GPU. MFU as Chowdhery et
al. (2023, PaLM) define it: model FLOPs, attention included, recomputation not counted.

Read from the text of §3.3.1-3.3.2 (pp. 9-11): H100s at 700 W with 80 GB of HBM3, eight to a server; DP is FSDP
that shards optimizer states and gradients but does not reshard the weights after the forward pass (ZeRO stage 2
here); "we could pre-train Llama 3 on sequences of 8K tokens without activation checkpointing" (recompute "none"
for the 8K rows, "unknown" at 128K); the pipeline drops one Transformer layer from the first and from the last
stage, so the first model chunk holds only the embedding and the last only the output projection and loss: 126
layers over 16 pipeline ranks, unevenly (``head_stages``); an interleaved schedule with V stages per rank, V not given
(interleave left at 1); micro-batches per batch tunable, not given (micro_batch None). So the rows are information;
``unknowns`` lists what each leaves open, with every value it could take, and ``d2lmp bench scale`` judges every
combination the model can represent (``model.cluster.unknowns``): with V > 1 the model's interleaved schedule needs the
micro-batches a multiple of the stages, where Meta's modified schedule also runs fewer (§3.3.2), so some settings Meta
could run are not among them. Shape from Table 3 (126 layers, 16,384
wide, 128 heads, 8 KV heads, FFN 53,248, SwiGLU; vocabulary 128,256 as in ``runs.shapes``).

Assumed: the attention kernel is not named in §3.3; a run of 8K tokens without checkpointing, or of 128K tokens,
on 80 GB cannot keep s×s scores, so "flash". No dropout: the released model definition (meta-llama/llama3,
``llama/model.py``, commit a0940f9) has no dropout layer, so no masks are kept (``dropout`` False); the training code
is not public. The third row's DP is 8 in arXiv v3 (v1 printed 4, which does not give
16,384 = TP·CP·PP·DP nor 16M tokens per batch).
"""

from __future__ import annotations

from d2lmp.model.cluster.run_record import RecordRecompute, RunRecord
from d2lmp.model.cluster.runs.shapes import SHAPES

__all__ = ["RECORDS", "UNKNOWN_INTERLEAVES", "unknowns"]

_WHERE = "arXiv:2407.21783 v3, §3.3.2, Table 4, p. 10"
_PIPELINE = ("126 layers over 16 pipeline ranks, one layer fewer on the first and the last stage, the embedding "
             "and the output/loss each alone in a model chunk; interleaved, V not given.")

# (GPUs, TP, CP, PP, DP, sequence, batch size per DP, TFLOPs/GPU, BF16 MFU) as printed.
_TABLE_4: tuple[tuple[int, int, int, int, int, int, int, float, float], ...] = (
    (8192, 8, 1, 16, 64, 8192, 32, 430, 0.43),
    (16384, 8, 1, 16, 128, 8192, 16, 400, 0.41),
    (16384, 8, 16, 16, 8, 131072, 16, 380, 0.38),
)


def _record(row: tuple[int, int, int, int, int, int, int, float, float]) -> RunRecord:
    gpus, tp, cp, pp, dp, seq, per_dp, tflops, mfu = row
    recompute: RecordRecompute = "none" if seq == 8192 else "unknown"
    return RunRecord(source="dubey2024llama3", where=_WHERE, row=f"{gpus:,} GPUs, TP {tp} CP {cp} PP {pp} DP {dp}, "
                     f"{seq:,} tokens", use="validation", seq=seq, gpu="H100-SXM", gpus=gpus, metric="mfu",
                     value=mfu, tp=tp, pp=pp, dp=dp, cp=cp, zero=2, micro_batch=None, global_batch=dp * per_dp,
                     recompute=recompute, attention="flash", precision="bf16", dropout=False, counts_recompute=False,
                     head_stages=True,
                     note=f"Printed: {tflops} TFLOPs/GPU. {_PIPELINE}", **SHAPES["llama3-405b"])


RECORDS: tuple[RunRecord, ...] = tuple(_record(r) for r in _TABLE_4)

# V, the virtual stages per pipeline rank, is not given: every value the model can place 126 layers over 16 ranks with.
UNKNOWN_INTERLEAVES = (1, 2, 4, 8)


def unknowns(record: RunRecord) -> dict[str, tuple[object, ...]]:
    """What Table 4 and §3.3 leave out of ``record``, with every value it could take: the micro-batch (any that divides
    a replica's batch), V, and at 128K tokens the recomputation (at 8K the text says none)."""
    per_replica = (record.global_batch or 0) // (record.dp or 1)
    choices: dict[str, tuple[object, ...]] = {
        "micro_batch": tuple(m for m in range(1, per_replica + 1) if per_replica % m == 0),
        "interleave": UNKNOWN_INTERLEAVES}
    if record.recompute == "unknown":
        choices["recompute"] = ("none", "selective", "full")
    return choices
