"""A rank's ties to its caller: it dies, with every process it started, when the caller dies or stops it.

``launch`` starts ranks as child processes. Left alone, a rank outlives a caller that is killed (a notebook
kernel restarted, say): it runs on in Python code, or waits in a collective until the group's timeout. Three
ties prevent that:

* ``tie_to_parent(parent)``, called first thing in a rank, makes the rank the leader of a process group of its
  own, so that whatever it starts (a ``subprocess``, a pool) belongs to that group; ``end_group(pid)`` kills the
  whole group at once, and ``launch`` stops every rank that way.
* On Linux it asks the kernel (``prctl(PR_SET_PDEATHSIG, SIGTERM)``) to signal the rank when the thread that
  started it ends; the rank answers SIGTERM by killing its own group (SIGKILL).
* A watchdog thread polls ``os.getppid()`` every ``CHECK_PARENT_AFTER_S`` seconds and does the same when the
  parent is gone (the rank is re-parented): this covers systems without ``prctl``, and a rank whose main thread is
  blocked in C code (a collective), where a Python signal handler waits for it to return. Both need the rank not
  stopped.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
from types import FrameType

__all__ = ["CHECK_PARENT_AFTER_S", "PR_SET_PDEATHSIG", "tie_to_parent", "end_group", "process_state"]

CHECK_PARENT_AFTER_S = 0.2  # the watchdog's period: a rank outlives its parent by at most about this long
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def tie_to_parent(parent: int) -> None:
    """In a rank: lead a process group of its own, and kill that group when ``parent`` is gone."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    signal.signal(signal.SIGTERM, _end_own_group)
    if sys.platform.startswith("linux"):
        _ask_for_parent_death_signal()
    if os.getppid() != parent:  # the parent died before the signal was asked for
        end_group(os.getpid())
    threading.Thread(target=_watch, args=(parent,), name="d2lmp-parent-watchdog", daemon=True).start()


def end_group(pid: int, include_pid: bool = True) -> None:
    """SIGKILL the process group ``pid`` leads (a rank and what it started), and ``pid`` itself (in case it leads
    none yet) unless ``include_pid`` is false: a process already reaped, whose number may now be another's."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    if include_pid:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def process_state(pid: int) -> str:
    """The kernel's one-letter state of ``pid`` (``R`` running, ``S`` sleeping, ``T`` stopped...), "" if unknown."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def _ask_for_parent_death_signal() -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


def _end_own_group(signum: int, frame: FrameType | None) -> None:
    end_group(os.getpid())


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(CHECK_PARENT_AFTER_S)
    end_group(os.getpid())
