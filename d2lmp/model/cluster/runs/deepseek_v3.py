"""DeepSeek-V3's pre-training on 2,048 H800s: a mixture of experts trained in FP8 (arXiv:2412.19437).

Source: the DeepSeek-V3 Technical Report. The figure: "training DeepSeek-V3 on each trillion tokens requires only
180K H800 GPU hours" (§1, with Table 1: 2,664K GPU hours of pre-training for 14.8T tokens), so 10¹² tokens /
(180,000 × 3,600 GPU·s) = 1,543 tokens/s per GPU (14.8T / 2,664K GPU hours gives the same). It is an average over
the whole pre-training, interruptions included, not a step time.

Read: §3.1, 2,048 H800s, eight to a node on NVLink and NVSwitch, InfiniBand between nodes; §3.2, 16-way pipeline
parallelism (DualPipe, §3.2.1: the all-to-alls "fully hidden", ep_overlap), 64-way expert parallelism spanning 8
nodes, ZeRO-1 data parallelism, no tensor parallelism; §3.2.3, RMSNorm and the MLA up-projections recomputed in the
backward (recompute "selective"); §3.3, FP8 mixed precision (most GEMMs in FP8, fine-grained scaling; §3.3.3, the MoE
dispatch in FP8: fp8_dispatch); §4.2, sequences of 4K tokens and a batch raised from 3,072 to 15,360 sequences over
the first 469B tokens, then 15,360 (global_batch 15,360); one extra token predicted (MTP depth 1, §4.2). Shape from
``runs.shapes`` (deepseek-ai/DeepSeek-V3 ``config_671B.json``): MLA, 256 routed experts and 1 shared, 8 routed per
token, the first 3 layers dense (MLP 18,432).

Not stated: the micro-batch (None) and the attention kernel ("unknown"). The H800 is an H100 with its NVLink cut to
400 GB/s (no preset in ``hardware``).
"""

from __future__ import annotations

from d2lmp.model.cluster.run_record import RunRecord
from d2lmp.model.cluster.runs.shapes import SHAPES, caveat

__all__ = ["RECORDS"]

GPU_HOURS_PER_TRILLION_TOKENS = 180_000

RECORDS: tuple[RunRecord, ...] = (
    RunRecord(source="deepseek2024v3", where="arXiv:2412.19437, §1 and Table 1 (GPU hours); §3.1-3.3 (cluster, "
              "parallelism, FP8); §4.2 (sequence, batch)", row="DeepSeek-V3 pre-training, 2,048 H800s",
              use="validation", seq=4096, gpu="H800", gpus=2048, metric="tokens_per_s_per_gpu",
              value=round(1e12 / (GPU_HOURS_PER_TRILLION_TOKENS * 3600), 1), tp=1, pp=16, dp=128, ep=64, zero=1,
              micro_batch=None, global_batch=15360, recompute="selective", attention="unknown", precision="fp8",
              fp8_dispatch=True, ep_overlap=True,
              note="180K H800 GPU hours per trillion tokens, averaged over the whole pre-training. MTP depth 1. "
              + caveat("deepseek-v3"), **SHAPES["deepseek-v3"]),
)
