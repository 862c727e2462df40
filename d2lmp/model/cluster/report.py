"""What the commands print about the cluster model, as typed records and plain-text formatters.

They hold the calibration and check tables, the planner's choice against the published configurations, and the
planner's ranking.

``calibration_report`` predicts the calibration table and every checked table with the fitted parameters
(no refitting) and ``format_calibration`` prints each row's published and predicted figure and their ratio,
the worst ratio of each table and whether the goal (0.8-1.25 on every row) is met. ``planner_checks`` runs
the planner on each calibration row with the techniques the paper had (full recomputation, no ZeRO, no
sequence or context parallelism, its data-parallel implementation) and says where the published
configuration ranks, or how far the planner's best is from it. ``format_plan`` prints a ``PlanReport``.
"""

from __future__ import annotations

from dataclasses import dataclass

from d2lmp.model.cluster.calibration import GOAL, Comparison, cluster_of, compare
from d2lmp.model.cluster.efficiency import FITTED, FIXED_COST_TABLE, FIXED_COSTS, RATES, Efficiency, describe
from d2lmp.model.cluster.expert_step import EXPERT_PART
from d2lmp.model.cluster.moe import MoETransformer
from d2lmp.model.cluster.planner import Candidate, PlanReport, plan
from d2lmp.model.cluster.predict import Prediction, predict
from d2lmp.model.cluster.published import CHECKED_TABLES, NARAYANAN_TABLE1, PublishedRun

__all__ = ["CalibrationReport", "calibration_report", "format_calibration", "PlannerCheck", "planner_checks",
           "format_planner_checks", "format_plan", "STEP_PART_LABELS"]

CALIBRATION_TABLE = "Narayanan et al. 2021, Table 1 (calibration)"
TOP_FIVE, WITHIN = 5, 0.10
# Each part of a step (``steptime.STEP_PARTS``) as a legend names it, in words a reader knows, and its colour.
STEP_PART_LABELS = {"compute": "matrix products", "memory_bound": "memory-bound operations",
                    "tp": "tensor-parallel all-reduces", "cp": "context-parallel K/V passes",
                    "host": "waiting for the host's launches",
                    "pp_p2p": "pipeline sends", "bubble": "pipeline bubble", "dp": "gradient all-reduce",
                    "zero": "ZeRO gathers", "embedding_sync": "tied-embedding sync", "optimizer_step": "optimizer step",
                    EXPERT_PART: "expert all-to-alls"}


@dataclass(frozen=True)
class CalibrationReport:
    """The comparisons of each table (the calibration table first) under one set of parameters."""

    efficiency: Efficiency
    tables: dict[str, list[Comparison]]

    def worst(self, table: str) -> Comparison:
        return max(self.tables[table], key=lambda c: abs(c.ratio - 1) if c.ratio >= 1 else 1 / c.ratio - 1)

    @property
    def within_goal(self) -> bool:
        return all(c.within_goal for rows in self.tables.values() for c in rows)


def calibration_report(efficiency: Efficiency = FITTED) -> CalibrationReport:
    tables = {CALIBRATION_TABLE: compare(NARAYANAN_TABLE1, efficiency)}
    tables.update({name: compare(runs, efficiency) for name, runs in CHECKED_TABLES.items()})
    return CalibrationReport(efficiency, tables)


def _unit(metric: str) -> str:
    return "s/step" if metric == "step_s" else "TFLOP/s/GPU"


def format_calibration(report: CalibrationReport) -> str:
    """Every table's rows (published, predicted, ratio), its worst ratio, the goal line and the parameters."""
    lines = [f"Fitted parameters ({', '.join(RATES)} on the calibration table; {', '.join(FIXED_COSTS)} on "
             f"{FIXED_COST_TABLE}):", describe(report.efficiency), ""]
    for name, rows in report.tables.items():
        lines += [name, f"  {'row':<28}{'published':>12}{'predicted':>12}{'ratio':>8}  unit"]
        for c in rows:
            flag = "" if c.within_goal else "  <- outside the goal"
            lines.append(f"  {c.run.row:<28}{c.run.published:>12.2f}{c.predicted:>12.2f}{c.ratio:>8.3f}  "
                         f"{_unit(c.run.metric)}{flag}")
        worst = report.worst(name)
        met = all(c.within_goal for c in rows)
        lines += [f"  worst ratio {worst.ratio:.3f} ({worst.run.row}); goal {GOAL[0]}-{GOAL[1]} on every row: "
                  f"{'met' if met else 'NOT met'}", ""]
    lines.append("ratio = predicted / published per-GPU throughput (for step times: published / predicted seconds)")
    return "\n".join(lines)


