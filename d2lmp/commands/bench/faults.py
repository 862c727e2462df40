"""``d2lmp bench faults``: a campaign of random faults on real ranks, and whether ``launch`` reported each one right.

Each run is one launch of 2-4 gloo ranks with one fault on one rank (``d2lmp.bench.faults``: a raise, an
``os._exit``, a SIGKILL during all-reduces, a SIGSTOP past the timeout, a skipped collective, a mismatched shape
or dtype).
The table counts, per fault, the runs, the longest report, the reports that name the wrong rank or none, the
processes left alive, and the plain launches right after that failed; the goals want every count at 0."""

from __future__ import annotations

import argparse
from collections import Counter

from d2lmp.bench import faults
from d2lmp.commands.goal import Goal
from d2lmp.commands.options import ints, need_positive, need_ranks
from d2lmp.parallel.launch import REPORT_MARGIN_S
from d2lmp.report import table

__all__ = ["HELP", "MAX_RANKS", "add_options", "check", "run"]

HELP = "random faults on 2-4 ranks: hangs past the timeout, orphans, wrong rank names (all should be 0)"
MAX_RANKS = 4  # the campaign's faults need no more ranks; more only make each run slower


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=12, help="launches, each with one random fault")
    parser.add_argument("--worlds", type=ints, default=[2, 3, 4], help="comma-separated rank counts to draw from")
    parser.add_argument("--timeout", type=float, default=2.0, help="each launch's timeout, seconds")
    parser.add_argument("--seed", type=int, default=0, help="the seed of the faults, rank counts and victims drawn")


def check(args: argparse.Namespace) -> None:
    need_positive("--runs", args.runs)
    need_ranks("--worlds", args.worlds, 2, MAX_RANKS, "the campaign's faults need at most 4 ranks")
    need_positive("--timeout", args.timeout)


def run(args: argparse.Namespace) -> int:
    check(args)
    runs = faults.campaign(args.runs, tuple(args.worlds), args.timeout, args.seed)
    print(f"{len(runs)} launches with one fault each, timeout {args.timeout:g} s (+ {REPORT_MARGIN_S:g} s margin), "
          f"seed {args.seed}")
    per = Counter(r.fault for r in runs)
    rows = []
    for fault in faults.FAULTS:
        mine = [r for r in runs if r.fault == fault]
        if mine:
            rows.append([fault, per[fault], f"{max(r.seconds for r in mine):.1f}", sum(r.hung for r in mine),
                         sum(not r.named_right for r in mine), sum(r.orphans for r in mine),
                         sum(not r.next_launch_ok for r in mine), mine[0].summary[:70]])
    print(table(rows, ["fault", "runs", "longest s", "hung", "wrong name", "orphans", "next failed",
                       "first report"]))
    print()
    counts = {"launches past their timeout + margin": sum(r.hung for r in runs),
              "reports naming the wrong rank or none": sum(not r.named_right for r in runs),
              "processes left alive (ranks and their children)": sum(r.orphans for r in runs),
              "plain launches that failed right after a fault": sum(not r.next_launch_ok for r in runs)}
    for what, count in counts.items():
        print(Goal(what, "<=", 0).line(count, shown=f"{count} of {len(runs)} runs"))
    return 0
