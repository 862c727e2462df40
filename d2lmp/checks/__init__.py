"""The GPU self-check (`d2lmp selfcheck`): run every check of the topic modules and write a JSON report.

Checks are code that proves the library right on the machine at hand. Each topic module (``compute``,
``conv``, ``training``, ``memory``, ``precision``, ``nccl``) lists its checks in ``CHECKS``: functions
``check(device, quick) -> CheckResult``; ``CHECKS`` here collects them, topic by topic, and a new
topic adds its module to ``TOPICS``. Without a CUDA GPU the GPU checks are skipped with a message,
never faked. ``ranks`` holds the rank functions that prove each parallel version equals one device,
``gpt_parallel`` those of the tensor-parallel GPT and the 3D grid.
This layer imports the library (``d2lmp`` and ``d2lmp.parallel``), never the views or the CLI.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import torch

from d2lmp.checks import compute, conv, memory, nccl, precision, training
from d2lmp.checks.result import Check, CheckResult
from d2lmp.config import quick_mode_set

__all__ = ["CHECKS", "TOPICS", "CheckResult", "run_selfcheck"]

TOPICS = (compute, conv, training, memory, precision, nccl)
CHECKS: list[Check] = [check for topic in TOPICS for check in topic.CHECKS]


def _run_one(check: Check, device: str | None, quick: bool) -> CheckResult:
    """``check``'s result; an exception, or anything but a ``CheckResult``, is a failure with its message."""
    try:
        with quick_mode_set(quick):  # the checks size their work with config.pick
            result = check(device, quick)
        if not isinstance(result, CheckResult):
            raise TypeError(f"{check.__name__} returned {type(result).__name__}, not a CheckResult")
        return result
    except Exception as exc:
        return CheckResult("fail", f"{type(exc).__name__}: {exc}", dict(traceback=traceback.format_exc()))


def run_selfcheck(output: str | None = "selfcheck.json", quick: bool = False, checks: Sequence[Check] | None = None,
                  echo: Callable[[str], object] = print) -> dict[str, Any]:
    """Run ``checks`` (default: all) on the first CUDA GPU, print one line each, write JSON to ``output``.

    Returns the report as written: device, one entry per check (name, status, detail, its figures,
    seconds), total seconds and a count per status.
    """
    device = "cuda:0" if torch.cuda.is_available() else None
    report: dict[str, Any] = {"device": device, "checks": []}  # the JSON document
    start = time.perf_counter()
    for check in checks or CHECKS:
        t0 = time.perf_counter()
        result = _run_one(check, device, quick)
        entry = result.entry(check.__name__.removeprefix("check_"), time.perf_counter() - t0)
        report["checks"].append(entry)
        echo(f"[{entry['status']:>4}] {entry['name']}: {entry['detail']} ({entry['seconds']:.1f} s)")
    report["seconds"] = time.perf_counter() - start
    counts = {s: sum(c["status"] == s for c in report["checks"]) for s in ("pass", "fail", "skip", "info")}
    report["summary"] = counts
    echo(f"selfcheck: {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped "
         f"in {report['seconds']:.1f} s")
    if output:
        with open(output, "w") as f:
            json.dump(report, f, indent=2, default=str)
        echo(f"report written to {output}")
    return report
