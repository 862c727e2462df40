"""torchtitan's published benchmarks: Llama 3.1 8B, 70B and 405B on H100s with FSDP2, TP, PP, CP and Float8.

Source: ``benchmarks/llama3_h100_202412_torchtitan.md`` of pytorch/torchtitan (Tables 1-6, run at torchtitan commit
9dec370, December 2024) and ``benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md`` (two tables, June 2025). Read:
the parallel sizes, local batch, sequence length where a table gives it, activation checkpointing, Float8 or not,
tokens/s per GPU (TPS/GPU) and the peak memory (GiB, converted to GB here: ×1.073741824) where given: torchtitan's
logged ``memory``, ``max_reserved_gib`` of its device memory monitor (``torch.cuda.memory_stats()``'s
``reserved_bytes.all.peak``, what ``max_memory_reserved`` returns), PyTorch's reserved memory
(``RunRecord.memory_measure``), the largest over the GPUs (the December page's footnote 1: "We take the maximum across
all GPUs").

The metric is torchtitan's own ``tps``: the tokens of a data-parallel rank's local batch per second divided by the
non-data-parallel size (TP·PP·CP), so tokens/s per GPU (``train.py``, commit 9dec370). No FLOP formula is involved.

Assumed, from the training configs at commit 9dec370 (``train_configs/llama3_{8b,70b,405b}.toml``) where a table leaves
it out: sequence 8,192; attention through ``F.scaled_dot_product_attention`` (``model.py``), a fused kernel keeping no
s×s tensor, so "flash"; no dropout (``model.py`` has no dropout layer and calls ``F.scaled_dot_product_attention``
without a dropout probability; read at 0199cbc); the model shapes of ``torchtitan/models/llama/__init__.py`` (8B: 32
layers, 4,096 wide, 32 heads, 8 KV heads, FFN 14,336; 70B: 80, 8,192, 64, 8, 28,672; 405B: 126, 16,384, 128, 8, 53,248;
the FFN from ``ffn_dim_multiplier`` and ``multiple_of``) and Llama 3's vocabulary of 128,256. Global batch = local batch
× FSDP size. Pipeline microbatches default to the pipeline degree (``pipelining_utils.py``), so a 405B micro-batch is
the local batch / 8. "Full" activation checkpointing is full recomputation; "selective" is torchtitan's per-op policy,
which the model computes as Megatron's selective recomputation (CONTRIBUTING, "torchtitan's rows and per-op
recomputation"). FSDP is ZeRO-3 (FSDP2 full shard).

The GPUs are Grand Teton H100s with 96 GB of HBM2e (2.4 TB/s) at a 500 W power limit, not the 80 GB SXM part:
named "H100-96GB-HBM2e-500W" here (no preset); the source says their peak is between the SXM's and the NVL's.
The June 2025 tables print tokens/s, which their own prose and the December tables read as per GPU.

Also ``benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md`` (Trainy on WhiteFiber, June 2025): Llama 3.1 8B on 4
and 8 nodes of eight H200s (400 Gb/s per GPU), FSDP over all GPUs, local batch 2, torch.compile, Float8 with FP8
all-gathers; sequence 8,192 and selective checkpointing from ``torchtitan/models/llama3/train_configs/llama3_8b.toml``
at the commit it names (e7c0cae).
"""

from __future__ import annotations

from functools import partial

from d2lmp.model.cluster.run_record import RunRecord

__all__ = ["RECORDS"]

_DEC = "benchmarks/llama3_h100_202412_torchtitan.md"
_JUN = "benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md"
_GPU = "H100-96GB-HBM2e-500W"
_GIB = 1.073741824
_NOTE = "Grand Teton H100 96 GB HBM2e at 500 W; sequence and model shape from the configs at commit 9dec370."

_common = partial(RunRecord, source="torchtitan_benchmarks", use="validation", vocab=128256, gpu=_GPU,
                  metric="tokens_per_s_per_gpu", kv_heads=8, gated_mlp=True, attention="flash", zero=3,
                  dropout=False, counts_recompute=None, memory_measure="reserved", note=_NOTE)
_8b = partial(_common, layers=32, hidden=4096, heads=32, ffn=14336)
_70b = partial(_common, layers=80, hidden=8192, heads=64, ffn=28672)
_405b = partial(_common, layers=126, hidden=16384, heads=128, ffn=53248)


def _gb(gib: float) -> float:
    return round(gib * _GIB, 1)


def _fsdp_8b(where: str, gpus: int, label: str, tps: float, gib: float, fp8: bool) -> RunRecord:
    return _8b(where=where, row=label, seq=8192, gpus=gpus, value=tps, dp=gpus, micro_batch=2,
               global_batch=2 * gpus, recompute="selective", precision="fp8" if fp8 else "bf16", memory_gb=_gb(gib))


def _cp_8b(fsdp: int, cp: int, seq: int, tps: float, gib: float) -> RunRecord:
    return _8b(where=f"{_DEC}, Table 2", row=f"FSDP {fsdp}, CP {cp}", seq=seq, gpus=8, value=tps, dp=fsdp, cp=cp,
               micro_batch=1, global_batch=fsdp, recompute="full", precision="fp8", memory_gb=_gb(gib))


