"""``d2lmp bench all-to-all``: our all-to-all against the backend's, in bus bandwidth, with its goal.

It measures our all-to-all built from send/recv against the backend's own (``dist.all_to_all_single``) in bus
bandwidth, and the least ours/backend ratio over a size range against its goal (the measurement:
``d2lmp.bench.all_to_all``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from d2lmp.bench import all_to_all as a2a
from d2lmp.bench.allreduce import KIB, size_label
from d2lmp.commands.goal import Goal
from d2lmp.commands.options import ints, need_positive, need_ranks
from d2lmp.report import table

__all__ = ["HELP", "GOAL_SIZES", "A2A_GOALS", "MIN_RANKS", "add_options", "check", "goal_lines", "run"]

HELP = "our all-to-all (send/recv) vs torch.distributed's, busbw ratios"
GOAL_SIZES = (64 * KIB, 16 * KIB**2)  # the goal holds from 64 KiB to 16 MiB, both included
A2A_GOALS = {2: 0.8}  # ranks -> the least ours/backend bus-bandwidth ratio over GOAL_SIZES
MIN_RANKS = 2  # one rank exchanges nothing


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--worlds", type=ints, default=[2, 4], help="comma-separated rank counts")
    parser.add_argument("--sizes", type=ints, default=list(a2a.A2A_SIZES), help="bytes, comma-separated")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per size (median)")
    parser.add_argument("--min-time", type=float, default=0.1, help="seconds per timed repeat")


def check(args: argparse.Namespace) -> None:
    need_ranks("--worlds", args.worlds, MIN_RANKS)
    need_positive("--sizes", args.sizes)
    for size in args.sizes:  # float32 elements, at least one per rank
        if size < 4 * max(args.worlds):
            raise ValueError(f"--sizes: {size} B is less than one float32 per rank (>= {4 * max(args.worlds)} B for "
                             f"{max(args.worlds)} ranks)")
    need_positive("--rounds", args.rounds)
    need_positive("--min-time", args.min_time)


def goal_lines(rows: Sequence[a2a.AllToAllTiming]) -> list[str]:
    """One line per world size of ``A2A_GOALS`` that ran: the worst ours/backend ratio within ``GOAL_SIZES``,
    where it occurs; sizes of ``A2A_SIZES`` in range that the run skipped are named."""
    low, high = GOAL_SIZES
    lines = []
    for world, least in A2A_GOALS.items():
        ran = [r for r in rows if r.world == world]
        if not ran:
            continue  # this world size did not run
        goal = Goal(f"ours/{ran[0].backend} all-to-all busbw from {size_label(low)} to {size_label(high)} on "
                    f"{world} ranks", ">=", least, "×")
        ratios = {q.size_bytes: q.ratio for q in a2a.all_to_all_ratios(ran, a2a.A2A_PAIRS[:1])
                  if low <= q.size_bytes <= high}
        lines.append(goal.worst_line(ratios, [s for s in a2a.A2A_SIZES if low <= s <= high], size_label))
    return lines


def run(args: argparse.Namespace) -> int:
    check(args)
    rows = a2a.all_to_all_bench(args.worlds, args.sizes, rounds=args.rounds, min_time=args.min_time)
    backends = {world: next(r.backend for r in rows if r.world == world) for world in args.worlds}
    print("All-to-all bus bandwidth (nccl-tests convention, (n-1)/n), ours (send/recv, pairwise) vs "
          "torch.distributed's all_to_all_single on " + ", ".join(f"{w} ranks: {b}" for w, b in backends.items())
          + "; '+sizes': the sizes exchanged first, as a mixture-of-experts layer must; medians:")
    found = {(r.impl, r.world, r.size_bytes): r for r in rows}
    ratios = {(q.ours, q.world, q.size_bytes): q.ratio for q in a2a.all_to_all_ratios(rows)}
    lines = []
    for world in args.worlds:
        for size in args.sizes:
            theirs, ours = found[("torch", world, size)], found[("pairwise", world, size)]
            sized = found[("pairwise+sizes", world, size)]
            lines.append([world, size_label(size), f"{theirs.seconds * 1e3:.3f}", f"{theirs.busbw_gbs:.3f}",
                          f"{ours.seconds * 1e3:.3f}", f"{ours.busbw_gbs:.3f}",
                          f"{ratios[('pairwise', world, size)]:.2f}", f"{sized.seconds * 1e3:.3f}",
                          f"{ratios[('pairwise+sizes', world, size)]:.2f}"])
    print(table(lines, ["ranks", "size", "torch ms", "torch busbw GB/s", "ours ms", "ours busbw GB/s",
                        "ours / torch", "ours+sizes ms", "+sizes ratio"]))
    print("\n" + "\n".join(goal_lines(rows)))
    return 0
