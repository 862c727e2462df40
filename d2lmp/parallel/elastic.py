"""Run a function on forked ranks under torchrun's own elastic agent, called in this process, restarts included.

``torchrun`` is a command-line front end to ``torch.distributed.launcher.api.elastic_launch``: an agent that
starts one process per rank, watches them, and when one fails stops the others and starts them all again, up to
``max_restarts`` times, each attempt numbered in ``TORCHELASTIC_RESTART_COUNT``. ``run_elastic`` calls the same
agent with ``torchrun --standalone``'s rendezvous (one machine, a free port), but forks the ranks from the calling
process instead of starting fresh interpreters: a rank inherits the imported torch and starts in milliseconds
rather than seconds. Fork is safe while CUDA is untouched, so it is for CPU ranks (gloo), as ``launch``'s is.

Each rank's standard output and error go to files under ``log_dir`` (``attempt_<n>/<rank>/stdout.log``); the
agent's log lines about failed ranks ("failed (exitcode: -9) local_rank: 1 ...") are kept as they are logged.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs, Std
from torch.distributed.launcher.api import LaunchConfig, elastic_launch

__all__ = ["ElasticRun", "run_elastic"]

_AGENT_LOGGERS = ("torch.distributed.elastic.multiprocessing.api", "torch.multiprocessing.spawn")


@dataclass(frozen=True)
class ElasticRun:
    """What an elastic run left: each rank's return value (last attempt), the agent's failure lines, the logs."""

    returned: dict[int, object]
    failures: tuple[str, ...]
    log_dir: Path

    def stdout(self, rank: int = 0) -> str:
        """What ``rank`` printed in the last attempt."""
        attempts = sorted(self.log_dir.glob(f"*/attempt_*/{rank}/stdout.log"), key=lambda p: int(p.parts[-3][8:]))
        return attempts[-1].read_text() if attempts else ""


class _Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage().splitlines()[0])


def _rank_main(fn: Callable[[list[str]], int], argv: list[str]) -> int:
    """A forked rank: one compute thread, and Python's output on the file descriptors the agent redirected."""
    torch.set_num_threads(1)
    # the agent pointed the descriptors behind sys.stdout and sys.stderr at the log files; a notebook's (or pytest's)
    # Python-level streams would not write there, so write to those descriptors directly
    sys.stdout = open(sys.stdout.fileno(), "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(sys.stderr.fileno(), "w", buffering=1, closefd=False)  # noqa: SIM115
    return fn(argv)


@contextmanager
def _streams_with_descriptors() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` on descriptors 1 and 2 while ranks are forked, where they have none (a
    kernel started under pytest, a captured stream): the agent redirects the descriptor behind each stream."""
    saved = sys.stdout, sys.stderr
    try:
        for name, fd in (("stdout", 1), ("stderr", 2)):
            try:
                getattr(sys, name).fileno()
            except (OSError, ValueError):  # io.UnsupportedOperation is both
                setattr(sys, name, open(fd, "w", buffering=1, closefd=False))  # noqa: SIM115 - closed by nobody
        yield
    finally:
        sys.stdout, sys.stderr = saved


def run_elastic(fn: Callable[[list[str]], int], argv: Sequence[str], nproc: int, max_restarts: int,
                log_dir: str | Path) -> ElasticRun:
    """Call ``fn(argv)`` on ``nproc`` forked ranks under torchrun's agent, restarting all of them up to
    ``max_restarts`` times when one fails; raises the agent's ``ChildFailedError`` when the restarts run out."""
    log_dir = Path(log_dir)
    config = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=nproc, run_id="local", rdzv_backend="c10d",
                          rdzv_endpoint="localhost:0", max_restarts=max_restarts, monitor_interval=0.1,
                          start_method="fork", logs_specs=DefaultLogsSpecs(log_dir=str(log_dir), redirects=Std.ALL))
    keep, loggers = _Keep(), [logging.getLogger(name) for name in _AGENT_LOGGERS]
    propagate = [logger.propagate for logger in loggers]
    for logger in loggers:  # kept, not printed on the notebook's standard error
        logger.addHandler(keep)
        logger.propagate = False
    try:
        with _streams_with_descriptors():
            returned = elastic_launch(config, _rank_main)(fn, list(argv))
    finally:
        for logger, before in zip(loggers, propagate):
            logger.removeHandler(keep)
            logger.propagate = before
    return ElasticRun(dict(returned), tuple(line for line in keep.lines if "exitcode" in line), log_dir)
