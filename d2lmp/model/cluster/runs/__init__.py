"""Tables of published training runs, one module per source, each row a ``RunRecord`` with its place in the source.

``SOURCES`` names the modules; each defines ``RECORDS`` (a tuple of ``RunRecord``). ``records()`` gathers them.
"""

from __future__ import annotations

from importlib import import_module

from d2lmp.model.cluster.run_record import RunRecord

__all__ = ["SOURCES", "records"]

SOURCES: tuple[str, ...] = (
    "llm_foundry",
    "torchtitan",
    "megascale",
    "bigscience_tr11",
    "opt175b",
    "llama3",
    "deepseek_v3",
    "ultrascale",
    "megatron_bridge",
    "megatron_lm",
    "nemo",
)


def records(use: str | None = None) -> tuple[RunRecord, ...]:
    """Every record of every source module (only those of ``use``, "calibration" or "validation", if given)."""
    found: list[RunRecord] = []
    for name in SOURCES:
        module = import_module(f"d2lmp.model.cluster.runs.{name}")
        found.extend(module.RECORDS)
    return tuple(r for r in found if use is None or r.use == use)
