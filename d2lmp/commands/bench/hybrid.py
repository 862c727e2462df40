"""``d2lmp bench hybrid``: a 2 × 2 data × tensor grid's measured step against the cost model's.

It measures a 2 × 2 data × tensor grid of CPU ranks, the cost model's predicted step against the measured one, part
by part (the measurement: ``d2lmp.bench.hybrid``)."""

from __future__ import annotations

import argparse

from d2lmp.bench import hybrid
from d2lmp.commands.goal import Goal
from d2lmp.commands.options import need_positive

__all__ = ["HELP", "PREDICTION_GOAL", "add_options", "check", "run"]

HELP = "a 2 x 2 data x tensor grid: predicted vs measured step"
PREDICTION_GOAL = (0.75, 1.33)  # predicted / measured step


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch", type=int, default=128, help="global batch (split over the 2 data-parallel replicas)")
    parser.add_argument("--steps", type=int, default=6, help="steps per round (the first is a warm-up)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of calibration alternating with steps")


def check(args: argparse.Namespace) -> None:
    need_positive("--batch", args.batch, minimum=2)  # each of the 2 replicas needs an example
    need_positive("--steps", args.steps, minimum=2)  # the first is a warm-up
    need_positive("--rounds", args.rounds, minimum=1)


def run(args: argparse.Namespace) -> int:
    check(args)
    print(f"Data x tensor hybrid on a 2 x 2 grid of CPU ranks: MLP {hybrid.HYBRID_SPEC.sizes}, batch {args.batch}; "
          "cost model calibrated here (a rank's share of the FLOPs, α and β fitted inside the 2-rank groups), "
          f"in {args.rounds} rounds alternating with {args.steps} measured steps each", flush=True)
    r = hybrid.hybrid_bench(batch=args.batch, steps=args.steps, rounds=args.rounds)
    print(f"calibration: {r.flops / 1e9:.2f} GFLOP/s per rank, α {r.alpha * 1e6:.1f} µs, "
          f"1/β {1 / r.beta / 1e9:.2f} GB/s")
    print()
    print(hybrid.hybrid_table(r))
    print("(measured parts are medians over steps, so they need not add up to the median step)")
    print("\n" + Goal("hybrid predicted / measured step", "within", PREDICTION_GOAL, "×").line(r.ratio))
    return 0
