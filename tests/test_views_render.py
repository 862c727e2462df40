"""Every figure a notebook draws with a view, drawn here as the notebook calls it, keeps its text readable.

The calls are read from the notebooks' code cells (``tools.notebooks``). A call whose arguments need only what the
notebook imports is evaluated as written (on a figure of its own: without ``ax``); a call on data the notebook
computed (a measurement, a plan) draws that view from ``BUILDERS``, small library data of the same kind. Each
figure is drawn with Agg and checked: no text (titles, axis labels, tick labels, annotations, legends) leaves the
figure; a label written at a data point stays inside its axes; a legend names things in words, not as the code
does (``pp_p2p``); and the figures of notebooks 01 and 20 use no font under 8 pt.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Iterator

import pytest

from tools.notebooks import paths, read

# Views whose calls need a notebook's own data and have no builder yet, with why.
UNRENDERED = {
    "bandwidth.plot_bandwidth_curves": "draws a measured bandwidth sweep",
    "bandwidth.plot_bandwidth_sweep": "draws a measured bandwidth sweep",
    "bandwidth.plot_bus_bandwidth": "needs the notebook's table of memory buses",
    "bandwidth.plot_memory_capacities": "needs the notebook's table of capacities",
    "conv.plot_conv_speed": "draws measured convolution times",
    "costmodel.plot_memory_by_size": "needs the notebook's sweep of widened AlexNets",
    "costmodel.plot_step_time": "needs the notebook's predictions per preset",
    "data_parallel.plot_dp_scaling": "needs the notebook's measured step and curves",
    "dp_training.plot_batchnorm_accuracy": "draws trained runs on ranks",
    "dp_training.plot_batchnorm_gaps": "draws trained runs on ranks",
    "dp_training.plot_lr_scaling": "draws trained runs on ranks",
    "experts.plot_expert_load": "needs a routed MoE layer",
    "experts.plot_experts": "needs a routed MoE layer and its dispatch on ranks",
    "failures.plot_restart_events": "draws a real restart's log",
    "features.plot_feature_accuracies": "draws trained classifiers",
    "gpt.plot_loss": "draws a training run",
    "matmul.plot_matmul_sweep": "draws measured matmul times",
    "memory.plot_memory_breakdown": "draws measured memory",
    "memory.plot_saved_per_layer": "draws measured saved activations",
    "models.plot_filters": "draws trained filters",
    "models.plot_params_vs_flops": "needs AlexNet's layer shares",
    "precision.plot_exponent_histogram": "draws measured gradients",
    "precision.plot_inference_compare": "draws measured inference",
    "precision.plot_underflow_vs_scale": "draws measured gradients",
    "roofline.plot_format_roofs": "needs the notebook's T4 roofs",
    "roofline.plot_roofline": "draws measured points",
    "roofline.plot_speedups": "draws measured speedups",
    "strategies.plot_three_splits": "needs the notebook's example splits",
    "tensor_parallel.plot_saved_bytes_by_part": "draws measured saved bytes",
    "tensor_parallel.plot_split_scaling": "draws measured split costs",
    "trace.plot_trace_beside_timeline": "draws a profiler trace of ranks",
    "training.plot_history": "draws a training run",
    "zero.plot_measured_vs_formula": "draws measured bytes on ranks",
}
CODE_NAME = re.compile(r"\b[a-z0-9]+_[a-z0-9_]+\b")  # pp_p2p, memory_bound: what a legend should not say
FONT_CHECKED = ("graphics.", "gpu_architecture.plot_notable_gpus", "comm_roofline.", "planner.")  # 01 and 19


def _cube() -> object:
    from d2lmp import graphics
    from d2lmp.views import graphics as graphics_views

    m = graphics.rotation_x(math.radians(20)) @ graphics.rotation_y(math.radians(30))
    turned = graphics.transform_batched(graphics.cube_vertices(), m)
    seen = graphics.project(turned, focal=graphics_views.CAMERA_DISTANCE)
    return graphics_views.plot_wireframe(seen, graphics.cube_edges(), title="yaw 30°")


def _roofline() -> object:
    from d2lmp.model.cluster.comm_roofline import STRATEGIES
    from d2lmp.views import comm_roofline as V

    points = [V.roofline_case(s, link=link) for s in STRATEGIES for link in ("nvlink", "network")]
    return V.plot_comm_roofline(points, V.available_roofs("A100-80GB"),
                                title="GPT-3 175B's strategies under DGX A100 roofs (fitted rates)")


def _plans() -> dict[str, object]:
    from d2lmp.model.cluster import Cluster, Plan, model_preset, predict

    model, cluster = model_preset("175B").model, Cluster("A100-80GB", 1024)
    plans = [Plan(tp=8, pp=16, dp=8, global_batch=1536, recompute="full"),
             Plan(tp=4, pp=4, dp=64, global_batch=1536, micro_batch=2, recompute="selective", sequence_parallel=True,
                  interleave=8, zero=2),
             Plan(tp=16, pp=1, dp=64, global_batch=1536, recompute="full", zero=3)]
    return {f"#{i} {p.describe()}": predict(model, cluster, p) for i, p in enumerate(plans, 1)}


def _step_parts() -> object:
    from d2lmp.views import planner as V

    return V.plot_step_parts(_plans(), title="GPT-3 175B on 1,024 A100-80GB, 1,536 sequences a step: the best plans")


def _block_times() -> object:
    from d2lmp.model.cluster.block_times import BlockTime
    from d2lmp.views.block_times import plot_block_times

    times = [BlockTime(label, b, 4, max(4.5, k * b), max(4.47, 1.1 * k * b), 1.1 * k * b)
             for label, k in (("1B", 1.2), ("8B", 2.6)) for b in (1, 2, 4, 8, 16)]
    return plot_block_times(times, 4.47, title="Ultra-Scale sweep, TP 8 on 1-4 nodes of H100s (medians)")


def _memory_parts() -> object:
    from d2lmp.views import planner as V

    return V.plot_memory_parts({name: p.memory for name, p in _plans().items()},  # type: ignore[attr-defined]
                               title="GPT-3 175B: memory per GPU on 1,024 A100s")


def _job_timelines() -> object:  # notebook 19's
    from d2lmp.model import checkpoint_interval as CI
    from d2lmp.views import failures as V

    mtbf = CI.job_mtbf(CI.REPORTS[0].gpus, CI.REPORTS[0].per_gpu_hour)
    best = CI.best_interval(60.0, mtbf, 600.0)
    jobs = [(f"every {best / 60:.0f} min", CI.simulate(48 * CI.HOUR, best, 60.0, mtbf, 600.0, seed=2)),
            ("every 4 hours", CI.simulate(48 * CI.HOUR, 4 * CI.HOUR, 60.0, mtbf, 600.0, seed=2))]
    return V.plot_job_timelines(jobs, title="48 hours of work at Llama 3's failure rate")


def _waste() -> object:  # notebook 19's, with the formula's waste where the notebook simulates jobs
    from d2lmp.model import checkpoint_interval as CI
    from d2lmp.views import failures as V

    mtbf = CI.job_mtbf(CI.REPORTS[0].gpus, CI.REPORTS[0].per_gpu_hour)
    best = CI.best_interval(60.0, mtbf, 600.0)
    simulated = [(tau, CI.waste(tau, 60.0, mtbf, 600.0)) for tau in (best / 4, best, 4 * best)]
    return V.plot_waste_vs_interval(60.0, mtbf, 600.0, simulated=simulated,
                                    title="16,384 GPUs at Llama 3's failure rate")


def _checkpoint_layout() -> object:  # notebook 19's, on the records of 4 ranks' row blocks of two tensors
    from d2lmp.parallel.checkpoint import SavedPiece
    from d2lmp.views import failures as V

    pieces = [SavedPiece(name, (16 * r, 0), (16, 33), f"__{r}_0.distcp", 3700 * i, 3689)
              for i, name in enumerate(["model.0.weight", "optim.state.0.weight.exp_avg"]) for r in range(4)]
    return V.plot_checkpoint_layout(pieces, ["model.0.weight", "optim.state.0.weight.exp_avg"])


def _moe_layer() -> object:  # notebook 18's: 8 tokens, 2 of 8 experts each, on 2 ranks
    from d2lmp.views import experts as V

    return V.plot_moe_layer([(0, 5), (2, 1), (7, 3), (4, 6), (1, 0), (6, 2), (3, 4), (5, 7)], experts=8, ranks=2)


def _block_anatomy() -> object:  # notebook 11's
    from d2lmp.model import transformer_accounting as TA
    from d2lmp.scale import model_preset
    from d2lmp.views import gpt as V

    shape = model_preset("175B").model
    return V.plot_block_anatomy(TA.block_anatomy(shape, micro_batch=1),
                                title=f"One block of GPT-3 175B (h = {shape.hidden:,}, s = {shape.seq:,}, "
                                      f"{shape.heads} heads), one sequence")


def _memory_stack() -> object:  # notebook 17's
    from d2lmp.gpu_specs import find_gpu_spec
    from d2lmp.model.memory_calculator import MemorySetting, compare
    from d2lmp.scale import model_preset
    from d2lmp.views import memory_calculator as V

    h100 = find_gpu_spec("H100 SXM5")
    assert h100 is not None
    bars = compare(model_preset("175B").model, MemorySetting(tp=8, pp=8, sequence_parallel=True), "recompute",
                   h100.memory_gb * 1e9)
    return V.plot_memory_stack(bars, h100.memory_gb * 1e9, title="GPT-3 175B, tensor 8, pipeline 8",
                               xlabel="recomputation")


def _memory_per_stage() -> object:  # notebook 16's
    from d2lmp.gpu_specs import find_gpu_spec
    from d2lmp.model import costmodel as CM
    from d2lmp.views import zero as V

    h100 = find_gpu_spec("H100 SXM5")
    assert h100 is not None
    return V.plot_memory_per_stage(CM.zero_memory_by_stage(7_500_000_000, 64), h100.memory_gb * 1e9,
                                   title="7.5 B parameters, mixed-precision Adam, 64 devices")


def _timeline() -> object:  # notebook 14's simulated 1F1B
    from dataclasses import replace

    from d2lmp.model import pipeline_schedule as S
    from d2lmp.views import timeline as V

    events = S.simulate("1f1b", 4, 8)
    ideal = [replace(e, start=e.start / 1e3, end=e.end / 1e3) for e in events]
    return V.plot_timeline(ideal, lanes=("compute",), title="1f1b, 4 stages, 8 micro-batches (simulated)")


def _topology() -> object:  # notebook 05's third design
    from d2lmp import topology
    from d2lmp.views import topology as V

    return V.plot_topology(topology.nvswitch(8, 4))


def _power_budget() -> object:  # notebook 05's
    from d2lmp import gpu_specs, topology
    from d2lmp.views import topology as V

    spec = gpu_specs.find_gpu_spec("RTX 2080 Ti")
    assert spec is not None
    return V.plot_power_budget(topology.power_budget(2, spec.tdp_w, cpu_watts=150, other_watts=100, psu_watts=1000,
                                                     headroom=0.2))


def _grid() -> object:  # notebook 17's 2 × 2 grid, the groups written out
    from d2lmp.views import strategies as V

    return V.plot_grid([[0, 1], [2, 3]], [[0, 2], [1, 3]])


def _sm() -> object:  # notebook 02's
    from d2lmp import gpu_specs
    from d2lmp.views import gpu_architecture as V

    return V.plot_sm_hierarchy(gpu_specs.SM_LAYOUTS[0])


def _overlap_schedules() -> object:  # notebooks 15's and 15's
    from d2lmp.model.overlap_schedule import fsdp_ops, schedule, tp_matmul_ops
    from d2lmp.views import overlap_schedule as V

    return V.plot_schedules({"FSDP, prefetching": schedule(fsdp_ops(4, 1.0, 0.6, prefetch=True)),
                             "TP, decomposed": schedule(tp_matmul_ops(4, 1.0, 0.3, decomposed=True), slowdown=1.3)},
                            title="overlap")


def _memory_figures() -> object:
    from d2lmp.model.cluster.runs.ultrascale import RECORDS
    from d2lmp.model.cluster.validation import judge_all
    from d2lmp.views.memory_figures import plot_memory_figures

    return plot_memory_figures(judge_all([r for r in RECORDS if r.layers == 16 and r.gpus <= 32]),
                               title="The Ultra-Scale sweep: reserved memory on rank 0")


BUILDERS: dict[str, Callable[[], object]] = {
    "graphics.plot_wireframe": _cube,
    "comm_roofline.plot_comm_roofline": _roofline,
    "planner.plot_step_parts": _step_parts,
    "planner.plot_memory_parts": _memory_parts,
    "block_times.plot_block_times": _block_times,
    "memory_figures.plot_memory_figures": _memory_figures,
    "failures.plot_job_timelines": _job_timelines,
    "failures.plot_waste_vs_interval": _waste,
    "failures.plot_checkpoint_layout": _checkpoint_layout,
    "experts.plot_moe_layer": _moe_layer,
    "gpt.plot_block_anatomy": _block_anatomy,
    "memory_calculator.plot_memory_stack": _memory_stack,
    "overlap_schedule.plot_schedules": _overlap_schedules,
    "zero.plot_memory_per_stage": _memory_per_stage,
    "timeline.plot_timeline": _timeline,
    "topology.plot_topology": _topology,
    "topology.plot_power_budget": _power_budget,
    "strategies.plot_grid": _grid,
    "gpu_architecture.plot_sm_hierarchy": _sm,
}


def _view_calls() -> Iterator[tuple[str, str, str, bool, dict[str, str]]]:
    """(view, notebook, call source, whether it needs only imports, the notebook's imports) per plot_* call."""
    for path in paths():
        cells = [c for c in read(path).cells if c.is_code]
        imports: dict[str, str] = {}  # name bound by an import -> the statement that binds it
        views: dict[str, str] = {}  # name -> views module (or module.function)
        for cell in cells:
            for node in ast.walk(cell.tree()):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    for alias in node.names:
                        imports[(alias.asname or alias.name).split(".")[0]] = ast.unparse(node)
                if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("d2lmp.views"):
                    for alias in node.names:
                        inner = node.module.removeprefix("d2lmp.views").lstrip(".")
                        views[alias.asname or alias.name] = f"{inner}.{alias.name}" if inner else alias.name
        for cell in cells:
            for node in ast.walk(cell.tree()):
                if not isinstance(node, ast.Call):
                    continue
                f = node.func
                if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                        and "." not in views.get(f.value.id, "."):
                    name = f"{views[f.value.id]}.{f.attr}"
                elif isinstance(f, ast.Name) and "." in views.get(f.id, ""):
                    name = views[f.id]
                else:
                    continue
                if not name.split(".")[1].startswith("plot_"):
                    continue
                node = ast.Call(node.func, node.args, [k for k in node.keywords if k.arg != "ax"])  # a new figure
                free = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
                yield name, path.name, ast.unparse(node), free <= set(imports), imports


CALLS = list(_view_calls())


def _cases() -> dict[str, tuple[str, str, dict[str, str]] | None]:
    """One case per view: the first call that needs only imports (notebook, source, imports), or None (a builder)."""
    cases: dict[str, tuple[str, str, dict[str, str]] | None] = {}
    for name, notebook, source, evaluable, imports in CALLS:
        if evaluable and cases.get(name) is None:
            cases[name] = (notebook, source, imports)
        elif name in BUILDERS:
            cases.setdefault(name, None)
    return cases


CASES = _cases()


def test_the_notebooks_calls_are_found():
    names = {name for name, *_ in CALLS}
    assert {"planner.plot_step_parts", "graphics.plot_cube_view", "gpu_architecture.plot_notable_gpus"} <= names
    assert ("graphics.plot_cube_view", True) in {(name, evaluable) for name, _, _, evaluable, _ in CALLS}


def test_every_view_a_notebook_draws_is_rendered_here():
    missing = sorted({name for name, *_ in CALLS} - set(CASES) - set(UNRENDERED))
    assert not missing, f"give these views a builder in BUILDERS: {missing}"
    stale = sorted(set(UNRENDERED) & set(CASES))
    assert not stale, f"rendered now, drop them from UNRENDERED: {stale}"


def _drawn_texts(fig) -> Iterator[tuple[str, object]]:
    """(where, text artist) for every non-empty text the figure draws."""
    for text in fig.texts:
        yield "figure text", text
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for title in (ax.title, ax._left_title, ax._right_title):
            yield "title", title
        for text in ax.texts:
            yield "data label", text
        legend = ax.get_legend()
        if legend is not None:
            for text in [*legend.get_texts(), legend.get_title()]:
                yield "legend", text
        if not ax.axison:  # axis("off"): no labels or ticks are drawn
            continue
        yield "x label", ax.xaxis.label
        yield "y label", ax.yaxis.label
        for axis, (lo, hi) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            lo, hi = min(lo, hi), max(lo, hi)
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if lo - 1e-9 * abs(hi - lo) <= tick.get_loc() <= hi + 1e-9 * abs(hi - lo):
                    yield "tick label", tick.label1
                    yield "tick label", tick.label2
    for legend in fig.legends:
        for text in legend.get_texts():
            yield "legend", text


def _problems(fig, name: str) -> list[str]:
    from matplotlib.text import Annotation

    fig.canvas.draw()
    figure_box = fig.bbox
    found = []
    for where, text in _drawn_texts(fig):
        if not text.get_visible() or not text.get_text().strip():
            continue
        box = text.get_window_extent()
        label = f"{where} {text.get_text()[:40]!r}"
        if box.x0 < figure_box.x0 - 1 or box.x1 > figure_box.x1 + 1 or box.y0 < figure_box.y0 - 1 \
                or box.y1 > figure_box.y1 + 1:
            found.append(f"{label} leaves the figure ({box.x0:.0f}..{box.x1:.0f} × {box.y0:.0f}..{box.y1:.0f} "
                         f"in {figure_box.width:.0f} × {figure_box.height:.0f})")
        ax = text.axes
        at_data_point = isinstance(text, Annotation) and text.xycoords == "data" \
            or (not isinstance(text, Annotation) and ax is not None and text.get_transform() == ax.transData)
        if where == "data label" and ax is not None and ax.axison and at_data_point:
            inside = ax.get_window_extent()
            if box.x0 < inside.x0 - 1 or box.x1 > inside.x1 + 1 or box.y0 < inside.y0 - 1 or box.y1 > inside.y1 + 1:
                found.append(f"{label} runs over its axes' edge")
        if where == "legend" and CODE_NAME.search(text.get_text()):
            found.append(f"{label} is a name from the code; write it in words")
        if name.startswith(FONT_CHECKED) and text.get_fontsize() < 8:
            found.append(f"{label} is {text.get_fontsize():.1f} pt")
    return found


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_figure_keeps_its_text_inside(name):
    import matplotlib.pyplot as plt

    case = CASES[name]
    if case is None:
        fig = BUILDERS[name]()
    else:
        _, source, imports = case
        namespace: dict[str, object] = {}
        for statement in dict.fromkeys(imports.values()):
            exec(statement, namespace)
        result = eval(source, namespace)
        fig = result if result is not None else plt.gcf()
    problems = _problems(fig, name)
    assert not problems, f"{name} ({case[1] if case else 'BUILDERS'}):\n" + "\n".join(problems)
