"""Calibrate the free parameters on their declared tables, then compare predictions with published runs.

``fit`` sets the four rates (``efficiency.RATES``) on Narayanan et al.'s Table 1: it minimises the sum over the
calibration rows of ``log(predicted / published)²`` by coordinate descent: each parameter in turn is set, by a
golden-section search over its physically possible range (``efficiency.BOUNDS``), to the value that minimises the sum
with the others held, until a sweep moves none of them by more than ``tol``. The two fixed times (``FIXED_COSTS``: the
host's launch time and the network's α) play almost no part there (no block of Table 1 is shorter than the host's
launches, and its messages are large); ``fit_fixed_costs`` then sets them the same way, the rates held, on the records
declared ``use="calibration"``: the Ultra-Scale sweep's rows without a pipeline on one node, whose small micro-batches
run faster on the GPU than the host launches them, and those whose tensor-parallel group is the whole cluster across two
or four nodes, whose many small collectives pay the network's α (``runs.ultrascale``). Pure Python, deterministic: the
stored ``efficiency.FITTED`` is the result of ``fit_all``, which alternates the two fits until the rates stop moving,
rounded; a test re-derives it. ``compare`` predicts published runs with a given set of parameters, never refitting, and
returns one ``Comparison`` per row: predicted / published per-GPU throughput (for a published step time, published /
predicted seconds), against the goal ``GOAL``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from d2lmp.model.cluster.efficiency import BOUNDS, FITTED, FIXED_COSTS, RATES, Efficiency
from d2lmp.model.cluster.hardware import Cluster
from d2lmp.model.cluster.predict import Prediction, predict
from d2lmp.model.cluster.published import NARAYANAN_TABLE1, PublishedRun
from d2lmp.model.cluster.run_record import RunRecord
from d2lmp.model.cluster.runs import records as all_records
from d2lmp.model.cluster.validation import judge

__all__ = ["GOAL", "Comparison", "cluster_of", "predicted_value", "compare", "objective", "fit",
           "fixed_cost_objective", "fit_fixed_costs", "fit_all", "within_goal"]

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


def _descend(current: Efficiency, names: Sequence[str], cost: Callable[[Efficiency], float], tol: float,
             sweeps: int) -> Efficiency:
    """Coordinate descent: each of ``names`` in turn set by a golden-section search over its bounds, the others
    held, until a sweep moves none by more than ``tol``."""
    for _ in range(sweeps):
        moved = 0.0
        for name in names:
            before = getattr(current, name)

            def along(value: float, name: str = name, start: Efficiency = current) -> float:
                return cost(replace(start, **{name: value}))

            best = _golden(along, *BOUNDS[name], tol / 10)
            current = replace(current, **{name: best})
            moved = max(moved, abs(best - before))
        if moved < tol:
            break
    return current


def fit(runs: Sequence[PublishedRun] = NARAYANAN_TABLE1, tol: float = 1e-4, sweeps: int = 30,
        held: Efficiency | None = None) -> Efficiency:
    """The rates (``RATES``) that make ``runs`` best predicted (least squares on log ratios, coordinate descent),
    the fixed times (``FIXED_COSTS``) held at ``held``'s (None: no host wait, the preset's α across nodes)."""
    start = Efficiency(**{name: sum(BOUNDS[name]) / 2 for name in RATES})
    if held is not None:
        start = replace(start, **{name: getattr(held, name) for name in FIXED_COSTS})
    return _descend(start, RATES, lambda e: objective(e, runs), tol, sweeps)


def fixed_cost_objective(efficiency: Efficiency, records: Sequence[RunRecord] | None = None) -> float:
    """Sum of squared log ratios over the records declared for calibration (None: ``runs.records("calibration")``):
    what ``fit_fixed_costs`` minimises."""
    rows = all_records("calibration") if records is None else records
    return sum(math.log(r) ** 2 for rec in rows if (r := judge(rec, efficiency).ratio) is not None)


def fit_fixed_costs(rates: Efficiency | None = None, records: Sequence[RunRecord] | None = None,
                    tol: float = 1e-2, sweeps: int = 10) -> Efficiency:
    """``rates`` (None: ``fit()``'s) with the host's launch time and the network's α (``FIXED_COSTS``) that best
    predict the calibration records, by coordinate descent from the middle of their bounds."""
    start = replace(fit() if rates is None else rates, **{name: sum(BOUNDS[name]) / 2 for name in FIXED_COSTS})
    return _descend(start, FIXED_COSTS, lambda e: fixed_cost_objective(e, records), tol, sweeps)


def fit_all(rounds: int = 10, tol: float = 1e-3) -> Efficiency:
    """Every parameter on its own table: the rates on Table 1, then the fixed times on the calibration records, then
    the rates again with those times held, and so on until a round moves no rate by more than ``tol`` (the network's
    α and ``network`` trade against each other a little on Table 1). What ``efficiency.FITTED`` stores, rounded."""
    current = fit_fixed_costs(fit())
    for _ in range(rounds):
        rates = fit(held=current)
        moved = max(abs(getattr(rates, name) - getattr(current, name)) for name in RATES)
        current = fit_fixed_costs(rates)
        if moved < tol:
            break
    return current
