"""A published training run as its source prints it: the raw record the validation tables are written in.

A ``RunRecord`` holds only what a paper, a report or a benchmark table states (``None`` where it does not), with
the place it is stated (``where``: table, row, figure or page). It depends on nothing else in the model, so the
tables of published runs can be typed before the cluster model can judge every field; the model turns a record
into its own ``Transformer`` and ``Plan`` and prints the records it cannot judge as information, never dropping one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from d2lmp.model.cluster.hardware import NetworkMeasurement

__all__ = ["RunRecord", "Metric", "METRICS", "Attention", "ATTENTIONS", "Precision", "PRECISIONS",
           "RecordRecompute", "RECORD_RECOMPUTES", "PipelineSends", "PIPELINE_SENDS", "MemoryMeasure",
           "MEMORY_MEASURES", "MemoryStage", "MEMORY_STAGES", "Use", "USES", "batch_contradiction"]

# What the published figure is. "mfu"/"hfu" are fractions (0.41, not 41 %); *_tflops_per_gpu count model FLOPs
# (no recomputation) or hardware FLOPs (recomputation included); "oom" is a run the source says did not fit (value 0).
Metric = Literal["mfu", "hfu", "model_tflops_per_gpu", "hardware_tflops_per_gpu", "tokens_per_s_per_gpu", "step_s",
                 "oom"]
METRICS: tuple[Metric, ...] = get_args(Metric)
# The attention kernel: the 2021 runs materialised the s×s scores; FlashAttention-era runs do not.
Attention = Literal["materialised", "flash", "unknown"]
ATTENTIONS: tuple[Attention, ...] = get_args(Attention)
# The precision of the large matmuls.
Precision = Literal["fp16", "bf16", "fp8", "unknown"]
PRECISIONS: tuple[Precision, ...] = get_args(Precision)
RecordRecompute = Literal["none", "selective", "full", "unknown"]
RECORD_RECOMPUTES: tuple[RecordRecompute, ...] = get_args(RecordRecompute)
# How the pipeline stages send activations and gradients: "queued", the pipeline code is named and taken to queue its
# sends on the GPU without the host waiting for them (Megatron's batched isend/irecv, what the model's pp_p2p charges;
# DeepSpeed's PipelineEngine assumed alike), or "unknown" where the source does not say which pipeline code a row ran
# and that code decides its speed.
PipelineSends = Literal["queued", "unknown"]
PIPELINE_SENDS: tuple[PipelineSends, ...] = get_args(PipelineSends)
# What a reported memory figure counts: "device", everything the process holds on the GPU (nvidia-smi's figure, or
# the source does not say), or "reserved", PyTorch's caching allocator's peak reserved memory
# (torch.cuda.max_memory_reserved: the blocks the allocator holds free included; what the process holds outside the
# allocator, such as the CUDA context, not).
MemoryMeasure = Literal["device", "reserved"]
MEMORY_MEASURES: tuple[MemoryMeasure, ...] = get_args(MemoryMeasure)
# Which GPU a reported memory figure is from: "fuller", whichever pipeline stage needs more (as the model reports), or
# "first", a GPU of the first stage (the source prints rank 0's).
MemoryStage = Literal["fuller", "first"]
MEMORY_STAGES: tuple[MemoryStage, ...] = get_args(MemoryStage)
# What a table is for: the few rows the model's fitted numbers are fitted on, or rows it is only checked against.
Use = Literal["calibration", "validation"]
USES: tuple[Use, ...] = get_args(Use)


@dataclass(frozen=True)
class RunRecord:
    """One published run, its configuration as published, and the figure reported.

    Model: ``layers``, ``hidden``, ``heads``, ``kv_heads`` (None: as many as ``heads``), ``ffn`` (the MLP's
    inner size; per expert for a mixture of experts), ``gated_mlp`` (SwiGLU), ``tied_embeddings`` (the LM head
    reuses the token embedding; None: not printed, and ``convert``'s rule decides), ``dropout`` (the run trains with
    dropout, whose masks the backward keeps; None: not printed, counted as Megatron's GPT has it), ``vocab``, ``seq``;
    a mixture of experts adds ``experts``, ``top_k``, ``shared_experts``, ``moe_every`` (1: every layer),
    ``dense_layers`` (the first blocks, dense) and ``dense_ffn`` (their MLP), ``capacity_factor`` (None: dropless).
    Cluster: ``gpu`` (a name ``d2lmp.model.cluster.hardware.gpu_preset`` knows, or one the record's note explains),
    ``gpus``, ``gpus_per_node``, ``network_measured`` (the source's measured cross-node bus bandwidths per GPU by node
    count, where it gives them: ``hardware.NetworkMeasurement``). Plan: ``tp``,
    ``pp``, ``dp`` (the data-parallel size including any sharding group), ``cp``, ``ep``, ``zero`` (ZeRO stage or FSDP:
    3 full shard, 2, 1, 0 none), ``micro_batch`` and ``global_batch`` in sequences, ``interleave`` (virtual stages per
    GPU), ``recompute``, ``attention``, ``precision``, ``fp8_dispatch`` (the MoE dispatch sent in FP8), ``etp`` (each
    expert's tensor-parallel size where stated; None: not printed), ``ep_overlap`` (the all-to-alls hidden behind
    compute), ``fp32_grad_reduce`` (the reduction carries FP32 gradients), ``zero1_all_reduce`` (ZeRO-1 all-reduces the
    gradients: ``layout.Plan``), ``fp32_grad_buffer`` (an unsharded FP32 gradient buffer beside the 16-bit gradients:
    memory only), ``logit_bytes`` (a logit's bytes at the loss's peak: ``layout.Plan``), ``dp_overlap`` (the gradient
    reduction runs behind the backward, bucketed; False: after the last backward, as DeepSpeed's pipeline schedule and
    Megatron's 2021 local DDP run it), ``sequence_parallel`` (the tensor ranks split the sequence outside their regions,
    Korthikanti et al. 2022 §4.2.2; None: not printed, and ``convert`` assumes it where tp > 1), ``head_stages`` (the
    embedding and the output layer each take a block's place in the pipeline: ``layout.Plan``), ``pipeline_sends`` (how
    the stages send to each other; "unknown" leaves a pipelined
    row's speed unjudged, its memory still judged). ``metric`` and ``value``: the published figure;
    ``counts_recompute``: whether the source's FLOPs count the recomputed forward (None: not stated or not a FLOP
    figure). ``memory_gb``: the memory a GPU used, where the source reports it, in 10⁹ bytes (a figure printed in GiB is
    converted); ``memory_measure``: what that figure counts, and ``memory_stage``: which GPU it is from.
    ``contradiction``: where the source's own figures for the row disagree (a printed batch its layout does not give)
    and it does not say which is wrong, what disagrees; the configuration is then not known and the row is
    information ("": the figures agree).
    """

    source: str                     # bibliography key (d2lmp.bibliography)
    where: str                      # "Table 4, row '405B 8K'", "Figure 7", "p. 12"
    row: str                        # the row's label as the source prints it
    use: Use
    layers: int | None
    hidden: int | None
    heads: int | None
    seq: int | None
    vocab: int | None
    gpu: str
    gpus: int
    metric: Metric
    value: float
    kv_heads: int | None = None
    ffn: int | None = None
    gated_mlp: bool = False
    tied_embeddings: bool | None = None
    dropout: bool | None = None
    experts: int = 1
    top_k: int = 1
    shared_experts: int = 0
    moe_every: int = 1
    dense_layers: int = 0
    dense_ffn: int | None = None
    capacity_factor: float | None = None
    gpus_per_node: int = 8
    tp: int | None = 1
    pp: int | None = 1
    dp: int | None = None
    cp: int = 1
    ep: int = 1
    zero: int | None = 0
    micro_batch: int | None = None
    global_batch: int | None = None
    interleave: int = 1
    recompute: RecordRecompute = "unknown"
    attention: Attention = "unknown"
    precision: Precision = "bf16"
    counts_recompute: bool | None = None
    memory_gb: float | None = None
    memory_measure: MemoryMeasure = "device"
    memory_stage: MemoryStage = "fuller"
    network_measured: tuple[NetworkMeasurement, ...] = ()
    fp32_grad_reduce: bool = False
    zero1_all_reduce: bool = False
    fp8_dispatch: bool = False
    etp: int | None = None
    ep_overlap: bool = False
    fp32_grad_buffer: bool = False
    logit_bytes: int = 4
    dp_overlap: bool = True
    sequence_parallel: bool | None = None
    head_stages: bool = False
    pipeline_sends: PipelineSends = "queued"
    contradiction: str = ""
    note: str = ""                  # what is assumed rather than read, and anything a reader should know

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise ValueError(f"{self.row}: metric {self.metric!r} is not one of {METRICS}")
        if self.use not in USES:
            raise ValueError(f"{self.row}: use {self.use!r} is not one of {USES}")
        if self.recompute not in RECORD_RECOMPUTES or self.attention not in ATTENTIONS:
            raise ValueError(f"{self.row}: recompute {self.recompute!r} or attention {self.attention!r} unknown")
        if self.pipeline_sends not in PIPELINE_SENDS:
            raise ValueError(f"{self.row}: pipeline_sends {self.pipeline_sends!r} is not one of {PIPELINE_SENDS}")
        if self.memory_measure not in MEMORY_MEASURES or self.memory_stage not in MEMORY_STAGES:
            raise ValueError(f"{self.row}: memory_measure {self.memory_measure!r} or memory_stage "
                             f"{self.memory_stage!r} unknown")
        if self.precision not in PRECISIONS:
            raise ValueError(f"{self.row}: precision {self.precision!r} is not one of {PRECISIONS}")
        if self.gpus < 1 or (self.metric != "oom" and self.value <= 0):
            raise ValueError(f"{self.row}: gpus and the published value must be positive")
        tp, pp, dp = self.tp, self.pp, self.dp
        if tp is not None and pp is not None and dp is not None and self.cp * tp * pp * dp != self.gpus:
            raise ValueError(f"{self.row}: tp·pp·dp·cp = {self.cp * tp * pp * dp} is not the {self.gpus} GPUs")

    def unknown_fields(self) -> list[str]:
        """The fields the cluster model needs that the record leaves unknown (``None`` or ``"unknown"``)."""
        needed = ("layers", "hidden", "heads", "seq", "vocab", "tp", "pp", "dp", "zero", "micro_batch", "global_batch")
        missing = [name for name in needed if getattr(self, name) is None]
        return missing + [name for name in ("recompute", "attention", "precision") if getattr(self, name) == "unknown"]

    def speed_unknown(self) -> str:
        """Why the published speed cannot be compared with the model's although the configuration is known ("" if it
        can): a pipelined run whose pipeline code the source does not name."""
        if self.pp is not None and self.pp > 1 and self.pipeline_sends == "unknown":
            return "pipelined, and the source does not say which pipeline code the row ran (pipeline_sends)"
        return ""

    @property
    def complete(self) -> bool:
        """Whether the record states everything the cluster model needs to predict it."""
        return not self.unknown_fields()


def batch_contradiction(global_batch: int, dp: int, micro_batch: int, accumulation: int,
                        accumulation_name: str = "GradAcc") -> str:
    """What disagrees where a source prints a global batch its data-parallel size, micro-batch and gradient
    accumulation (``accumulation_name``, as the source heads the column) do not give ("" where they agree): a
    ``RunRecord.contradiction``."""
    given = dp * micro_batch * accumulation
    if given == global_batch:
        return ""
    return (f"GBS {global_batch} is not DP·MBS·{accumulation_name} = {dp}·{micro_batch}·{accumulation} = {given}, "
            "and the page does not say which figure is wrong")
