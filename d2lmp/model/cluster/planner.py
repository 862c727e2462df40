"""The planner: every way to split a step that fits in memory, ranked by predicted time, and why the others lose.

``plan(model, cluster, global_batch)`` enumerates tensor, pipeline, data and context parallel sizes (a
*family*), and within each family the ZeRO stage, micro-batch, recomputation, sequence parallelism and
interleaving. Each configuration's memory is computed first (cheap); only those that fit are timed by
``predict``. The configurations are ranked by step time; every family gets a verdict: invalid (and
why), does not fit (the least it needs, and its largest part), or its best configuration with how much
slower it is than the winner, the term it loses most to, and the link that term crosses. Configurations predicted
within the model's own error of the fastest (``validation.model_error``) are a tie (``PlanReport.ties``). Defaults:
tensor sizes that are powers of two up to four nodes' GPUs and divide the heads, context sizes that leave
at least 1,024 tokens a rank, micro-batches up to 16 sequences, interleaving up to 8 virtual stages, and for a
mixture of experts (``plan(..., experts=ExpertSearch(...))``) expert-parallel sizes that are powers of two dividing
the experts and the data-parallel size.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache, wraps
from typing import Any, ParamSpec, TypeVar

from d2lmp.model.cluster.efficiency import FITTED, Efficiency
from d2lmp.model.cluster.hardware import Cluster
from d2lmp.model.cluster.layout import Layout, Plan, check_plan
from d2lmp.model.cluster.memory import MemoryBreakdown, memory_per_gpu
from d2lmp.model.cluster.moe import MoETransformer
from d2lmp.model.cluster.predict import Prediction, predict_checked
from d2lmp.model.cluster.validation import model_error
from d2lmp.model.terms import ZERO_STAGES
from d2lmp.model.transformer_accounting import RECOMPUTE, Transformer
from d2lmp.model.vocabulary import AttentionKernel, MatmulPrecision, Recompute, ZeroStage

__all__ = ["Candidate", "FamilyVerdict", "PlanReport", "plan", "family_options", "expert_options", "powers_of_two",
           "TERM_LINK", "ExpertSearch"]

MAX_MICRO_BATCH = 16
KEPT_REPORTS = 4  # plan's last answers, kept (GPT-3 on 1,024 GPUs: 15,000 ranked configurations, about 36 MB)
MAX_INTERLEAVE = 8
MIN_TOKENS_PER_CP_RANK = 1024
# The link each exposed term crosses (the bubble and the compute cross none).
TERM_LINK = {"tp": "tp_link", "cp": "cp_link", "dp": "dp_link", "zero": "dp_link", "pp_p2p": "pp_link",
             "embedding_sync": "pp_link", "ep": "ep_link"}


@dataclass(frozen=True)
class Candidate:
    """A configuration that fits, with its prediction."""

    plan: Plan
    prediction: Prediction


@dataclass(frozen=True)
class FamilyVerdict:
    """One (tp, pp, dp, cp) family: its best fitting configuration (None if none fits or it is invalid) and why
    it is not the winner (or that it is)."""

    tp: int
    pp: int
    dp: int
    cp: int
    best: Candidate | None
    reason: str

    @property
    def sizes(self) -> tuple[int, int, int, int]:
        return self.tp, self.pp, self.dp, self.cp


@dataclass(frozen=True)
class PlanReport:
    """Every fitting configuration, fastest first (``ranked``), the ``top`` few, and a verdict per family."""

    model: Transformer
    cluster: Cluster
    global_batch: int
    ranked: tuple[Candidate, ...]
    families: tuple[FamilyVerdict, ...]
    considered: int  # configurations whose memory was computed
    top_k: int = 5
    tie_within: float = 0.0  # the model's own error (validation.model_error): closer than that is a tie

    @property
    def ties(self) -> tuple[Candidate, ...]:
        """The configurations predicted within the model's own error of the fastest: the model cannot rank them."""
        if not self.ranked:
            return ()
        limit = self.ranked[0].prediction.step_s * math.exp(self.tie_within)
        return tuple(c for c in self.ranked if c.prediction.step_s <= limit)

    @property
    def top(self) -> tuple[Candidate, ...]:
        return self.ranked[:self.top_k]

    @property
    def best(self) -> Candidate | None:
        return self.ranked[0] if self.ranked else None

    def rank_of(self, wanted: Plan) -> int | None:
        """1-based rank of a configuration among those that fit (None if it is not among them)."""
        for i, candidate in enumerate(self.ranked, 1):
            if candidate.plan == wanted:
                return i
        return None


def powers_of_two(limit: int) -> list[int]:
    """1, 2, 4, ... up to ``limit``: the tensor- and context-parallel sizes the search tries."""
    out, n = [], 1
    while n <= limit:
        out.append(n)
        n *= 2
    return out


