"""A published run's record turned into the cluster model's terms: ``RunRecord -> (Transformer, Cluster, Plan)``.

``convert`` reads a ``run_record.RunRecord`` as published and returns a ``Converted``: the model, the cluster and the
plan, or, where the record leaves something the model needs unknown (a field ``None`` or ``"unknown"``, a GPU with no
preset), contradicts itself as printed (``RunRecord.contradiction``) or describes something the model cannot run (its
``check_plan`` says why), the reason, so that the record is printed as information and never dropped. What the record
does not hold is read by one stated rule: a record with a gated (SwiGLU) MLP is a Llama-style shape (no biases, an
untied output layer, rotary positions), any other a GPT-style one (biases, tied embeddings, learned positions), except
that a record's ``tied_embeddings``, where the source gives it, decides the output layer; sequence parallelism runs
wherever tp > 1 unless the record says it did not (``RunRecord.sequence_parallel``); dropout's masks are counted unless
the record says the run had no dropout (``RunRecord.dropout`` False); a record with experts is a ``moe.MoETransformer``
whose ``ffn`` is one expert's width, its experts split over the tensor ranks unless ``ep`` does not divide ``cp·dp``
(then folded over them, ``etp`` 1, as MoE parallel folding (Liu et al. 2025, abstract) does). ``published_tokens_per_s``
turns the published figure into tokens per second per GPU, the one unit the comparisons use.
"""

from __future__ import annotations

from dataclasses import dataclass

from d2lmp.model.cluster.hardware import Cluster, gpu_preset
from d2lmp.model.cluster.layout import Plan, check_plan
from d2lmp.model.cluster.moe import moe_transformer, step_flops
from d2lmp.model.cluster.predict import hardware_flops
from d2lmp.model.cluster.run_record import RunRecord
from d2lmp.model.transformer_accounting import Transformer
from d2lmp.model.vocabulary import AttentionKernel, MatmulPrecision, Recompute, ZeroStage

__all__ = ["Converted", "convert", "published_tokens_per_s"]


@dataclass(frozen=True)
class Converted:
    """A record in the model's terms (``model``, ``cluster``, ``plan``), or ``reason``: why it cannot be judged."""

    record: RunRecord
    model: Transformer | None = None
    cluster: Cluster | None = None
    plan: Plan | None = None
    reason: str = ""

    @property
    def judged(self) -> bool:
        return not self.reason


def convert(record: RunRecord) -> Converted:
    """The record's model, cluster and plan, or the reason the model cannot judge it."""
    if record.contradiction:
        return Converted(record, reason=f"contradicts itself as printed: {record.contradiction}")
    missing = record.unknown_fields()
    if missing:
        return Converted(record, reason=f"not published: {', '.join(missing)}")
    if record.moe_every != 1:
        return Converted(record, reason=f"not representable: MoE blocks every {record.moe_every} layers")
    try:
        gpu_preset(record.gpu)
    except ValueError:
        return Converted(record, reason=f"no GPU preset for {record.gpu!r}")
    assert record.layers and record.hidden and record.heads and record.seq and record.vocab
    assert record.tp and record.pp and record.dp and record.micro_batch and record.global_batch
    llama = record.gated_mlp
    tied = not llama if record.tied_embeddings is None else record.tied_embeddings
    try:
        model = Transformer(layers=record.layers, hidden=record.hidden, heads=record.heads, seq=record.seq,
                            vocab=record.vocab, ffn=record.ffn, kv_heads=record.kv_heads, gated_mlp=llama,
                            bias=not llama, tied_embeddings=tied, learned_positions=not llama,
                            dropout=record.dropout is not False)
        if record.experts > 1:  # ``ffn`` is an expert's width
            model = moe_transformer(model, record.experts, record.top_k, record.ffn or 4 * record.hidden,
                                    record.shared_experts, record.capacity_factor, record.dense_layers,
                                    record.dense_ffn)
        cluster = Cluster(gpu=record.gpu, gpus=record.gpus, gpus_per_node=record.gpus_per_node,
                          network_measured=record.network_measured)
        recompute: Recompute = record.recompute  # type: ignore[assignment]  # "unknown" was refused above
        attention: AttentionKernel = record.attention  # type: ignore[assignment]
        precision: MatmulPrecision = "fp8" if record.precision == "fp8" else "bf16"
        zero: ZeroStage = record.zero  # type: ignore[assignment]
        plan = Plan(tp=record.tp, pp=record.pp, dp=record.dp, cp=record.cp, micro_batch=record.micro_batch,
                    global_batch=record.global_batch, zero=zero, recompute=recompute,
                    sequence_parallel=_sequence_parallel(record), interleave=record.interleave, attention=attention,
                    precision=precision, fp32_grad_reduce=record.fp32_grad_reduce,
                    zero1_all_reduce=record.zero1_all_reduce,
                    fp32_grad_buffer=record.fp32_grad_buffer, logit_bytes=record.logit_bytes,
                    dp_overlap=record.dp_overlap, ep=record.ep,
                    fp8_dispatch=record.fp8_dispatch, etp=_expert_tp(record), ep_overlap=record.ep_overlap,
                    head_stages=record.head_stages)
        check_plan(model, cluster, plan)
    except ValueError as exc:
        return Converted(record, reason=f"not representable: {exc}")
    return Converted(record, model, cluster, plan)


def _sequence_parallel(record: RunRecord) -> bool:
    """The record's sequence parallelism where it states it, else on wherever there is tensor parallelism."""
    assert record.tp is not None
    return record.tp > 1 and record.sequence_parallel is not False


def _expert_tp(record: RunRecord) -> int | None:
    """Each expert's tensor-parallel size: the record's, else ``tp`` (None) where ``ep`` divides ``cp·dp``, else 1 (the
    expert groups folded over the tensor ranks, the one layout that holds such an ``ep``)."""
    if record.etp is not None or record.ep == 1 or record.dp is None:
        return record.etp
    return None if (record.cp * record.dp) % record.ep == 0 else 1


def published_tokens_per_s(converted: Converted) -> float:
    """The published figure as tokens per second per GPU. A utilisation or a FLOP rate is divided by the FLOPs a
    token costs as the model counts them (model FLOPs for MFU and model TFLOP/s; hardware FLOPs, recomputation
    included, for HFU and hardware TFLOP/s); an MFU or HFU of an FP8 run is read against the FP8 peak."""
    record, model, plan, cluster = converted.record, converted.model, converted.plan, converted.cluster
    assert model is not None and plan is not None and cluster is not None, converted.reason
    tokens = plan.global_batch * model.seq
    if record.metric == "tokens_per_s_per_gpu":
        return record.value
    if record.metric == "step_s":
        return tokens / record.value / record.gpus
    if record.metric in ("mfu", "model_tflops_per_gpu"):
        flops_per_token = step_flops(model, plan.global_batch, "none") / tokens
    else:
        flops_per_token = hardware_flops(model, plan.global_batch, plan.recompute, plan.attention) / tokens
    if record.metric in ("mfu", "hfu"):
        preset = cluster.preset
        fp8 = record.precision == "fp8" and preset.fp8_peak_tflops is not None
        peak = (preset.fp8_peak_tflops or 0.0) * 1e12 if fp8 else preset.peak_flops
        return record.value * peak / flops_per_token
    return record.value * 1e12 / flops_per_token