def _pp_405b(where: str, label: str, tps: float, gib: float, seq: int = 8192, fsdp: int = 8, cp: int = 1,
             local: int = 32) -> RunRecord:
    return _405b(where=where, row=label, seq=seq, gpus=512, value=tps, tp=8, pp=8, dp=fsdp, cp=cp,
                 micro_batch=local // 8, global_batch=local * fsdp, recompute="full", precision="fp8",
                 interleave=1, memory_gb=_gb(gib),
                 note=_NOTE + " Async TP. Pipeline microbatches = 8 (the default); the interleaved schedule's "
                 "virtual stages per GPU are not stated (interleave left at 1).")


_T1, _T3 = f"{_DEC}, Table 1", f"{_DEC}, Table 3"
_T4, _T5, _T6 = f"{_DEC}, Table 4", f"{_DEC}, Table 5", f"{_DEC}, Table 6"
_J70, _J8 = f"{_JUN}, table 'Llama3 70b on 256 H100s'", f"{_JUN}, table 'Llama3 8b on 64 H100s'"

RECORDS: tuple[RunRecord, ...] = (
    _fsdp_8b(_T1, 8, "FSDP", 5762, 82.4, fp8=False),
    _fsdp_8b(_T1, 8, "FSDP + torch.compile", 6667, 77.0, fp8=False),
    _fsdp_8b(_T1, 8, "FSDP + torch.compile + Float8", 8532, 76.8, fp8=True),
    _cp_8b(8, 1, 32768, 3890, 83.9),
    _cp_8b(4, 2, 65536, 2540, 84.2),
    _cp_8b(2, 4, 131072, 1071, 84.0),
    _cp_8b(1, 8, 262144, 548, 84.5),
    _fsdp_8b(_T3, 128, "FSDP", 5605, 67.0, fp8=False),
    _fsdp_8b(_T3, 128, "FSDP + torch.compile", 6514, 62.0, fp8=False),
    _fsdp_8b(_T3, 128, "FSDP + torch.compile + Float8", 8380, 61.8, fp8=True),
    *(_70b(where=_T4, row=label, seq=8192, gpus=256, value=tps, tp=8, dp=32, micro_batch=16, global_batch=512,
           recompute="full", precision="fp8", memory_gb=_gb(gib))
      for label, tps, gib in (("2D", 829, 71.9), ("2D + AsyncTP", 876, 67.6))),
    _pp_405b(_T5, "1F1B", 100, 82.5),
    _pp_405b(_T5, "Interleaved 1F1B", 128, 72.7),
    _pp_405b(_T6, "FSDP 8, CP 1", 76, 75.3, seq=32768, fsdp=8, cp=1, local=8),
    _pp_405b(_T6, "FSDP 4, CP 2", 47, 75.9, seq=65536, fsdp=4, cp=2, local=8),
    _pp_405b(_T6, "FSDP 2, CP 4", 31, 77.1, seq=131072, fsdp=2, cp=4, local=8),
    _pp_405b(_T6, "FSDP 1, CP 8", 16, 84.9, seq=262144, fsdp=1, cp=8, local=8),
    # June 2025: vanilla TP and async TP columns, three precisions each (float8 rowwise is a slower recipe).
    *(_70b(where=_J70, row=f"{quant}, {kind} TP", seq=8192, gpus=256, value=tps, tp=8, dp=32, micro_batch=16,
           global_batch=512, recompute="full", precision="bf16" if quant == "None (bfloat16)" else "fp8")
      for quant, vanilla, async_ in (("None (bfloat16)", 597.3, 652.4), ("float8 tensorwise", 809.8, 942.4),
                                     ("float8 rowwise", 599.6, 624.8))
      for kind, tps in (("Vanilla", vanilla), ("Async", async_))),
    *(_8b(where=_J8, row=f"{quant}, {kind} TP", seq=8192, gpus=64, value=tps, tp=8, dp=8, micro_batch=12,
          global_batch=96, recompute="selective", precision="bf16" if quant == "None (bfloat16)" else "fp8")
      for quant, vanilla, async_ in (("None (bfloat16)", 4378, 4809.4), ("float8 tensorwise", 5078.1, 5570.1),
                                     ("float8 rowwise", 3708.5, 3914.9))
      for kind, tps in (("Vanilla", vanilla), ("Async", async_))),
    *(_8b(where="benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md, Results table", row=f"NUM_NODES {nodes}",
          seq=8192, gpu="H200", gpus=8 * nodes, value=tps, dp=8 * nodes, micro_batch=2, global_batch=16 * nodes,
          recompute="selective", precision="fp8", memory_gb=_gb(gib),
          note="H200 nodes on WhiteFiber; sequence and checkpointing from the config at commit e7c0cae.")
      for nodes, tps, gib in ((4, 10938, 47.96), (8, 10753, 46.97))),
)
