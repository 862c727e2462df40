"""``d2lmp bench scale``: the cluster model against every published run it knows.

It compares the cluster model (``d2lmp.scale``) against every published run it knows, and its planner against the
configurations those runs chose. Plain arithmetic, no measurement: the fitted parameters with their meaning,
predicted / published for every row of the calibration table and of every checked table (no refitting), the worst
ratio, the planner checks, and one goal line per table and overall."""

from __future__ import annotations

import argparse
import dataclasses
import statistics

from d2lmp.commands.goal import Goal, goal_line
from d2lmp.model.cluster.calibration import Comparison
from d2lmp.model.cluster.efficiency import FITTED, FIXED_COST_TABLE, FIXED_COSTS, RATES, describe
from d2lmp.model.cluster.report import (
    CALIBRATION_TABLE,
    TOP_FIVE,
    WITHIN,
    calibration_report,
    format_planner_checks,
    planner_checks,
)
from d2lmp.model.cluster.runs import llama3, records
from d2lmp.model.cluster.unknowns import sweep_unknowns
from d2lmp.model.cluster.validation import (
    GOAL,
    PICK_GOAL,
    Judgement,
    goal_checks,
    judge_all,
    memory_ratios_by_micro_batch,
    model_error,
    summarise,
    sweep_cells,
)
from d2lmp.report import table
from d2lmp.views.validation import sources_table

__all__ = ["HELP", "PUBLISHED_GOAL", "add_options", "check", "run", "worst_ratio", "goal_lines", "rows_table",
           "info_lines", "speed_info_lines", "unknown_lines", "validation_goal_lines", "sweep_lines"]

HELP = "the cluster model against published runs (predicted / published), and the planner against their choices"
PUBLISHED_GOAL = (0.8, 1.25)  # predicted / published per-GPU throughput, every row of every table


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--planner", action=argparse.BooleanOptionalAction, default=True,
                        help="also run the planner on each calibration row (about a second)")


def check(args: argparse.Namespace) -> None:
    """Nothing to check: the command has no numeric options."""


def worst_ratio(rows: list[Comparison]) -> Comparison:
    """The row farthest from 1 in either direction (1.1 and 1/1.1 are as far)."""
    return max(rows, key=lambda c: max(c.ratio, 1 / c.ratio))


def rows_table(rows: list[Comparison]) -> str:
    """One published table's rows: the published figure, the predicted one, their ratio, whether it is in range."""
    def unit(c: Comparison) -> str:
        return "s/step" if c.run.metric == "step_s" else "TFLOP/s/GPU"

    low, high = PUBLISHED_GOAL
    return table([[c.run.row, f"{c.run.published:.2f}", f"{c.predicted:.2f}", f"{c.ratio:.3f}", unit(c),
                   "yes" if low <= c.ratio <= high else "no"] for c in rows],
                 ["row", "published", "predicted", "ratio", "unit", f"within {low}-{high}"])


def goal_lines(tables: dict[str, list[Comparison]]) -> list[str]:
    """One goal line per table (its worst row) and one over every row."""
    lines = []
    every: list[Comparison] = []
    for name, rows in tables.items():
        every += rows
        worst = worst_ratio(rows)
        lines.append(Goal(f"predicted / published, every row of {name}", "within", PUBLISHED_GOAL, "×")
                     .line(worst.ratio, f"worst {worst.ratio:.3f}× ({worst.run.row})"))
    worst = worst_ratio(every)
    lines.append(Goal(f"predicted / published, all {len(every)} rows", "within", PUBLISHED_GOAL, "×")
                 .line(worst.ratio, f"worst {worst.ratio:.3f}× ({worst.run.table}, {worst.run.row})"))
    return lines


def info_lines(judgements: list[Judgement]) -> list[str]:
    """Every record the model cannot judge, with its reason: printed, never dropped."""
    return [f"  info: {j.record.source}, {j.record.where}, '{j.record.row}': {j.converted.reason}"
            for j in judgements if j.prediction is None]


