"""Where `make test`'s CPU time goes: a pytest plugin that records the CPU-seconds of the whole machine per test.

The two cores' time is what the 8-minute budget runs out of, and a test's CPU is spent in processes pytest does not
wait for (JupyterLab, Chromium, kernels, ranks), so each test is charged what /proc/stat says the machine spent while
it ran. Run it in one process (`-n 0`) on a quiet machine, or two tests' CPU land on each other:

    D2LMP_QUICK=1 .venv/bin/python -m pytest -p tools.cpu_per_test -p no:cacheprovider tests notebooks \\
        --nbval-lax --nbval-current-env -q          # writes cpu-per-test.json
    python -m tools.cpu_per_test cpu-per-test.json  # CPU-seconds and wall seconds per test file, largest first

Linux only (it reads /proc/stat).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

OUTPUT = Path(os.environ.get("CPU_PER_TEST", "cpu-per-test.json"))
_rows: list[tuple[str, float, float]] = []


def machine_cpu_seconds() -> float:
    """CPU-seconds every core has spent busy since boot (user, nice, system, interrupts, steal)."""
    with open("/proc/stat", encoding="ascii") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, None]:
    cpu, wall = machine_cpu_seconds(), time.perf_counter()
    yield
    _rows.append((item.nodeid, machine_cpu_seconds() - cpu, time.perf_counter() - wall))


def pytest_sessionfinish(session: pytest.Session) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    path = OUTPUT if worker is None else OUTPUT.with_suffix(f".{worker}.json")
    path.write_text(json.dumps(_rows), encoding="utf-8")


def by_file(rows: list[tuple[str, float, float]]) -> list[tuple[str, float, float, int]]:
    """(test file or notebook, CPU-seconds, wall seconds, tests), largest CPU first."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for nodeid, cpu, wall in rows:
        total = totals[nodeid.split("::")[0]]
        total[0] += cpu
        total[1] += wall
        total[2] += 1
    return sorted(((name, c, w, int(n)) for name, (c, w, n) in totals.items()), key=lambda r: -r[1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="CPU-seconds per test file from a cpu-per-test JSON file")
    parser.add_argument("json", type=Path, nargs="?", default=OUTPUT)
    parser.add_argument("--tests", type=int, default=20, help="also list this many single tests, largest first")
    args = parser.parse_args(argv)
    rows = [tuple(r) for r in json.loads(args.json.read_text(encoding="utf-8"))]
    print(f"{sum(r[1] for r in rows):.0f} CPU-seconds, {sum(r[2] for r in rows):.0f} s wall, {len(rows)} tests")
    for name, cpu, wall, count in by_file(rows):
        print(f"{cpu:8.1f} CPU-s {wall:8.1f} s {count:5d}  {name}")
    print()
    for nodeid, cpu, wall in sorted(rows, key=lambda r: -r[1])[:args.tests]:
        print(f"{cpu:8.1f} CPU-s {wall:8.1f} s  {nodeid}")


if __name__ == "__main__":
    main()
