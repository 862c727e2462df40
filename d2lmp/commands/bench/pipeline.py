"""``d2lmp bench pipeline``: balanced against equal partitions, and measured against theoretical bubbles.

It compares balanced against equal-layer partitions of a half-width AlexNet, the measured bubble against
(p-1)/(m+p-1), and interleaved 1F1B's bubble and messages against 1F1B's (the measurement:
``d2lmp.bench.pipeline``)."""

from __future__ import annotations

import argparse

from d2lmp.bench import pipeline
from d2lmp.commands.goal import Goal
from d2lmp.commands.options import ints, need_positive, need_ranks
from d2lmp.report import table

__all__ = ["HELP", "BUBBLE_GOAL", "MAX_STAGES", "add_options", "check", "run"]

HELP = "balanced vs equal partitions; measured vs theoretical bubble"
BUBBLE_GOAL = 0.1  # the largest |measured - theoretical| bubble fraction over the micro-batch counts
MAX_STAGES = 23  # the layers of models.pipeline_model (the half-width AlexNet): a stage holds at least one


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--worlds", type=ints, default=[2, 4], help="pipeline stages (ranks), comma-separated")
    parser.add_argument("--micro-batches", type=ints, default=[1, 2, 4, 8],
                        help="micro-batch counts of the bubble measurement, comma-separated")
    parser.add_argument("--batch", type=int, default=128, help="examples per step (micro-batches of batch/m)")
    parser.add_argument("--steps", type=int, default=4, help="steps per configuration; the first is a warm-up")
    parser.add_argument("--profile-time", type=float, default=pipeline.PROFILE_TIME,
                        help="seconds each layer is timed for, per profiling round, to balance the partitions")


def check(args: argparse.Namespace) -> None:
    need_positive("--worlds", args.worlds)
    need_ranks("--worlds", args.worlds, 1, MAX_STAGES, f"a stage holds at least one of the model's {MAX_STAGES} "
               "layers")
    need_positive("--micro-batches", args.micro_batches)
    need_positive("--batch", args.batch, minimum=max(4, *args.micro_batches))  # a micro-batch holds an example
    need_positive("--steps", args.steps, minimum=2)  # the first is a warm-up
    need_positive("--profile-time", args.profile_time)


def run(args: argparse.Namespace) -> int:
    check(args)
    result = pipeline.pipeline_bench(args.worlds, args.micro_batches, batch=args.batch, steps=args.steps,
                                    profile_time=args.profile_time)
    print("Pipeline (GPipe, 4 micro-batches) of a half-width AlexNet: equal-layer vs balanced partition")
    lines = []
    for world in args.worlds:
        equal = next(r for r in result.partitions if r.world == world and r.partition == "equal layers")
        balanced = next(r for r in result.partitions if r.world == world and r.partition == "balanced")
        for r in (equal, balanced):
            lines.append([world, r.partition, r.sizes, f"{r.step_s * 1e3:.1f}", f"{r.step_s / equal.step_s:.2f}"])
    print(table(lines, ["stages", "partition", "layers per stage", "step ms", "ratio to equal"]))
    print(f"\nBubble on 2 stages, GPipe, batch {args.batch}, each partition balanced at its micro-batch size: "
          "measured vs (p-1)/(m+p-1)")
    print(table([[b.micro_batches, b.sizes, f"{b.theory:.3f}", f"{b.measured:.3f}", f"{b.measured - b.theory:+.3f}"]
                 for b in result.bubbles], ["micro-batches", "layers per stage", "theory", "measured", "difference"]))
    worst = max(abs(b.measured - b.theory) for b in result.bubbles)
    goal = Goal("|measured - theoretical bubble|, every micro-batch count", "<=", BUBBLE_GOAL)
    print("\n" + goal.line(worst, shown=f"worst {worst:.3f}"))
    if result.interleaved:
        _print_interleaved(result.interleaved, args.batch)
    return 0


def _print_interleaved(rows: list[pipeline.InterleavedBubble], batch: int) -> None:
    """1F1B against interleaved 1F1B: the bubble (idle over busy time) against (p-1)/(v·m), the messages counted."""
    chunks = max(r.chunks for r in rows)
    print(f"\nInterleaved 1F1B on 2 stages, {chunks} chunks per rank, batch {batch}: bubble (idle over busy time) "
          "measured vs (p-1)/(v·m); point-to-point messages per step, counted")
    print(table([[r.kind, r.micro_batches, r.chunks, list(r.sizes), f"{r.theory:.3f}", f"{r.measured:.3f}",
                  r.messages, f"{r.step_s * 1e3:.1f}"] for r in rows],
                ["schedule", "micro-batches", "chunks", "layers per stage", "theory", "measured", "messages",
                 "step ms"]))
    for m in sorted({r.micro_batches for r in rows}):
        plain = next(r for r in rows if r.micro_batches == m and r.kind == "1f1b")
        inter = next(r for r in rows if r.micro_batches == m and r.kind == "interleaved")
        p, v = plain.world, inter.chunks
        print(f"m = {m}: messages interleaved / 1F1B {inter.messages / plain.messages:.2f} "
              f"(2m(pv-1) / 2m(p-1) = {(p * v - 1) / (p - 1):.2f})")
