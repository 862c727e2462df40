"""The series' one vocabulary of strategies and fixed choices, so that mypy catches a misspelt one.

``Axis`` names the ways to split training over devices: its value is the short name a plan, the
communication roofline and the commands use (``"dp"``, ``"tp"``, ...), ``word`` the word the layer-table
model and the benchmarks use (``"data"``, ``"tensor"``, ...), ``long_name`` the phrase a figure prints. Each
module's list of strategies is a view of it: the layer table's (``TABLE_STRATEGIES``, with Krizhevsky's
"one weird trick"), the roofline's (``ROOFLINE_STRATEGIES``, with ZeRO-3) and the bridge benchmark's
(``BRIDGE_STRATEGIES``, with a data × tensor grid). The torchrun entry point's rank checks (``commands.demo``)
are named by ``demo_name``: an axis's own check by ``DEMO_AXES``, every other check as what it is, a variant of an
axis (``VARIANTS``), a grid of axes (``GRIDS``) or a check of collectives (``COLLECTIVE_CHECKS``). The fixed sets
of choices are ``Literal`` aliases, each with the tuple of its values for run-time checks of user input (which
still arrives as ``str``).
"""

from __future__ import annotations

from enum import Enum
from typing import Literal, get_args

__all__ = ["Axis", "grid_name", "TableStrategy", "TABLE_STRATEGIES", "WEIRD_TRICK", "GRID", "RoofStrategy",
           "ROOFLINE_STRATEGIES", "BRIDGE_STRATEGIES", "DEMO_AXES", "Variant", "VARIANTS", "GridName",
           "GRIDS", "CollectiveCheck", "COLLECTIVE_CHECKS", "DEMO_STRATEGIES", "demo_name", "Recompute", "RECOMPUTE",
           "PipelineSchedule", "SCHEDULES",
           "PipelinePlan", "PLANS", "OptimizerName", "OPTIMIZER_NAMES", "LinkKind", "LINK_KINDS", "ClusterLink",
           "CLUSTER_LINKS", "ZeroStage", "Collective", "PipelineStage", "AttentionKernel", "ATTENTION_KERNELS",
           "MatmulPrecision", "MATMUL_PRECISIONS"]


class Axis(str, Enum):
    """A way to split training over devices; the value is its short name (``Plan``'s fields are named so)."""

    DATA = "dp"
    TENSOR = "tp"
    PIPELINE = "pp"
    CONTEXT = "cp"
    EXPERT = "ep"

    @property
    def word(self) -> str:
        """The one word the layer-table model and the benchmarks name it by: ``"data"``, ``"tensor"``, ..."""
        return self.name.lower()

    @property
    def long_name(self) -> str:
        """What a figure calls it: ``"data parallelism"``, ..."""
        return f"{self.word} parallelism"


def grid_name(*axes: Axis) -> str:
    """A grid of process groups over ``axes``, as the benchmarks name it: ``"data x tensor"``."""
    return " x ".join(axis.word for axis in axes)


# Krizhevsky's "one weird trick" (krizhevsky2014weird): convolutions data parallel, fully connected layers split.
WEIRD_TRICK: Literal["one weird trick"] = "one weird trick"
# A data × tensor grid of process groups (``parallel.hybrid``), predicted by the layer table with ``grid=``.
GRID: Literal["hybrid"] = "hybrid"
# The layer-table model's strategies: three axes by their word, and the weird trick.
TableStrategy = Literal["data", "pipeline", "tensor", "one weird trick"]
TABLE_STRATEGIES: tuple[TableStrategy, ...] = get_args(TableStrategy)
# The communication roofline's strategies: the axes by their short name, and ZeRO-3 (data parallelism that also
# gathers the weights), in the order of the roofline's figures.
RoofStrategy = Literal["dp", "zero3", "tp", "pp", "cp", "ep"]
ROOFLINE_STRATEGIES: dict[str, str] = {
    Axis.DATA.value: Axis.DATA.long_name, "zero3": "ZeRO-3 / FSDP",
    **{axis.value: axis.long_name for axis in (Axis.TENSOR, Axis.PIPELINE, Axis.CONTEXT, Axis.EXPERT)}}
# What the bridge benchmark runs on CPU ranks and predicts with the cluster model.
BRIDGE_STRATEGIES = (Axis.DATA.word, Axis.TENSOR.word, Axis.PIPELINE.word, grid_name(Axis.DATA, Axis.TENSOR))

