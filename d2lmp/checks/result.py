"""What one self-check found (``CheckResult``), and the skip every GPU check gives without a GPU.

A check returns a ``CheckResult``; the runner turns it into the report's entry: name, status,
detail, then the measured figures of ``data`` as top-level keys, then seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["STATUSES", "CheckResult", "Check", "NO_GPU", "skip_without_gpu"]

STATUSES = ("pass", "fail", "skip", "info")
_ENTRY_KEYS = ("name", "status", "detail", "seconds")  # written by the runner, so not allowed in data


@dataclass(frozen=True)
class CheckResult:
    """One check's status ("pass", "fail", "skip" or "info"), one sentence, and its measured figures."""

    status: str
    detail: str
    data: dict[str, Any] = field(default_factory=dict)  # the figures, as the JSON report stores them

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {self.status!r}")
        if clash := [k for k in _ENTRY_KEYS if k in self.data]:
            raise ValueError(f"data may not use the report entry's own keys: {', '.join(clash)}")

    def entry(self, name: str, seconds: float) -> dict[str, Any]:
        """The report's entry for this result: name, status, detail, the keys of ``data``, seconds."""
        return {"name": name, "status": self.status, "detail": self.detail, **self.data, "seconds": seconds}


Check = Callable[[str | None, bool], CheckResult]  # check(device, quick); device None: no CUDA GPU
NO_GPU = CheckResult("skip", "no CUDA GPU visible to torch; GPU path not exercised")  # a GPU check's result without one


def skip_without_gpu(device: str | None) -> CheckResult | None:
    """The "skip" result ``NO_GPU`` when ``device`` is None (no CUDA GPU), else None."""
    if device is None:
        return NO_GPU
    return None