def _divisors(n: int, limit: int | None = None) -> list[int]:
    """The divisors of ``n`` up to ``limit``, ascending, in O(min(sqrt n, limit)) steps (a batch may be 10⁹
    sequences): a divisor above sqrt n is n // k for a k below it."""
    low = [k for k in range(1, min(math.isqrt(n), n if limit is None else limit) + 1) if n % k == 0]
    return sorted(k for k in set(low) | {n // k for k in low} if limit is None or k <= limit)


def family_options(model: Transformer, cluster: Cluster, global_batch: int,
                   tp: Sequence[int] | None = None, pp: Sequence[int] | None = None,
                   cp: Sequence[int] | None = None) -> list[tuple[int, int, int, int]]:
    """The (tp, pp, dp, cp) families whose product is the cluster's GPU count."""
    n = cluster.gpus
    tps = tp if tp is not None else [t for t in powers_of_two(min(n, 4 * cluster.gpus_per_node))
                                     if model.heads % t == 0 and model.kv_head_count % t == 0]
    cps = cp if cp is not None else [c for c in powers_of_two(n)
                                     if c == 1 or (model.seq % (2 * c) == 0
                                                   and model.seq // c >= MIN_TOKENS_PER_CP_RANK)]
    # a pipeline size divides the GPU count; it need not divide the layers (the fullest stage holds one more)
    pps = pp if pp is not None else sorted(set(_divisors(model.layers, n)) | {
        p for p in powers_of_two(min(n, model.layers)) if n % p == 0})
    return [(t, p, n // (t * p * c), c) for t in tps for c in cps for p in pps if n % (t * p * c) == 0]


def expert_options(model: Transformer, dp: int, ep: Sequence[int] | None = None) -> list[int]:
    """The expert-parallel sizes to try with ``dp`` data-parallel (and context-parallel) ranks: those of ``ep``
    (default: powers of two) that divide both the routed experts and ``dp``; 1 for a dense model. Where none of the
    sizes asked for divides them, all of them, so that ``check_plan`` says why the family cannot use them."""
    if not isinstance(model, MoETransformer):
        return [1]
    sizes = ep if ep is not None else powers_of_two(dp)
    return [e for e in sizes if model.experts % e == 0 and dp % e == 0] or list(sizes)


@dataclass(frozen=True)
class ExpertSearch:
    """What the search of a mixture of experts adds to ``plan``'s: the expert-parallel sizes to try (None:
    ``expert_options``' default), the dispatch in FP8 (``Plan.fp8_dispatch``), the all-to-alls hidden behind compute
    (``Plan.ep_overlap``)."""

    ep: tuple[int, ...] | None = None
    fp8_dispatch: bool = False
    ep_overlap: bool = False


def _members(model: Transformer, base: Plan, zero: Sequence[ZeroStage], micro_batch: Sequence[int] | None,
             recompute: Sequence[Recompute], sequence_parallel: Sequence[bool],
             interleave: Sequence[int] | None, search: ExpertSearch) -> list[Plan]:
    per_replica = base.global_batch // base.dp
    micro = micro_batch if micro_batch is not None else _divisors(per_replica, MAX_MICRO_BATCH)
    stages = interleave if interleave is not None else (
        _divisors(max(1, model.layers // base.pp), MAX_INTERLEAVE) if base.pp > 1 else [1])
    zeros = [z for z in zero if base.dp > 1 or z == 0]
    sps = [sp for sp in sequence_parallel if base.tp > 1 or not sp]
    # a fused attention kernel keeps no scores: selective recomputation would change nothing
    recomputes = [r for r in recompute if not (base.attention == "flash" and r == "selective")] or list(recompute)
    eps = expert_options(model, base.cp * base.dp, search.ep)
    if isinstance(model, MoETransformer):
        base = replace(base, fp8_dispatch=search.fp8_dispatch, ep_overlap=search.ep_overlap)
    return [replace(base, micro_batch=b, recompute=r, sequence_parallel=sp, interleave=v, zero=z, ep=e)
            for b in micro for r in recomputes for sp in sps for v in stages for z in zeros for e in eps]


def _why_slower(candidate: Candidate, winner: Candidate) -> str:
    pred = candidate.prediction
    slower = pred.step_s / winner.prediction.step_s - 1
    term = pred.exposed
    share = pred.parts.seconds[term] / pred.step_s
    link = getattr(pred.layout, TERM_LINK[term]) if term in TERM_LINK else None
    where = f" over {link}" if link else ""
    if term == "bubble":
        where = f" ((p-1)/(v*m) = {candidate.plan.pp - 1}/({candidate.plan.interleave}*{pred.layout.microbatches}))"
    return (f"{slower:+.1%} step time ({candidate.plan.describe()}); loses most to {term}: {share:.0%} of its "
            f"step{where}")


def _no_fit_reason(smallest: MemoryBreakdown) -> str:
    parts = smallest.parts()
    largest = max(parts, key=lambda k: parts[k])
    return (f"does not fit: the least any configuration needs is {smallest.total / 1e9:.1f} GB of "
            f"{smallest.capacity / 1e9:.0f} GB (largest part: {largest}, {parts[largest] / 1e9:.1f} GB)")


@dataclass(frozen=True)
class _Family:
    """What searching one family found: its fastest fitting member, the smallest that does not fit, the first
    reason a member was invalid, every fitting member, and how many members' memory was computed."""

    sizes: tuple[int, int, int, int]
    best: Candidate | None
    smallest: MemoryBreakdown | None
    error: str
    fitting: tuple[Candidate, ...]
    considered: int

    @property
    def reason(self) -> str:
        """Why nothing of this family runs ("" when something does)."""
        if self.best is not None:
            return ""
        return _no_fit_reason(self.smallest) if self.smallest is not None else f"invalid: {self.error}"


def _search_family(model: Transformer, cluster: Cluster, members: Sequence[Plan], sizes: tuple[int, int, int, int],
                   efficiency: Efficiency) -> _Family:
    """Memory first for every member (cheap), then a prediction for each one that fits."""
    fitting: list[Candidate] = []
    smallest: MemoryBreakdown | None = None
    error, considered = "", 0
    capacity = cluster.preset.memory_bytes
    for member in members:
        try:
            layout: Layout = check_plan(model, cluster, member)
        except ValueError as exc:
            error = error or str(exc)
            continue
        considered += 1
        memory = memory_per_gpu(model, member, layout, capacity)
        if memory.fits:
            fitting.append(Candidate(member, predict_checked(model, cluster, member, layout, memory, efficiency)))
        elif smallest is None or memory.total < smallest.total:
            smallest = memory
    best = min(fitting, key=lambda c: c.prediction.step_s, default=None)
    return _Family(sizes, best, smallest, error, tuple(fitting), considered)


def _verdict(family: _Family, winner: Candidate | None) -> FamilyVerdict:
    reason = family.reason
    if family.best is not None and winner is not None:
        reason = "the winner" if family.best is winner else _why_slower(family.best, winner)
    return FamilyVerdict(*family.sizes, family.best, reason)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def keeps_last(count: int) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """A function that keeps its last ``count`` answers: the same question again gets the same (frozen) answer at
    once. Lists among the keyword arguments count as the tuples they hold; other unhashable arguments are not kept."""
    def decorate(function: Callable[_P, _R]) -> Callable[_P, _R]:
        cached = lru_cache(maxsize=count)(function)

        @wraps(function)
        def keeping(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            key: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}
            try:
                hash((args, tuple(key.items())))
            except TypeError:  # an argument that cannot be kept: the function says what is wrong with it
                return function(*args, **kwargs)
            return cached(*args, **key)
        return keeping
    return decorate


@keeps_last(KEPT_REPORTS)
def plan(model: Transformer, cluster: Cluster, global_batch: int, *, top: int = 5, efficiency: Efficiency = FITTED,
         tp: Sequence[int] | None = None, pp: Sequence[int] | None = None, cp: Sequence[int] | None = None,
         zero: Sequence[ZeroStage] = ZERO_STAGES, micro_batch: Sequence[int] | None = None,
         recompute: Sequence[Recompute] = RECOMPUTE, sequence_parallel: Sequence[bool] = (False, True),
         interleave: Sequence[int] | None = None, dp_overlap: bool = True, attention: AttentionKernel = "flash",
         precision: MatmulPrecision = "bf16", experts: ExpertSearch = ExpertSearch()) -> PlanReport:
    """Rank every configuration of ``model`` on ``cluster`` for ``global_batch`` sequences that fits in memory (the
    last ``KEPT_REPORTS`` reports are kept). The keyword arguments restrict the search (``zero=(0,)``, ...);
    ``attention`` and ``precision`` are the run's kernels; ``experts`` what a mixture of experts adds."""
    if not isinstance(global_batch, int) or global_batch < 1:
        raise ValueError(f"global_batch must be a positive integer, got {global_batch!r}")
    families = []
    for t, p, d, c in family_options(model, cluster, global_batch, tp, pp, cp):
        if global_batch % d:
            error = f"the global batch ({global_batch}) does not split over dp = {d}"
            families.append(_Family((t, p, d, c), None, None, error, (), 0))
            continue
        base = Plan(t, p, d, c, global_batch=global_batch, dp_overlap=dp_overlap, attention=attention,
                    precision=precision)
        members = _members(model, base, zero, micro_batch, recompute, sequence_parallel, interleave, experts)
        families.append(_search_family(model, cluster, members, (t, p, d, c), efficiency))
    ranked = sorted((cand for f in families for cand in f.fitting),
                    key=lambda cand: (cand.prediction.step_s, cand.prediction.memory.total))
    winner = ranked[0] if ranked else None
    verdicts = sorted((_verdict(f, winner) for f in families),
                      key=lambda v: (v.best is None, v.best.prediction.step_s if v.best else 0.0, v.reason))
    return PlanReport(model, cluster, global_batch, tuple(ranked), tuple(verdicts),
                      sum(f.considered for f in families), top, model_error() if ranked else 0.0)
