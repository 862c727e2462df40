"""``d2lmp bench scale-bridge``: the cluster model against the small GPT's measured steps on CPU ranks.

It compares the cluster model at the small end, given a CPU preset calibrated in the same run, against the small
GPT's measured steps on CPU ranks: data, tensor, pipeline (1F1B) and data × tensor parallelism (the measurement:
``d2lmp.bench.scale_bridge``). Prints the calibration with each number's meaning, each strategy's predicted and
measured step and their ratio, both split into phases and the model's parts, and one goal line per strategy."""

from __future__ import annotations

import argparse

from d2lmp import config
from d2lmp.bench import scale_bridge
from d2lmp.commands.goal import Goal
from d2lmp.commands.options import need_positive
from d2lmp.gpt import preset
from d2lmp.model.cluster.cpu import MAPPING, PHASES, describe_calibration
from d2lmp.report import table

__all__ = ["HELP", "BRIDGE_GOAL", "add_options", "check", "run", "bridge_table", "phase_table"]

HELP = "the cluster model, calibrated here, against the small GPT's steps on CPU ranks (data, tensor, pipeline, hybrid)"
BRIDGE_GOAL = (0.75, 1.33)  # predicted / measured step, every strategy


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=config.pick("small", "tiny"), help="a d2lmp.gpt preset (untied)")
    parser.add_argument("--batch", type=int, default=4, help="sequences a step")
    parser.add_argument("--micro-batches", type=int, default=config.pick(4, 2), help="the pipeline's")
    parser.add_argument("--rounds", type=int, default=config.pick(7, 1), help="calibration and steps, alternating")
    parser.add_argument("--steps", type=int, default=1, help="timed steps of each strategy a round")
    parser.add_argument("--min-time", type=float, default=config.pick(0.1, 0.01),
                        help="seconds each calibration measurement runs at least")
    parser.add_argument("--hybrid", action=argparse.BooleanOptionalAction, default=True,
                        help="also the 2 x 2 data x tensor grid on 4 ranks")


def check(args: argparse.Namespace) -> None:
    need_positive("--batch", args.batch, minimum=2)
    need_positive("--micro-batches", args.micro_batches, minimum=2)
    need_positive("--rounds", args.rounds)
    need_positive("--steps", args.steps)
    need_positive("--min-time", args.min_time)
    if args.batch % 2 or args.batch % args.micro_batches:
        raise ValueError(f"--batch ({args.batch}) must split over 2 replicas and into --micro-batches "
                         f"({args.micro_batches})")
    preset(args.model)  # an unknown name is a ValueError before anything runs


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


def bridge_table(result: scale_bridge.BridgeResult) -> str:
    """Strategy, plan, the predicted (median calibration) and measured (median) step, their ratio, and each round's own
    ratio (its calibration against its steps)."""
    return table([[r.strategy, str(r.ranks), r.plan.describe(), _ms(r.predicted_s), _ms(r.measured_s),
                   f"{r.ratio:.2f}", " ".join(f"{x:.2f}" for x in r.round_ratios)] for r in result.runs],
                 ["strategy", "ranks", "plan", "predicted ms", "measured ms", "predicted / measured",
                  "each round's own"])


def phase_table(result: scale_bridge.BridgeResult) -> str:
    """Each strategy's phases, predicted (with the model's parts in it) against measured."""
    rows = []
    for r in result.runs:
        for phase, parts in PHASES.items():
            named = ", ".join(f"{p} {_ms(r.predicted_parts[p])}" for p in parts if r.predicted_parts[p] > 0)
            rows.append([r.strategy, phase, _ms(r.predicted_phases[phase]), _ms(r.measured_phases[phase]),
                         named or "-"])
    return table(rows, ["strategy", "phase", "predicted ms", "measured ms", "the model's parts (ms)"])


def run(args: argparse.Namespace) -> int:
    check(args)
    gpt = preset(args.model, tied=False)
    print(f"The small GPT ({args.model}: {gpt.layers} layers, hidden {gpt.hidden}, {gpt.heads} heads, sequence "
          f"{gpt.seq}, untied) on CPU ranks, {args.batch} sequences a step, AdamW in float32; d2lmp.scale's step "
          f"model on a CPU preset calibrated in the same run; {args.rounds} rounds of calibration and "
          f"{args.steps} step(s) of each strategy, alternating", flush=True)
    result = scale_bridge.scale_bridge_bench(gpt, args.batch, args.micro_batches, args.rounds, args.steps,
                                             args.min_time, args.hybrid)
    print("\nWhat stands in for each GPU figure on CPU ranks:")
    print(table([[gpu, cpu] for gpu, cpu in MAPPING.items()], ["the GPU model's", "the CPU preset's"]))
    for ranks, cal in result.calibrations.items():
        print(f"\nThe CPU preset, {ranks} ranks busy (each number's median over the rounds):")
        print(describe_calibration(cal))
    print(f"\nthis machine: {result.cores} usable cores; 1-minute load average {result.load[0]:.1f} before the run, "
          f"{result.load[1]:.1f} after (other processes share the cores: timings here only illustrate)")
    print("\n" + bridge_table(result))
    print("\n" + phase_table(result))
    print("(measured phases: medians over every step; from the first rank's start to the last rank's end of each)")
    if result.parts:
        print("\nParts measured alone, in the same rounds:")
        print(table([[r.name, r.strategy, " + ".join(r.model_parts), _ms(r.predicted_s), _ms(r.measured_s),
                      f"{r.ratio:.2f}"] for r in result.parts],
                    ["part", "of", "the model's parts", "predicted ms", "measured ms", "predicted / measured"]))
    print("\n" + "\n".join(Goal(f"predicted / measured step, {r.strategy} on {r.ranks} CPU ranks", "within",
                                BRIDGE_GOAL, "×").line(r.ratio) for r in result.runs))
    return 0
