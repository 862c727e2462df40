"""One vocabulary and one set of terms: every list of strategies is a view of ``vocabulary.Axis``, every fixed set
of choices is the one its run-time table holds, and both cost models price a message with the same ``terms.Link``."""

import ast
import re
from pathlib import Path
from typing import get_args

import pytest

from d2lmp.model import costmodel as CM
from d2lmp.model.alpha_beta import BUS_FACTORS, GPU_ALPHA_S, predicted_all_reduce_time
from d2lmp.model.cluster import Cluster, Plan
from d2lmp.model.cluster import comm_roofline as roofline
from d2lmp.model.cluster import steptime as S
from d2lmp.model.cluster.efficiency import FITTED, LATENCY_S
from d2lmp.model.cluster.hardware import GPUPreset, gpu_preset
from d2lmp.model.pipeline_schedule import SCHEDULES
from d2lmp.model.terms import RING_STEPS, Link, state_per_device
from d2lmp.model.training_state import OPTIMIZERS
from d2lmp.model.transformer_accounting import RECOMPUTE
from d2lmp.model.vocabulary import (
    BRIDGE_STRATEGIES,
    CLUSTER_LINKS,
    COLLECTIVE_CHECKS,
    DEMO_AXES,
    DEMO_STRATEGIES,
    GRID,
    GRIDS,
    LINK_KINDS,
    OPTIMIZER_NAMES,
    PLANS,
    TABLE_STRATEGIES,
    VARIANTS,
    Axis,
    Collective,
    demo_name,
    grid_name,
)

PACKAGE = Path(__file__).resolve().parents[1] / "d2lmp"


def _lines_matching(pattern: str) -> list[str]:
    """'path: line' for every line of the package's modules that matches ``pattern``."""
    return [f"{path.relative_to(PACKAGE).as_posix()}: {line}" for path in sorted(PACKAGE.rglob("*.py"))
            for line in path.read_text(encoding="utf-8").splitlines() if re.search(pattern, line)]


def test_every_list_of_strategies_is_a_view_of_the_axes():
    words = {axis.word for axis in Axis}
    assert set(CM.STRATEGIES) - {CM.WEIRD_TRICK} <= words and CM.STRATEGIES == TABLE_STRATEGIES
    assert set(roofline.STRATEGIES) - {"zero3"} == {axis.value for axis in Axis}
    assert roofline.STRATEGIES[Axis.TENSOR.value] == "tensor parallelism"
    assert BRIDGE_STRATEGIES == ("data", "tensor", "pipeline", "data x tensor")
    assert grid_name(Axis.DATA, Axis.TENSOR) == BRIDGE_STRATEGIES[-1]
    # the short names are the plan's fields: Plan(tp=2) is a plan along Axis.TENSOR
    assert all(hasattr(Plan(), axis.value) for axis in Axis if axis is not Axis.EXPERT)


def test_every_table_keyed_by_strategy_is_a_view_of_the_vocabulary():
    from d2lmp.bench import scale_bridge
    from d2lmp.checks import reshard
    from d2lmp.views import comm_roofline as roofline_view
    assert set(CM.STRATEGY_STAGE) == {Axis.DATA.word, Axis.PIPELINE.word, Axis.TENSOR.word}
    assert set(roofline_view.MARKERS) == set(roofline.STRATEGIES)
    assert tuple(scale_bridge.bridge_plans(8, 2)) == scale_bridge.STRATEGIES == BRIDGE_STRATEGIES
    assert {strategy for strategy, _ in scale_bridge.ALONE.values()} < set(BRIDGE_STRATEGIES)
    assert set(reshard.KINDS) - {"fsdp2"} == {Axis.TENSOR.word}  # FSDP2 shards along the data axis
    assert tuple(roofline_view.LINK_COLOURS) == LINK_KINDS


def test_the_parts_of_a_step_are_named_by_the_axes_they_belong_to():
    from d2lmp.model.cluster.expert_step import EXPERT_PART
    from d2lmp.model.cluster.planner import TERM_LINK
    from d2lmp.views.planner import PART_COLOURS, STEP_PART_LABELS
    parts = (*S.STEP_PARTS, EXPERT_PART)  # a mixture of experts adds its all-to-alls to the dense step's parts
    assert tuple(STEP_PART_LABELS) == tuple(PART_COLOURS) == parts
    assert set(TERM_LINK) < set(parts)
    # a part that one axis's communication costs is named by the axis's short name, the link it crosses after it
    by_axis = {part for part in parts if part in {axis.value for axis in Axis}}
    assert by_axis == {Axis.TENSOR.value, Axis.CONTEXT.value, Axis.DATA.value, Axis.EXPERT.value}
    assert all(TERM_LINK[part] == f"{part}_link" for part in by_axis)


