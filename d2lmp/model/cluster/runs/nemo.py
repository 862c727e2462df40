"""NVIDIA NeMo's published performance tables: the 24.07 pre-training summary and the long-sequence tables.

Source: NVIDIA/NeMo ``docs/source/performance/performance_summary.md`` at commit 8e3d65dcfe (the NeMo 24.07
container, DGX-H100, "pre-training performance ... at FP8 precision"; the same table is the 24.12 user guide's
"Performance Benchmarks" page) and ``docs/source/performance/performance_long_sequence.md`` at commit 8cfedd72
(LLAMA2-7B FP8 on DGX-H100 with NeMo 24.03.01; LLAMA3-8B FP8 on DGX-B200 with NeMo 25.04.rc2).

Read from the pre-training table: model, #-GPUs, GBS, MBS, sequence length, TP, PP, CP, VP, tokens/s per GPU (the
metric) and model TFLOP/s per GPU (kept in the note). From the long-sequence tables: sequence length (K = 1,024
tokens), #-GPUs, batch size (global, in sequences), the TP, PP, DP, CP of the run with context parallelism and its
TFLOPS per GPU (the metric, model TFLOP/s), and the TFLOPS per GPU of the best run without context parallelism,
whose layout the table does not give (those rows keep tp/pp/dp None and are information only). Without-CP rows
are kept only where the CP run used CP > 1 (otherwise they are the same run) and a figure is printed.

Assumed or not stated: micro-batch of the long-sequence runs, data-parallel sharding (the distributed optimizer
is not printed: zero None), activation recomputation ("unknown"). Attention is Transformer Engine's fused kernel
("flash"). Model shapes and vocabularies from ``runs.shapes`` (NeMo's configs and benchmark scripts). B200 has
no preset in ``hardware``. In every row of the B200 table TP·PP·DP·CP is a quarter of the GPUs printed; which
column is wrong the page does not say, so those rows keep DP None (information only).
"""

from __future__ import annotations

from d2lmp.model.cluster.run_record import RunRecord
from d2lmp.model.cluster.runs.shapes import SHAPES

__all__ = ["RECORDS"]

_SUMMARY = "docs/source/performance/performance_summary.md (NeMo 24.07), table 'Pretraining'"
_LONG = "docs/source/performance/performance_long_sequence.md"
_SHAPE = {"GPT3-5B": "gpt3-5b", "GPT3-20B": "gpt3-20b", "GPT3-175B": "gpt3-175b", "LLAMA2-7B": "llama2-7b",
          "LLAMA2-13B": "llama2-13b", "LLAMA2-70B": "llama2-70b", "Nemotron-8B": "nemotron3-8b",
          "Nemotron-22B": "nemotron3-22b", "Nemotron-340B": "nemotron4-340b", "LLAMA3-8B": "llama3-8b",
          "LLAMA3-70B": "llama3-70b"}

# (model, #-GPUs, GBS, MBS, sequence, TP, PP, CP, VP, tokens/s/GPU, model TFLOP/s/GPU) as printed.
_PRETRAINING: tuple[tuple[str, int, int, int, int, int, int, int, int, float, float], ...] = (
    ("GPT3-5B", 64, 2048, 4, 2048, 1, 1, 1, 1, 23406, 765),
    ("GPT3-20B", 64, 256, 2, 2048, 2, 1, 1, 1, 5851, 750),
    ("GPT3-175B", 128, 256, 1, 2048, 4, 8, 1, 6, 716, 771),
    ("GPT3-175B", 512, 2048, 2, 2048, 4, 8, 1, 6, 825, 888),
    ("LLAMA2-7B", 8, 128, 1, 4096, 1, 1, 1, 1, 16934, 780),
    ("LLAMA2-13B", 16, 128, 1, 4096, 1, 4, 1, 10, 8715, 760),
    ("LLAMA2-70B", 64, 128, 1, 4096, 4, 4, 1, 20, 1728, 768),
    ("Nemotron-8B", 64, 256, 4, 4096, 2, 1, 1, 1, 12507, 643),
    ("Nemotron-22B", 64, 256, 2, 4096, 2, 4, 1, 10, 4312, 562),
    ("Nemotron-340B", 128, 32, 1, 4096, 8, 8, 1, 12, 326, 686),
    ("LLAMA3-8B", 8, 128, 1, 8192, 1, 1, 2, 1, 12273, 711),
    ("LLAMA3-70B", 64, 128, 1, 8192, 4, 4, 2, 5, 1524, 734),
)

