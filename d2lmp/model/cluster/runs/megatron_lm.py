"""Megatron-Core's H100 scaling benchmarks: GPT models of 1.7B-462B on 48-6,144 H100s (NVIDIA/Megatron-LM README).

Source: the README of NVIDIA/Megatron-LM (commit 71e2246e), section "Performance Benchmarking" with its table
``images/model_table.png`` (model size, attention heads, hidden size, layers, tensor and pipeline MP size,
data-parallel size, GPUs, batch size, per-GPU teraFLOP/s, MFU, aggregate petaFLOP/s: nine weak-scaling rows) and
"Strong Scaling Results" (``images/strong_scaling.png``, Megatron-Core r0.8.0: "the standard GPT-3 model" on 96 to
4,608 H100s at a batch of 1,152 sequences, MFU "from 47% to 42%"; only the two ends are printed as numbers).

Read: vocabulary 131,072 and sequence 4,096 (the README's "Benchmark Configuration"); every column of the table;
the per-GPU teraFLOP/s is the metric (model FLOPs: the README calls its ratio to peak MFU; 408.8 / 989 = 41 %).
The throughput "include[s] all operations (data loading, optimizer steps, communication, and logging)".

Assumed or not stated: the MLP is Megatron's default 4 × hidden, not gated (``--ffn-hidden-size`` defaults to
4 × hidden in ``megatron/training/arguments.py``; the README names no other); the precision is BF16 (the MFU is the
teraFLOP/s over the H100 SXM's 989 TFLOP/s dense BF16 peak); the GPUs are H100 SXM; ZeRO-1 (the distributed
optimizer: the README's ``--overlap-param-gather`` is only allowed with it, ``arguments.py``); attention fused
("flash", Megatron-Core's Transformer Engine path). Micro-batch, recomputation and interleaving are not stated.
The strong-scaling ends keep tp/pp/dp None (their layout is not printed) and take the 177B row's shape, the
"standard GPT-3" the section names being that row (96 layers, 12,288 wide, 96 heads).
"""

from __future__ import annotations

from functools import partial

from d2lmp.model.cluster.run_record import RunRecord

__all__ = ["RECORDS"]

_TABLE = "README.md, Performance Benchmarking, table images/model_table.png"
_STRONG = "README.md, Strong Scaling Results (images/strong_scaling.png and its text)"

# (model size, heads, hidden, layers, TP, PP, DP, GPUs, batch, per-GPU teraFLOP/s, MFU, aggregate petaFLOP/s).
_WEAK: tuple[tuple[str, int, int, int, int, int, int, int, int, float, float, float], ...] = (
    ("1.7B", 16, 2048, 24, 1, 1, 48, 48, 192, 408.8, 0.41, 19.6),
    ("7.1B", 32, 4096, 30, 2, 1, 48, 96, 192, 465.9, 0.47, 44.7),
    ("16B", 48, 6144, 32, 4, 1, 48, 192, 192, 489.1, 0.49, 93.9),
    ("32B", 56, 7168, 48, 8, 1, 48, 384, 192, 459.6, 0.46, 176.5),
    ("70B", 64, 8192, 84, 8, 2, 48, 768, 384, 419.7, 0.42, 322.3),
    ("119B", 80, 10240, 92, 8, 4, 48, 1536, 768, 420.5, 0.43, 645.9),
    ("177B", 96, 12288, 96, 8, 6, 48, 2304, 1152, 432.8, 0.44, 997.2),
    ("314B", 128, 16384, 96, 8, 8, 48, 3072, 1536, 474.4, 0.48, 1457.4),
    ("462B", 144, 18432, 112, 8, 16, 48, 6144, 3072, 459.9, 0.47, 2825.6),
)


def _common(heads: int, hidden: int, layers: int) -> partial[RunRecord]:
    return partial(RunRecord, source="megatron_lm_repo", use="validation", layers=layers, hidden=hidden, heads=heads,
                   ffn=4 * hidden, seq=4096, vocab=131072, gpu="H100-SXM", zero=1, attention="flash",
                   precision="bf16")


RECORDS: tuple[RunRecord, ...] = (
    *(_common(heads, hidden, layers)(
        where=f"{_TABLE}, row '{size}'", row=f"{size}, {gpus} GPUs", gpus=gpus, metric="model_tflops_per_gpu",
        value=tflops, tp=tp, pp=pp, dp=dp, global_batch=batch, counts_recompute=False,
        note=f"Printed: MFU {mfu:.0%}, aggregate {agg} petaFLOP/s.")
      for size, heads, hidden, layers, tp, pp, dp, gpus, batch, tflops, mfu, agg in _WEAK),
    *(_common(96, 12288, 96)(
        where=_STRONG, row=f"GPT-3 175B, {gpus} GPUs", gpus=gpus, metric="mfu", value=mfu, tp=None, pp=None,
        dp=None, global_batch=1152, counts_recompute=False,
        note="Strong scaling at a batch of 1,152; layout not printed.")
      for gpus, mfu in ((96, 0.47), (4608, 0.42))),
)
