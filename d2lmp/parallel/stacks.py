"""Where each rank is: every rank's Python stack, written by the rank itself and read by whoever waits for it.

A hung distributed program prints nothing: each rank sits in a collective or a ``send`` that waits for a
peer. ``arm(path)``, called once inside a rank, has the standard library's ``faulthandler`` write that
rank's Python stack (every Python thread) to ``path`` when the rank receives ``STACK_SIGNAL`` (SIGUSR1),
and also when it dies of a fatal signal (an abort, a segfault). The handler runs in C, so it answers
while the rank is blocked inside gloo or NCCL, needs no root and no debugger (py-spy would need to
attach with ptrace). ``request(pids)`` asks the ranks, ``collect(paths)`` reads what they wrote,
``parse``/``format_stacks`` turn faulthandler's text into frames and a short report, and
``waiting_line`` names the innermost frame of the reader's own code: the line where the rank waits.
"""

from __future__ import annotations

import faulthandler
import os
import re
import signal
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import IO

__all__ = ["STACK_SIGNAL", "Frame", "arm", "request", "collect", "parse", "main_thread", "waiting_line",
           "format_stacks"]

STACK_SIGNAL = signal.SIGUSR1
# Frames of the machinery around a rank (process start, thread bootstrap): never where a rank waits.
_MACHINERY = ("/multiprocessing/", "/threading.py", "/d2lmp/parallel/launch.py", "/d2lmp/parallel/stacks.py")
_LIBRARY = ("/site-packages/", "/dist-packages/", "/lib/python3")
_FRAME = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<function>\S+)')


@dataclass(frozen=True)
class Frame:
    """One line of a stack: the file, the line number and the function running there."""

    file: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{_short(self.file)}:{self.line} in {self.function}"


def arm(path: str) -> IO[str]:
    """In a rank: on ``STACK_SIGNAL`` or a fatal signal, write every Python thread's stack to ``path``.

    Returns the open file, which must stay open (referenced) for as long as the rank runs.
    """
    out = open(path, "w")  # noqa: SIM115 - faulthandler writes to it until the process ends
    faulthandler.enable(file=out, all_threads=True)
    faulthandler.register(STACK_SIGNAL, file=out, all_threads=True, chain=False)
    return out


def request(pids: Iterable[int]) -> None:
    """Ask each process to write its stack (one that has already exited is skipped)."""
    for pid in pids:
        try:
            os.kill(pid, STACK_SIGNAL)
        except ProcessLookupError:
            pass


def collect(paths: Mapping[int, str], wait: float = 5.0) -> dict[int, str]:
    """What each rank wrote, once every file has content that stopped growing, or after ``wait`` seconds (a rank
    on a busy machine may take seconds to be scheduled and write its stack)."""
    deadline = time.monotonic() + wait
    sizes: dict[int, int] = {}
    while time.monotonic() < deadline:
        now = {rank: _size(path) for rank, path in paths.items()}
        if all(now.values()) and now == sizes:
            break
        sizes = now
        time.sleep(0.1)
    out = {}
    for rank, path in paths.items():
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            text = ""
        if text.strip():
            out[rank] = text
    return out


def parse(text: str) -> list[list[Frame]]:
    """faulthandler's report as one list of frames per thread, most recent call first."""
    threads: list[list[Frame]] = []
    for line in text.splitlines():
        if "(most recent call first)" in line:
            threads.append([])
            continue
        match = _FRAME.match(line)
        if match and threads:
            threads[-1].append(Frame(match["file"], int(match["line"]), match["function"]))
    return threads


def main_thread(text: str) -> list[Frame]:
    """The frames of the rank's own work, innermost first: its main thread, cut at ``launch``'s entry.

    Threads started by ``threading`` are left out. A rank forked by ``launch`` also carries the frames
    of the parent that called ``launch``; they lie outside the rank's entry and are cut off.
    """
    threads = [t for t in parse(text) if t and not t[-1].file.endswith("threading.py")]
    frames = max(threads, key=len) if threads else []
    entry = next((i for i, f in enumerate(frames) if _is_entry(f)), None)
    return frames if entry is None else frames[:entry + 1]


def _is_entry(frame: Frame) -> bool:
    return frame.function == "_worker" and frame.file.endswith("launch.py")


def waiting_line(text: str) -> Frame | None:
    """The innermost frame outside the libraries and the launcher: the reader's line where the rank waits."""
    for frame in main_thread(text):
        library = any(part in frame.file for part in _LIBRARY) and "/d2lmp/" not in frame.file
        if not library and not any(part in frame.file for part in _MACHINERY):
            return frame
    return None


def format_stacks(stacks: Mapping[int, str]) -> str:
    """Each rank's stack, innermost call first, without the launcher's frames; a line where it waits."""
    lines = []
    for rank in sorted(stacks):
        frames = [f for f in main_thread(stacks[rank]) if not any(part in f.file for part in _MACHINERY)]
        where = waiting_line(stacks[rank])
        fatal = "Fatal Python error" in stacks[rank]
        finished = where is None and any(_is_entry(f) for f in main_thread(stacks[rank]))
        if fatal:
            head = f"rank {rank}: died of a fatal signal" + (f" at {where}" if where else "")
        elif finished:
            head = f"rank {rank}: finished its function; waits for the others in launch's closing barrier"
        else:
            head = f"rank {rank}" + (f": waits at {where}" if where else "")
        lines.append(head)
        lines += [f"    {frame}" for frame in frames] or ["    (no Python frame)"]
    return "\n".join(lines)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _short(path: str) -> str:
    """A path from the package or library root: torch/distributed/..., d2lmp/parallel/..."""
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1]
    if "/d2lmp/" in path:
        return "d2lmp/" + path.rsplit("/d2lmp/", 1)[1]
    return path
