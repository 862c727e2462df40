"""Run an exercise's check in a forked child under a time limit: whatever the answer does, a verdict comes back.

A student's answer is code, and a check runs it: it may loop, sleep, call ``sys.exit``, raise
``KeyboardInterrupt``, start threads, reseed the random generators, or return an object whose unpickling
does any of these. ``bounded(check, limit)`` runs the whole check (the answer, the ranks it launches, the
reading of their results, the judging) in a child forked from this process, which sends back only the
verdict's two fields as JSON, length first, over a pipe read with a deadline. At the limit the child and
everything it started are killed (``parallel.lifetime``), and the verdict says so. This process's random
state, threads and modules are never touched: the child had copies.

Where fork cannot serve (no ``fork`` on the system, or CUDA already initialised here, which a forked child
cannot use), and for answers that are not code (a number, a choice), the check runs in this process: an
exception of any kind from the answer is still a verdict, and the random state (Python's and torch's) is
restored afterwards, but nothing bounds its time.
"""

from __future__ import annotations

import json
import os
import random
import select
import struct
import time
from collections.abc import Callable

import torch

from d2lmp.exercises.core import CHECK_TIMEOUT_S, Verdict
from d2lmp.parallel import lifetime

__all__ = ["bounded", "can_fork"]

_LENGTH = struct.Struct("!Q")

def can_fork() -> bool:
    """Whether a check can run in a forked child here: fork exists, and CUDA is not initialised in this process."""
    return hasattr(os, "fork") and not torch.cuda.is_initialized()


def bounded(check: Callable[[], Verdict], limit: float = CHECK_TIMEOUT_S, fork: bool = True) -> Verdict:
    """``check()``'s verdict, from a forked child given ``limit`` seconds; NotImplementedError when unanswered.

    ``fork=False`` runs it here (guarded, not bounded): for an answer that is not code, whose check may time
    this machine with all its threads, which a forked child cannot use."""
    if limit <= 0:
        raise ValueError(f"limit must be positive, got {limit}")
    if not (fork and can_fork()):
        return _in_process(check)
    read, write = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: run the check, send the verdict, leave without the interpreter's teardown
        try:
            os.close(read)
            lifetime.tie_to_parent(parent)
            torch.set_num_threads(1)  # the parent's OpenMP pool does not survive fork (see parallel.launch)
            verdict = _outcome(check)
            fields = {"not_answered": True} if verdict is None else {"correct": verdict.correct,
                                                                     "message": verdict.message}
            data = json.dumps(fields).encode()
            os.write(write, _LENGTH.pack(len(data)))
            view = memoryview(data)
            while view:
                view = view[os.write(write, view):]
        finally:
            os._exit(0)
    os.close(write)
    try:
        received = _read(read, time.monotonic() + limit)
    finally:
        os.close(read)
        lifetime.end_group(pid)  # the child, and whatever the answer started
        _, status = os.waitpid(pid, 0)
    if received is None:
        return Verdict(False, f"the check did not finish within {limit:g} s: your function (or what it returned) "
                              "still ran when the time was up")
    if not received:
        return Verdict(False, f"your function ended the checking process ({_how(status)}) before a verdict")
    try:
        outcome = json.loads(received)
        if outcome.get("not_answered"):
            raise NotImplementedError("the function still raises NotImplementedError")
        return Verdict(bool(outcome["correct"]), str(outcome["message"]))
    except (ValueError, KeyError, TypeError, AttributeError):
        return Verdict(False, "the check's report could not be read: your function wrote into the checking process")


def _outcome(check: Callable[[], Verdict]) -> Verdict | None:
    """The check's verdict (None: not answered); an exception of any kind from the answer is a verdict too."""
    try:
        verdict = check()
        return Verdict(bool(verdict.correct), str(verdict.message))
    except NotImplementedError:
        return None
    except BaseException as err:  # noqa: BLE001 - SystemExit, KeyboardInterrupt: the answer's doing, a verdict
        return Verdict(False, f"your function raised {type(err).__name__}: {_first_line(err)}")


def _in_process(check: Callable[[], Verdict]) -> Verdict:
    state = random.getstate(), torch.get_rng_state()
    try:
        verdict = _outcome(check)
    finally:
        random.setstate(state[0])
        torch.set_rng_state(state[1])
    if verdict is None:
        raise NotImplementedError("the function still raises NotImplementedError")
    return verdict


def _read(fd: int, deadline: float) -> bytes | None:
    """The child's message (length first), b"" if the child closed the pipe without one, None at the deadline."""
    buffer = b""
    need = _LENGTH.size
    while len(buffer) < need:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b""
        buffer += chunk
        if need == _LENGTH.size and len(buffer) >= need:
            need += _LENGTH.unpack(buffer[:_LENGTH.size])[0]
    return buffer[_LENGTH.size:need]


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def _first_line(err: BaseException) -> str:
    try:
        text = str(err).strip()
    except BaseException:  # noqa: BLE001 - an exception whose str() fails
        text = ""
    return text.splitlines()[0] if text else "(no message)"
