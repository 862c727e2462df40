"""The cluster model's validation as a text table: per source of published runs, how far its predictions land.

``sources_table`` formats ``model.cluster.validation.summarise``'s records; ``d2lmp bench scale`` prints it, and so
does notebook 20.
"""

from __future__ import annotations

from d2lmp.model.cluster.validation import GOAL, SourceSummary, memory_within_goal
from d2lmp.report import table

__all__ = ["sources_table"]


def _number(x: float | None, fmt: str = ".2f") -> str:
    return "-" if x is None else format(x, fmt)


def sources_table(summaries: list[SourceSummary]) -> str:
    """Per source: rows, those judged and those printed as information (the whole row, or only its speed: "speed
    info", memory judged), the ratios' median and worst, the share in band, the runs whose memory verdict disagrees
    with the run, and the memory ratios (where reported)."""
    low, high = GOAL
    rows = []
    for s in summaries:
        rows.append([s.source, s.use, str(s.rows), str(len(s.ratios)), str(s.info), str(len(s.speed_info)),
                     _number(s.median), _number(s.worst), f"{s.in_band} ({_number(s.share, '.0%')})",
                     str(s.memory_disagrees), f"{memory_within_goal(s.memory_ratios)} of {len(s.memory_ratios)}"])
    return table(rows, ["source", "use", "rows", "judged", "info", "speed info", "median", "worst", f"in {low}-{high}",
                        "memory verdict wrong", "memory ±20 %"])