def test_every_demo_strategy_is_in_the_vocabulary():
    from d2lmp.commands import demo
    # what users type (the README, notebooks 12 and 17) keeps working, in the order the help lists it
    assert list(demo.STRATEGIES) == ["dp", "collectives", "pipeline", "interleaved", "context", "all-to-all",
                                     "experts", "tensor", "zero", "gpt-tensor", "3d", "hybrid"]
    assert set(demo.STRATEGIES) == set(DEMO_STRATEGIES) and len(set(DEMO_STRATEGIES)) == len(DEMO_STRATEGIES)
    # every axis has its own check, named by its short name or its word (the experts by what they are)
    assert set(DEMO_AXES) == set(Axis) and all(demo_name(axis) == DEMO_AXES[axis] for axis in Axis)
    assert {name for axis, name in DEMO_AXES.items() if name not in (axis.value, axis.word)} == {"experts"}
    # the rest are what they say: a pipeline plan, grids named as the benchmarks name them, the collectives' own names
    assert VARIANTS["interleaved"] is Axis.PIPELINE and "interleaved" in PLANS
    assert grid_name(*GRIDS[GRID]) == BRIDGE_STRATEGIES[-1] and grid_name(*GRIDS["3d"]) == "data x pipeline x tensor"
    assert all(grid_name(*axes) in demo.STRATEGIES[name].description for name, axes in GRIDS.items())
    assert {c for checked in COLLECTIVE_CHECKS.values() for c in checked} <= set(get_args(Collective))
    assert COLLECTIVE_CHECKS["all-to-all"] == ("all_to_all",)


def test_each_fixed_choice_is_the_table_it_checks_against():
    assert OPTIMIZER_NAMES == tuple(OPTIMIZERS)
    assert RECOMPUTE == ("none", "selective", "full") and SCHEDULES == ("naive", "gpipe", "1f1b")
    assert roofline.LINKS == LINK_KINDS and set(CLUSTER_LINKS) < set(LINK_KINDS)
    assert set(get_args(Collective)) == set(BUS_FACTORS) and set(RING_STEPS) < set(BUS_FACTORS)


def test_a_link_prices_a_ring_as_the_alpha_beta_model_does():
    link = Link(100e9, 5e-6)
    for n in (2, 3, 8):
        assert link.all_reduce_seconds(1e9, n) == pytest.approx(predicted_all_reduce_time("ring", n, 1e9, 5e-6, 1e-11))
        assert link.gather_seconds(1e9, n) == pytest.approx((n - 1) * (5e-6 + 1e9 / n / 100e9))
    assert link.all_reduce_seconds(1e9, 1) == 0.0
    assert link.p2p_seconds(1e6) == pytest.approx(5e-6 + 1e6 / 100e9)
    assert Link(100e9, 5e-6, p2p_bytes_per_s=50e9).p2p_seconds(1e6) == pytest.approx(5e-6 + 1e6 / 50e9)
    with pytest.raises(ValueError, match="available: all_reduce"):
        link.collective_seconds("broadcast", 1e6, 4)


def test_both_front_doors_price_messages_with_the_same_link():
    hw = CM.PRESETS["8x A100 (NVSwitch)"]
    assert hw.link == Link(hw.link_bytes_per_s, GPU_ALPHA_S)
    for name, alpha in (("network", FITTED.network_us * 1e-6), ("nvlink", gpu_preset("A100").latency_s)):
        rate = S.link_bytes_per_s(Cluster("A100-80GB", 16), name, FITTED)
        link = Link(float(rate), alpha)
        assert S.all_reduce_seconds(1e9, 16, rate) == link.all_reduce_seconds(1e9, 16), name
        assert S.gather_seconds(1e9, 16, rate) == link.gather_seconds(1e9, 16), name
        assert S.p2p_seconds(1e6, rate) == link.p2p_seconds(1e6), name
    # ... and keep the training state with the same rule
    assert CM.state_per_device is state_per_device


def _alphas_bound_to_numbers() -> set[tuple[str, str]]:
    """(module, name) of every name with "alpha" or "latency" in it that the model package binds to a number."""
    found = set()
    for path in sorted((PACKAGE / "model").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Constant):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                found |= {(path.relative_to(PACKAGE).as_posix(), t.id) for t in targets
                          if isinstance(t, ast.Name) and re.search("alpha|latency", t.id, flags=re.I)}
    return found


def test_each_alpha_is_defined_once_with_its_meaning():
    assert _alphas_bound_to_numbers() == {("model/alpha_beta.py", "GPU_ALPHA_S"),
                                          ("model/cluster/hardware.py", "latency_s")}
    assert LATENCY_S == GPUPreset.latency_s == gpu_preset("H100").latency_s == 10e-6
    assert GPU_ALPHA_S == 3.4e-6 and "alpha_beta.GPU_ALPHA_S" in (GPUPreset.__doc__ or "")


def test_one_prediction_record():
    found = _lines_matching(r"^class Prediction\b")
    assert len(found) == 1 and "model/cluster/predict.py" in found[0], found
