"""A record whose source leaves part of its configuration out, judged at every value the missing part could take.

A published run that does not print, say, its micro-batch cannot be judged as it ran (``convert`` says which fields are
missing, and the record is counted as information). ``sweep_unknowns`` fills the missing fields with each candidate
in turn and judges every combination the model can represent, so that the record's information line can say what
the model predicts over everything the run could have been: the range of predicted / published, how many of the
settings fit in memory, and the best. It never picks one setting as "the" run.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from d2lmp.model.cluster.efficiency import FITTED, Efficiency
from d2lmp.model.cluster.run_record import RunRecord
from d2lmp.model.cluster.validation import GOAL, Judgement, judge

__all__ = ["Swept", "sweep_unknowns"]


@dataclass(frozen=True)
class Swept:
    """One record judged at every representable combination of its missing fields (``names``; each judgement's
    record holds its values); ``tried`` counts the combinations, representable or not."""

    record: RunRecord
    names: tuple[str, ...]
    tried: int
    judgements: tuple[Judgement, ...]

    def ratios(self, fitting_only: bool = False) -> list[float]:
        """Predicted / published over the judged settings (only those the model says fit, if ``fitting_only``)."""
        return [r for j in self.judgements if (r := j.any_ratio) is not None
                and (not fitting_only or (j.prediction is not None and j.prediction.fits))]

    @property
    def fitting(self) -> int:
        return sum(j.prediction is not None and j.prediction.fits for j in self.judgements)

    def in_band(self, fitting_only: bool = False) -> int:
        return sum(GOAL[0] <= r <= GOAL[1] for r in self.ratios(fitting_only))

    def memory_gb(self) -> tuple[float, float]:
        """The least and the most memory a GPU needs over the judged settings, GB."""
        totals = [j.prediction.memory.total / 1e9 for j in self.judgements if j.prediction is not None]
        return min(totals), max(totals)

    def best(self) -> Judgement | None:
        """The judgement whose ratio is nearest 1 (on a log scale; its record holds the setting); None if none was
        judged."""
        judged = [j for j in self.judgements if j.any_ratio is not None]
        return min(judged, key=lambda j: abs(math.log(j.any_ratio or 1.0)), default=None)

    def setting(self, judgement: Judgement) -> str:
        """The swept fields' values of one of this sweep's judgements: 'micro_batch 1, interleave 8'."""
        return ", ".join(f"{name} {getattr(judgement.record, name)}" for name in self.names)


def sweep_unknowns(record: RunRecord, choices: Mapping[str, Sequence[object]],
                   efficiency: Efficiency = FITTED) -> Swept:
    """``record`` judged at every combination of ``choices`` (field name -> candidate values, each a ``RunRecord``
    field), keeping the combinations the model can represent."""
    if not choices:
        raise ValueError("give at least one field to sweep")
    unknown = [name for name in choices if not hasattr(record, name)]
    if unknown:
        raise ValueError(f"not fields of a run record: {unknown}")
    names = tuple(choices)
    combos = list(itertools.product(*(choices[name] for name in names)))
    judged = (judge(replace(record, **dict(zip(names, values, strict=True))), efficiency)  # type: ignore[arg-type]
              for values in combos)  # the fields were checked above
    return Swept(record, names, len(combos), tuple(j for j in judged if j.prediction is not None))
