"""torchrun entry point: a training run that loses a rank, restarts, and ends exactly where an uninterrupted run ends.

    python -m torch.distributed.run --max-restarts 1 --standalone --nproc-per-node 2 \\
        -m d2lmp.commands.resilient --steps 8 --checkpoint-every 2 --kill-rank 1 --kill-step 5 --dir /tmp/run

Every rank trains (``parallel.resilient.train``), saving a checkpoint into ``--dir`` every K steps; in the
first attempt rank R kills itself with SIGKILL at step S (``--kill-during save``: while that step's
checkpoint is being written). torchrun then stops the other ranks and starts them all again
(``TORCHELASTIC_RESTART_COUNT`` counts the attempts); they resume from the newest complete checkpoint and
finish (a checkpoint saved under other settings, ``--seed`` say, is refused unless ``--allow-other-config``).
The same processes then train an uninterrupted run from scratch and compare: rank 0 prints the steps
recomputed per restart, the restarts torchrun made (``TORCHELASTIC_RESTART_COUNT``, whatever killed the
rank) and, as its last line, the largest difference between the two, which must be 0;
every rank exits with status 1 otherwise. Bad arguments are one line on stderr and status 2, before any
rank joins the group. ``kill -USR1 <pid>`` prints a rank's Python stack on stderr at any time.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import signal
import sys
from collections.abc import Sequence
from datetime import timedelta

import torch
import torch.distributed as dist

from d2lmp.parallel import resilient as RS
from d2lmp.parallel.launch import exit_after_torchrun

__all__ = ["PROG", "parse", "main", "run"]

PROG = "d2lmp.commands.resilient"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise ValueError(message)


def parse(argv: Sequence[str], world: int, run_id: str) -> tuple[RS.RunSpec, RS.Fault | None, str, bool]:
    """(the run, the staged fault or None, the checkpoint folder, whether a checkpoint of other settings may be
    resumed) from the command line; ValueError if wrong."""
    parser = _Parser(prog=PROG, description="train, lose a rank, restart, and compare with an uninterrupted run")
    parser.add_argument("--steps", type=int, required=True, help="optimizer steps of the run")
    parser.add_argument("--checkpoint-every", type=int, required=True, help="a checkpoint after every K steps")
    parser.add_argument("--kill-rank", type=int, help="the rank that kills itself (with --kill-step)")
    parser.add_argument("--kill-step", type=int, help="the step (1 = the first) at which it does")
    parser.add_argument("--kill-during", choices=RS.FAULT_PLACES, default="step",
                        help="during the step's computation, or during its checkpoint's save")
    parser.add_argument("--dir", required=True, help="an existing folder for the checkpoints and the event log")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--allow-other-config", action="store_true",
                        help="resume a checkpoint of this run saved under other settings (another seed, say)")
    args = parser.parse_args(list(argv))
    spec = RS.RunSpec(steps=args.steps, checkpoint_every=args.checkpoint_every, seed=args.seed)
    if (args.kill_rank is None) != (args.kill_step is None):
        raise ValueError("give --kill-rank and --kill-step together (or neither, for a run without a fault)")
    fault = None
    if args.kill_rank is not None:
        fault = RS.Fault(args.kill_rank, args.kill_step, args.kill_during)
        fault.check(spec, world)
    RS.check_folder(args.dir, run_id, spec, args.allow_other_config)
    return spec, fault, args.dir, args.allow_other_config


def main(argv: Sequence[str] | None = None) -> int:
    """Run this rank's part; return the exit status (0: equal to the uninterrupted run, 1: not, 2: bad input)."""
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        print(f"{PROG}: error: run me under torchrun: python -m torch.distributed.run --max-restarts 1 "
              f"--standalone --nproc-per-node 2 -m {PROG} --steps 8 --checkpoint-every 2 ...", file=sys.stderr)
        return 2
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    run_id = os.environ.get("TORCHELASTIC_RUN_ID", "local")
    try:
        spec, fault, folder, allow_other_config = parse(sys.argv[1:] if argv is None else argv, world, run_id)
    except ValueError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    torch.set_num_threads(1)  # ranks that share cores must not oversubscribe them
    _join_group(rank, world, attempt)
    status = run(rank, world, spec, folder, run_id, attempt, fault, allow_other_config)
    dist.barrier()
    dist.destroy_process_group()
    return status


def run(rank: int, world: int, spec: RS.RunSpec, folder: str, run_id: str, attempt: int,
        fault: RS.Fault | None, allow_other_config: bool = False) -> int:
    """On a rank of a joined group: the run (resumed if it can be), then the uninterrupted run, compared.

    Returns 0 when every parameter and Adam tensor is equal on every rank, else 1 (and says so on stderr).
    """
    result = RS.train(rank, world, spec, folder, run_id, attempt, fault, allow_other_config=allow_other_config)
    reference = RS.train(rank, world, spec)  # the uninterrupted run: from scratch, no checkpoints, no fault
    worst = torch.tensor(RS.max_difference(result.state, reference.state), dtype=torch.float64)
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)
    if rank == 0:
        _report(spec, world, attempt, result, folder, float(worst))
    if float(worst) != 0.0:
        print(f"{PROG}: MISMATCH on rank {rank}: the resumed run differs from the uninterrupted one by "
              f"{float(worst):.3e}", file=sys.stderr)
        return 1
    return 0


def _join_group(rank: int, world: int, attempt: int) -> None:
    """Join the gloo group through torchrun's store, under keys of this attempt only.

    The store outlives a restart, and the ranks of the new attempt would otherwise find the addresses
    the dead attempt's ranks published there, connect to them, and fail.
    """
    wait = timedelta(seconds=60)
    host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    serves = rank == 0 and os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True"  # else the agent serves it
    store = dist.TCPStore(host, port, world, is_master=serves, timeout=wait)
    mine = dist.PrefixStore(f"attempt_{attempt}", store)
    dist.init_process_group("gloo", store=mine, rank=rank, world_size=world, timeout=wait)


def _report(spec: RS.RunSpec, world: int, attempt: int, result: RS.RunResult, folder: str, worst: float) -> None:
    events = RS.read_events(folder)
    restarts = RS.lost_work(events)
    print(f"{world} ranks, {spec.steps} steps, a checkpoint after steps {spec.checkpoint_steps()}; "
          f"attempt {attempt} resumed from step {result.resumed_from} and ran steps {list(result.steps_run)}")
    for r in restarts:
        print(f"restart {r.attempt}: killed at step {r.killed_at}, resumed from step {r.resumed_from}: "
              f"{r.steps_recomputed} step(s) recomputed (checkpoint interval {spec.checkpoint_every}), "
              f"{r.lost_seconds:.3f} s of work lost, {r.restart_seconds:.2f} s from the kill to the resumed state")
    staged = {r.attempt for r in restarts}
    for a in range(1, attempt + 1):  # torchrun counts every restart; a rank lost from outside logs no kill
        if a not in staged:
            step = min((e.step for e in events if e.event == "resume" and e.attempt == a), default=0)
            print(f"restart {a}: a rank was lost without the staged kill; resumed from step {step}")
    print(f"largest difference from an uninterrupted run: {worst:.3g} (parameters and Adam's state, "
          f"after {attempt} restart(s))", flush=True)


if __name__ == "__main__":
    exit_after_torchrun(main())