# What the backward recomputes: nothing, the attention core (Korthikanti et al. 2022), or every block's forward.
Recompute = Literal["none", "selective", "full"]
RECOMPUTE: tuple[Recompute, ...] = get_args(Recompute)
# How a run computes attention: materialising the s×s scores (Megatron-LM's 2021 kernels), or a fused, tiled kernel
# that keeps no s×s tensor and recomputes the scores in its backward (Dao et al. 2022, FlashAttention).
AttentionKernel = Literal["materialised", "flash"]
ATTENTION_KERNELS: tuple[AttentionKernel, ...] = get_args(AttentionKernel)
# The precision of the linear layers' matrix products: 16-bit, or FP8 with 16-bit everything else.
MatmulPrecision = Literal["bf16", "fp8"]
MATMUL_PRECISIONS: tuple[MatmulPrecision, ...] = get_args(MatmulPrecision)
# The pipeline schedules ``pipeline_schedule.schedule`` writes out, and all that ``rank_plan`` and ``simulate`` know.
PipelineSchedule = Literal["naive", "gpipe", "1f1b"]
SCHEDULES: tuple[PipelineSchedule, ...] = get_args(PipelineSchedule)
PipelinePlan = Literal[PipelineSchedule, "interleaved", "zero-bubble"]
PLANS: tuple[PipelinePlan, ...] = (*SCHEDULES, "interleaved", "zero-bubble")
# The rows of ``training_state.OPTIMIZERS``.
OptimizerName = Literal["sgd", "momentum", "adam", "adam_mixed"]
OPTIMIZER_NAMES: tuple[OptimizerName, ...] = get_args(OptimizerName)
# The links a group of GPUs may cross: the cluster model places groups on the first two.
ClusterLink = Literal["nvlink", "network"]
CLUSTER_LINKS: tuple[ClusterLink, ...] = get_args(ClusterLink)
LinkKind = Literal["nvlink", "network", "pcie"]
LINK_KINDS: tuple[LinkKind, ...] = get_args(LinkKind)
# What ZeRO shards: 0 nothing (plain data parallelism), 1 the optimizer state, 2 the gradients too, 3 the weights too.
ZeroStage = Literal[0, 1, 2, 3]
# The collectives whose bytes per rank ``alpha_beta.BUS_FACTORS`` gives.
Collective = Literal["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all"]
# The pipeline stages whose memory and time the cluster model works out (the first holds the embedding, the last
# the output layer, a middle one only blocks: the fullest, where the layers do not divide the stages).
PipelineStage = Literal["first", "middle", "last"]

# The torchrun entry point's rank checks (``commands.demo``), by the name a user types. An axis's own check: data
# parallelism by its short name, expert parallelism by what it spreads over the ranks (the experts), the others by
# their word.
DEMO_AXES: dict[Axis, str] = {Axis.DATA: Axis.DATA.value, Axis.EXPERT: "experts",
                              **{axis: axis.word for axis in (Axis.TENSOR, Axis.PIPELINE, Axis.CONTEXT)}}
# A variant of an axis's strategy: interleaved 1F1B (a pipeline plan of ``PLANS``), ZeRO (data parallelism that also
# shards the training state, ``ZeroStage``), Megatron's tensor parallelism of a GPT (sequence parallelism too).
Variant = Literal["interleaved", "zero", "gpt-tensor"]
VARIANTS: dict[Variant, Axis] = {"interleaved": Axis.PIPELINE, "zero": Axis.DATA, "gpt-tensor": Axis.TENSOR}
# A grid of process groups: the axes it splits over at once (``GRID``, data x tensor; "3d" adds pipeline stages).
GridName = Literal["hybrid", "3d"]
GRIDS: dict[GridName, tuple[Axis, ...]] = {GRID: (Axis.DATA, Axis.TENSOR),
                                           "3d": (Axis.DATA, Axis.PIPELINE, Axis.TENSOR)}
# A check of the collectives the strategies are built from: the collectives it compares with torch.distributed's.
CollectiveCheck = Literal["collectives", "all-to-all"]
COLLECTIVE_CHECKS: dict[CollectiveCheck, tuple[Collective, ...]] = {
    "collectives": ("all_reduce", "reduce_scatter", "all_gather"), "all-to-all": ("all_to_all",)}
# Every name the entry point may run, once each.
DEMO_STRATEGIES: tuple[str, ...] = (*DEMO_AXES.values(), *VARIANTS, *GRIDS, *COLLECTIVE_CHECKS)


def demo_name(check: Axis | Variant | GridName | CollectiveCheck) -> str:
    """The torchrun entry point's name for a rank check: an axis's from ``DEMO_AXES``, any other check's its own."""
    return DEMO_AXES[check] if isinstance(check, Axis) else check
