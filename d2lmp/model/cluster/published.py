"""Published training runs with their full configurations: the calibration table and the tables checked against it.

Every number here is read from its source, with the table and row it comes from:

- ``NARAYANAN_TABLE1`` (calibration): Narayanan et al. (2021), Table 1, ten GPT models from 1.7 B to 1 T
  parameters on 32 to 3,072 A100 80 GB GPUs of Selene (DGX A100 nodes, §5), sequence 2,048, vocabulary
  51,200, with the achieved teraFLOP/s per GPU (hardware FLOPs of eq. (3), full recomputation). The micro-batch
  sizes, the interleaving (layers per virtual stage) and the data-parallel implementation (PyTorch's DDP,
  which overlaps the gradient all-reduce with the backward, for the four smallest; Megatron's "local" one,
  which runs it after the backward, for the others) come from the authors' reproduction script,
  ``examples/sc21/run_table_1.sh`` of NVIDIA/Megatron-LM, which also sets 16-bit training and uniform
  (full) recomputation.
- ``NARAYANAN_TABLE2`` (check): the same paper's Table 2, GPT-3 175B and the 530B model with ZeRO-3 and no model
  parallelism against PTD-P (tensor 8 and a pipeline of 12 or 35 stages, the model-parallel sizes 96 and 280), at
  fixed global batch, with their micro-batch sizes and achieved teraFLOP/s per GPU. The paper does not state the PTD-P
  runs' interleaving or the recomputation of either scheme: 1F1B without interleaving and full recomputation (that of
  Table 1) are assumed. The model over-predicts the ZeRO-3 rows 1.4-4.6×: they ran at about one InfiniBand adapter's
  rate per GPU (about 23 GB/s of weights and gradients whatever the GPU count), where the model's data parallelism
  sends over as many of a node's adapters as the group has members there.
- ``KORTHIKANTI_TABLE`` (check): Korthikanti et al. (2022), the model configurations of 22B, 175B, 530B and
  1T (tensor 8; pipeline 1, 8, 35, 64; as many GPUs as the model-parallel size, so no data parallelism; global batch
  4, 64, 280, 512) and the end-to-end iteration times with full recomputation and with selective recomputation plus
  sequence parallelism (Table 5). A micro-batch of one sequence and no interleaving are assumed where the paper states
  neither. Times are compared, not HFU: the paper's HFU counts 12·b·s²·h recomputed FLOPs per layer for selective
  recomputation, where ``training_flops`` counts the one forward of the attention core, 4·b·s²·h (its MFU, model
  FLOPs, agrees; both are checked by a test).
- ``MEGATRON_GPT3`` (check): Megatron-LM's README, "GPT-3 Example": GPT-3 175B on 1,024 A100s with tensor 8 ×
  pipeline 16 (so data 8), micro-batch 1 and global batch 1,536 (``examples/gpt3/train_gpt3_175b_distributed.sh``),
  about 32 s an iteration and 138 teraFLOP/s per GPU. Those two figures agree only if the FLOPs count a full
  recomputation (eq. (3) of Narayanan et al.), so full recomputation is assumed, with the 80 GB A100s of Selene,
  no interleaving and Megatron's local DDP.
"""

from __future__ import annotations

from dataclasses import dataclass

from d2lmp.model.cluster.layout import Plan
from d2lmp.model.transformer_accounting import Transformer
from d2lmp.model.vocabulary import Recompute

__all__ = ["PublishedRun", "METRICS", "gpt", "NARAYANAN_TABLE1", "NARAYANAN_TABLE2", "KORTHIKANTI_TABLE",
           "MEGATRON_GPT3", "CHECKED_TABLES"]

# What a published figure is: TFLOP/s per GPU counting hardware FLOPs (recomputation included), or seconds a step.
METRICS = ("hardware_tflops_per_gpu", "step_s")