def speed_info_lines(judgements: list[Judgement]) -> list[str]:
    """The rows predicted whose published speed is not compared (their memory is), one line per source and reason:
    which rows, why, and what the model would have scored on them (not counted in any goal)."""
    groups: dict[tuple[str, str], list[float]] = {}
    for j in judgements:
        if j.speed_reason and (r := j.any_ratio) is not None:
            groups.setdefault((j.record.source, j.speed_reason), []).append(r)
    low, high = GOAL
    return [f"  speed info: {source}, {len(ratios)} rows: {reason}; their memory is judged. "
            f"Not counted: predicted / published median {statistics.median(ratios):.2f}, "
            f"{sum(low <= r <= high for r in ratios)} within {low}-{high}"
            for (source, reason), ratios in groups.items()]


def memory_measure_lines(judgements: list[Judgement]) -> list[str]:
    """Per source whose memory figures are PyTorch's reserved memory: the median predicted / reported, over all its
    rows and by micro-batch (what the allocator holds beyond the peak in use is in the figure and not in the model, as
    are a step's temporary tensors; both grow with the micro-batch)."""
    reserved = [j for j in judgements if j.record.memory_measure == "reserved"]
    lines = []
    for source in dict.fromkeys(j.record.source for j in reserved):
        by_batch = memory_ratios_by_micro_batch(j for j in reserved if j.record.source == source)
        if not by_batch:
            continue
        ratios = [m for batch in by_batch.values() for m in batch]
        medians = ", ".join(f"{b}: {statistics.median(r):.2f}" for b, r in by_batch.items())
        lines.append(f"  memory: {source}, {len(ratios)} rows report PyTorch's reserved memory (what its allocator "
                     "holds beyond the peak in use is in it and not in the model): predicted / reported median "
                     f"{statistics.median(ratios):.2f}; by micro-batch {medians}")
    return lines


def unknown_lines() -> list[str]:
    """Llama 3 405B's rows (information: Table 4 leaves out the micro-batch and V), judged at every value they could
    take: how many settings the model can represent and says fit, the range of predicted / published, the nearest."""
    low, high = GOAL
    lines = ["Llama 3 405B (dubey2024llama3, Table 4), judged at every micro-batch, V and (where not given) "
             "recomputation the paper leaves open; information, not counted:"]
    for record in llama3.RECORDS:
        choices = llama3.unknowns(record)
        swept = sweep_unknowns(record, choices)
        ratios, fitting = swept.ratios(), swept.ratios(fitting_only=True)
        least, most = swept.memory_gb()
        best = swept.best()
        tried = ", ".join(f"{name} {' '.join(map(str, values))}" for name, values in choices.items())
        line = (f"  {record.row}, published MFU {record.value:.2f} ({tried}): {len(swept.judgements)} of "
                f"{swept.tried} settings representable, {swept.fitting} fit in memory ({least:.0f}-{most:.0f} GB); "
                f"predicted / published {min(ratios):.2f}-{max(ratios):.2f}, {swept.in_band()} within {low}-{high}")
        if fitting:
            line += f" ({swept.in_band(fitting_only=True)} of them fitting, {min(fitting):.2f}-{max(fitting):.2f})"
        if best is not None and best.prediction is not None:
            line += (f"; nearest 1: {swept.setting(best)}, {best.any_ratio:.2f}, "
                     f"{best.prediction.memory.total / 1e9:.0f} GB")
        lines.append(line)
    return lines


def validation_goal_lines(judgements: list[Judgement]) -> list[str]:
    return [goal_line(check.what, check.target, check.found, check.met) for check in goal_checks(judgements)]


