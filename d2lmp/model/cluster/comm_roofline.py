"""The communication roofline: FLOPs a device computes per byte it sends, against the ridge of the link it sends on.

Notebook 03's roofline divides FLOPs by the bytes moved through memory. Here the bytes are those a device sends over a
link. In a unit of work (a step, a micro-batch, one block) a device computes ``F`` FLOPs at the matrix rate ``P``
(``gemm`` × the largest matmul's measured rate, a fraction of the dense 16-bit peak) and sends ``N`` bytes at the
link's bus bandwidth ``B`` (its sourced figure × the fitted ``nvlink`` or ``network`` fraction; PCIe has no fitted
fraction: its specification rate is used, an upper bound). The sending can hide behind the computing only if ``F/P ≥
N/B``, that is if the intensity ``I = F/N`` reaches the ridge ``P/B``: right of the ridge a strategy is *compute
bound*, left of it *communication bound*, and at best it runs at ``min(P, I·B)``. FLOPs are those of
``transformer_accounting``; bytes are what each rank sends in a ring collective (``steptime.all_reduce_bytes``:
``2(n−1)/n`` of the buffer for an all-reduce, ``gather_bytes``: ``(n−1)/n`` for an all-gather or a reduce-scatter), of
16-bit values. With ``F₁`` the step FLOPs of one sequence, ``Ψ`` the parameters, ``F_L`` one block's forward FLOPs for
``b`` sequences (``24bsh² + 4bs²h`` for a GPT), ``F_A = 4bs²h`` its attention core and ``kv`` the key/value width:

- data parallelism (``d`` replicas, ``B`` sequences a replica per step): ``F = B·F₁`` and an all-reduce of the
  gradients, ``N = 2(d−1)/d · 2Ψ``; ``I = B·F₁·d / (4Ψ(d−1))``, ∝ tokens per replica. With ``F₁ ≈ 6Ψs``,
  ``I ≈ 1.5 · tokens · d/(d−1)``: compute bound from about two thirds of the ridge in tokens. Tensor or
  pipeline parallelism inside a replica divide ``F`` and ``N`` alike, so the intensity is the replica's.
- ZeRO-3 / FSDP (one micro-batch of ``b`` sequences a device): the weights are gathered for the forward and for
  the backward (and for a recomputed forward), the gradients reduce-scattered: ``N = (g+1)·(d−1)/d · 2Ψ`` with
  ``g`` = 2 (3 with full recomputation); ``I ≈ tokens · d/(d−1)`` with ``g`` = 2: compute bound once the tokens a
  device works on per micro-batch exceed about the ridge.
- tensor parallelism (``t`` ranks, one block, one micro-batch, forward and backward): ``F = 3F_L/t`` and four
  all-reduces of the ``2bsh``-byte activations (two a pass; sequence parallelism's all-gathers and
  reduce-scatters send the same bytes), ``N = 16bsh(t−1)/t``; ``I = 3F_L / (16bsh(t−1))``, for a GPT
  ``(18h + 3s)/(4(t−1))``: the batch cancels, ∝ hidden size per rank ``h/t`` (affine: the attention core adds a
  term in ``s``). Full recomputation adds a forward (``4F_L``) and two all-reduces (six).
- pipeline parallelism (``p`` stages, one micro-batch through a stage, forward and backward): ``F = (l/p)·3F_L/t``;
  an inner stage sends its activations on and their gradient back, ``2bsh`` bytes each, split over the ``t``
  tensor-parallel ranks by scatter-gather (each rank sends the whole message without it), once per virtual
  stage ``v``: ``N = 2v·2bsh/t``; ``I = (l/p)·3F_L/(4vbsh)``, for a GPT ``(l/p)(18h + 3s)/v``: ∝ layers per stage
  × hidden size.
- context parallelism (``c`` ranks, one block, one micro-batch): the ring hides behind the attention core; a rank
  computes ``F_A/(ct)`` forward and twice that backward while it passes ``c − 1`` key/value chunks of
  ``4b(s/c)·kv/t`` bytes forward and twice as many backward: ``I = F_A / (c(c−1)·4b(s/c)·kv) = s·h/((c−1)·kv)``,
  ∝ the chunk length ``s/c`` (times ``h/kv``, the query heads per key/value head). Two simplifications: the
  ring's backward also sends each chunk's gradients their last hop home (``3c − 2`` messages in all, not
  ``3(c − 1)``), and a causal mask computes about half the scores, which halves ``F_A`` and ``I``.
- expert parallelism (``n`` ranks, one mixture-of-experts block whose experts are MLPs of the model's width
  ``f``, one micro-batch, forward and backward): each of a rank's ``k·b·s`` token assignments costs its expert
  ``4hf`` FLOPs forward (``6hf`` gated) and three times that in all, and its ``2h``-byte hidden vector travels to
  the expert and back forward (dispatch and combine all-to-alls) and again backward; with the load even,
  ``(n−1)/n`` of them leave the rank: ``I = 12hf / (8h(n−1)/n) = 1.5·f·n/(n−1)`` (× 1.5 gated), ∝ the expert's
  width; the tokens and ``k`` cancel.

Every intensity is ``per_knob · value + fixed`` in its knob (tokens, hidden size per rank, layers per stage, chunk
length, expert width), so the crossing, the knob's value at the ridge, is ``(ridge − fixed) / per_knob``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from d2lmp.model.cluster.efficiency import FITTED, Efficiency
from d2lmp.model.cluster.hardware import Cluster
from d2lmp.model.cluster.layout import Plan, check_plan
from d2lmp.model.cluster.link_roof import LINK_NAMES, LINKS, LinkRoof, available_roofs, link_roof, nvlink_domain
from d2lmp.model.cluster.steptime import (
    activation_message_bytes,
    all_reduce_bytes,
    gather_bytes,
    kv_chunk_bytes,
)
from d2lmp.model.transformer_accounting import (
    RECOMPUTE,
    Transformer,
    attention_core_flops,
    layer_flop_parts,
    layer_forward_flops,
    parameter_count,
    training_flops,
)
from d2lmp.model.vocabulary import ROOFLINE_STRATEGIES, LinkKind, Recompute, RoofStrategy

__all__ = ["LINKS", "LINK_NAMES", "STRATEGIES", "ABBREVIATIONS", "RECOMPUTE_WORDS", "LABEL", "nvlink_domain",
           "LinkRoof", "link_roof", "CommPoint", "crossing",
           "data_parallel_point", "zero3_point", "tensor_parallel_point", "pipeline_point",
           "context_parallel_point", "expert_parallel_point", "moe_data_parallel_point",
           "strategy_point", "plan_points", "describe_point", "available_roofs"]

STRATEGIES = ROOFLINE_STRATEGIES  # the axes by their short names, and ZeRO-3 (``vocabulary``)
ABBREVIATIONS: dict[RoofStrategy, str] = {"dp": "DP", "zero3": "ZeRO-3", "tp": "TP", "pp": "PP", "cp": "CP",
                                          "ep": "EP"}
RECOMPUTE_WORDS: dict[Recompute, str] = {"none": "no", "selective": "selective", "full": "full"}
# Every point's label: "TP 8 over NVLink, full recomputation (174.6B; hidden 12,288, 1,536 a rank)"; the
# parenthesis holds the model (its parameters) and the knob, so one label means one intensity in every notebook.
LABEL = (r"\b(DP|ZeRO-3|TP|PP|CP|EP) ([\d,]+) over (NVLink|InfiniBand|PCIe)( \(hypothetical\))?, "
         r"(no|selective|full) recomputation \(([^()]*)\)")


def _model(model: Transformer) -> str:
    n = parameter_count(model).total
    return f"{n / 1e9:,.1f}B" if n >= 1e9 else f"{n / 1e6:,.3g}M"


@dataclass(frozen=True)
class CommPoint:
    """One strategy on one roof: ``flops`` a device computes and ``bytes`` it sends in one ``unit`` of work.

    ``knob`` is what moves the point, ``value`` its value here, and the intensity is ``per_knob · value +
    fixed``, so the crossing (the knob's value at the ridge) is known exactly. ``ranks`` is the group's size,
    ``span`` the GPUs its link must join (a pipeline's stages × their tensor-parallel ranks), ``shape`` the model
    and the knob in words; ``label`` puts them in the one form every notebook prints (``LABEL``).
    """

    strategy: RoofStrategy
    ranks: int
    recompute: Recompute
    shape: str
    flops: float
    bytes: float
    roof: LinkRoof
    unit: str
    knob: str
    value: float
    per_knob: float
    fixed: float = 0.0
    span: int = 0  # 0: the group's own size

    @property
    def hypothetical(self) -> bool:
        """True where no node of this GPU's preset joins ``span`` GPUs by this link (``NVLINK_DOMAIN``)."""
        return self.roof.link != "network" and max(self.span, self.ranks) > nvlink_domain(self.roof.gpu)

    @property
    def label(self) -> str:
        """Strategy and group size, link (and "hypothetical"), recomputation, then the model and the knob."""
        where = LINK_NAMES[self.roof.link] + (" (hypothetical)" if self.hypothetical else "")
        return (f"{ABBREVIATIONS[self.strategy]} {self.ranks:,} over {where}, "
                f"{RECOMPUTE_WORDS[self.recompute]} recomputation ({self.shape})")

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    @property
    def ridge(self) -> float:
        return self.roof.ridge

    @property
    def bound(self) -> str:
        return "compute" if self.intensity >= self.ridge else "communication"

    @property
    def crossing(self) -> float:
        return crossing(self)

    @property
    def attainable_flops(self) -> float:
        return self.roof.attainable(self.intensity)

    @property
    def fraction(self) -> float:
        """The attainable fraction of the matrix rate: 1 right of the ridge, ``I / ridge`` left of it."""
        return self.attainable_flops / self.roof.flops_per_s

    @property
    def needed(self) -> str:
        return f"{self.knob} needed: {_number(self.crossing)} (here {_number(self.value)})"


def _number(x: float) -> str:
    return f"{x:,.0f}" if x >= 10 else f"{x:.2g}"


def crossing(point: CommPoint) -> float:
    """The knob's value at which ``point``'s strategy meets the ridge of its link (0 if it always clears it)."""
    return max(0.0, (point.ridge - point.fixed) / point.per_knob)


def _group(ranks: int, what: str) -> None:
    if not isinstance(ranks, int) or ranks < 2:
        raise ValueError(f"{what} needs at least 2 ranks to send anything, got {ranks!r}")


def _positive(name: str, value: float) -> None:
    if not value > 0:
        raise ValueError(f"{name} must be positive, got {value!r}")


def _recompute(recompute: Recompute) -> None:
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute must be one of {RECOMPUTE}, got {recompute!r}")


def data_parallel_point(model: Transformer, roof: LinkRoof, ranks: int, sequences: float,
                        recompute: Recompute = "none") -> CommPoint:
    """A step of data parallelism over ``ranks`` replicas, ``sequences`` a replica: its FLOPs against the
    all-reduce of the 16-bit gradients."""
    _group(ranks, "data parallelism")
    _positive("sequences", sequences)
    _recompute(recompute)
    per_sequence = training_flops(model, 1, recompute)
    sent = all_reduce_bytes(2 * parameter_count(model).total, ranks)
    tokens = sequences * model.seq
    return CommPoint("dp", ranks, recompute, f"{_model(model)}; {tokens:,.0f} tokens a replica",
                     sequences * per_sequence, sent, roof, "one step of one replica", "tokens per replica", tokens,
                     per_sequence / model.seq / sent)


def zero3_point(model: Transformer, roof: LinkRoof, ranks: int, sequences: float,
                recompute: Recompute = "none") -> CommPoint:
    """A micro-batch of ``sequences`` on each of ``ranks`` devices under ZeRO-3: its FLOPs against gathering the
    16-bit weights for each pass and reduce-scattering the gradients."""
    _group(ranks, "ZeRO-3")
    _positive("sequences", sequences)
    _recompute(recompute)
    gathers = 3 if recompute == "full" else 2
    per_sequence = training_flops(model, 1, recompute)
    sent = (gathers + 1) * gather_bytes(2 * parameter_count(model).total, ranks)
    tokens = sequences * model.seq
    return CommPoint("zero3", ranks, recompute, f"{_model(model)}; {tokens:,.0f} tokens a device",
                     sequences * per_sequence, sent, roof, "one micro-batch on one device", "tokens per device", tokens,
                     per_sequence / model.seq / sent)


def _passes(recompute: Recompute) -> tuple[int, int]:
    """(block forwards whose FLOPs a step computes, passes whose tensor-parallel messages it sends)."""
    return (4, 3) if recompute == "full" else (3, 2)


def tensor_parallel_point(model: Transformer, roof: LinkRoof, ranks: int, micro_batch: int = 1,
                          recompute: Recompute = "none") -> CommPoint:
    """One block of ``micro_batch`` sequences split over ``ranks``: a rank's FLOPs against its all-reduces."""
    _group(ranks, "tensor parallelism")
    _recompute(recompute)
    forwards, passes = _passes(recompute)
    core = attention_core_flops(model, micro_batch) * (forwards + (1 if recompute == "selective" else 0))
    dense = (layer_forward_flops(model, micro_batch) - attention_core_flops(model, micro_batch)) * forwards
    sent = 2 * passes * all_reduce_bytes(activation_message_bytes(model, micro_batch), ranks)
    per_rank = model.hidden / ranks
    return CommPoint("tp", ranks, recompute, f"{_model(model)}; hidden {model.hidden:,}, {per_rank:,.0f} a rank",
                     (dense + core) / ranks, sent, roof, "one block, one micro-batch, forward and backward",
                     "hidden size per rank", per_rank, dense / ranks / sent / per_rank, core / ranks / sent)


def pipeline_point(model: Transformer, roof: LinkRoof, stages: int, micro_batch: int = 1, tp: int = 1,
                   interleave: int = 1, scatter_gather: bool = True, recompute: Recompute = "none") -> CommPoint:
    """One micro-batch through one of ``stages`` stages: a device's FLOPs against the activations it sends on
    and the gradients it sends back (split over ``tp`` ranks by scatter-gather), once per virtual stage."""
    _group(stages, "pipeline parallelism")
    _recompute(recompute)
    forwards, _ = _passes(recompute)
    block = layer_forward_flops(model, micro_batch) * forwards + (
        attention_core_flops(model, micro_batch) if recompute == "selective" else 0)
    layers = model.layers / stages
    message = activation_message_bytes(model, micro_batch) / (tp if scatter_gather else 1)
    sent = 2 * interleave * message
    shape = f"{_model(model)}; {layers:g} layer{'' if layers == 1 else 's'} a stage" + (
        f", {interleave} virtual stages each" if interleave > 1 else "") + (
        f", whole messages from each of {tp} TP ranks" if tp > 1 and not scatter_gather else "")
    return CommPoint("pp", stages, recompute, shape, layers * block / tp, sent, roof,
                     "one micro-batch through one stage, forward and backward", "layers per stage", layers,
                     block / tp / sent, span=stages * tp)


def context_parallel_point(model: Transformer, roof: LinkRoof, ranks: int, micro_batch: int = 1,
                           tp: int = 1) -> CommPoint:
    """One block of one micro-batch with the sequence split over ``ranks``: the attention core a rank computes
    against the key/value chunks it passes round the ring, forward and backward."""
    _group(ranks, "context parallelism")
    if model.seq % ranks:
        raise ValueError(f"the sequence ({model.seq}) does not split into {ranks} chunks")
    flops = 3 * attention_core_flops(model, micro_batch) / (ranks * tp)
    sent = 3 * (ranks - 1) * kv_chunk_bytes(model, micro_batch, tp, ranks)
    chunk = model.seq / ranks
    return CommPoint("cp", ranks, "none", f"{_model(model)}; chunks of {chunk:,.0f} tokens", flops, sent, roof,
                     "one block, one micro-batch, forward and backward", "chunk length (tokens)", chunk,
                     flops / sent / chunk, span=ranks * tp)


def expert_parallel_point(model: Transformer, roof: LinkRoof, ranks: int, micro_batch: int = 1,
                          top_k: int = 1) -> CommPoint:
    """One mixture-of-experts block, experts as wide as ``model``'s MLP spread over ``ranks``, one micro-batch a
    rank: the expert FLOPs of its ``top_k`` assignments a token against the all-to-alls that carry them, forward
    and backward, the load even (``(n−1)/n`` of the assignments leave the rank)."""
    _group(ranks, "expert parallelism")
    if top_k not in (1, 2):
        raise ValueError(f"top_k must be 1 or 2, got {top_k!r}")
    flops = 3 * top_k * layer_flop_parts(model, micro_batch).mlp
    sent = 4 * gather_bytes(top_k * activation_message_bytes(model, micro_batch), ranks)  # (n−1)/n, as all-to-all
    width = model.ffn_size
    return CommPoint("ep", ranks, "none", f"{_model(model)}; experts {width:,} wide, top-{top_k}", flops, sent, roof,
                     "one MoE block, one micro-batch, forward and backward", "expert width", width,
                     flops / sent / width)


def moe_data_parallel_point(model: Transformer, roof: LinkRoof, ranks: int, tokens: float, experts: int,
                            top_k: int) -> CommPoint:
    """The experts of one MoE block under data parallelism, ``tokens`` a replica: each token computes in ``top_k``
    of the ``experts`` (``model``'s MLP each), and the all-reduce carries every expert's 16-bit gradients, so the
    tokens a replica needs grow by E/k (Austin et al., "How to Think About GPUs", Data Parallelism)."""
    _group(ranks, "data parallelism")
    _positive("tokens", tokens)
    if not 1 <= top_k <= experts:
        raise ValueError(f"need 1 <= top_k <= experts, got top_k {top_k!r} of {experts!r}")
    per_token = 3 * top_k * layer_flop_parts(model, 1).mlp / model.seq  # forward and backward
    sent = all_reduce_bytes(2 * experts * parameter_count(model).mlp, ranks)
    shape = f"{_model(model)}; {experts} experts top-{top_k}, {tokens:,.0f} tokens a replica"
    return CommPoint("dp", ranks, "none", shape, tokens * per_token, sent, roof,
                     "one MoE block's experts, one step of one replica", "tokens per replica", tokens,
                     per_token / sent)


def strategy_point(strategy: RoofStrategy, model: Transformer, roof: LinkRoof, ranks: int,
                   sequences: int = 1) -> CommPoint:
    """The point of ``strategy`` (a key of ``STRATEGIES``) with ``ranks`` in its group; ``sequences`` is the
    batch a replica (DP), a device (ZeRO-3) or a micro-batch (the others) works on."""
    builders: dict[RoofStrategy, Callable[[], CommPoint]] = {
        "dp": lambda: data_parallel_point(model, roof, ranks, sequences),
        "zero3": lambda: zero3_point(model, roof, ranks, sequences),
        "tp": lambda: tensor_parallel_point(model, roof, ranks, sequences),
        "pp": lambda: pipeline_point(model, roof, ranks, sequences),
        "cp": lambda: context_parallel_point(model, roof, ranks, sequences),
        "ep": lambda: expert_parallel_point(model, roof, ranks, sequences),
    }
    if strategy not in builders:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    return builders[strategy]()


def describe_point(point: CommPoint) -> str:
    """One sentence: the label, then its intensity (the first number after a label, as every notebook prints it),
    the ridge, the bound, the attainable fraction and the crossing."""
    return (f"{STRATEGIES[point.strategy]}, {point.label}: {point.intensity:,.0f} FLOP/byte "
            f"({point.flops:.3g} FLOPs per {point.bytes:.3g} bytes sent, {point.unit}) against a ridge of "
            f"{point.ridge:,.0f}: {point.bound}-bound, at most {point.fraction:.0%} of the matrix rate; "
            f"{point.needed}.")


def plan_points(model: Transformer, cluster: Cluster, plan: Plan, efficiency: Efficiency = FITTED) -> list[CommPoint]:
    """Every group of ``plan`` that sends, as a point on the roof of the link that group crosses."""
    layout = check_plan(model, cluster, plan)

    def roof(link: LinkKind) -> LinkRoof:
        return link_roof(cluster.gpu, link, efficiency)

    b, points = plan.micro_batch, []
    if plan.tp > 1:
        points.append(tensor_parallel_point(model, roof(layout.tp_link), plan.tp, b, plan.recompute))
    if plan.cp > 1:
        points.append(context_parallel_point(model, roof(layout.cp_link), plan.cp, b, plan.tp))
    if plan.pp > 1:
        split = plan.sequence_parallel or (plan.scatter_gather and layout.pp_link == "network")  # as steptime
        points.append(pipeline_point(model, roof(layout.pp_link), plan.pp, b, plan.tp, plan.interleave, split,
                                     plan.recompute))
    if plan.dp > 1 and plan.zero == 3:
        points.append(zero3_point(model, roof(layout.dp_link), plan.dp, b / plan.cp, plan.recompute))
    elif plan.dp > 1:
        points.append(data_parallel_point(model, roof(layout.dp_link), plan.dp,
                                          plan.global_batch / plan.dp / plan.cp, plan.recompute))
    return points
