"""Measurements recorded on other machines (see README.md in this folder), loaded on demand."""

from __future__ import annotations

import json
from importlib import resources

H200_SELFCHECK = "selfcheck_h200_2026-11-29.json"
H200_LABEL = "recorded on 1× NVIDIA H200, 2026-11-29 (d2lmp selfcheck)"


def load_json(name: str = H200_SELFCHECK) -> dict:
    """The parsed JSON file ``name`` from this folder."""
    return json.loads(resources.files(__package__).joinpath(name).read_text())


def selfcheck_section(check: str, name: str = H200_SELFCHECK) -> dict:
    """One check's entry (e.g. "matmul_sweep") from a recorded selfcheck report."""
    for entry in load_json(name)["checks"]:
        if entry["name"] == check:
            return entry
    raise KeyError(f"no check {check!r} in {name}")
