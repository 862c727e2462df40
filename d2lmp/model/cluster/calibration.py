"""Calibrate the four free parameters on Narayanan et al.'s Table 1, then compare predictions with published runs.

``fit`` minimises the sum over the calibration rows of ``log(predicted / published)²`` by coordinate descent:
each parameter in turn is set, by a golden-section search over its physically possible range
(``efficiency.BOUNDS``), to the value that minimises the sum with the others held, until a sweep moves
none of them by more than ``tol``. Pure Python, deterministic: the stored ``efficiency.FITTED`` is its
result rounded, and a test re-derives it. ``compare`` predicts published runs with a given set of
parameters, never refitting, and returns one ``Comparison`` per row: predicted / published per-GPU
throughput (for a published step time, published / predicted seconds), against the goal ``GOAL``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace

from d2lmp.model.cluster.efficiency import BOUNDS, FITTED, Efficiency
from d2lmp.model.cluster.hardware import Cluster
from d2lmp.model.cluster.predict import Prediction, predict
from d2lmp.model.cluster.published import NARAYANAN_TABLE1, PublishedRun

__all__ = ["GOAL", "Comparison", "cluster_of", "predicted_value", "compare", "objective", "fit", "within_goal"]

GOAL = (0.8, 1.25)  # predicted / published per-GPU throughput on every row


@dataclass(frozen=True)
class Comparison:
    """One published row against its prediction: ``ratio`` is predicted / published throughput."""

    run: PublishedRun
    predicted: float
    prediction: Prediction

    @property
    def ratio(self) -> float:
        if self.run.metric == "step_s":
            return self.run.published / self.predicted
        return self.predicted / self.run.published

    @property
    def within_goal(self) -> bool:
        return GOAL[0] <= self.ratio <= GOAL[1]


def cluster_of(run: PublishedRun) -> Cluster:
    """The cluster a run used: its GPU preset (and that GPU's usual node), as many GPUs as its plan."""
    return Cluster(gpu=run.gpu, gpus=run.plan.gpus)


def predicted_value(run: PublishedRun, prediction: Prediction) -> float:
    """The predicted figure in the run's own metric."""
    return float(getattr(prediction, run.metric))


def compare(runs: Sequence[PublishedRun], efficiency: Efficiency = FITTED) -> list[Comparison]:
    """Predict every run with ``efficiency`` (no refitting) and pair it with its published figure."""
    out = []
    for run in runs:
        prediction = predict(run.model, cluster_of(run), run.plan, efficiency)
        out.append(Comparison(run, predicted_value(run, prediction), prediction))
    return out


def within_goal(comparisons: Sequence[Comparison]) -> bool:
    return all(c.within_goal for c in comparisons)


def objective(efficiency: Efficiency, runs: Sequence[PublishedRun] = NARAYANAN_TABLE1) -> float:
    """Sum of squared log ratios: what ``fit`` minimises."""
    return sum(math.log(c.ratio) ** 2 for c in compare(runs, efficiency))


def _golden(f: Callable[[float], float], low: float, high: float, tol: float) -> float:
    """The minimiser of a unimodal ``f`` on [low, high], to within ``tol``."""
    g = (math.sqrt(5) - 1) / 2
    a, b = low, high
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    while b - a > tol:
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return (a + b) / 2


def fit(runs: Sequence[PublishedRun] = NARAYANAN_TABLE1, tol: float = 1e-4, sweeps: int = 30) -> Efficiency:
    """The parameters that make ``runs`` best predicted (least squares on log ratios, coordinate descent)."""
    current = Efficiency(**{name: sum(bounds) / 2 for name, bounds in BOUNDS.items()})
    for _ in range(sweeps):
        moved = 0.0
        for field in fields(Efficiency):
            name = field.name
            before = getattr(current, name)

            def cost(value: float, name: str = name, start: Efficiency = current) -> float:
                return objective(replace(start, **{name: value}), runs)

            best = _golden(cost, *BOUNDS[name], tol / 10)
            current = replace(current, **{name: best})
            moved = max(moved, abs(best - before))
        if moved < tol:
            break
    return current
