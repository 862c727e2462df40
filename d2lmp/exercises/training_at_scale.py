"""Exercises for notebook 20 (training at scale): the communication roofline by hand, tensor parallelism's
intensity as a function, why tensor parallelism stays in a node, ZeRO-3's batch, new hardware and a new model.

The numbers follow ``model.cluster.comm_roofline`` on the fitted roofs of ``efficiency`` (the ridges printed in the
notebook's first section); the typical mistakes (the ring's (n−1)/n forgotten or doubled, 4-byte values, the
wrong link, only the forward pass) are recognised by computing each of them here.
"""

from __future__ import annotations

from d2lmp.exercises._answers import formula_checker
from d2lmp.exercises.core import Exercise, choice_checker, number_checker
from d2lmp.model.cluster.comm_roofline import link_roof, tensor_parallel_point, zero3_point
from d2lmp.model.cluster.presets import model_preset
from d2lmp.model.cluster.published import NARAYANAN_TABLE2

__all__ = ["EXERCISES", "dp_tokens", "tp_intensity_function", "tp16", "zero3_tokens", "new_hardware",
           "plan_llama", "tp_intensity"]

_GPT3 = model_preset("175B").model
_A100_IB, _A100_NV = link_roof("A100-80GB", "network"), link_roof("A100-80GB", "nvlink")

# --------------------------------------------------------------------------------------------
# 1. Data parallelism's crossing by hand: 6 FLOPs per parameter and token, 4Ψ(d−1)/d bytes

REPLICAS = 8
DP_TOKENS = _A100_IB.ridge * 4 * (REPLICAS - 1) / REPLICAS / 6

dp_tokens = Exercise(
    key="dp_tokens", number=1,
    title="Data parallelism's crossing",
    question=f"{REPLICAS} replicas of GPT-3 175B, one in each of {REPLICAS} DGX "
             "A100 nodes, sum their 16-bit gradients with a ring all-reduce over InfiniBand. Counting 6 FLOPs per "
             "parameter and token for a training step, how many tokens must each replica work on per step for the "
             "all-reduce to hide behind the computing, on the fitted InfiniBand ridge printed in section 1?",
    hint_text="A replica computes 6Ψ FLOPs per token and sends 2(d−1)/d × 2Ψ bytes per step, whatever the number of "
              "tokens. Set FLOPs / bytes equal to the ridge and solve for the tokens: Ψ cancels.",
    solution_text=f"tokens × 6Ψ / (4Ψ(d−1)/d) = ridge, so tokens = ridge × 4(d−1)/(6d) = {_A100_IB.ridge:,.0f} × "
                  f"4 × {REPLICAS - 1}/({6 * REPLICAS}) ≈ {DP_TOKENS:,.0f} tokens: about two thirds of the ridge. "
                  "`data_parallel_point` counts the attention and the logits as well (a few per cent more FLOPs "
                  "per token, so slightly fewer tokens). Megatron's GPT-3 example gives each replica 192 sequences "
                  "of 2,048 tokens, dozens of times more: data parallelism is far right of its ridge, even across "
                  "nodes.",
    checker=number_checker(DP_TOKENS, "tokens", rel_tol=0.03,
                           why="6Ψ FLOPs per token against 4Ψ(d−1)/d bytes a step.",
                           near_misses=[
        (_A100_IB.ridge * 4 / 6, "a ring all-reduce sends 2(d−1)/d of the buffer, not twice the buffer: with "
                                 f"{REPLICAS} replicas that is 7/4 of the gradients, not 2"),
        (2 * DP_TOKENS, "the gradients travel in 16 bits: 2 bytes per parameter, not 4"),
        (DP_TOKENS / 2, "an all-reduce is a reduce-scatter and an all-gather: it sends 2(d−1)/d of the buffer, "
                        "not (d−1)/d"),
        (_A100_NV.ridge * 4 * (REPLICAS - 1) / REPLICAS / 6, "the replicas sit in different nodes: their "
                                                             "all-reduce crosses InfiniBand, not NVLink"),
        (_A100_IB.ridge, "that is the ridge itself; a token brings 6Ψ FLOPs but the step sends 4Ψ(d−1)/d bytes: "
                         "about two thirds of the ridge in tokens")]),
    reference=DP_TOKENS,
    wrong=[(_A100_IB.ridge * 4 / 6, "2(d−1)/d"), (2 * DP_TOKENS, "16 bits"),
           (_A100_NV.ridge * 4 * (REPLICAS - 1) / REPLICAS / 6, "crosses InfiniBand")],
    how_to_answer="Answer with a number of tokens, e.g. ex.dp_tokens.check(5000).",
)

