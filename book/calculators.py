"""The web book's calculators: control values in, the model package's numbers out, as JSON for the page.

The page runs this file with Pyodide beside ``d2lmp.model`` (standard library only), so a calculator's numbers
are the model's own. ``CALCULATORS`` names, for each, the notebook cell whose widget it stands beside, its
controls and the function that computes it. ``run(name, values_json)`` returns the JSON the page draws:
``text`` (a sentence), ``numbers`` (what the model returned, compared by tests/test_book_browser.py with the
function called directly) and ``chart`` (bars, a timeline, a curve or a roofline, drawn in SVG by
_static/calculators.js). A ``slow`` calculator (the planner) shows "computing…" while it runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from d2lmp.gpu_specs import NOTABLE_GPUS
from d2lmp.model import checkpoint_interval as CI
from d2lmp.model.alpha_beta import ALGORITHMS, GPU_ALPHA_S, all_reduce_model
from d2lmp.model.cluster import Cluster, model_preset, plan
from d2lmp.model.cluster.comm_roofline import LINK_NAMES, STRATEGIES, available_roofs, describe_point, strategy_point
from d2lmp.model.cluster.hardware import GPU_PRESETS
from d2lmp.model.cluster.link_roof import link_roof
from d2lmp.model.cluster.moe import MoETransformer
from d2lmp.model.cluster.presets import MODEL_PRESETS
from d2lmp.model.cluster.report import STEP_PART_LABELS
from d2lmp.model.memory_calculator import COMPARISONS, MEMORY_SCHEDULES, MemorySetting, compare
from d2lmp.model.pipeline_schedule import SCHEDULES, bubble_fraction, measured_bubble, micro_batch_count, simulate
from d2lmp.model.transformer_accounting import RECOMPUTE
from d2lmp.topology import nvlink_bandwidth_gbs


def steps(name: str, label: str, values: list[Any], value: Any, labels: list[str] | None = None) -> dict[str, Any]:
    """A slider over ``values`` (its position is an index; the page shows ``labels``)."""
    return {"name": name, "label": label, "kind": "steps", "values": values, "value": value,
            "labels": labels or [f"{v:g}" if isinstance(v, float) else str(v) for v in values]}


def choice(name: str, label: str, options: list[tuple[str, Any]], value: Any) -> dict[str, Any]:
    """A drop-down list of (label, value)."""
    return {"name": name, "label": label, "kind": "choice", "options": [list(o) for o in options], "value": value}


def number(name: str, label: str, value: float, low: float, high: float, step: float) -> dict[str, Any]:
    """A number field."""
    return {"name": name, "label": label, "kind": "number", "value": value, "min": low, "max": high, "step": step}


@dataclass(frozen=True)
class Calculator:
    """One calculator: the notebook and widget call it stands beside, its controls and its function."""

    notebook: str
    widget_call: str
    title: str
    controls: list[dict[str, Any]]
    compute: Callable[..., dict[str, Any]]
    slow: bool = False  # seconds a move: the page says "computing…" while it runs


# --- memory per GPU by part (notebook 17) ---------------------------------------------------------------------

DEVICES = {g.name: g.memory_gb * 1e9 for g in NOTABLE_GPUS if g.memory_gb and g.memory_gb >= 16}
SPLITS = [1, 2, 4, 8, 16, 32, 64, 128]


def memory(tp: int, pp: int, dp: int, zero: int, model: str, device: str, sequence_parallel: bool, recompute: str,
           schedule: str, micro_batch: int, microbatches: int, axis: str) -> dict[str, Any]:
    setting = MemorySetting(tp=tp, pp=pp, dp=dp, zero=zero, sequence_parallel=sequence_parallel,  # type: ignore[arg-type]
                            recompute=recompute, schedule=schedule,  # type: ignore[arg-type]
                            micro_batch=micro_batch, microbatches=microbatches)
    capacity = DEVICES[device]
    try:
        bars = compare(MODEL_PRESETS[model].model, setting, axis, capacity)  # type: ignore[arg-type]
    except ValueError as error:
        return {"text": f"Not a valid setting: {error}", "numbers": {},
                "chart": {"type": "bars", "unit": "GB per GPU", "bars": [],
                          "limit": {"label": f"{device} memory", "value": capacity / 1e9}}}
    text = (f"{model} on {tp * pp * dp} {device}s (tensor {tp}, pipeline {pp}, data {dp}), per GPU: "
            + ", ".join(f"{k}: {b.total / 1e9:,.1f} GB ({'fits' if b.fits else 'does not fit'})"
                        for k, b in bars.items()))
    chart = [{"label": k, "parts": {part: v / 1e9 for part, v in b.parts().items()}} for k, b in bars.items()]
    return {"text": text, "numbers": {k: b.parts() for k, b in bars.items()},
            "chart": {"type": "bars", "unit": "GB per GPU", "bars": chart,
                      "limit": {"label": f"{device} memory", "value": capacity / 1e9}}}


# --- the pipeline's bubble (notebook 14) -----------------------------------------------------------------------

def pipeline(kind: str, stages: int, micro_batches: int, message: float) -> dict[str, Any]:
    events = simulate(kind, stages, micro_batches, message=message)
    bubble = measured_bubble(events, stages)
    m = micro_batch_count(kind, micro_batches)
    formula = bubble_fraction(stages, m)
    text = f"{kind}: bubble {bubble:.3f} (formula (p-1)/(m+p-1) = {formula:.3f}), {m} micro-batch(es)."
    blocks = [{"lane": e.rank, "kind": e.kind, "label": e.label, "start": e.start, "end": e.end} for e in events]
    return {"text": text, "numbers": {"bubble": bubble, "formula": formula},
            "chart": {"type": "timeline", "lanes": stages, "lane_label": "rank", "unit": "time (units)",
                      "blocks": blocks}}


# --- the α-β model of an all-reduce (notebook 12) ---------------------------------------------------------------

NVLINK3_GBS = nvlink_bandwidth_gbs(3)


def alpha_beta(world: int, log2_bytes: int, alpha_us: float, bandwidth: float) -> dict[str, Any]:
    model = all_reduce_model(world, 2**log2_bytes, alpha_us * 1e-6, 1 / (bandwidth * 1e9))
    text = (f"{world} ranks, {2**log2_bytes:,} bytes: "
            + ", ".join(f"{a} {model.times[a] * 1e3:.3f} ms" for a in ALGORITHMS) + f" -> {model.fastest} is fastest")
    bars = [{"label": a, "parts": {"time": model.times[a] * 1e3}} for a in ALGORITHMS]
    return {"text": text, "numbers": model.times, "chart": {"type": "bars", "unit": "ms", "bars": bars}}


# --- the checkpoint interval (notebook 19) ----------------------------------------------------------------------

def interval(gpus: int, per_1000_gpu_hours: float, save_s: float, restart_s: float) -> dict[str, Any]:
    s = CI.summarise(gpus, per_1000_gpu_hours / 1000, save_s, restart_s)
    text = (f"{gpus:,} GPUs failing {per_1000_gpu_hours:.3g} times per 1000 GPU-hours each: the job fails every "
            f"{s.mtbf_s / CI.HOUR:.3g} h on average. Saving takes {save_s:g} s and a restart {restart_s:g} s: "
            f"checkpoint every {s.young_s / 60:.3g} min (Young) or {s.daly_s / 60:.3g} min (Daly), which wastes "
            f"{100 * s.waste_young:.3g} % or {100 * s.waste_daly:.3g} % of the time.")
    xs = [s.daly_s * 2 ** (k / 8) for k in range(-24, 25)]
    points = [[x / 60, 100 * CI.waste(x, save_s, s.mtbf_s, restart_s)] for x in xs]
    return {"text": text, "numbers": asdict(s),
            "chart": {"type": "curve", "x_label": "checkpoint interval (min, log scale)", "y_label": "time wasted (%)",
                      "points": points, "mark": {"label": "Daly", "x": s.daly_s / 60}}}


# --- the communication roofline (notebook 20; notebook 11 has the same widget) ----------------------------------

ROOFLINE_GPU = "A100-80GB"  # the GPU the notebooks' widget draws


def comm_roofline(strategy: str, model: str, sequences: int, ranks: int, link: str) -> dict[str, Any]:
    point = strategy_point(strategy, model_preset(model).model, link_roof(ROOFLINE_GPU, link),  # type: ignore[arg-type]
                           ranks, sequences)
    roofs = available_roofs(ROOFLINE_GPU)
    xs = [point.intensity] + [r.ridge for r in roofs]
    lo, hi = min(xs) / 8, max(xs) * 8
    lines: list[dict[str, Any]] = [
        {"label": f"{r.name}: {r.bytes_per_s / 1e9:,.3g} GB/s, ridge {r.ridge:,.0f} FLOP/byte",
         "points": [[lo, r.attainable(lo) / 1e12], [r.ridge, r.flops_per_s / 1e12]]} for r in roofs]
    for rate in sorted({r.flops_per_s for r in roofs}):  # the flat part: the matrix rate
        lines.append({"label": f"matrix products: {rate / 1e12:,.0f} TFLOP/s", "flat": True,
                      "points": [[min(r.ridge for r in roofs if r.flops_per_s == rate), rate / 1e12],
                                 [hi, rate / 1e12]]})
    numbers = {"intensity": point.intensity, "ridge": point.ridge, "attainable_flops": point.attainable_flops,
               "fraction": point.fraction, "crossing": point.crossing, "flops": point.flops, "bytes": point.bytes}
    return {"text": describe_point(point), "numbers": numbers,
            "chart": {"type": "roofline", "x_label": "FLOPs a device computes per byte it sends",
                      "y_label": "attainable TFLOP/s", "lines": lines,
                      "point": {"label": f"{point.label}: {point.bound}-bound", "x": point.intensity,
                                "y": point.attainable_flops / 1e12, "line": roofs.index(point.roof)}}}


# --- the planner (notebook 20) ----------------------------------------------------------------------------------

DENSE = [name for name, preset in MODEL_PRESETS.items() if not isinstance(preset.model, MoETransformer)]


def planner(model: str, gpus: int, gpu: str, global_batch: int) -> dict[str, Any]:
    report = plan(model_preset(model).model, Cluster(gpu=gpu, gpus=gpus), global_batch)
    top: list[dict[str, Any]] = [{"plan": c.plan.describe(), "step_s": c.prediction.step_s, "mfu": c.prediction.mfu,
            "parts": c.prediction.parts.seconds} for c in report.top]
    where = f"{model} on {gpus:,} × {gpu}, {global_batch:,} sequences a step"
    text = (f"{where}: {len(report.ranked):,} of {report.considered:,} configurations fit"
            + ("; the best plans: " + "; ".join(f"#{i} {t['plan']}: {t['step_s']:.2f} s, MFU {t['mfu']:.0%}"
                                                for i, t in enumerate(top, 1)) if top else
               "; no configuration fits in memory") + ".")
    bars = [{"label": f"#{i} {t['plan']}", "parts": {STEP_PART_LABELS[k]: v for k, v in t["parts"].items() if v}}
            for i, t in enumerate(top, 1)]
    return {"text": text, "numbers": {"fit": len(report.ranked), "considered": report.considered, "top": top},
            "chart": {"type": "bars", "unit": "seconds per step", "bars": bars}}


RATE = round(CI.REPORTS[0].per_gpu_hour * 1000, 4)
SECONDS = [1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0]

CALCULATORS = {
    "memory": Calculator(
        "17_activation_memory_and_composing", "memory_calculator_widget(", "Memory per GPU by part",
        [steps("tp", "tensor", [1, 2, 4, 8, 16], 8),
         steps("pp", "pipeline", [1, 2, 4, 8, 16], 8),
         steps("dp", "data", SPLITS, 1),
         steps("zero", "ZeRO stage", [0, 1, 2, 3], 0),
         choice("model", "model", [(m, m) for m in MODEL_PRESETS], "175B"),
         choice("device", "GPU", [(d, d) for d in DEVICES], "H100 SXM5"),
         choice("sequence_parallel", "sequence parallel", [("yes", True), ("no", False)], True),
         choice("recompute", "recompute", [(r, r) for r in RECOMPUTE], "none"),
         choice("schedule", "schedule", [(k, k) for k in MEMORY_SCHEDULES], "1f1b"),
         steps("micro_batch", "micro-batch", list(range(1, 9)), 1),
         steps("microbatches", "micro-batches", list(range(1, 33)), 8),
         choice("axis", "bars by", [(a, a) for a in COMPARISONS], "recompute")],
        memory),
    "pipeline": Calculator(
        "14_network_partitioning", "pipeline_views.pipeline_widget()", "A pipeline's timeline and bubble",
        [choice("kind", "schedule", [(k, k) for k in SCHEDULES], "gpipe"),
         steps("stages", "stages", list(range(2, 9)), 4),
         steps("micro_batches", "micro-batches", list(range(1, 17)), 4),
         steps("message", "message time", [k / 4 for k in range(9)], 0.0)],
        pipeline),
    "alpha_beta": Calculator(
        "12_nccl_collectives", "collectives_views.allreduce_model_widget(", "All-reduce time in the α-β model",
        [steps("world", "ranks", list(range(2, 65)), 8),
         steps("log2_bytes", "log2 bytes", list(range(4, 33)), 20),
         number("alpha_us", "latency α (µs)", GPU_ALPHA_S * 1e6, 0.0, 1e5, 0.1),
         number("bandwidth", "link GB/s", NVLINK3_GBS, 0.01, 1e4, 10)],
        alpha_beta),
    "interval": Calculator(
        "19_when_things_fail", "failures_views.interval_widget()", "How often to checkpoint",
        [steps("gpus", "GPUs", [8, 64, 512, 1024, 4096, 16384, 32768, 65536, 131072], 16384),
         steps("per_1000_gpu_hours", "failures per 1000 GPU-hours",
               sorted({RATE, *(round(10 ** (k / 4), 4) for k in range(-12, 1))}), RATE),
         steps("save_s", "save (s)", SECONDS, 60.0),
         steps("restart_s", "restart (s)", SECONDS, 600.0)],
        interval),
    "comm_roofline": Calculator(
        "20_training_at_scale", "roofline_views.comm_roofline_widget(", "The communication roofline",
        [choice("strategy", "strategy", [(n, k) for k, n in STRATEGIES.items()], "tp"),
         choice("model", "model", [(m, m) for m in MODEL_PRESETS], "175B"),
         steps("sequences", "sequences", [2**k for k in range(12)], 1),
         steps("ranks", "ranks", [2, 4, 8, 16, 32, 64, 128, 1024], 8),
         choice("link", "link", [(LINK_NAMES[r.link], r.link) for r in available_roofs(ROOFLINE_GPU)], "nvlink")],
        comm_roofline),
    "planner": Calculator(
        "20_training_at_scale", "planner_views.planner_widget()", "The planner's best configurations",
        [choice("model", "model", [(m, m) for m in DENSE], "175B"),
         steps("gpus", "GPUs", [8 * 2**k for k in range(10)], 64),  # 1,024 in the notebook: seconds more a move
         choice("gpu", "GPU", [(g, g) for g in GPU_PRESETS], "A100-80GB"),
         steps("global_batch", "batch", [64, 128, 256, 512, 1024, 1536, 2048, 3072, 4096], 1536)],
        planner, slow=True),
}


def controls(name: str) -> str:
    """The controls of calculator ``name``, as JSON."""
    c = CALCULATORS[name]
    return json.dumps({"title": c.title, "controls": c.controls, "slow": c.slow})


def run(name: str, values_json: str) -> str:
    """Calculator ``name`` at the control values in ``values_json`` (an object by control name), as JSON."""
    return json.dumps(CALCULATORS[name].compute(**json.loads(values_json)))