# (sequence in K, #-GPUs, batch size, TFLOPS/GPU without CP or None, TP, PP, DP, CP, TFLOPS/GPU with CP).
_LONG_H100: tuple[tuple[int, int, int, float | None, int, int, int, int, float], ...] = (
    (4, 4, 1024, 768, 1, 1, 4, 1, 768), (8, 8, 512, 730, 1, 2, 4, 1, 730), (16, 16, 256, 660, 2, 1, 8, 1, 660),
    (32, 32, 128, 595, 2, 1, 8, 2, 610), (64, 64, 64, 534, 4, 1, 8, 2, 574), (128, 128, 32, 424, 4, 1, 8, 4, 555),
    (256, 256, 16, 392, 4, 1, 8, 8, 549), (512, 512, 8, 104, 8, 1, 4, 16, 549),
    (1024, 1024, 4, 26.5, 8, 1, 4, 32, 536),
)
_LONG_B200: tuple[tuple[int, int, int, float | None, int, int, int, int, float], ...] = (
    (8, 8, 512, 1671, 1, 1, 2, 1, 1671), (16, 16, 256, 1717, 1, 1, 4, 1, 1717),
    (32, 32, 128, 1549, 1, 1, 4, 2, 1624), (64, 64, 64, 1481, 1, 1, 4, 4, 1600),
    (128, 128, 32, 1438, 2, 1, 4, 4, 1588), (256, 256, 16, 1162, 4, 1, 4, 4, 1590),
    (512, 512, 8, 607, 4, 1, 4, 8, 1619), (1024, 1024, 4, None, 4, 1, 4, 16, 1608),
)


def _pretraining(row: tuple[str, int, int, int, int, int, int, int, int, float, float]) -> RunRecord:
    model, gpus, gbs, mbs, seq, tp, pp, cp, vp, tokens, tflops = row
    return RunRecord(source="nemo_performance", where=_SUMMARY, row=f"{model}, {gpus} GPUs", use="validation",
                     seq=seq, gpu="H100-SXM", gpus=gpus, metric="tokens_per_s_per_gpu", value=tokens, tp=tp, pp=pp,
                     dp=gpus // (tp * pp * cp), cp=cp, zero=None, micro_batch=mbs, global_batch=gbs, interleave=vp,
                     attention="flash", precision="fp8",
                     note=f"Printed: {tflops} model TFLOP/s per GPU.", **SHAPES[_SHAPE[model]])


def _long(table: str, shape: str, gpu: str, rows: tuple[tuple[int, int, int, float | None, int, int, int, int,
                                                              float], ...]) -> list[RunRecord]:
    found = []
    for k, gpus, batch, without, tp, pp, dp, cp, with_cp in rows:
        common = {"source": "nemo_performance", "where": f"{_LONG}, {table}, row 'SeqLen (K) {k}'", "use":
                  "validation", "seq": 1024 * k, "gpu": gpu, "gpus": gpus, "metric": "model_tflops_per_gpu",
                  "zero": None, "global_batch": batch, "attention": "flash", "precision": "fp8",
                  "counts_recompute": False, **SHAPES[shape]}
        if tp * pp * dp * cp == gpus:
            found.append(RunRecord(row=f"{k}K, with CP", value=with_cp, tp=tp, pp=pp, dp=dp, cp=cp, **common))
        else:  # the B200 table: its TP·PP·DP·CP is a quarter of its GPUs in every row
            found.append(RunRecord(row=f"{k}K, with CP", value=with_cp, tp=tp, pp=pp, dp=None, cp=cp, **common,
                                   note=f"Printed DP {dp}, but TP·PP·DP·CP = {tp * pp * dp * cp} is not the "
                                   f"{gpus} GPUs printed: DP left None."))
        if cp > 1 and without is not None:
            found.append(RunRecord(row=f"{k}K, without CP", value=without, tp=None, pp=None, dp=None, **common,
                                   note="The best layout without context parallelism; the table does not give it."))
    return found


RECORDS: tuple[RunRecord, ...] = (
    *(_pretraining(r) for r in _PRETRAINING),
    *_long("table 'LLAMA2-7B (FP8) - H100' (NeMo 24.03.01)", "llama2-7b", "H100-SXM", _LONG_H100),
    *_long("table 'LLAMA3-8B (FP8) - B200' (NeMo 25.04.rc2)", "llama3-8b", "B200", _LONG_B200),
)
