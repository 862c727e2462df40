"""A recorded ``NCCL_DEBUG=INFO`` log of our collectives on NCCL ranks, read when this folder holds one.

``tools/record_gpu.sh`` (through ``tools/nccl_debug.py``) writes ``nccl_debug_<gpu>_<date>.txt`` on a machine with
CUDA GPUs: its first line is the command, the rest is what the ranks printed, NCCL's log lines among them.
``nccl_debug_log`` returns the last such file (by name) as an ``NcclDebugLog``, or None when none is recorded;
``NcclDebugLog.excerpt`` keeps the lines a reader looks for: NCCL's version, the transport between each pair of
GPUs, the trees it built, what its tuning model chose, and the end of set-up.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatch
from importlib import resources

__all__ = ["NCCL_DEBUG_LOGS", "NCCL_LOG_TOPICS", "NcclDebugLog", "parse_nccl_debug_log", "nccl_debug_log"]

NCCL_DEBUG_LOGS = "nccl_debug_*.txt"
NCCL_LOG_TOPICS = ("NCCL version", " via ", "Trees", "Algorithm", "Algo ", "Init COMPLETE")


@dataclass(frozen=True)
class NcclDebugLog:
    """A recorded NCCL log: the file's ``name``, its first line (the ``command`` that wrote it) and NCCL's ``lines``."""

    name: str
    command: str
    lines: tuple[str, ...]

    def excerpt(self, topics: tuple[str, ...] = NCCL_LOG_TOPICS, per_topic: int = 3) -> list[str]:
        """The first ``per_topic`` lines about each of ``topics``, in the log's order."""
        kept = {line for topic in topics for line in [x for x in self.lines if topic in x][:per_topic]}
        return [line for line in self.lines if line in kept]


def parse_nccl_debug_log(name: str, text: str) -> NcclDebugLog:
    """A log's text as ``NcclDebugLog``: the first line is the command; NCCL's lines are those it marks "NCCL"."""
    first, _, rest = text.partition("\n")
    lines = tuple(line.rstrip() for line in rest.splitlines() if "NCCL INFO" in line or "NCCL version" in line)
    if not lines:
        raise ValueError(f"{name} holds no NCCL log line: was it recorded with NCCL_DEBUG=INFO?")
    return NcclDebugLog(name, first.strip(), lines)


def nccl_debug_log() -> NcclDebugLog | None:
    """The last (by name) recorded ``NCCL_DEBUG=INFO`` log in this folder, or None when none is recorded here."""
    folder = resources.files(__package__)
    names = sorted(f.name for f in folder.iterdir() if fnmatch(f.name, NCCL_DEBUG_LOGS))
    return parse_nccl_debug_log(names[-1], folder.joinpath(names[-1]).read_text()) if names else None
