"""A mixture-of-experts Transformer: its experts, active and total parameters, and the bytes expert parallelism sends.

``MoETransformer`` is a ``Transformer`` whose MLP in each MoE block is ``experts`` routed experts of width
``expert_ffn``, of which a router picks ``top_k`` per token, plus ``shared_experts`` that every token passes through
(DeepSeek-V3, §4.2 of its report). Its ``ffn`` is set to the *active* width ``(top_k + shared_experts) · expert_ffn``:
a token's MLP FLOPs and saved activations are those of a dense MLP that wide, so every per-block formula of
``transformer_accounting`` (FLOPs, activations) reads the MoE block right, and the model FLOPs count active
parameters only. The first ``dense_layers`` blocks are dense (MLP ``dense_ffn``); the step time charges every block as
an MoE block (exact where ``dense_ffn`` is the active width, as DeepSeek-V3's 18,432 = 9 × 2,048), the memory counts
each kind on its stage. ``capacity_factor`` (Fedus et al. 2022, §2.2: an expert's buffer is that factor × its even
share of the tokens; None: dropless and balanced, 1) is the load the busiest expert rank carries relative to an even
share: its routed MLP runs that much longer and its dispatch sends that much more.

Expert parallelism ``ep`` splits the routed experts over ``ep`` ranks of the data-parallel group (Megatron-Core's
layout: the experts divide by ``ep``, ``ep`` divides ``dp``); each expert is split over the tensor-parallel ranks too
(Megatron-Core's default expert tensor parallelism, ``tp``), or over ``Plan.etp`` ranks when the expert groups are
folded over the tensor ranks, and with ``tp > 1`` sequence parallelism is required (Megatron-Core's
``TransformerConfig``: "When using expert parallelism and tensor parallelism, sequence parallelism must be used"). An
expert's weights are replicated over ``Plan.expert_dp`` ranks (``dp / ep`` unfolded), and ZeRO shards them over those.
A block's experts cost four all-to-alls a micro-batch: dispatch and combine in the forward, their gradients in the
backward; a rank sends ``(ep − 1)/ep`` of its tokens' ``top_k`` copies of a ``hidden``-wide vector, in 16 bits, or the
dispatch in FP8 where the recipe quantises it (DeepSeek-V3, §3.3.3: dispatch in FP8, both combines in BF16; the same
for the activation gradient before the down-projection, so one backward all-to-all in FP8 too).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from d2lmp.model.alpha_beta import ring_bytes_per_rank
from d2lmp.model.transformer_accounting import Transformer, layer_parameters, training_flops
from d2lmp.model.vocabulary import Recompute

__all__ = ["MoETransformer", "moe_transformer", "routed_ffn", "moe_layers", "dense_view", "expert_parameters",
           "layer_parameters_moe", "total_parameters", "active_parameters", "expert_parameters_per_gpu",
           "router_flops", "step_flops", "padding_flops", "dispatch_tokens", "all_to_all_bytes"]

@dataclass(frozen=True)
class MoETransformer(Transformer):
    """A ``Transformer`` with routed experts (``ffn`` is set to the active width; see the module docstring)."""

    experts: int = 1
    top_k: int = 1
    expert_ffn: int = 1
    shared_experts: int = 0
    capacity_factor: float | None = None
    dense_layers: int = 0
    dense_ffn: int | None = None

    def __post_init__(self) -> None:
        for name in ("experts", "top_k", "expert_ffn"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.top_k > self.experts:
            raise ValueError(f"top_k ({self.top_k}) cannot exceed the routed experts ({self.experts})")
        if not isinstance(self.shared_experts, int) or self.shared_experts < 0:
            raise ValueError(f"shared_experts must be a non-negative integer, got {self.shared_experts!r}")
        if self.capacity_factor is not None and not self.capacity_factor >= 1:
            raise ValueError(f"capacity_factor must be at least 1 or None (dropless), got {self.capacity_factor!r}")
        if not isinstance(self.dense_layers, int) or not 0 <= self.dense_layers < self.layers:
            raise ValueError(f"dense_layers must be 0 to layers - 1 ({self.layers - 1}), got {self.dense_layers!r}")
        object.__setattr__(self, "ffn", (self.top_k + self.shared_experts) * self.expert_ffn)
        super().__post_init__()


def moe_transformer(base: Transformer, experts: int, top_k: int, expert_ffn: int, shared_experts: int = 0,
                    capacity_factor: float | None = None, dense_layers: int = 0,
                    dense_ffn: int | None = None) -> MoETransformer:
    """``base``'s attention, vocabulary and options (every ``Transformer`` field) with routed experts in its MLPs
    (``ffn`` becomes the active width)."""
    dense = {f.name: getattr(base, f.name) for f in fields(Transformer)}
    return MoETransformer(**dense, experts=experts, top_k=top_k, expert_ffn=expert_ffn, shared_experts=shared_experts,
                          capacity_factor=capacity_factor, dense_layers=dense_layers, dense_ffn=dense_ffn)


def routed_ffn(model: Transformer) -> int:
    """The MLP width a token passes through in routed experts, ``top_k · expert_ffn`` (0 for a dense model)."""
    return model.top_k * model.expert_ffn if isinstance(model, MoETransformer) else 0


def moe_layers(model: Transformer) -> int:
    """Blocks whose MLP is a mixture of experts: all but the first ``dense_layers`` (0 for a dense model)."""
    return model.layers - model.dense_layers if isinstance(model, MoETransformer) else 0


def dense_view(model: MoETransformer) -> Transformer:
    """A dense block of ``model`` (every ``Transformer`` field as it has it): its attention with the dense MLP
    (``dense_ffn``, else the active width)."""
    dense = {f.name: getattr(model, f.name) for f in fields(Transformer)}
    return Transformer(**{**dense, "ffn": model.dense_ffn or model.ffn})


def expert_parameters(model: MoETransformer) -> int:
    """One expert's matrices: ``3·h·f`` gated (SwiGLU), else ``2·h·f`` (experts carry no biases)."""
    return (3 if model.gated_mlp else 2) * model.hidden * model.expert_ffn


