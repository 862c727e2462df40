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
from d2lmp.model.costmodel import zero_memory_by_stage
from d2lmp.model.pipeline_schedule import SCHEDULES, bubble_fraction, measured_bubble, micro_batch_count, simulate
from d2lmp.model.training_state import OPTIMIZERS
from d2lmp.topology import nvlink_bandwidth_gbs


def _size_label(n: float) -> str:
    return f"{n / 1e9:.3g} B" if n >= 1e9 else f"{n / 1e6:.3g} M"


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


# --- memory per device by ZeRO stage (notebook 15) --------------------------------------------------------------

DEVICES = {g.name: g.memory_gb * 1e9 for g in NOTABLE_GPUS if g.memory_gb and g.memory_gb >= 16}
PARAMS = [1.25e8, 1.3e9, 7.5e9, 13e9, 70e9, 175e9, 1e12]


def zero(num_params: float, devices: int, optimizer: str, device: str) -> dict[str, Any]:
    per_stage = zero_memory_by_stage(int(num_params), devices, optimizer)
    memory = DEVICES[device]
    fitting = [s for s, parts in per_stage.items() if sum(parts.values()) <= memory]
    text = (f"{_size_label(num_params)} parameters, {OPTIMIZERS[optimizer].label}, {devices} devices: "
            + ", ".join(f"stage {s} {sum(p.values()) / 1e9:.3g} GB" for s, p in per_stage.items())
            + f" per device; {device} has {memory / 1e9:.3g} GB: "
            + (f"stage {fitting[0]} and above fit (before activations)." if fitting else "no stage fits."))
    bars = [{"label": f"stage {s}", "parts": {k: v / 1e9 for k, v in parts.items()}} for s, parts in per_stage.items()]
    return {"text": text, "numbers": {str(s): parts for s, parts in per_stage.items()},
            "chart": {"type": "bars", "unit": "GB per device", "bars": bars,
                      "limit": {"label": f"{device} memory", "value": memory / 1e9}}}


# --- the pipeline's bubble (notebook 13) -----------------------------------------------------------------------

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


# --- the α-β model of an all-reduce (notebook 11) ---------------------------------------------------------------

NVLINK3_GBS = nvlink_bandwidth_gbs(3)


def alpha_beta(world: int, log2_bytes: int, alpha_us: float, bandwidth: float) -> dict[str, Any]:
    model = all_reduce_model(world, 2**log2_bytes, alpha_us * 1e-6, 1 / (bandwidth * 1e9))
    text = (f"{world} ranks, {2**log2_bytes:,} bytes: "
            + ", ".join(f"{a} {model.times[a] * 1e3:.3f} ms" for a in ALGORITHMS) + f" -> {model.fastest} is fastest")
    bars = [{"label": a, "parts": {"time": model.times[a] * 1e3}} for a in ALGORITHMS]
    return {"text": text, "numbers": model.times, "chart": {"type": "bars", "unit": "ms", "bars": bars}}


# --- the checkpoint interval (notebook 18) ----------------------------------------------------------------------

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
    "zero": Calculator(
        "15_sharding_the_training_state", "zero_views.zero_widget()", "Training state per device by ZeRO stage",
        [steps("num_params", "parameters", PARAMS, 7.5e9, [_size_label(n) for n in PARAMS]),
         steps("devices", "devices", [2**k for k in range(11)], 64),
         choice("optimizer", "optimizer", [(o.label, key) for key, o in OPTIMIZERS.items()], "adam_mixed"),
         choice("device", "device", [(d, d) for d in DEVICES],
                next((d for d, b in DEVICES.items() if b >= 80e9), next(iter(DEVICES))))],
        zero),
    "pipeline": Calculator(
        "13_network_partitioning", "pipeline_views.pipeline_widget()", "A pipeline's timeline and bubble",
        [choice("kind", "schedule", [(k, k) for k in SCHEDULES], "gpipe"),
         steps("stages", "stages", list(range(2, 9)), 4),
         steps("micro_batches", "micro-batches", list(range(1, 17)), 4),
         steps("message", "message time", [k / 4 for k in range(9)], 0.0)],
        pipeline),
    "alpha_beta": Calculator(
        "11_nccl_collectives", "collectives_views.allreduce_model_widget(", "All-reduce time in the α-β model",
        [steps("world", "ranks", list(range(2, 65)), 8),
         steps("log2_bytes", "log2 bytes", list(range(4, 33)), 20),
         number("alpha_us", "latency α (µs)", GPU_ALPHA_S * 1e6, 0.0, 1e5, 0.1),
         number("bandwidth", "link GB/s", NVLINK3_GBS, 0.01, 1e4, 10)],
        alpha_beta),
    "interval": Calculator(
        "18_when_things_fail", "failures_views.interval_widget()", "How often to checkpoint",
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