# --------------------------------------------------------------------------------------------
# 2. Tensor parallelism's intensity, written by the student


def tp_intensity(hidden: int, seq: int, tp: int) -> float:
    """FLOPs per byte a tensor-parallel rank sends for one GPT block, forward and backward, 16-bit activations."""
    flops = 3 * (24 * hidden**2 + 4 * seq * hidden) / tp  # per token: 24h² + 4sh a forward, three passes
    sent = 4 * 2 * (tp - 1) / tp * 2 * hidden  # per token: four ring all-reduces of 2h bytes
    return flops / sent


def _no_ring_factor(hidden: int, seq: int, tp: int) -> float:
    return 3 * (24 * hidden**2 + 4 * seq * hidden) / tp / (4 * 2 * 2 * hidden)


def _forward_only(hidden: int, seq: int, tp: int) -> float:
    return (24 * hidden**2 + 4 * seq * hidden) / tp / (4 * 2 * (tp - 1) / tp * 2 * hidden)


def _fp32(hidden: int, seq: int, tp: int) -> float:
    return tp_intensity(hidden, seq, tp) / 2


def _no_attention(hidden: int, seq: int, tp: int) -> float:
    return 3 * 24 * hidden**2 / tp / (4 * 2 * (tp - 1) / tp * 2 * hidden)


def _per_device_flops(hidden: int, seq: int, tp: int) -> float:
    return tp * tp_intensity(hidden, seq, tp)


tp_intensity_function = Exercise(
    key="tp_intensity_function", number=2,
    title="Tensor parallelism's intensity", function="my_tp_intensity(hidden, seq, tp)",
    question="Write `my_tp_intensity(hidden, seq, tp)`: the FLOPs a "
             "tensor-parallel rank computes per byte it sends, for one GPT block (the 4h MLP, multi-head attention), "
             "forward and backward, no recomputation, 16-bit activations and ring all-reduces. Check it against "
             "`tensor_parallel_point`, then find the hidden size at which tp = 8 over InfiniBand reaches the ridge.",
    hint_text="Per token, one forward of the block costs 24h² + 4sh FLOPs (its matrix products and the attention "
              "core), split over tp ranks; the backward costs twice the forward. Megatron's block all-reduces a "
              "2h-byte activation twice in the forward and twice in the backward, and a ring all-reduce sends "
              "2(t−1)/t of it from each rank. The micro-batch cancels.",
    solution_text="I = 3(24h² + 4sh)/t ÷ (4 × 2(t−1)/t × 2h) = (18h + 3s)/(4(t−1)). It grows with the hidden size "
                  "per rank (h/t × 4.5t/(t−1)) and not with the batch, which is why only a wider model, or fewer "
                  "ranks, moves tensor parallelism right. For s = 2,048 and t = 8 it reaches InfiniBand's fitted "
                  f"ridge ({_A100_IB.ridge:,.0f}) at h = (4 × 7 × ridge − 3s)/18 ≈ "
                  f"{(28 * _A100_IB.ridge - 3 * 2048) / 18:,.0f}: "
                  "wider than GPT-3's 12,288.",
    checker=formula_checker(tp_intensity, [
        ("GPT-3: h = 12288, s = 2048, tp = 8", (12288, 2048, 8)),
        ("h = 4096, s = 4096, tp = 2", (4096, 4096, 2)),
        ("h = 25600, s = 2048, tp = 16", (25600, 2048, 16)),
        ("h = 1024, s = 131072, tp = 4 (a long sequence)", (1024, 131072, 4)),
    ], slips=[
        (_no_ring_factor, "a ring all-reduce sends 2(t−1)/t of the buffer from each rank, not 2 buffers: at tp = 2 "
                          "that is half as much."),
        (_forward_only, "you counted the forward pass's FLOPs against all four all-reduces: the backward costs twice "
                        "the forward's FLOPs, three passes in all."),
        (_fp32, "the activations travel in 16 bits: 2 bytes per value."),
        (_no_attention, "you left out the attention core, 4sh FLOPs per token a forward: it matters for long "
                        "sequences."),
        (_per_device_flops, "each rank computes 1/tp of the block's FLOPs."),
    ], success="your formula agrees on GPT-3, on two ranks, on sixteen and on a long sequence."),
    reference=tp_intensity,
    wrong=[(_no_ring_factor, "2(t−1)/t"), (_forward_only, "three passes"), (_fp32, "16 bits"),
           (_no_attention, "attention core")],
)