def layer_parameters_moe(model: MoETransformer) -> tuple[int, int, int, int]:
    """(attention and norms, router ``h·E``, shared experts, routed experts) parameters of one MoE block."""
    attention, _, norms = layer_parameters(model)
    one = expert_parameters(model)
    return attention + norms, model.hidden * model.experts, model.shared_experts * one, model.experts * one


def _outside_blocks(model: Transformer) -> int:
    """Embeddings, position embedding, untied head and final norm."""
    h = model.hidden
    return (model.vocab * h * (1 if model.tied_embeddings else 2) + (model.seq * h if model.learned_positions else 0)
            + (2 if model.bias else 1) * h)


def total_parameters(model: MoETransformer) -> int:
    """Every parameter: dense blocks, MoE blocks with all their experts, embeddings and head."""
    dense = sum(layer_parameters(dense_view(model)))
    return model.dense_layers * dense + moe_layers(model) * sum(layer_parameters_moe(model)) + _outside_blocks(model)


def active_parameters(model: MoETransformer) -> int:
    """The parameters one token passes through: only ``top_k`` routed experts in each MoE block (and the router)."""
    base, router, shared, _ = layer_parameters_moe(model)
    per_moe = base + router + shared + model.top_k * expert_parameters(model)
    return (model.dense_layers * sum(layer_parameters(dense_view(model))) + moe_layers(model) * per_moe
            + _outside_blocks(model))


def expert_parameters_per_gpu(model: MoETransformer, tp: int, ep: int) -> float:
    """One MoE block's routed experts on one GPU: ``E/ep`` experts, each split ``tp`` ways."""
    return model.experts * expert_parameters(model) / (ep * tp)


def router_flops(model: Transformer, batch: int = 1) -> int:
    """Forward FLOPs of one MoE block's router for ``batch`` sequences: every token's ``hidden``-wide vector times
    the ``hidden × experts`` router matrix, ``2·b·s·h·E`` (0 for a dense model). The router's form: Switch
    Transformer (Fedus et al. 2022, §2.1: logits ``h(x) = W_r · x``, a softmax over the ``N`` experts); DeepSeek-V3
    (§2.1.2: affinity ``s_i,t = Sigmoid(u_tᵀ e_i)``, one centroid ``e_i`` of width ``h`` per routed expert)."""
    if not isinstance(model, MoETransformer):
        return 0
    return 2 * batch * model.seq * model.hidden * model.experts


def step_flops(model: Transformer, batch: int = 1, recompute: Recompute = "none") -> int:
    """``transformer_accounting.training_flops`` plus every MoE block's router: forward, backward (twice the
    forward) and, under full recomputation, the forward again."""
    passes = 4 if recompute == "full" else 3
    return training_flops(model, batch, recompute) + passes * moe_layers(model) * router_flops(model, batch)


def padding_flops(model: Transformer, micro_batch: int) -> float:
    """Forward FLOPs the busiest expert rank runs beyond an even share: ``(capacity_factor − 1)`` × the routed MLP's
    ``2·m·b·s·h·k·f`` (``m`` = 3 matrices gated, else 2)."""
    if not isinstance(model, MoETransformer) or model.capacity_factor is None:
        return 0.0
    matrices = 3 if model.gated_mlp else 2
    routed = 2 * matrices * micro_batch * model.seq * model.hidden * routed_ffn(model)
    return (model.capacity_factor - 1) * routed


def dispatch_tokens(model: MoETransformer, micro_batch: int, tp: int, cp: int) -> float:
    """Tokens one GPU routes per micro-batch: its ``b·s/(cp·tp)`` (sequence parallel over ``tp``) × ``top_k`` copies
    × the capacity factor (the busiest rank's load)."""
    load = model.capacity_factor if model.capacity_factor is not None else 1.0
    return micro_batch * model.seq / (cp * tp) * model.top_k * load


def all_to_all_bytes(model: MoETransformer, micro_batch: int, tp: int, cp: int, ep: int,
                     bytes_per_value: float = 2) -> float:
    """Bytes one GPU sends off-rank in one all-to-all: ``(ep − 1)/ep`` of its routed copies of ``hidden`` values."""
    if ep == 1:
        return 0.0
    routed = dispatch_tokens(model, micro_batch, tp, cp) * model.hidden * bytes_per_value
    return ring_bytes_per_rank("all_to_all", routed, ep)
