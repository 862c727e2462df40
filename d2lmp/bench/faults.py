"""A fault campaign: launches on 2-4 ranks, each with one random fault, and whether ``launch`` reported it right.

Each run starts ``world`` gloo ranks with ``launch``; every rank starts a process of its own (``sleep``) and
joins a barrier, then the victim rank does one of ``FAULTS`` while its peers run all-reduces:

* ``raise``: it raises; ``exit``: it calls ``os._exit(3)``; ``sigkill``: it is SIGKILLed during the
  all-reduces; ``sigstop``: it stops itself (SIGSTOP) and never answers;
* ``skip``: it skips the all-reduces and goes on to the closing barrier; ``shape``, ``dtype``: it all-reduces
  a tensor of another size, or another dtype, than its peers'.

A run records how long ``launch`` took against its timeout plus ``launch.REPORT_MARGIN_S``, what it reported,
whether that names the victim the way the fault allows (``named_right``), how many of the ranks and their
children were still alive after it returned (orphans), and whether a plain launch right after it worked.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist

from d2lmp.parallel.launch import REPORT_MARGIN_S, WorkerError, launch
from d2lmp.parallel.lifetime import process_state

__all__ = ["FAULTS", "Run", "faulty", "one_run", "campaign"]

FAULTS = ("raise", "exit", "sigkill", "sigstop", "skip", "shape", "dtype")
ROUNDS = 200  # the peers' all-reduces: long enough that the SIGKILL lands during them
ELEMENTS = 1 << 14
ORPHAN_TIMEOUT_S = 1.0  # after launch returns, how long its ranks and their children may take to be gone


@dataclass(frozen=True)
class Run:
    """One launch with one fault, and how it was reported."""

    fault: str
    world: int
    victim: int
    seconds: float  # from the start of launch to its error
    limit: float  # the launch's timeout plus REPORT_MARGIN_S: a run that takes longer hung
    kind: str  # WorkerError.kind, or "none" when launch returned
    named_right: bool  # the report names the victim (or, for a hang, every rank's stack) as the fault allows
    orphans: int  # ranks and ranks' children still alive after launch returned
    next_launch_ok: bool  # a plain launch right after it returned the right results
    summary: str  # the report's first line

    @property
    def hung(self) -> bool:
        """Whether launch took longer than its timeout plus its stated margin."""
        return self.seconds > self.limit


def faulty(rank: int, world: int, fault: str, victim: int, folder: str) -> int:
    """A rank of the campaign: note its pid and its child's, then the victim does ``fault``, the others all-reduce."""
    child = subprocess.Popen(["sleep", "60"])
    for pid in (os.getpid(), child.pid):
        Path(folder, f"{pid}.pid").write_text(str(pid))
    dist.barrier()
    if rank == victim:
        if fault == "raise":
            raise RuntimeError(f"fault injected on rank {rank}")
        if fault == "exit":
            os._exit(3)
        if fault == "sigstop":
            os.kill(os.getpid(), signal.SIGSTOP)
        if fault == "sigkill":
            threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGKILL)).start()
        if fault == "skip":
            dist.barrier()
            return rank
        if fault == "shape":
            dist.all_reduce(torch.ones(ELEMENTS + 1))
        if fault == "dtype":
            dist.all_reduce(torch.ones(ELEMENTS, dtype=torch.float64))
    for _ in range(ROUNDS):
        dist.all_reduce(torch.ones(ELEMENTS))
    if fault == "sigkill" and rank == victim:
        time.sleep(30)  # the kill comes during the all-reduces, or here at the latest
    return rank


def _sum(rank: int, world: int) -> float:
    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)
    return total.item()


def _named_right(fault: str, world: int, victim: int, err: WorkerError | None) -> bool:
    if err is None:
        return False
    if fault in ("raise", "exit", "sigkill"):
        kind = {"raise": "raised", "exit": "exited", "sigkill": "killed"}[fault]
        return err.kind == kind and err.rank == victim
    if fault == "sigstop":
        return err.kind == "timeout" and f"rank(s) [{victim}] did not answer" in str(err)
    # a skipped collective, a mismatched shape or dtype: a hang with every rank's stack, or the rank gloo stopped
    return set(err.stacks) == set(range(world)) if err.kind == "timeout" else err.rank is not None


def _alive(pid: int) -> bool:
    return process_state(pid) not in ("", "Z", "X")


def one_run(fault: str, world: int, victim: int, timeout: float) -> Run:
    """Launch ``world`` ranks with ``fault`` on rank ``victim``, and record how ``launch`` reported it."""
    if fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}; available: {', '.join(FAULTS)}")
    with tempfile.TemporaryDirectory(prefix="d2lmp-faults-") as folder:
        err: WorkerError | None = None
        start = time.monotonic()
        try:
            launch(faulty, world, fault, victim, folder, backend="gloo", start_method="fork", timeout=timeout)
        except WorkerError as e:
            err = e
        seconds = time.monotonic() - start
        pids = [int(p.stem) for p in Path(folder).glob("*.pid")]
        settle = time.monotonic() + ORPHAN_TIMEOUT_S  # a SIGKILLed process may take a moment to leave
        while any(_alive(pid) for pid in pids) and time.monotonic() < settle:
            time.sleep(0.02)
        orphans = sum(_alive(pid) for pid in pids)
    try:
        next_ok = launch(_sum, 2, backend="gloo", start_method="fork", timeout=max(timeout, 30.0)) == [3.0, 3.0]
    except WorkerError:
        next_ok = False
    return Run(fault, world, victim, seconds, timeout + REPORT_MARGIN_S, err.kind if err else "none",
               _named_right(fault, world, victim, err), orphans, next_ok,
               str(err).split("\n", 1)[0] if err else "launch returned")


def campaign(runs: int, worlds: tuple[int, ...], timeout: float, seed: int = 0) -> list[Run]:
    """``runs`` runs, each a fault, a world size (from ``worlds``) and a victim drawn at random from ``seed``."""
    rng = random.Random(seed)
    out = []
    for _ in range(runs):
        fault, world = rng.choice(FAULTS), rng.choice(worlds)
        out.append(one_run(fault, world, rng.randrange(world), timeout))
    return out
