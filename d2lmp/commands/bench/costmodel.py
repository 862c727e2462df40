"""``d2lmp bench costmodel``: the cost model's predicted steps against steps measured on 2 CPU ranks.

It compares the cost model, calibrated here, against data, pipeline and tensor parallelism measured on 2 CPU ranks
(the measurement: ``d2lmp.bench.costmodel``)."""

from __future__ import annotations

import argparse

from d2lmp.bench import costmodel
from d2lmp.commands.goal import Goal
from d2lmp.commands.options import need_positive
from d2lmp.report import table

__all__ = ["HELP", "PREDICTION_GOAL", "add_options", "check", "run"]

HELP = "predicted vs measured step time of each strategy on CPU ranks"
PREDICTION_GOAL = (0.75, 1.33)  # predicted / measured step, every strategy


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch", type=int, default=256, help="examples per step (4 micro-batches in the pipeline)")
    parser.add_argument("--steps", type=int, default=6, help="measured steps per strategy (the first is a warm-up)")
    parser.add_argument("--calibrate-time", type=float, default=costmodel.CALIBRATE_TIME,
                        help="seconds each rank times the full-batch step for, to calibrate the FLOP rate")


def check(args: argparse.Namespace) -> None:
    need_positive("--batch", args.batch, minimum=4)  # the pipeline runs 4 micro-batches
    need_positive("--steps", args.steps, minimum=2)  # the first is a warm-up
    need_positive("--calibrate-time", args.calibrate_time)


def run(args: argparse.Namespace) -> int:
    check(args)
    rows = costmodel.costmodel_bench(batch=args.batch, steps=args.steps, calibrate_time=args.calibrate_time)
    print("Cost model calibrated here (one-rank FLOP/s, fitted all-reduce α and β) vs measured steps on 2 CPU ranks")
    print(table([[r.strategy, f"{r.compute_s * 1e3:.1f}", f"{r.comm_s * 1e3:.1f}", f"{r.bubble_s * 1e3:.1f}",
                  f"{r.predicted_s * 1e3:.1f}", f"{r.measured_s * 1e3:.1f}", f"{r.ratio:.2f}"] for r in rows],
                ["strategy", "compute ms", "comm ms", "bubble ms", "predicted ms", "measured ms",
                 "predicted / measured"]))
    print("\n" + "\n".join(Goal(f"predicted / measured step, {r.strategy}", "within", PREDICTION_GOAL, "×")
                           .line(r.ratio) for r in rows))
    return 0
