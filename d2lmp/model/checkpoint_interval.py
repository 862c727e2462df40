"""How often to checkpoint: a job's failure rate, Young's and Daly's optimum interval, and the time a job wastes.

A synchronous job stops when any of its devices fails. With N devices that fail independently at rate λ
each (exponential times between failures), the job fails at rate Nλ: its mean time between failures is
M = 1 / (N λ). Checkpointing after every τ seconds of work, with δ seconds per save and R seconds per restart,
costs δ/τ of the time in saves and, at each failure, the work since the last checkpoint plus the restart.
Young (1974) balanced the two to first order: τ = √(2 δ M). Daly (2006) derived the expected wall time of
a job of T_s seconds of work exactly for this model,

    T_w = M e^{R/M} (e^{(τ + δ)/M} − 1) T_s / τ,

and a higher-order optimum, τ = √(2 δ M) [1 + ⅓ √(δ / 2M) + ⅑ δ / 2M] − δ for δ < 2M (else τ = M). The
waste is 1 − T_s / T_w. ``simulate`` draws a job's timeline with random failures (work, saves, lost work,
restarts), which tests the formula and draws the picture. Plain arithmetic: no torch. ``REPORTS`` holds
published failure counts of large training runs, each with its source.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

__all__ = ["HOUR", "FailureReport", "REPORTS", "job_mtbf", "failures_per_gpu_hour", "young_interval",
           "daly_interval", "expected_wall_time", "waste", "first_order_waste", "best_interval", "Segment",
           "JobTimeline", "simulate", "IntervalSummary", "summarise"]

HOUR = 3600.0


@dataclass(frozen=True)
class FailureReport:
    """Interruptions a published training run counted over a period, on its number of GPUs."""

    name: str
    gpus: int
    interruptions: int
    days: float
    what: str
    source: tuple[str, ...]

    @property
    def per_gpu_hour(self) -> float:
        return failures_per_gpu_hour(self.interruptions, self.days, self.gpus)

    @property
    def mtbf_hours(self) -> float:
        return self.days * 24 / self.interruptions


REPORTS = (
    FailureReport("Llama 3 405B pre-training", 16384, 419, 54,
                  "unexpected interruptions in a 54-day snapshot (466 with the 47 planned ones), §3.3.4",
                  ("dubey2024llama3",)),
    FailureReport("OPT-175B training", 1024, 2, 1, "about two machines (of 8 GPUs) going down every day",
                  ("zhang2022opt_final",)),
)


def job_mtbf(gpus: int, per_gpu_hour: float) -> float:
    """A job's mean time between failures in seconds, when each of ``gpus`` fails ``per_gpu_hour`` times an hour."""
    if gpus < 1 or per_gpu_hour <= 0:
        raise ValueError(f"need at least one GPU and a positive failure rate, got {gpus} and {per_gpu_hour}")
    return HOUR / (gpus * per_gpu_hour)


def failures_per_gpu_hour(interruptions: float, days: float, gpus: int) -> float:
    """The failure rate of one GPU implied by a job's count of ``interruptions`` in ``days`` on ``gpus``."""
    if interruptions <= 0 or days <= 0 or gpus < 1:
        raise ValueError("need a positive count, a positive period and at least one GPU")
    return interruptions / (days * 24) / gpus


def _check(save_s: float, mtbf_s: float) -> None:
    if save_s <= 0 or mtbf_s <= 0:
        raise ValueError(f"the save time and the MTBF must be positive, got {save_s} and {mtbf_s}")


def young_interval(save_s: float, mtbf_s: float) -> float:
    """Young's first-order optimum: seconds of work between checkpoints, √(2 δ M)."""
    _check(save_s, mtbf_s)
    return math.sqrt(2 * save_s * mtbf_s)


def daly_interval(save_s: float, mtbf_s: float) -> float:
    """Daly's higher-order optimum: √(2δM)[1 + ⅓√(δ/2M) + ⅑ δ/2M] − δ for δ < 2M, else M."""
    _check(save_s, mtbf_s)
    if save_s >= 2 * mtbf_s:
        return mtbf_s
    x = save_s / (2 * mtbf_s)
    return math.sqrt(2 * save_s * mtbf_s) * (1 + math.sqrt(x) / 3 + x / 9) - save_s


def expected_wall_time(work_s: float, interval_s: float, save_s: float, mtbf_s: float,
                       restart_s: float = 0.0) -> float:
    """Daly's expected wall time of ``work_s`` seconds of work: M e^{R/M} (e^{(τ+δ)/M} − 1) T_s / τ."""
    if interval_s <= 0 or work_s < 0 or restart_s < 0 or save_s < 0 or mtbf_s <= 0:
        raise ValueError("need a positive interval and MTBF, and no negative time")
    m = mtbf_s
    return m * math.exp(restart_s / m) * math.expm1((interval_s + save_s) / m) * work_s / interval_s


