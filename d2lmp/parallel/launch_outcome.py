"""How a launch ended: read what each rank left in its files, name the rank that failed and how, stop them all.

Each rank of ``launch`` reports through files in the launch's folder, never through a pipe: its result
(``rank<r>.result``) or its error (``rank<r>.error``, JSON), each written under a temporary name and renamed,
so the parent sees a whole report or none and never blocks reading half of one (a rank killed or stopped
while it writes leaves only the temporary file). ``collect`` polls those files and the ranks' exit statuses
until every result is in, a rank fails, or the timeout passes:

* A rank that ends without a report (an exit code, ``os._exit``, a C library's ``exit()``, SIGKILL) is the
  cause of a failure, not an echo: peers that then raise "Connection closed by peer" failed after it.
  Otherwise the cause is the earliest of the errors and the fatal-signal deaths (an abort inside gloo), each
  dated by the rank itself (the error's time stamp, the stack file that the dying rank wrote).
* At the timeout the ranks still running are asked for their stacks; one that does not answer within
  ``STACK_TIMEOUT_S`` is named, with its state when the kernel says it is stopped.

``stop`` kills every rank's process group (the rank and what it started) and reaps the ranks.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from typing import Any, Literal, cast

import torch

from d2lmp.parallel import lifetime as _lifetime
from d2lmp.parallel import stacks as _stacks

__all__ = ["Failure", "WorkerError", "REPORT_MARGIN_S", "STACK_TIMEOUT_S", "JUDGE_AFTER_S", "report_path",
           "collect", "stop"]

# How a launch failed: a rank raised, a rank exited with a non-zero code or was killed by a signal without
# reporting an error, or ranks were still running at the timeout (a hang).
Failure = Literal["raised", "exited", "killed", "timeout"]
JUDGE_AFTER_S = 0.5  # after the first failure, how long the peers' echoes and deaths are awaited before judging
STACK_TIMEOUT_S = 2.0  # how long ranks asked for their stacks may take to write them
# launch returns or raises within its timeout plus this: the stacks' wait, the grace, stopping the ranks
REPORT_MARGIN_S = STACK_TIMEOUT_S + JUDGE_AFTER_S + 2.5
_POLL_AFTER_S = 0.02  # how often the files and exit statuses are looked at
_FATAL = (signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL)  # faulthandler writes


class WorkerError(RuntimeError):
    """A rank failed: raised an exception, died, or did not finish in time (``kind`` says which)."""

    def __init__(self, rank: int | None, message: str, remote_traceback: str = "",
                 stacks: dict[int, str] | None = None, *, kind: Failure) -> None:
        self.rank = rank
        self.kind: Failure = kind
        self.remote_traceback = remote_traceback
        self.stacks = dict(stacks or {})  # rank -> faulthandler's report of that rank's Python stack
        text = message if rank is None else f"rank {rank}: {message}"
        if remote_traceback:
            text += "\n\n--- traceback from the worker ---\n" + remote_traceback
        if self.stacks:
            text += ("\n\n--- where each rank was (Python stacks, innermost call first) ---\n"
                     + _stacks.format_stacks(self.stacks))
        super().__init__(text)


def report_path(folder: str, rank: int, what: str) -> str:
    """The file of one rank's report: ``what`` is "result", "error" or "stack"."""
    return os.path.join(folder, f"rank{rank}.{what}")


def collect(procs: list[BaseProcess], folder: str, timeout: float) -> list[Any]:
    """Every rank's result in rank order, or ``WorkerError`` within ``timeout`` + ``REPORT_MARGIN_S``."""
    world = len(procs)
    deadline = time.monotonic() + timeout
    while True:
        exits = [p.exitcode for p in procs]  # before the files: a report written before an exit is then seen
        done = [os.path.exists(report_path(folder, r, "result")) for r in range(world)]
        if all(done):
            return [torch.load(report_path(folder, r, "result"), weights_only=False) for r in range(world)]
        failed = any(os.path.exists(report_path(folder, r, "error")) or (code is not None and not done[r])
                     for r, code in enumerate(exits))
        if failed:
            raise _failure(procs, folder)
        if time.monotonic() > deadline:
            raise _timeout(procs, folder, timeout, [r for r in range(world) if not done[r]])
        time.sleep(_POLL_AFTER_S)