@dataclass(frozen=True)
class PlannerCheck:
    """The planner on one published run: the published configuration's ``rank`` among the fitting ones (None
    if it does not fit), the planner's ``best``, and ``gain``: how much faster the best is than the published
    configuration, both predicted."""

    run: PublishedRun
    rank: int | None
    best: Candidate
    published: Prediction
    fitting: int

    @property
    def gain(self) -> float:
        return self.published.step_s / self.best.prediction.step_s - 1

    @property
    def verdict(self) -> str:
        if self.rank is not None and self.rank <= TOP_FIVE:
            return f"published configuration ranks {self.rank}: among the top {TOP_FIVE}"
        if self.gain <= WITHIN:
            return f"planner's best is {self.gain:.1%} faster: within {WITHIN:.0%}"
        return (f"neither: published ranks {self.rank}, the best is {self.gain:.1%} faster; it saves "
                f"{self._saving()}")

    @property
    def ok(self) -> bool:
        return (self.rank is not None and self.rank <= TOP_FIVE) or self.gain <= WITHIN

    def _saving(self) -> str:
        """Which parts of the published configuration's step the planner's best shrinks most."""
        mine, theirs = self.best.prediction.parts.seconds, self.published.parts.seconds
        deltas = sorted(((theirs[k] - mine[k], k) for k in theirs), reverse=True)[:2]
        return " and ".join(f"{k} ({d:+.2f} s)" for d, k in deltas if d > 0) or "nothing in particular"


def planner_checks(efficiency: Efficiency = FITTED, runs: tuple[PublishedRun, ...] = NARAYANAN_TABLE1
                   ) -> list[PlannerCheck]:
    """The planner, limited to the techniques of the published runs, on each of ``runs``."""
    out = []
    for run in runs:
        cluster = cluster_of(run)
        report = plan(run.model, cluster, run.plan.global_batch, efficiency=efficiency, zero=(run.plan.zero,),
                      recompute=(run.plan.recompute,), sequence_parallel=(run.plan.sequence_parallel,),
                      cp=(run.plan.cp,), dp_overlap=run.plan.dp_overlap, attention=run.plan.attention)
        assert report.best is not None
        out.append(PlannerCheck(run, report.rank_of(run.plan), report.best,
                                predict(run.model, cluster, run.plan, efficiency), len(report.ranked)))
    return out


def format_planner_checks(checks: list[PlannerCheck]) -> str:
    lines = [f"{'row':<10}{'published configuration':<39}{'planner best':<39}{'rank':>6}{'best faster':>13}  verdict"]
    for c in checks:
        rank = "-" if c.rank is None else f"{c.rank}/{c.fitting}"
        lines.append(f"{c.run.row:<10}{c.run.plan.describe():<39}{c.best.plan.describe():<39}{rank:>6}"
                     f"{c.gain:>12.1%}  {c.verdict}")
    return "\n".join(lines)


def format_plan(report: PlanReport, families: bool = True) -> str:
    """The top configurations as a table, then each family's verdict."""
    cluster = report.cluster
    lines = [f"{cluster.gpus} x {cluster.gpu}, global batch {report.global_batch} sequences of {report.model.seq} "
             f"tokens: {len(report.ranked)} of {report.considered} configurations fit",
             f"{'#':>2} {'tp':>3}{'pp':>4}{'dp':>6}{'cp':>4}{'zero':>5}{'mb':>4} {'recompute':<10}{'sp':>3}{'v':>3}"
             f"{'step s':>9}{'tokens/s':>11}{'TFLOP/s':>9}{'MFU':>7}{'GB/GPU':>8}  loses most to"]
    moe = isinstance(report.model, MoETransformer)
    if moe:  # a mixture of experts: its expert-parallel size too
        lines[1] = lines[1].replace(f"{'v':>3}", f"{'v':>3}{'ep':>4}", 1)
    for i, cand in enumerate(report.top, 1):
        p, pr = cand.plan, cand.prediction
        lines.append(f"{i:>2} {p.tp:>3}{p.pp:>4}{p.dp:>6}{p.cp:>4}{p.zero:>5}{p.micro_batch:>4} {p.recompute:<10}"
                     f"{'y' if p.sequence_parallel else 'n':>3}{p.interleave:>3}{f'{p.ep:>4}' if moe else ''}"
                     f"{pr.step_s:>9.2f}"
                     f"{pr.tokens_per_s:>11.0f}{pr.model_tflops_per_gpu:>9.1f}{pr.mfu:>7.1%}"
                     f"{pr.memory_per_gpu_bytes / 1e9:>8.1f}  {pr.exposed}")
    ties = report.ties
    if len(ties) > 1:
        lines.append(f"a tie: {len(ties)} configurations are predicted within the model's own error "
                     f"({report.tie_within:.1%}: its median error, source by source) of the fastest; the model "
                     "cannot rank them")
    if families:
        lines += ["", "families (tp, pp, dp, cp): why each is not the winner"]
        lines += [f"  {str(v.sizes):<20} {v.reason}" for v in report.families]
    return "\n".join(lines)