# --------------------------------------------------------------------------------------------
# 3. Why tensor parallelism stays in a node

_TP16 = tensor_parallel_point(_GPT3, _A100_IB, 16)

tp16 = Exercise(
    key="tp16", number=3,
    title="Why not tp = 16?",
    question="For GPT-3 on 1,024 A100s, the planner's best configuration with tp = 16 is slower than its best "
             "with tp = 8. Why? 'a' 96 heads do not split into 16; 'b' sixteen ranks span two nodes, "
             "so their all-reduces cross InfiniBand, whose ridge the tensor-parallel point does not reach; 'c' "
             "sixteen ranks need more memory per GPU than eight; 'd' the pipeline bubble grows with tp.",
    hint_text="A DGX A100 holds eight GPUs. Place tensor_parallel_point(GPT3, roof, 16) on the NVLink and on the "
              "InfiniBand roof, and read `format_plan`'s 'loses most to' column for the tp = 16 families.",
    solution_text=f"'b'. Sixteen ranks do not fit in an eight-GPU node, so every all-reduce of the block crosses "
                  f"InfiniBand. The point has {_TP16.intensity:,.0f} FLOP/byte against a ridge of "
                  f"{_TP16.ridge:,.0f}: it is communication-bound, and since Megatron's tensor-parallel all-reduces "
                  "sit between the block's matrix products, nothing hides them. 96 heads do split into 16 (6 each); "
                  "more ranks need less memory per GPU, not more; and the bubble depends on the pipeline.",
    checker=choice_checker("b", {
        "a": "96 / 16 = 6: the heads split. The planner only drops tensor sizes that do not divide the heads.",
        "b": "sixteen ranks span two eight-GPU nodes; the block's all-reduces then cross InfiniBand, left of its "
             "ridge, and sit on the critical path between the matrix products.",
        "c": "more tensor-parallel ranks hold less of each matrix and less of the activations per GPU.",
        "d": "the bubble is (p − 1)/v micro-batches of the pipeline; tensor parallelism shortens each of them.",
    }),
    reference="b",
    wrong=[("a", "the heads split"), ("c", "less of each matrix"), ("d", "the bubble is")],
    how_to_answer="Answer with one letter, e.g. ex.tp16.check('a').",
)

# --------------------------------------------------------------------------------------------
# 4. ZeRO-3's batch on Table 2's cluster

ZERO_GPUS = 1536
_ZERO = zero3_point(_GPT3, _A100_IB, ZERO_GPUS, 1, "full")
ZERO_TOKENS = _ZERO.crossing
_TABLE2_ZERO, _TABLE2_PTDP = (next(r for r in NARAYANAN_TABLE2 if r.row == f"{scheme} 174.6B, {ZERO_GPUS} GPUs")
                              for scheme in ("ZeRO-3", "PTD-P"))

zero3_tokens = Exercise(
    key="zero3_tokens", number=4,
    title="ZeRO-3's batch",
    question=f"Narayanan et al.'s Table 2 runs GPT-3 with ZeRO-3 and no model parallelism on "
             f"{ZERO_GPUS:,} A100s, one sequence of 2,048 tokens per GPU, with full recomputation. Using "
             "`comm_roofline.zero3_point` (or by hand), how many tokens per GPU per micro-batch would ZeRO-3 need to "
             "be compute-bound over InfiniBand?",
    hint_text="ZeRO-3 gathers the 16-bit weights before the forward, the recomputed forward and the backward, and "
              "reduce-scatters the gradients: four collectives of (d−1)/d × 2Ψ bytes per micro-batch. Read the "
              "point's `crossing`, or solve FLOPs per token × tokens = ridge × bytes.",
    solution_text=f"About {ZERO_TOKENS:,.0f} tokens, {ZERO_TOKENS / 2048:.1f} sequences per GPU: at one sequence "
                  f"the point sits at {_ZERO.fraction:.0%} of the matrix rate, and Table 2 measured "
                  f"{_TABLE2_ZERO.published:g} teraFLOP/s per GPU against PTD-P's {_TABLE2_PTDP.published:g}. "
                  "A larger micro-batch would need the memory ZeRO-3 saved (its activations grow with it), and a "
                  "fixed global batch spread over more GPUs leaves fewer tokens to each: ZeRO-3 scales out only "
                  "while the batch per GPU keeps it right of the ridge.",
    checker=number_checker(ZERO_TOKENS, "tokens", rel_tol=0.05,
                           why="four gathers or reduce-scatters of 2Ψ bytes against the step's hardware FLOPs.",
                           near_misses=[
        (ZERO_TOKENS / 2048, "that is sequences: the question asks for tokens (2,048 to a sequence)"),
        (ZERO_TOKENS / 2, "ZeRO-3 does not all-reduce once: it gathers the weights for every pass (three with full "
                          "recomputation) and reduce-scatters the gradients"),
        (2 * ZERO_TOKENS, "the weights and gradients travel in 16 bits: 2 bytes per parameter"),
        (zero3_point(_GPT3, _A100_NV, ZERO_GPUS, 1, "full").crossing, "1,536 GPUs span 192 nodes: the gathers "
                                                                      "cross InfiniBand, not NVLink")]),
    reference=ZERO_TOKENS,
    wrong=[(ZERO_TOKENS / 2048, "that is sequences"), (ZERO_TOKENS / 2, "gathers the weights for every pass")],
    how_to_answer="Answer with a number of tokens per GPU, e.g. ex.zero3_tokens.check(4096).",
)

