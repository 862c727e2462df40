"""``d2lmp bench recompute``: recomputation's saved bytes and step time against their predictions.

It measures activation recomputation's saved bytes (predicted and measured) and its step time against the predicted
1 + F_r / (F + B) (the measurement: ``d2lmp.bench.recompute``)."""

from __future__ import annotations

import argparse

from d2lmp.bench import recompute
from d2lmp.commands.goal import Goal
from d2lmp.commands.options import need_positive
from d2lmp.report import table

__all__ = ["HELP", "RATIO_GOAL", "add_options", "check", "run"]

HELP = "activation recomputation: saved bytes and step time, measured vs predicted"
RATIO_GOAL = 0.1  # the largest |measured - predicted| step-time ratio (checkpointed / plain) over the models


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch", type=int, default=64, help="the small AlexNet's batch (the MLP's is 4 times it)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (median)")
    parser.add_argument("--min-time", type=float, default=0.2, help="seconds per timed measurement")


def check(args: argparse.Namespace) -> None:
    need_positive("--batch", args.batch)
    need_positive("--rounds", args.rounds)
    need_positive("--min-time", args.min_time)


def run(args: argparse.Namespace) -> int:
    check(args)
    rows = recompute.recompute_bench(batch=args.batch, rounds=args.rounds, min_time=args.min_time)
    kib = 2**10
    print(f"Activation recomputation, batch {args.batch} (MLP {4 * args.batch}): saved activations, KiB "
          "(predicted = measured?)")
    print(table([[r.name, r.sizes, f"{r.measured_bytes.plain / kib:,.0f}",
                  f"{r.measured_bytes.after_forward / kib:,.0f}", f"{r.measured_bytes.peak / kib:,.0f}",
                  "yes" if r.measured_bytes == r.predicted_bytes else "NO"] for r in rows],
                ["model", "layers per segment", "plain", "after forward", "peak in backward", "exact"]))
    print("\nStep time (forward + backward), median of rounds: checkpointed / plain vs 1 + F_r / (F + B)")
    print(table([[r.name, f"{t.plain_s * 1e3:.1f}", f"{t.checkpointed_s * 1e3:.1f}", f"{t.forward_s * 1e3:.1f}",
                  f"{t.recomputed_forward_s * 1e3:.1f}", f"{t.ratio:.3f}", f"{t.predicted:.3f}",
                  f"{t.one_extra_forward:.3f}"] for r in rows for t in (r.timing,)],
                ["model", "plain ms", "checkpointed ms", "F ms", "F_r ms", "ratio", "predicted", "1 + F/(F+B)"]))
    worst = max(abs(r.timing.ratio - r.timing.predicted) for r in rows)
    goal = Goal("|measured - predicted step ratio|, every model", "<=", RATIO_GOAL)
    print("\n" + goal.line(worst, shown=f"worst {worst:.3f}"))
    return 0
