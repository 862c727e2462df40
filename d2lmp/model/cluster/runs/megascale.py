"""MegaScale (ByteDance, NSDI 2024): MFU of 175B on 256-12,288 A100s and 530B on 2,240-11,200, and of Megatron-LM.

Source: Jiang et al., arXiv:2402.15627v1. Table 1 (§6.1): the two models (175B: 96 layers, hidden 12,288, 128 heads, TP
8, PP 8; 530B: 105 layers, hidden 20,480, 160 heads, TP 8, PP 35); §6.1 text: interleaved 1F1B with six (175B) and three
(530B) virtual stages, sequence 2,048, vocabulary 64,000, the same batch size for both systems. Table 2: 175B strong
scaling, batch 768 on 256-1,024 GPUs and 6,144 on 3,072-12,288, Megatron-LM and MegaScale rows (MFU, iteration time,
tokens/s; the MFU column's "(1.23×)" speedups are left out). Figure 9: 530B weak scaling, the bars' printed MFU labels
at 2,240, 4,480 and 11,200 GPUs, batch = number of GPUs (§6.1, "Scalability"). Table 3, row 1: the Megatron-LM baseline
of the ablation, 175B on 256 GPUs with batch 256 (47.7 %).

Read: the figure is MFU ("observed throughput over the theoretical maximum assuming 100 % of peak FLOPs", §1, citing
Narayanan et al. 2021); the FLOPs it counts are not spelled out. Table 2's Aggregate PFlops/s over GPUs × 312 TFLOP/s
equals its MFU column to 0.1 point in 12 of the 16 rows (Megatron-LM on 256, 512 and 1,024 GPUs differ by +1.2, -1.3 and
-3.4 points, MegaScale on 12,288 by +1.3); the MFU column is recorded, and the implied 312 TFLOP/s peak says these are
A100s ("NVIDIA Ampere GPUs", §6). dp = GPUs / (TP · PP). Data parallelism shards optimizer state and gradients (ZeRO-2,
§2 and Figure 1) in MegaScale; the Megatron-LM baseline (commit 285068c8) is recorded without ZeRO (its distributed
optimizer is not mentioned). The network: eight 200 Gb/s NICs per server, multi-rail (§3.6), as the A100 preset.

Assumed or unknown: the A100's memory is not stated (the 80 GB preset is used, "due to GPU memory limit" in Table 2's
caption being the only hint); micro-batch size, recomputation and the MLP width are not stated. MegaScale rows use a
parallel transformer block, sliding-window attention (window not stated) and FlashAttention-2 (§3.1, §3.3), so their
attention is "flash" but their shape is not the standard block; the Megatron-LM rows' attention kernel is not stated.
Figure 9's values are bar labels, read in order: Megatron-LM 49.2, 48.8, 48.2; MegaScale 54.3, 54.1, 54.3 (the text's
"higher by up to 6.1 %" matches 54.3 - 48.2).
"""

from __future__ import annotations

from d2lmp.model.cluster.run_record import Attention, RunRecord

__all__ = ["RECORDS"]

SOURCE = "jiang2024megascale"
# Table 1: layers, hidden, heads, TP, PP; §6.1: virtual stages per GPU.
MODELS: dict[str, tuple[int, int, int, int, int, int]] = {"175B": (96, 12288, 128, 8, 8, 6),
                                                          "530B": (105, 20480, 160, 8, 35, 3)}
SEQ, VOCAB = 2048, 64000
_MEGASCALE = ("MegaScale: parallel transformer block, sliding-window attention (window not stated), FlashAttention-2, "
              "LAMB, ZeRO-2 data parallelism, communication overlapped in TP, PP and DP (§3)")
_MEGATRON = "Megatron-LM commit 285068c8 with the paper's network tuning; attention kernel not stated"

