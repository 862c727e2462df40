"""Exercises for the notebook on the running example, the small GPT: its activations under tensor parallelism and
data parallelism's crossing on the communication roofline.

The answers come from ``transformer_accounting`` and ``comm_roofline``, and their typical mistakes (a part split that
is not, the ring's factor forgotten, the wrong link, 6 FLOPs per parameter for a narrow model) are computed here and
recognised. Nothing here runs on ranks.
"""

from __future__ import annotations

from d2lmp.exercises.core import Exercise, number_checker
from d2lmp.gpt import preset as gpt_preset
from d2lmp.model.alpha_beta import BUS_FACTORS
from d2lmp.model.cluster.comm_roofline import data_parallel_point, link_roof, tensor_parallel_point
from d2lmp.model.cluster.presets import model_preset
from d2lmp.model.transformer_accounting import activation_bytes_per_layer, parameter_count, training_flops

__all__ = ["EXERCISES", "tp_block_activations", "dp_crossing", "tp_intensity"]

_GPT3 = model_preset("175B").model
TP = 8
TP_GB = activation_bytes_per_layer(_GPT3, 1, tp=TP) / 1e9  # 16-bit values, 1-byte dropout masks
_SBH = _GPT3.seq * _GPT3.hidden
_SCORES = 5 * _GPT3.heads * _GPT3.seq / _GPT3.hidden  # 5as/h

REPLICAS = 8
_ALL_REDUCE = BUS_FACTORS["all_reduce"](REPLICAS)  # a ring all-reduce sends 2(d-1)/d of the buffer
_SMALL = gpt_preset("small").shape()
_IB, _NVLINK = link_roof("A100-80GB", "network"), link_roof("A100-80GB", "nvlink")
DP_TOKENS = data_parallel_point(_SMALL, _IB, REPLICAS, 1).crossing
_PSI = parameter_count(_SMALL).total
_SENT = _ALL_REDUCE * 2 * _PSI  # a ring all-reduce of the 16-bit gradients, per replica and step
_PER_TOKEN = training_flops(_SMALL, 1) / _SMALL.seq


def _tokens(ridge: float, sent: float, per_token: float) -> float:
    return ridge * sent / per_token


tp_block_activations = Exercise(
    key="tp_block_activations", number=1,
    title="A GPT-3 block under tensor parallelism",
    question=f"One block of GPT-3 175B (hidden {_GPT3.hidden:,}, {_GPT3.heads} heads, sequence {_GPT3.seq:,}), "
             f"one sequence per micro-batch, 16-bit activations with dropout (1-byte masks), split over {TP} "
             "GPUs by tensor parallelism without sequence parallelism: how many GB (10⁹ bytes) of activations "
             "does each GPU keep for that block's backward?",
    hint_text="On one device Korthikanti et al. count sbh(34 + 5as/h) bytes per block. Tensor parallelism divides "
              "by t what lies inside its split region (24·sbh of it, and the 5as²b of the scores); the 10·sbh "
              "at the LayerNorms and the residual stream's dropout stay whole. `TA.activation_parts` marks each "
              "tensor, and `TA.activation_bytes_per_layer` adds them up.",
    solution_text=f"sbh(10 + 24/t + 5as/(ht)) = {_SBH:,} × (10 + {24 / TP:g} + {_SCORES / TP:g}) = "
                  f"{TP_GB * 1e9:,.0f} bytes, about {TP_GB:.2f} GB per GPU, against "
                  f"{activation_bytes_per_layer(_GPT3, 1) / 1e9:.2f} GB on one GPU. Only the part inside the "
                  "split region shrinks: the 10·sbh kept whole on every GPU is why Megatron-LM adds sequence "
                  "parallelism, which splits it along the sequence (then everything divides by t).",
    checker=number_checker(TP_GB, "GB", rel_tol=0.01, near_misses=[
        (activation_bytes_per_layer(_GPT3, 1) / 1e9, "that is one GPU's block without tensor parallelism"),
        (activation_bytes_per_layer(_GPT3, 1, tp=TP, sequence_parallel=True) / 1e9,
         "everything divided by t is what sequence parallelism gives; plain tensor parallelism keeps the "
         "LayerNorms' inputs and outputs and the dropout masks on the residual stream whole on every GPU"),
        (_SBH * (10 + 24 / TP) / 1e9, "you left out the attention scores, 5as²b bytes (softmax, its dropout mask "
                                      "and its output), split by heads over the GPUs"),
        (_SBH * (10 + 24 / TP + _SCORES) / 1e9, "the scores lie inside the split region: each GPU computes its "
                                                "heads' scores only, so they divide by t too"),
        (TP_GB * 1e9 / 2**30, "that is in GiB (2³⁰ bytes); the question asks for GB (10⁹ bytes)")]),
    reference=TP_GB,
    wrong=[(activation_bytes_per_layer(_GPT3, 1) / 1e9, "without tensor parallelism"),
           (activation_bytes_per_layer(_GPT3, 1, tp=TP, sequence_parallel=True) / 1e9, "sequence parallelism"),
           (_SBH * (10 + 24 / TP) / 1e9, "left out the attention scores")],
    how_to_answer="Pass the GB per GPU, e.g. ex.tp_block_activations.check(1.5).")


