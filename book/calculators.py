"""The web book's calculators: control values in, the model package's numbers out, as JSON for the page.

The page runs this file with Pyodide beside ``d2lmp.model`` (standard library only), so a calculator's numbers
are the model's own. ``CALCULATORS`` names, for each, the notebook cell whose widget it stands beside, its
controls and the function that computes it. ``run(name, values_json)`` returns the JSON the page draws:
``text`` (a sentence), ``numbers`` (what the model returned, compared by tests/test_book_browser.py with the
function called directly) and ``chart`` (bars, a timeline or a curve, drawn in SVG by _static/calculators.js).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from d2lmp.gpu_specs import NOTABLE_GPUS
from d2lmp.model import checkpoint_interval as CI
from d2lmp.model.alpha_beta import ALGORITHMS, GPU_ALPHA_S, all_reduce_model
from d2lmp.model.cluster.presets import MODEL_PRESETS
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
}


def controls(name: str) -> str:
    """The controls of calculator ``name``, as JSON."""
    c = CALCULATORS[name]
    return json.dumps({"title": c.title, "controls": c.controls})


def run(name: str, values_json: str) -> str:
    """Calculator ``name`` at the control values in ``values_json`` (an object by control name), as JSON."""
    return json.dumps(CALCULATORS[name].compute(**json.loads(values_json)))
