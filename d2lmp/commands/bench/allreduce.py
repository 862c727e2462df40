"""``d2lmp bench allreduce``: our ring all-reduce against the backend's, in bus bandwidth, with its goal.

It measures our ring all-reduce against the backend's own in bus bandwidth, on 2 and 4 ranks, and the least
ring/backend ratio over a size range against its goal (the measurement: ``d2lmp.bench.allreduce``)."""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from d2lmp.bench import allreduce
from d2lmp.bench.allreduce import ALLREDUCE_SIZES, KIB, AllReduceTiming, size_label
from d2lmp.commands.goal import Goal
from d2lmp.commands.options import ints, need_positive, need_ranks
from d2lmp.report import table

__all__ = ["HELP", "GOAL_SIZES", "ALLREDUCE_GOALS", "MIN_RANKS", "add_options", "check", "run", "goal_lines"]

HELP = "our ring all-reduce vs torch.distributed's, busbw ratios"
GOAL_SIZES = (64 * KIB, 64 * KIB**2)  # the goals hold from 64 KiB to 64 MiB, both included
ALLREDUCE_GOALS = {2: 0.9, 4: 0.8}  # ranks -> the least ring/backend bus-bandwidth ratio over GOAL_SIZES
MIN_RANKS = 2  # one rank has no ring: its bus bandwidth factor 2(n-1)/n is 0


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--worlds", type=ints, default=[2, 4], help="comma-separated rank counts")
    parser.add_argument("--sizes", type=ints, default=list(ALLREDUCE_SIZES), help="bytes, comma-separated")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per size (median)")
    parser.add_argument("--min-time", type=float, default=0.1, help="seconds per timed repeat")


def check(args: argparse.Namespace) -> None:
    need_positive("--worlds", args.worlds)
    need_ranks("--worlds", args.worlds, MIN_RANKS)
    need_positive("--sizes", args.sizes)
    need_positive("--rounds", args.rounds)
    need_positive("--min-time", args.min_time)
    for size in args.sizes:  # float32 elements, at least one per rank
        if size % 4 or size < 4 * max(args.worlds):
            raise ValueError(f"--sizes: {size} B is not a multiple of 4 B (float32) of at least 4 B per rank "
                             f"(>= {4 * max(args.worlds)} B for {max(args.worlds)} ranks)")


def goal_lines(rows: Iterable[AllReduceTiming]) -> list[str]:
    """One goal line per world size of ``ALLREDUCE_GOALS`` that the rows measured: the worst ring/backend busbw
    ratio within ``GOAL_SIZES`` and the size where it occurs.

    Sizes of ``ALLREDUCE_SIZES`` in range that the run skipped are named, since the verdict then covers only
    part of the range; a world with no measured size in range misses, and its line says so.
    """
    rows = list(rows)
    low, high = GOAL_SIZES
    lines = []
    for world, least in ALLREDUCE_GOALS.items():
        ran = [r for r in rows if r.world == world]
        if not ran:
            continue  # this world size did not run
        goal = Goal(f"ring/{ran[0].backend} busbw from {size_label(low)} to {size_label(high)} on {world} ranks",
                    ">=", least, "×")
        ratios = {s: ratio for s, ratio in allreduce.busbw_ratios(ran, world).items() if low <= s <= high}
        lines.append(goal.worst_line(ratios, [s for s in ALLREDUCE_SIZES if low <= s <= high], size_label))
    return lines


def run(args: argparse.Namespace) -> int:
    check(args)
    rows = allreduce.allreduce_bench(args.worlds, args.sizes, rounds=args.rounds, min_time=args.min_time)
    backends = {world: next(r.backend for r in rows if r.world == world) for world in args.worlds}
    # Name the backend that actually ran (gloo on CPU ranks, NCCL with a GPU per rank); if the world
    # sizes ran on different backends, a column says which.
    name = next(iter(backends.values())) if len(set(backends.values())) == 1 else "torch"
    print("All-reduce bus bandwidth (nccl-tests convention), our ring vs torch.distributed's own on "
          + ", ".join(f"{w} ranks: {b}" for w, b in backends.items()) + "; medians:")
    lines = []
    for world in args.worlds:
        for size in args.sizes:
            theirs = next(r for r in rows if r.world == world and r.impl == "torch" and r.size_bytes == size)
            ours = next(r for r in rows if r.world == world and r.impl == "ring" and r.size_bytes == size)
            lines.append([world, backends[world], size_label(size), f"{theirs.seconds * 1e3:.3f}",
                          f"{theirs.busbw_gbs:.3f}", f"{ours.seconds * 1e3:.3f}", f"{ours.busbw_gbs:.3f}",
                          f"{ours.busbw_gbs / theirs.busbw_gbs:.2f}"])
    print(table(lines, ["ranks", "backend", "size", f"{name} ms", f"{name} busbw GB/s", "ring ms", "ring busbw GB/s",
                        f"ring / {name}"]))
    goals = goal_lines(rows)
    if goals:
        print("\n" + "\n".join(goals))
    return 0