dp_crossing = Exercise(
    key="dp_crossing", number=2,
    title="Data parallelism's crossing",
    question=f"The small GPT data parallel across nodes: {REPLICAS} replicas, one GPU in each of {REPLICAS} DGX "
             "A100 nodes, sum their 16-bit gradients with a ring all-reduce over InfiniBand. How many tokens must "
             "each replica work on per step for the all-reduce to hide behind the computing, on the fitted roof "
             "`CR.link_roof(\"A100-80GB\", \"network\")`? Count a step's FLOPs exactly, with "
             "`TA.training_flops(shape, 1)` per sequence of the shape `gpt.preset(\"small\").shape()`.",
    hint_text="Per step a replica computes (tokens / s) × the FLOPs of one sequence and sends 2(d−1)/d × 2Ψ bytes, "
              "whatever its batch. Set FLOPs / bytes equal to the ridge and solve for the tokens; "
              "`CR.data_parallel_point(...).crossing` gives the same number.",
    solution_text=f"{_PER_TOKEN:,.0f} FLOPs per token against {_SENT:,.0f} bytes a step: tokens = ridge × bytes / "
                  f"FLOPs per token = {_IB.ridge:,.0f} × {_SENT:,.0f} / {_PER_TOKEN:,.0f} ≈ {DP_TOKENS:,.0f} "
                  f"tokens, about {DP_TOKENS / _SMALL.seq:.0f} sequences of {_SMALL.seq} per replica. The shortcut "
                  "of 6 FLOPs per parameter and token undercounts this narrow model: at hidden 384 the attention "
                  f"core and the logits add {_PER_TOKEN / (6 * _PSI) - 1:.0%} to it, so fewer tokens do. Inside a "
                  f"node, over NVLink, {_tokens(_NVLINK.ridge, _SENT, _PER_TOKEN):,.0f} tokens would do.",
    checker=number_checker(DP_TOKENS, "tokens", rel_tol=0.02, near_misses=[
        (_tokens(_IB.ridge, _SENT, 6 * _PSI), "that is the shortcut of 6 FLOPs per parameter and token; for a "
                                              "model this narrow the attention and the logits add FLOPs: count "
                                              "them with training_flops"),
        (_tokens(_NVLINK.ridge, _SENT, _PER_TOKEN), "the replicas sit in different nodes: their all-reduce "
                                                    "crosses InfiniBand, not NVLink"),
        (2 * DP_TOKENS, "the gradients travel in 16 bits: 2 bytes per parameter, not 4"),
        (_tokens(_IB.ridge, 4 * _PSI, _PER_TOKEN), "a ring all-reduce sends 2(d−1)/d of the buffer per replica, "
                                                   f"not twice the buffer: with {REPLICAS} replicas, 7/4 of it"),
        (DP_TOKENS / 2, "an all-reduce sends 2(d−1)/d of the buffer, not (d−1)/d: it is a reduce-scatter and "
                        "an all-gather"),
        (_IB.ridge, "that is the ridge itself, in FLOPs per byte; solve for the tokens")]),
    reference=DP_TOKENS,
    wrong=[(_tokens(_IB.ridge, _SENT, 6 * _PSI), "shortcut of 6 FLOPs"),
           (_tokens(_NVLINK.ridge, _SENT, _PER_TOKEN), "crosses InfiniBand"), (2 * DP_TOKENS, "16 bits")],
    how_to_answer="Pass a number of tokens, e.g. ex.dp_crossing.check(2000).")


