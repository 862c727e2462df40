"""torchrun entry point: every parallel strategy, run on real ranks, against the one-device reference.

    python -m torch.distributed.run --standalone --nproc-per-node 2 -m d2lmp.commands.demo zero
    python -m torch.distributed.run --standalone --nproc-per-node 4 -m d2lmp.commands.demo all
    python -m torch.distributed.run --max-restarts 1 --standalone --nproc-per-node 2 -m d2lmp.commands.demo \
        resilient --steps 8 --checkpoint-every 2 --kill-rank 1 --kill-step 5 --dir /tmp/run

``STRATEGIES`` maps each name to its rank check (from ``checks.ranks``), the largest error that still
matches, the world sizes it can use and one line saying what it proves. Rank 0 prints every check's
error; a rank that finds a mismatch names itself, the check, the error and the tolerance on stderr and
the command exits 1, so torchrun (and a shell script or CI job around it) reports a failure. An unknown
strategy, or a world size a strategy cannot use, is one line on stderr from every rank and exit status 2,
before any rank joins the group: every rank says it, since torchrun stops the others as soon as one exits,
and writes it to torchrun's error file, so the failure summary torchrun prints last repeats it beside the
rank's exit status 2. torchrun itself exits 1 (the launcher's own status, which no rank can set).
``resilient`` is the one strategy with options of its own (``commands.resilient``): a run that loses a
rank, restarts from its checkpoint and ends equal to an uninterrupted run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from d2lmp.checks.experts import check_all_to_all, check_expert_parallel
from d2lmp.checks.gpt_parallel import TOLERANCE as GPT_TOLERANCE
from d2lmp.checks.gpt_parallel import check_3d, check_gpt_tensor
from d2lmp.checks.ranks import (
    check_collectives,
    check_context_parallel,
    check_data_parallel,
    check_hybrid,
    check_interleaved_pipeline,
    check_pipeline,
    check_tensor_parallel,
    check_zero,
)
from d2lmp.commands.options import OneLineParser
from d2lmp.model.vocabulary import GRID, Axis, demo_name
from d2lmp.parallel.launch import exit_after_torchrun, loopback_on_one_machine, run_from_env

__all__ = ["PROG", "Strategy", "STRATEGIES", "select", "run_checks", "report", "tell_torchrun", "main"]

PROG = "d2lmp.commands.demo"

# What a rank check returns: check name -> its max |difference| from the reference, or, for an exact
# comparison, whether the two are equal.
Errors = Mapping[str, float | bool]


@dataclass(frozen=True)
class Strategy:
    """A strategy the entry point can run: its rank check, its tolerance, the world sizes it can use."""

    check: Callable[[int, int], Errors]
    tolerance: float  # the largest error that matches; a check that returns booleans compares exactly
    description: str
    min_world: int = 1
    max_world: int | None = None
    even_world: bool = False
    multiple_of: int = 1

    @property
    def worlds(self) -> str:
        """The world sizes it can use, in words: "any number of ranks", "at least 4 ranks, an even number"."""
        bounds = ([f"at least {self.min_world}"] if self.min_world > 1 else []) + \
            ([f"at most {self.max_world}"] if self.max_world is not None else [])
        text = f"{' and '.join(bounds)} ranks" if bounds else "any number of ranks"
        return (text + (", an even number" if self.even_world else "")
                + (f", a multiple of {self.multiple_of}" if self.multiple_of > 1 else ""))

    def world_problem(self, world: int) -> str | None:
        """Why this strategy cannot run on ``world`` ranks, or None if it can."""
        too_many = self.max_world is not None and world > self.max_world
        if world < self.min_world or too_many or (self.even_world and world % 2) or world % self.multiple_of:
            return f"needs {self.worlds}"
        return None


# One line per strategy: name -> its check, tolerance, description and world sizes. Each name is one of the
# vocabulary's (``model.vocabulary.demo_name``): an axis, a variant of one, a grid of axes or a check of collectives.
STRATEGIES: dict[str, Strategy] = {
    demo_name(Axis.DATA): Strategy(
        check_data_parallel, 1e-5, "every data-parallel version gives the single-process gradients",
        max_world=23),  # the check's batch of 23 gives each rank an example
    demo_name("collectives"): Strategy(
        check_collectives, 0.0, "our all-reduce, reduce-scatter and all-gather equal torch.distributed's"),
    demo_name(Axis.PIPELINE): Strategy(
        check_pipeline, 1e-5, "naive, GPipe and 1F1B give the unsplit model's gradients and outputs",
        max_world=7),  # a stage per rank of the check's 7 layers
    demo_name("interleaved"): Strategy(
        check_interleaved_pipeline, 1e-5, "interleaved 1F1B (2 chunks per rank) gives the unsplit model's gradients "
        "and outputs", min_world=2, max_world=5),  # 11 layers in 2 x world chunks
    demo_name(Axis.CONTEXT): Strategy(
        check_context_parallel, 1e-5, "ring attention (plain and balanced layouts) equals attention on the whole "
        "sequence, forward and backward"),
    demo_name("all-to-all"): Strategy(
        check_all_to_all, 1e-5, "our all-to-all (send/recv) equals torch.distributed's and the exchange written out, "
        "even and uneven blocks"),
    demo_name(Axis.EXPERT): Strategy(
        check_expert_parallel, 1e-5, "the expert-parallel mixture of experts routes, drops and computes as the "
        "one-device layer, gradients included"),
    demo_name(Axis.TENSOR): Strategy(
        check_tensor_parallel, 1e-5, "column- and row-split linear layers give the full layer's outputs"),
    demo_name("zero"): Strategy(check_zero, 1e-5, "ZeRO stages 0-3 train to one device's Adam parameters"),
    demo_name("gpt-tensor"): Strategy(
        check_gpt_tensor, GPT_TOLERANCE, "Megatron's tensor-parallel GPT block, with and without sequence "
        "parallelism, and the whole GPT give one device's outputs and gradients", min_world=2, max_world=4),
    demo_name("3d"): Strategy(
        check_3d, GPT_TOLERANCE, "data x pipeline x tensor (a world/4 x 2 x 2 grid) trains the small GPT to one "
        "device's loss, gradients and parameters", min_world=4, multiple_of=4),
    demo_name(GRID): Strategy(
        check_hybrid, 1e-5, "a data x tensor grid of process groups trains to one device's parameters",
        min_world=4, even_world=True),  # 2-rank tensor groups, at least 2 of them
}


def select(names: Sequence[str], world: int) -> list[str]:
    """The strategies to run (``all``: every one), checked against ``world``; ValueError says what is wrong."""
    chosen = list(STRATEGIES) if "all" in names else list(dict.fromkeys(names))
    unknown = [n for n in chosen if n not in STRATEGIES]
    if unknown:
        raise ValueError(f"unknown strategy {', '.join(map(repr, unknown))}; available: "
                         f"{', '.join(STRATEGIES)} (or all)")
    problems = [f"{n} {p}" for n in chosen if (p := STRATEGIES[n].world_problem(world))]
    if problems:
        raise ValueError(f"cannot run on {world} rank{'s' if world != 1 else ''}: {'; '.join(problems)}")
    return chosen


def run_checks(rank: int, world: int, names: Sequence[str]) -> dict[str, Errors]:
    """On one rank: every chosen strategy's check, in order (every rank runs the same ones)."""
    return {name: STRATEGIES[name].check(rank, world) for name in names}