@dataclass(frozen=True)
class PublishedRun:
    """One published run: where it is (``table``, ``row``, ``source`` keys), its model, GPU and plan, and the
    figure reported (``published``, a ``metric`` of ``METRICS``); ``note``: what is assumed, not read."""

    table: str
    row: str
    source: tuple[str, ...]
    model: Transformer
    gpu: str
    plan: Plan
    metric: str
    published: float
    note: str = ""


def gpt(layers: int, hidden: int, heads: int, seq: int = 2048, vocab: int = 51200) -> Transformer:
    """A GPT-style shape as Megatron-LM builds it: biases, LayerNorms, a 4h MLP, tied learned embeddings."""
    return Transformer(layers=layers, hidden=hidden, heads=heads, seq=seq, vocab=vocab)


_N21 = ("narayanan2021efficient",)
_SCRIPT = "micro-batch, interleaving and DDP from examples/sc21/run_table_1.sh (NVIDIA/Megatron-LM)"
# (row, heads, hidden, layers, tp, pp, GPUs, batch, micro-batch, layers per virtual stage or 0, torch DDP?,
#  achieved teraFLOP/s per GPU)
_TABLE1 = (
    ("1.7B", 24, 2304, 24, 1, 1, 32, 512, 16, 0, True, 137),
    ("3.6B", 32, 3072, 30, 2, 1, 64, 512, 16, 0, True, 138),
    ("7.5B", 32, 4096, 36, 4, 1, 128, 512, 16, 0, True, 142),
    ("18.4B", 48, 6144, 40, 8, 1, 256, 1024, 8, 0, True, 135),
    ("39.1B", 64, 8192, 48, 8, 2, 512, 1536, 4, 0, False, 138),
    ("76.1B", 80, 10240, 60, 8, 4, 1024, 1792, 2, 5, False, 140),
    ("145.6B", 96, 12288, 80, 8, 8, 1536, 2304, 2, 5, False, 148),
    ("310.1B", 128, 16384, 96, 8, 16, 1920, 2160, 1, 3, False, 155),
    ("529.6B", 128, 20480, 105, 8, 35, 2520, 2520, 1, 1, False, 163),
    ("1008.0B", 160, 25600, 128, 8, 64, 3072, 3072, 1, 0, False, 163),
)
NARAYANAN_TABLE1: tuple[PublishedRun, ...] = tuple(
    PublishedRun(
        "Narayanan et al. 2021, Table 1", row, _N21, gpt(layers, hidden, heads), "A100-80GB",
        Plan(tp=tp, pp=pp, dp=gpus // (tp * pp), micro_batch=mb, global_batch=batch, recompute="full",
             interleave=(layers // pp // per_chunk) if per_chunk else 1, dp_overlap=torch_ddp),
        "hardware_tflops_per_gpu", tflops, _SCRIPT)
    for row, heads, hidden, layers, tp, pp, gpus, batch, mb, per_chunk, torch_ddp, tflops in _TABLE1)

_GPT3, _530B = gpt(96, 12288, 96), gpt(105, 20480, 128)
_ZERO_NOTE = "ZeRO-3 (DeepSpeed) without model parallelism; full recomputation assumed"
_PTDP_NOTE = "PTD-P; 1F1B without interleaving, full recomputation and Megatron's local DDP assumed"
# (row, model, tp, pp, GPUs, batch, micro-batch, teraFLOP/s per GPU)
_TABLE2_ZERO = (("ZeRO-3 174.6B, 384 GPUs", _GPT3, 384, 1536, 4, 144),
                ("ZeRO-3 174.6B, 768 GPUs", _GPT3, 768, 1536, 2, 88),
                ("ZeRO-3 174.6B, 1536 GPUs", _GPT3, 1536, 1536, 1, 44),
                ("ZeRO-3 529.6B, 640 GPUs", _530B, 640, 2560, 4, 138),
                ("ZeRO-3 529.6B, 1120 GPUs", _530B, 1120, 2240, 2, 98),
                ("ZeRO-3 529.6B, 2240 GPUs", _530B, 2240, 2240, 1, 48))
_TABLE2_PTDP = (("PTD-P 174.6B, 384 GPUs", _GPT3, 12, 384, 1536, 153),
                ("PTD-P 174.6B, 768 GPUs", _GPT3, 12, 768, 1536, 149),
                ("PTD-P 174.6B, 1536 GPUs", _GPT3, 12, 1536, 1536, 141),
                ("PTD-P 529.6B, 560 GPUs", _530B, 35, 560, 2240, 171),
                ("PTD-P 529.6B, 1120 GPUs", _530B, 35, 1120, 2240, 167),
                ("PTD-P 529.6B, 2240 GPUs", _530B, 35, 2240, 2240, 159))
NARAYANAN_TABLE2: tuple[PublishedRun, ...] = tuple(
    PublishedRun("Narayanan et al. 2021, Table 2", row, _N21, model, "A100-80GB",
                 Plan(dp=gpus, micro_batch=mb, global_batch=batch, zero=3, recompute="full"),
                 "hardware_tflops_per_gpu", tflops, _ZERO_NOTE)
    for row, model, gpus, batch, mb, tflops in _TABLE2_ZERO) + tuple(
    PublishedRun("Narayanan et al. 2021, Table 2", row, _N21, model, "A100-80GB",
                 Plan(tp=8, pp=pp, dp=gpus // (8 * pp), micro_batch=1, global_batch=batch, recompute="full",
                      dp_overlap=False),
                 "hardware_tflops_per_gpu", tflops, _PTDP_NOTE)
    for row, model, pp, gpus, batch, tflops in _TABLE2_PTDP)

_K22 = ("korthikanti2022reducing",)
# (name, model, pp, batch, seconds with full recomputation, seconds with selective recomputation + SP)
_KORTHIKANTI = (("22B", gpt(48, 6144, 64), 1, 4, 1.42, 1.10),
                ("175B", _GPT3, 8, 64, 18.13, 13.75),
                ("530B", _530B, 35, 280, 49.05, 37.83),
                ("1T", gpt(128, 25600, 160), 64, 512, 94.42, 71.49))
# the table's two columns: (label, recomputation, sequence parallelism)
_KORTHIKANTI_MODES: tuple[tuple[str, Recompute, bool], ...] = (("full recompute", "full", False),
                                                               ("selective + SP", "selective", True))
KORTHIKANTI_TABLE: tuple[PublishedRun, ...] = tuple(
    PublishedRun("Korthikanti et al. 2022, Table 5", f"{name}, {label}", _K22, model, "A100-80GB",
                 Plan(tp=8, pp=pp, micro_batch=1, global_batch=batch, recompute=recompute, sequence_parallel=sp),
                 "step_s", seconds, "micro-batch 1 and no interleaving assumed")
    for name, model, pp, batch, *times in _KORTHIKANTI
    for (label, recompute, sp), seconds in zip(_KORTHIKANTI_MODES, times))

MEGATRON_GPT3: tuple[PublishedRun, ...] = (
    PublishedRun("Megatron-LM README, GPT-3 example", "GPT-3 175B, 1024 GPUs", ("megatron_lm_repo",), _GPT3,
                 "A100-80GB", Plan(tp=8, pp=16, dp=8, micro_batch=1, global_batch=1536, recompute="full",
                                   dp_overlap=False),
                 "step_s", 32.0, "'around 32 seconds' an iteration; full recomputation, 80 GB A100s, no interleaving "
                                 "and local DDP assumed"),
)

CHECKED_TABLES: dict[str, tuple[PublishedRun, ...]] = {
    "Narayanan et al. 2021, Table 2 (ZeRO-3 and PTD-P)": NARAYANAN_TABLE2,
    "Korthikanti et al. 2022, Table 5": KORTHIKANTI_TABLE,
    "Megatron-LM README, GPT-3 example": MEGATRON_GPT3,
}
