"""``d2lmp bench zero``: ZeRO stages 0-3 against PyTorch's FSDP2, in memory and step time.

It measures ZeRO stages 0-3 (our ring collectives) against PyTorch's FSDP2, memory per rank and step time, and stage
3's step against FSDP2's (the measurement: ``d2lmp.bench.zero``)."""

from __future__ import annotations

import argparse

from d2lmp.bench import zero
from d2lmp.commands.goal import Goal
from d2lmp.commands.options import ints, need_positive, need_ranks
from d2lmp.model.costmodel import zero_memory
from d2lmp.report import table

__all__ = ["HELP", "STAGE3_GOAL", "add_options", "check", "run"]

HELP = "ZeRO stages 0-3 vs FSDP2: memory per rank and step time"
STAGE3_GOAL = 1.3  # our stage 3 (Python ring collectives) step / FSDP2's step


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--world", type=int, default=2, help="ranks the states are sharded over")
    parser.add_argument("--sizes", type=ints, default=list(zero.DEFAULT_SIZES),
                        help="MLP layer widths, comma-separated")
    parser.add_argument("--batch", type=int, default=64, help="global batch (split over the ranks)")
    parser.add_argument("--steps", type=int, default=5, help="steps per round (the first is a warm-up)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each configuration timed once a round")


def check(args: argparse.Namespace) -> None:
    need_ranks("--world", args.world, 2)  # one rank shards nothing
    need_positive("--sizes", args.sizes)
    if len(args.sizes) < 2:
        raise ValueError(f"--sizes needs at least an input and an output width, got {args.sizes}")
    need_positive("--batch", args.batch, minimum=args.world)  # every rank needs an example
    need_positive("--steps", args.steps, minimum=2)  # the first is a warm-up
    need_positive("--rounds", args.rounds)


def run(args: argparse.Namespace) -> int:
    check(args)
    sizes = tuple(args.sizes)
    params = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
    print(f"ZeRO stages 0-3 (our ring collectives) vs PyTorch FSDP2 on {args.world} CPU ranks: MLP {sizes} "
          f"({params / 1e6:.1f} M parameters), float32 Adam, batch {args.batch}; memory kept per rank, "
          f"median step of the slowest rank ({args.rounds} rounds of {args.steps} steps, the first a warm-up)",
          flush=True)
    rows = zero.zero_bench(args.world, sizes, args.batch, args.steps, args.rounds, progress=True)
    step = {r.config: r.step_s for r in rows}
    mb = 1e6
    lines = []
    for r in rows:
        stage = 3 if r.config == "FSDP2" else int(r.config[-1])
        formula = sum(zero_memory(params, args.world, stage, "adam").values())
        held = (r.held.parameters, r.held.gradients, r.held.optimizer_state)
        lines.append([r.config, *(f"{b / mb:.2f}" for b in held),
                      f"{r.held.total / mb:.2f}", f"{formula / mb:.2f}", f"{r.step_s * 1e3:.1f}",
                      f"{r.step_s / step['FSDP2']:.2f}"])
    print(table(lines, ["config", "params MB", "grads MB", "Adam MB", "total MB", "zero_memory MB", "step ms",
                        "ratio to FSDP2"]))
    print("\n" + Goal("stage 3 step / FSDP2 step", "<=", STAGE3_GOAL, "×").line(step["stage 3"] / step["FSDP2"]))
    return 0
