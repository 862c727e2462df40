"""What overlapping communication with compute costs: the cost model's assumption about it, named in one place.

The step model lets gradient reductions, ZeRO's gathers and context parallelism's ring run behind the compute they
overlap, and charges only what the compute cannot hide (``comm − compute`` when positive). On a GPU that is an
assumption, not a fact: NCCL's collectives are kernels on the same streaming multiprocessors as the matrix
products, so compute slows while they run (Tazi et al., 2025, the closing paragraph of "Lessons learned on
benchmarking", section Finding the Best Training Configuration). ``HIDDEN_COST`` is the share of every hidden
second that the step pays all the same. It is 0.0: no source gives a general value, and the fitted efficiencies
(``efficiency.FITTED``) and every validation goal were met with it; a learner can raise it and watch the planner's
ranking move.
"""

from __future__ import annotations

__all__ = ["HIDDEN_COST", "exposed"]

HIDDEN_COST = 0.0  # share of each overlapped second of communication still paid: assumed free (see above)


def exposed(comm_s: float, compute_s: float, floor: float = 0.0, hidden_cost: float | None = None) -> float:
    """Seconds of ``comm_s`` a step pays when it overlaps ``compute_s``: what the compute cannot hide (at least
    ``floor``, e.g. a last bucket that starts after the compute ends) plus ``hidden_cost`` of what it hides."""
    share = HIDDEN_COST if hidden_cost is None else hidden_cost
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"hidden_cost must lie in [0, 1], got {share!r}")
    return max(comm_s - compute_s, floor) + share * min(comm_s, compute_s)