# --------------------------------------------------------------------------------------------
# 5-6. Open questions

_H100_NV, _H100_IB = link_roof("H100-SXM", "nvlink"), link_roof("H100-SXM", "network")

new_hardware = Exercise(
    key="new_hardware", number=5,
    title="New hardware",
    question="Draw GPT-3's tensor, pipeline and data-parallel points of Megatron's configuration "
             "on DGX H100 roofs (`link_roof('H100-SXM', ...)`) instead of DGX A100 ones. Which ridges move, by how "
             "much, and why? Which configuration does the planner choose there?",
    hint_text="A ridge is the matrix rate over the link's bandwidth. Compare how much the dense 16-bit peak grew "
              "from A100 to H100 with how much NVLink and the network per GPU grew.",
    solution_text=f"The NVLink ridge moves from {_A100_NV.ridge:,.0f} to {_H100_NV.ridge:,.0f} FLOP/byte and "
                  f"InfiniBand's from {_A100_IB.ridge:,.0f} to {_H100_IB.ridge:,.0f}: the peak grew more than "
                  "either link, so every strategy needs more work per byte than before. The points themselves do "
                  "not move (they are FLOPs per byte, set by the model and the configuration). Tensor parallelism "
                  "over NVLink stays right of its ridge for GPT-3; a smaller model's would not. Run "
                  "`plan_for('175B', 1024, 'H100-SXM', 1536)` to see the planner's answer.",
)

plan_llama = Exercise(
    key="plan_llama", number=6,
    title="A newer model",
    question="Run the planner for `llama3-405b` on 16,384 H100s with 2,048 sequences of 8,192 "
             "tokens a step and compare its choice with how the Llama 3 report splits the model. What keeps the "
             "planner from the report's configuration?",
    hint_text="Look at the planner's top configurations and its tie line, then at the best configuration without "
              "context parallelism (`cp=(1,)`). Then place the report's tensor, pipeline and data-parallel groups "
              "on the H100 roofs.",
    solution_text="The planner can express the report's layout (126 layers over 16 stages, the first and last "
                  "one block short) and keeps tensor parallelism in a node, as the report does. Its fastest "
                  "configurations pair a 16-stage pipeline with context parallelism at 8,192 tokens: 2,048 "
                  "sequences over 128 replicas leave a 16-stage pipeline only 16 micro-batches, and trading "
                  "replicas for context-parallel ranks gives it more, so a smaller bubble. The model charges context "
                  "parallelism only its messages, not its smaller products per rank; the report uses it only at "
                  "128K tokens (Dubey et al., 2024, Table 4). And many configurations are predicted within the "
                  "model's own error of the fastest (the tie line counts them), a tie it cannot break. Without context "
                  "parallelism it falls back to short "
                  "pipelines and data parallelism. On the roofline, a long pipeline is far right of InfiniBand's "
                  "ridge (many layers per stage, a wide model), so the difference is the bubble and memory, which "
                  "the roofline does not see: a reminder that the roofline says which links can be hidden, and the "
                  "cost model says what the step costs.",
)

EXERCISES = [dp_tokens, tp_intensity_function, tp16, zero3_tokens, new_hardware, plan_llama]