def _judge(error: float | bool, tolerance: float) -> tuple[str, bool]:
    """(how the error reads, whether it matches)."""
    if isinstance(error, bool):
        return ("exact comparison: " + ("equal" if error else "DIFFERENT")), error
    return f"max |difference| {error:.2e} (tolerance {tolerance:g})", error <= tolerance  # NaN never matches


def report(rank: int, world: int, results: Mapping[str, Errors]) -> int:
    """The verdict of one rank: rank 0 prints every check; a rank with a mismatch says which on stderr.

    Returns the exit status: 0 when every check of this rank matches, 1 otherwise.
    """
    bad = []
    for name, errors in results.items():
        strategy = STRATEGIES[name]
        if rank == 0:
            print(f"{name} on {world} ranks: {strategy.description}")
        for check, error in errors.items():
            shown, ok = _judge(error, strategy.tolerance)
            if rank == 0:
                print(f"  {check:<34} {shown}  matches: {ok}")
            if not ok:
                bad.append(f"{name}: {check}, {shown}")
    sys.stdout.flush()
    if bad:
        print(f"{PROG}: MISMATCH on rank {rank} of {world}: " + "; ".join(bad), file=sys.stderr)
        return 1
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=PROG, usage=f"python -m torch.distributed.run --nproc-per-node N -m {PROG} STRATEGY [STRATEGY ...]",
        description="Run parallel strategies on torchrun's ranks and compare each with one device.",
        epilog="strategies:\n" + "\n".join(f"  {n:<12} {s.description} ({s.worlds})" for n, s in STRATEGIES.items())
        + f"\n  {'resilient':<12} a run that loses a rank and restarts equal to an uninterrupted one "
          f"(its options: -m {PROG} resilient --help)",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("strategies", nargs="+", metavar="STRATEGY", help=f"{', '.join(STRATEGIES)}, or all")
    return parser


def tell_torchrun(message: str, env: Mapping[str, str]) -> None:
    """Write ``message`` to this rank's torchrun error file (``TORCHELASTIC_ERROR_FILE``, in the format of
    ``torch.distributed.elastic``'s ``record``), so torchrun's failure summary shows it; nothing outside torchrun."""
    path = env.get("TORCHELASTIC_ERROR_FILE")
    if path:
        data = {"message": {"message": message,
                            "extraInfo": {"py_callstack": message, "timestamp": str(int(time.time()))}}}
        with open(path, "w") as f:
            json.dump(data, f)


def main(argv: list[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Run the strategies named in ``argv`` on this rank; return the exit status (0, 1: a mismatch, 2: bad input)."""
    if env is None:  # a real run: on one machine the ranks' sockets stay on loopback, resilient's too
        loopback_on_one_machine(os.environ)
    env = os.environ if env is None else env
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["resilient"]:  # its own options: --steps, --checkpoint-every, --kill-rank, --kill-step, --dir
        from d2lmp.commands import resilient  # here: torch.distributed.checkpoint costs every other run a second

        return resilient.main(argv[1:])
    args = _parser().parse_args(argv)
    try:
        if "RANK" not in env or "WORLD_SIZE" not in env:
            raise ValueError("run this under torchrun, which sets RANK and WORLD_SIZE: python -m "
                             f"torch.distributed.run --standalone --nproc-per-node 2 -m {PROG} STRATEGY")
        names = select(args.strategies, int(env["WORLD_SIZE"]))
    except ValueError as exc:  # every rank says why: torchrun stops the others as soon as one exits
        print(f"{PROG}: {exc}", file=sys.stderr, flush=True)
        tell_torchrun(f"{PROG}: {exc}", env)
        return 2
    rank, world, results = run_from_env(run_checks, names)
    return report(rank, world, results)


if __name__ == "__main__":
    exit_after_torchrun(main())