def stop(procs: list[BaseProcess]) -> None:
    """Kill every rank with what it started (its process group), and reap the ranks."""
    for p in procs:
        if p.pid is not None:
            _lifetime.end_group(p.pid, include_pid=p.exitcode is None)  # a reaped pid may belong to another
    # SIGKILL is not refused, but a killed process still has to exit: on two loaded cores a rank once took over a
    # second to, and was still there when ``launch`` returned. Two seconds stay within ``REPORT_MARGIN_S``'s share.
    deadline = time.monotonic() + 2.0
    for p in procs:
        if p.pid is not None:
            p.join(max(0.0, deadline - time.monotonic()))


def _failure(procs: list[BaseProcess], folder: str) -> WorkerError:
    time.sleep(JUDGE_AFTER_S)  # the echoes of the first failure, and the peers it brings down, arrive meanwhile
    world = len(procs)
    exits = [p.exitcode for p in procs]
    errors = {r: _read_error(folder, r) for r in range(world) if os.path.exists(report_path(folder, r, "error"))}
    silent = {r: code for r, code in enumerate(exits) if code is not None and r not in errors
              and not os.path.exists(report_path(folder, r, "result"))}
    stacks = _every_stack(procs, folder)
    # A death without a report that no peer's failure causes (an exit status, SIGKILL) comes first; then the
    # earliest error or fatal-signal death, as the ranks themselves dated them.
    chosen = [r for r, code in silent.items() if -code not in _FATAL]
    if not chosen:
        dated = {r: e.time for r, e in errors.items()}
        dated |= {r: _mtime(report_path(folder, r, "stack")) for r in silent}
        chosen = sorted(dated, key=lambda r: (dated[r], r))
    rank = chosen[0]
    others = sorted(r for r in set(errors) | set(silent) if r != rank)
    note = f" (rank(s) {others} failed after it)" if others else ""
    if rank in errors:
        return WorkerError(rank, f"raised {errors[rank].summary}{note}", errors[rank].traceback, stacks,
                           kind="raised")
    code = silent[rank]
    how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
    return WorkerError(rank, f"died without reporting an error ({how}){note}", stacks=stacks,
                       kind="killed" if code < 0 else "exited")


def _timeout(procs: list[BaseProcess], folder: str, timeout: float, missing: list[int]) -> WorkerError:
    running = {r: report_path(folder, r, "stack") for r, p in enumerate(procs) if p.exitcode is None}
    _stacks.request(cast(int, procs[r].pid) for r in running)  # started, so each has a pid
    stacks = _stacks.collect(running, wait=STACK_TIMEOUT_S)
    silent = [r for r in running if r not in stacks]
    states = {r: _lifetime.process_state(cast(int, procs[r].pid)) for r in silent}
    stopped = [r for r in silent if states[r] in ("T", "t")]
    text = (f"rank(s) {missing} did not finish within the {timeout:g} s timeout "
            "(a hang: often a collective that some rank never joined)")
    if silent:
        text += (f"; rank(s) {silent} did not answer the request for their stacks within {STACK_TIMEOUT_S:g} s"
                 + (f" (rank(s) {stopped} stopped, as by SIGSTOP)" if stopped else ""))
    return WorkerError(None, text, stacks=stacks, kind="timeout")


def _every_stack(procs: list[BaseProcess], folder: str) -> dict[int, str]:
    """The stacks of the ranks still running (asked for now) and of any that died of a fatal signal."""
    paths = {r: report_path(folder, r, "stack") for r in range(len(procs))}
    running = [r for r, p in enumerate(procs) if p.exitcode is None]
    _stacks.request(cast(int, procs[r].pid) for r in running)  # started, so each has a pid
    written = {r: path for r, path in paths.items() if r in running or _size(path) > 0}
    return _stacks.collect(written, wait=1.0)


@dataclass(frozen=True)
class _Error:
    """A rank's report of its exception: the exception in one line, its traceback, when (the rank's clock)."""

    summary: str
    traceback: str
    time: float


def _read_error(folder: str, rank: int) -> _Error:
    try:
        with open(report_path(folder, rank, "error"), encoding="utf-8") as f:
            report = json.load(f)
        return _Error(str(report["summary"]), str(report["traceback"]), float(report["time"]))
    except (OSError, ValueError, KeyError, TypeError):
        return _Error("(its report could not be read)", "", 0.0)


def _mtime(path: str) -> float:
    with contextlib.suppress(OSError):
        if os.path.getsize(path) > 0:
            return os.path.getmtime(path)
    return float("inf")  # no stack written: the death was seen, not dated


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