def sweep_lines(judgements: list[Judgement]) -> list[str]:
    """Per source of sweeps: its cells, how many the model's pick runs within 10 % of the fastest measured, the worst;
    then the goal line over every cell."""
    cells = sweep_cells(judgements)
    lines = ["The model's pick among the configurations a sweep measured (one model on one cluster) whose speed is "
             "judged (the speed-info rows left out), measured throughput over the fastest measured:"]
    error = model_error()
    for source in dict.fromkeys(c.source for c in cells):
        mine = [c for c in cells if c.source == source]
        scores = [c.score for c in mine]
        within = sum(score >= PICK_GOAL[0] for score in scores)
        held = sum(c.tie_holds_fastest(error) for c in mine)
        ties = statistics.median(len(c.ties(error)) for c in mine)
        measured = statistics.median(len(c.rows) for c in mine)
        lines.append(f"  {source}: {len(scores)} cells, within 10 % in {within}, worst {min(scores):.2f}; the "
                     f"model's tie (configurations predicted within its own error, {error:.1%}, of its pick; a "
                     f"median {ties:g} of {measured:g} measured) holds the fastest measured in {held}")
    within = sum(c.score >= PICK_GOAL[0] for c in cells)
    share = within / len(cells) if cells else 0.0
    lines.append(goal_line("sweep cells where the pick runs within 10 % of the fastest measured",
                           f">= {PICK_GOAL[1]:.0%}", f"{share:.0%} ({within} of {len(cells)})", share >= PICK_GOAL[1]))
    return lines


def run(args: argparse.Namespace) -> int:
    check(args)
    report = calibration_report()
    print(f"The cluster model (d2lmp.model.cluster), its {len(dataclasses.fields(FITTED))} parameters fitted on their "
          "calibration tables only, against every published run it knows\n")
    print(f"Fitted parameters: {', '.join(RATES)} on {CALIBRATION_TABLE}; {', '.join(FIXED_COSTS)} on "
          f"{FIXED_COST_TABLE}")
    print(describe(report.efficiency))
    for name, rows in report.tables.items():
        worst = worst_ratio(rows)
        print(f"\n{name}: worst ratio {worst.ratio:.3f} ({worst.run.row})")
        print(rows_table(rows))
    print("\nratio = predicted / published per-GPU throughput (for published step times: published / predicted "
          "seconds)")
    worst = worst_ratio([c for rows in report.tables.values() for c in rows])
    print(f"worst ratio over all {sum(len(r) for r in report.tables.values())} rows: {worst.ratio:.3f} "
          f"({worst.run.table}, {worst.run.row})")
    if args.planner:
        checks = planner_checks(report.efficiency)
        ok = sum(c.ok for c in checks)
        print("\nThe planner on each calibration row, limited to the techniques the paper had (full recomputation, "
              "no ZeRO, no sequence or context parallelism, its data-parallel implementation):")
        print(format_planner_checks(checks))
        print(f"{ok} of {len(checks)} rows: the published configuration ranks in the planner's top {TOP_FIVE}, or "
              f"the planner's best is within {WITHIN:.0%} of it (both predicted)")
    judgements = judge_all(records())
    print(f"\nPublished runs transcribed as records (d2lmp.model.cluster.runs), {len(judgements)} rows; the rows "
          f"marked calibration fitted {', '.join(FIXED_COSTS)}, every other row is validation, predicted with the "
          "fitted parameters unchanged")
    print(sources_table(summarise(judgements)))
    print("ratio = predicted / published tokens/s per GPU (a published MFU or FLOP rate divided by the FLOPs the "
          "model counts a token)")
    print("memory ±20 % = predicted / reported memory per GPU within 0.8-1.2, on the GPU the figure is from")
    print("\n".join(info_lines(judgements) + speed_info_lines(judgements) + memory_measure_lines(judgements)))
    print("\n" + "\n".join(unknown_lines()))
    print("\n" + "\n".join(goal_lines(report.tables)))
    print("\n".join(validation_goal_lines(judgements)))
    print("\n" + "\n".join(sweep_lines(judgements)))
    return 0
