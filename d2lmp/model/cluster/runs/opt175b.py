"""OPT-175B (Meta, 2022): 147 TFLOP/s per GPU on 992 A100 80GB with FSDP and Megatron tensor parallelism.

Source: Zhang et al., arXiv:2205.01068v4. Table 1: 96 layers, 96 heads, d_model 12,288, batch 2M tokens; §2.2:
sequence length 2,048, ReLU; §2.4: "We trained OPT-175B on 992 80GB A100 GPUs, by utilizing Fully Sharded Data
Parallel ... with Megatron-LM Tensor Parallelism. We achieve utilization of up to 147 TFLOP/s per GPU", Adam state
in FP32 sharded across all hosts, weights in FP16. The tensor-parallel degree is from the metaseq chronicle
``projects/OPT/chronicles/10_percent_update.md`` ("8x Tensor Parallelism", listed for the 11.xx lineage; the 12.xx
lineage that became OPT-175B is not said to change it, so TP 8 is assumed).

Read: one figure, recorded as TFLOP/s per GPU; the paper does not say which FLOPs it counts (model or hardware,
with or without recomputation), so ``counts_recompute`` is None. Not stated: the global batch in sequences ("2M"
tokens is about 1,024 sequences of 2,048, which 124 data-parallel replicas do not divide), the micro-batch,
recomputation and the attention kernel. The vocabulary is the GPT-2 BPE (§2.3), whose size the paper does not give.
"""

from __future__ import annotations

from d2lmp.model.cluster.run_record import RunRecord

__all__ = ["RECORDS"]

RECORDS: tuple[RunRecord, ...] = (
    RunRecord(
        source="zhang2022opt", where="arXiv:2205.01068v4, §2.4 and Table 1", row="OPT-175B, 992 80GB A100 GPUs",
        use="validation", layers=96, hidden=12288, heads=96, seq=2048, vocab=None, gpu="A100-80GB", gpus=992,
        metric="hardware_tflops_per_gpu", value=147.0, ffn=4 * 12288, tp=8, pp=1, dp=124, zero=3,
        precision="fp16", counts_recompute=None,
        note=("'up to 147 TFLOP/s per GPU', FLOPs counted not stated; FSDP with Megatron-LM tensor parallelism, TP 8 "
              "from the metaseq 10 % chronicle (assumed unchanged for the final lineage); batch '2M' tokens.")),
)
