"""Why many slow cores beat a few fast ones under one power budget.

CMOS dynamic power is P = α·C·V²·f (activity, switched capacitance, supply voltage, clock).
At a fixed voltage P is linear in f. Running faster needs a higher voltage, and over the
usual operating range the highest stable clock rises roughly linearly with V, so with
voltage scaled alongside the clock (DVFS) P ∝ V²·f ∝ f³. The often-quoted "power grows
quadratically with clock" sits between the two; it is the exponent that makes the
classic "16 cores at ¼ speed for the power of one" argument work (16 × (¼)² = 1).
Static (leakage) power is ignored here.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EXPONENTS", "dynamic_power", "ManyCoreResult", "many_slow_cores"]

EXPONENTS = {
    1: "fixed voltage: P ∝ f",
    2: "common simplification: P ∝ f²",
    3: "voltage scaled with clock (DVFS): P ∝ V²f ∝ f³",
}


def dynamic_power(capacitance: float, voltage: float, frequency: float, activity: float = 1.0) -> float:
    """Switching power α·C·V²·f in watts (farads, volts, hertz)."""
    if min(capacitance, voltage, frequency) < 0 or not 0 <= activity <= 1:
        raise ValueError("capacitance, voltage and frequency must be >= 0 and activity in [0, 1]")
    return activity * capacitance * voltage**2 * frequency


@dataclass
class ManyCoreResult:
    """What one power budget buys at a given relative clock."""

    clock_fraction: float
    exponent: int
    power_per_core: float
    cores: float
    throughput: float  # relative to one core at full clock, perfectly parallel work
    speedup: float  # with the given parallel fraction (Amdahl's law)


def many_slow_cores(clock_fraction: float, exponent: int = 3, budget: float = 1.0,
                    parallel_fraction: float = 1.0) -> ManyCoreResult:
    """Spend ``budget`` (power of one full-speed core = 1) on identical cores at ``clock_fraction``.

    Each core draws clock_fraction**exponent, so budget / that many cores fit (fractional
    cores are allowed, to keep curves smooth). Throughput is cores × clock_fraction.
    Speedup applies Amdahl's law: the serial part runs on one slow core.
    """
    if not 0 < clock_fraction <= 1:
        raise ValueError(f"clock_fraction must be in (0, 1], got {clock_fraction}")
    if exponent not in EXPONENTS:
        raise ValueError(f"exponent must be one of {sorted(EXPONENTS)}: " + "; ".join(EXPONENTS.values()))
    if budget <= 0 or not 0 <= parallel_fraction <= 1:
        raise ValueError("budget must be positive and parallel_fraction in [0, 1]")
    per_core = clock_fraction**exponent
    cores = budget / per_core
    throughput = cores * clock_fraction
    serial = 1 - parallel_fraction
    time = serial / clock_fraction + parallel_fraction / throughput
    return ManyCoreResult(clock_fraction, exponent, per_core, cores, throughput, 1 / time)
