"""``d2lmp bench scale``: the cluster model against every published run it knows.

It compares the cluster model (``d2lmp.scale``) against every published run it knows, and its planner against the
configurations those runs chose. Plain arithmetic, no measurement: the fitted parameters with their meaning,
predicted / published for every row of the calibration table and of every checked table (no refitting), the worst
ratio, the planner checks, and one goal line per table and overall."""

from __future__ import annotations

import argparse

from d2lmp.commands.goal import Goal
from d2lmp.model.cluster.calibration import Comparison
from d2lmp.model.cluster.efficiency import describe
from d2lmp.model.cluster.report import (
    TOP_FIVE,
    WITHIN,
    calibration_report,
    format_planner_checks,
    planner_checks,
)
from d2lmp.report import table

__all__ = ["HELP", "PUBLISHED_GOAL", "add_options", "check", "run", "worst_ratio", "goal_lines", "rows_table"]

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


def run(args: argparse.Namespace) -> int:
    check(args)
    report = calibration_report()
    print("The cluster model (d2lmp.model.cluster), its four parameters fitted on the calibration table only, against "
          "every published run it knows\n")
    print("Fitted parameters (on the calibration table):")
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
    print("\n" + "\n".join(goal_lines(report.tables)))
    return 0