TP_RANKS = 4
TP_INTENSITY = tensor_parallel_point(_SMALL, _NVLINK, TP_RANKS).intensity
_H, _S = _SMALL.hidden, _SMALL.seq
_SIDE = "right of it, compute-bound" if TP_INTENSITY >= _NVLINK.ridge else "left of it, communication-bound"


def _tp_rule(hidden: float, seq: float, ranks_factor: float) -> float:
    """(18h + 3s) / (4 · ranks_factor): a block's FLOPs per byte under tensor parallelism, without recomputation."""
    return (18 * hidden + 3 * seq) / (4 * ranks_factor)


tp_intensity = Exercise(
    key="tp_intensity", number=3,
    title="Tensor parallelism's intensity, by hand",
    question=f"Split one block of the small GPT (hidden {_H}, sequence {_S}) over {TP_RANKS} GPUs by tensor "
             "parallelism, without recomputation: forward and backward, how many FLOPs does a GPU compute per byte "
             "it sends? Is that left or right of NVLink's ridge, `CR.link_roof(\"A100-80GB\", \"nvlink\").ridge`?",
    hint_text="Per block a GPU computes 1/t of 3 × (24bsh² + 4bs²h) FLOPs and all-reduces a (b, s, h) tensor of "
              "16-bit activations four times a step (two in forward, two in backward), each sending 2(t−1)/t of it. "
              "The batch b cancels.",
    solution_text=f"I = (18h + 3s) / (4(t − 1)) = (18 × {_H} + 3 × {_S}) / (4 × {TP_RANKS - 1}) = "
                  f"{TP_INTENSITY:,.0f} FLOPs per byte, against NVLink's ridge of {_NVLINK.ridge:,.0f}: "
                  f"{_SIDE}. Only the hidden size per GPU moves the point: a wider model, or fewer GPUs in the group.",
    checker=number_checker(TP_INTENSITY, "FLOPs per byte", rel_tol=0.02, near_misses=[
        (_tp_rule(_H, _S, TP_RANKS), "an all-reduce over t GPUs sends 2(t−1)/t of the buffer, so the bytes carry "
                                     "(t − 1), not t"),
        (_tp_rule(_H, 0, TP_RANKS - 1), "you left out the attention core, 4bs²h FLOPs a forward with no weights"),
        (TP_INTENSITY / 2, "the activations travel in 16 bits: 2 bytes a value, not 4"),
        (_NVLINK.ridge, "that is NVLink's ridge; the question asks for the block's intensity")]),
    reference=TP_INTENSITY,
    wrong=[(_tp_rule(_H, _S, TP_RANKS), "(t − 1), not t"), (_tp_rule(_H, 0, TP_RANKS - 1), "attention core"),
           (TP_INTENSITY / 2, "16 bits")],
    how_to_answer="Pass the FLOPs per byte, e.g. ex.tp_intensity.check(1000).")


EXERCISES = [tp_block_activations, dp_crossing, tp_intensity]