# (where, model, method, GPUs, global batch, published MFU %, iteration time s or None, tokens/s or None)
_ROWS: tuple[tuple[str, str, str, int, int, float, float | None, float | None], ...] = (
    ("Table 2", "175B", "Megatron-LM", 256, 768, 53.0, 40.0, 39.3e3),
    ("Table 2", "175B", "Megatron-LM", 512, 768, 49.9, 21.2, 74.1e3),
    ("Table 2", "175B", "Megatron-LM", 768, 768, 46.7, 15.2, 103.8e3),
    ("Table 2", "175B", "Megatron-LM", 1024, 768, 44.7, 11.9, 132.7e3),
    ("Table 2", "175B", "MegaScale", 256, 768, 65.3, 32.0, 49.0e3),
    ("Table 2", "175B", "MegaScale", 512, 768, 63.5, 16.5, 95.1e3),
    ("Table 2", "175B", "MegaScale", 768, 768, 61.3, 11.5, 136.7e3),
    ("Table 2", "175B", "MegaScale", 1024, 768, 59.0, 8.9, 176.9e3),
    ("Table 2", "175B", "Megatron-LM", 3072, 6144, 48.7, 29.02, 433.6e3),
    ("Table 2", "175B", "Megatron-LM", 6144, 6144, 47.8, 14.78, 851.6e3),
    ("Table 2", "175B", "Megatron-LM", 8192, 6144, 43.3, 12.24, 1027.9e3),
    ("Table 2", "175B", "Megatron-LM", 12288, 6144, 41.2, 8.57, 1466.8e3),
    ("Table 2", "175B", "MegaScale", 3072, 6144, 59.1, 23.66, 531.9e3),
    ("Table 2", "175B", "MegaScale", 6144, 6144, 57.3, 12.21, 1030.9e3),
    ("Table 2", "175B", "MegaScale", 8192, 6144, 54.9, 9.56, 1315.6e3),
    ("Table 2", "175B", "MegaScale", 12288, 6144, 55.2, 6.34, 1984.0e3),
    ("Table 3, row 1 (baseline)", "175B", "Megatron-LM", 256, 256, 47.7, None, None),
    ("Figure 9", "530B", "Megatron-LM", 2240, 2240, 49.2, None, None),
    ("Figure 9", "530B", "Megatron-LM", 4480, 4480, 48.8, None, None),
    ("Figure 9", "530B", "Megatron-LM", 11200, 11200, 48.2, None, None),
    ("Figure 9", "530B", "MegaScale", 2240, 2240, 54.3, None, None),
    ("Figure 9", "530B", "MegaScale", 4480, 4480, 54.1, None, None),
    ("Figure 9", "530B", "MegaScale", 11200, 11200, 54.3, None, None),
)


def _record(where: str, model: str, method: str, gpus: int, batch: int, mfu: float, step: float | None,
            tokens: float | None) -> RunRecord:
    layers, hidden, heads, tp, pp, virtual = MODELS[model]
    megascale = method == "MegaScale"
    attention: Attention = "flash" if megascale else "unknown"
    measured = f"; iteration {step:g} s, {tokens:,.0f} tokens/s" if step is not None and tokens is not None else ""
    return RunRecord(
        source=SOURCE, where=f"arXiv:2402.15627v1, {where}", row=f"{model} {method}, batch {batch}, {gpus} GPUs",
        use="validation",
        layers=layers, hidden=hidden, heads=heads, seq=SEQ, vocab=VOCAB, gpu="A100-80GB", gpus=gpus, metric="mfu",
        value=round(mfu / 100, 6), tp=tp, pp=pp, dp=gpus // (tp * pp), zero=2 if megascale else 0, global_batch=batch,
        interleave=virtual, attention=attention, precision="unknown",
        note=f"{_MEGASCALE if megascale else _MEGATRON}; A100 memory not stated{measured}.")


RECORDS: tuple[RunRecord, ...] = tuple(_record(*row) for row in _ROWS)