def waste(interval_s: float, save_s: float, mtbf_s: float, restart_s: float = 0.0) -> float:
    """The fraction of the wall time not spent on useful work (saves, lost work, restarts): 1 − T_s/T_w."""
    return 1 - 1 / expected_wall_time(1.0, interval_s, save_s, mtbf_s, restart_s)


def first_order_waste(interval_s: float, save_s: float, mtbf_s: float, restart_s: float = 0.0) -> float:
    """The first-order reading: saves δ/τ, plus per failure half an interval and a restart, (τ/2 + R)/M."""
    if interval_s <= 0 or mtbf_s <= 0:
        raise ValueError("need a positive interval and MTBF")
    return save_s / interval_s + (interval_s / 2 + restart_s) / mtbf_s


def best_interval(save_s: float, mtbf_s: float, restart_s: float = 0.0) -> float:
    """The interval that minimises ``waste`` exactly (a golden-section search; R does not move the optimum)."""
    _check(save_s, mtbf_s)
    lo, hi = 1e-6 * mtbf_s, 10 * mtbf_s
    ratio = (math.sqrt(5) - 1) / 2
    a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    for _ in range(200):
        if waste(a, save_s, mtbf_s, restart_s) < waste(b, save_s, mtbf_s, restart_s):
            hi, b = b, a
            a = hi - ratio * (hi - lo)
        else:
            lo, a = a, b
            b = lo + ratio * (hi - lo)
    return (lo + hi) / 2


@dataclass(frozen=True)
class Segment:
    """A stretch of a job's timeline: ``kind`` is "work", "save", "lost" (undone by a failure) or "restart"."""

    kind: str
    start: float
    length: float


@dataclass(frozen=True)
class JobTimeline:
    """One simulated job: its segments in order, the wall time to finish, and the failures met."""

    segments: tuple[Segment, ...]
    wall_s: float
    failures: int

    def total(self, kind: str) -> float:
        return sum(s.length for s in self.segments if s.kind == kind)


def simulate(work_s: float, interval_s: float, save_s: float, mtbf_s: float, restart_s: float = 0.0,
             seed: int = 0) -> JobTimeline:
    """A job of ``work_s`` seconds of work, saved after every ``interval_s`` of it, with exponential failures.

    Daly's model: a failure during the work or the save undoes that segment (it becomes "lost"), then the job
    restarts (a failure during the restart starts it over) and repeats the segment from its checkpoint.
    """
    if interval_s <= 0 or work_s <= 0 or mtbf_s <= 0 or save_s < 0 or restart_s < 0:
        raise ValueError("need positive work, interval and MTBF, and no negative time")
    rng = random.Random(seed)
    segments: list[Segment] = []
    now, done, failures = 0.0, 0.0, 0
    next_failure = rng.expovariate(1 / mtbf_s)
    while done < work_s - 1e-9:
        chunk = min(interval_s, work_s - done)
        if now + chunk + save_s <= next_failure:  # the segment and its save finish before the next failure
            segments += [Segment("work", now, chunk), Segment("save", now + chunk, save_s)]
            now, done = now + chunk + save_s, done + chunk
            continue
        segments.append(Segment("lost", now, next_failure - now))
        now, failures = next_failure, failures + 1
        next_failure = now + rng.expovariate(1 / mtbf_s)
        while now + restart_s > next_failure:  # failed again while restarting
            segments.append(Segment("restart", now, next_failure - now))
            now, failures = next_failure, failures + 1
            next_failure = now + rng.expovariate(1 / mtbf_s)
        if restart_s:
            segments.append(Segment("restart", now, restart_s))
        now += restart_s
    return JobTimeline(tuple(segments), now, failures)


@dataclass(frozen=True)
class IntervalSummary:
    """The checkpointing arithmetic of one job: MTBF, the optimum intervals and the waste at each."""

    gpus: int
    per_gpu_hour: float
    save_s: float
    restart_s: float
    mtbf_s: float
    young_s: float
    daly_s: float
    waste_young: float
    waste_daly: float


def summarise(gpus: int, per_gpu_hour: float, save_s: float, restart_s: float = 0.0) -> IntervalSummary:
    """Everything the widget shows, for ``gpus`` devices failing ``per_gpu_hour`` times an hour each."""
    m = job_mtbf(gpus, per_gpu_hour)
    young, daly = young_interval(save_s, m), daly_interval(save_s, m)
    return IntervalSummary(gpus, per_gpu_hour, save_s, restart_s, m, young, daly,
                           waste(young, save_s, m, restart_s), waste(daly, save_s, m, restart_s))
