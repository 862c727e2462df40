"""``d2lmp bench dp``: each data-parallel version's step time against ``DistributedDataParallel``.

It measures the step time of each data-parallel version against ``DistributedDataParallel``, and the bucketed
version's ratio to DDP against its goal (the measurement: ``d2lmp.bench.data_parallel``)."""

from __future__ import annotations

import argparse

from d2lmp.bench import data_parallel
from d2lmp.commands.goal import Goal
from d2lmp.commands.options import need_positive, need_ranks
from d2lmp.parallel.launch import choose_backend
from d2lmp.report import table

__all__ = ["HELP", "BUCKETED_GOAL", "add_options", "check", "run"]

HELP = "data-parallel step time of each version vs DistributedDataParallel"
BUCKETED_GOAL = 1.15  # our bucketed, overlapping version's step / DDP's step


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--world", type=int, default=2, help="data-parallel ranks")
    parser.add_argument("--batch", type=int, default=64, help="global batch (split over the ranks)")
    parser.add_argument("--steps", type=int, default=6, help="steps per round (the first two are warm-up)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each version timed once a round (median)")
    parser.add_argument("--bucket-mb", type=float, default=4.0, help="gradient bucket size in MiB")


def check(args: argparse.Namespace) -> None:
    need_positive("--world", args.world)
    need_ranks("--world", args.world, 1)
    need_positive("--batch", args.batch, minimum=args.world)  # every rank needs an example
    need_positive("--steps", args.steps, minimum=3)  # the first two steps are warm-up
    need_positive("--rounds", args.rounds)
    need_positive("--bucket-mb", args.bucket_mb)
    if int(args.bucket_mb * 2**20) < 1:
        raise ValueError(f"--bucket-mb must hold at least one byte (>= {2**-20:.3g} MiB), got {args.bucket_mb:g}")


def run(args: argparse.Namespace) -> int:
    check(args)
    spec = data_parallel.dp_bench_spec()
    params = sum(a * b + b for a, b in zip(spec.sizes[:-1], spec.sizes[1:]))
    print(f"Data-parallel step time on {args.world} ranks ({choose_backend(args.world)[1]}): MLP {spec.sizes} "
          f"({params / 1e6:.1f} M parameters), global batch {args.batch}, buckets of {args.bucket_mb} MiB; "
          "median of the slowest rank")
    rows = data_parallel.dp_bench(args.world, args.batch, args.steps, args.rounds, int(args.bucket_mb * 2**20))
    step = {r.version: r.step_s for r in rows}
    print(table([[r.version, f"{r.step_s * 1e3:.1f}", f"{r.step_s / step['ddp']:.2f}"] for r in rows],
                ["version", "step ms", "ratio to DDP"]))
    print(f"\noverlap saves {1 - step['bucketed'] / step['bucketed-no-overlap']:.0%} of the no-overlap step")
    print(Goal("bucketed step / DDP step", "<=", BUCKETED_GOAL, "×").line(step["bucketed"] / step["ddp"]))
    return 0
