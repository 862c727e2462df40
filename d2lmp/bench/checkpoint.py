"""How long training waits for a checkpoint: a blocking DCP save against an asynchronous one, same run.

Each round, on the same ranks and the same FSDP2 training state, saves once with ``checkpoint.save``
(training waits until every file is written) and once with ``checkpoint.AsyncSaver`` (training waits while
the state is copied to staging memory, runs a few steps while a thread writes it, then waits for the
rest), the order alternating from round to round so that a change in the machine's load hits both. It
reports, per rank, the bytes written, the blocking save's seconds, the asynchronous save's seconds of
waiting and the seconds until its files were complete, and the load of the saved state on the same ranks.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass

import torch
from torch import nn

from d2lmp.checks.reshard import _import_before_fork, build
from d2lmp.parallel import checkpoint as ckpt
from d2lmp.parallel.launch import launch

__all__ = ["RankSaveTimes", "SaveTiming", "save_timing_rank", "save_timing"]


@dataclass(frozen=True)
class RankSaveTimes:
    """One rank's seconds of each save (one entry per round), of the load, and what the saves wrote."""

    blocking: tuple[float, ...]
    async_wait: tuple[float, ...]
    async_total: tuple[float, ...]
    load: tuple[float, ...]
    written: dict[int, int]  # bytes of data per rank, as the last blocking save reported them
    parameters: int  # the model's global size


@dataclass(frozen=True)
class SaveTiming:
    """Medians over the rounds, as the slowest rank saw them, and the bytes each rank wrote."""

    world: int
    parameters: int
    written: dict[int, int]  # bytes of data per rank
    blocking_s: float  # a blocking save: training waits for all of it
    async_wait_s: float  # an asynchronous save: training waits for the copy only ...
    async_total_s: float  # ... and the files are complete this long after the save began
    load_s: float  # loading the state back on the same ranks
    rounds: int


def save_timing_rank(rank: int, world: int, folder: str, sizes: tuple[int, ...], rounds: int,
                     steps_between: int = 2) -> RankSaveTimes:
    """Worker: alternate blocking and asynchronous saves of an FSDP2 MLP; this rank's seconds of each."""
    model, optimizer = build("fsdp2", world, sizes)
    x = torch.randn(32, sizes[0], generator=torch.Generator().manual_seed(0))
    y = torch.randint(0, sizes[-1], (32,), generator=torch.Generator().manual_seed(1))

    def step() -> None:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    step()  # the optimizer's state exists before the first save
    saver = ckpt.AsyncSaver()
    out: dict[str, list[float]] = {"blocking": [], "async_wait": [], "async_total": [], "load": []}
    written: dict[int, int] = {}
    for r in range(rounds):
        for kind in (("blocking", "async") if r % 2 == 0 else ("async", "blocking")):
            state = ckpt.training_state(model, optimizer)
            number = 2 * r + (kind == "async")
            if kind == "blocking":
                report = ckpt.save(state, folder, number)
                out["blocking"].append(report.seconds)
                written = report.bytes_per_rank
            else:
                start = time.perf_counter()
                out["async_wait"].append(saver.save(state, folder, number))
                for _ in range(steps_between):  # training goes on while the thread writes
                    step()
                saver.wait()
                out["async_total"].append(time.perf_counter() - start)
    state = ckpt.training_state(model, optimizer)
    out["load"].append(ckpt.load(state, ckpt.step_dir(folder, 0)).seconds)
    return RankSaveTimes(tuple(out["blocking"]), tuple(out["async_wait"]), tuple(out["async_total"]),
                         tuple(out["load"]), written, sum(p.numel() for p in model.parameters()))  # global sizes


def save_timing(world: int = 4, sizes: tuple[int, ...] = (256, 1024, 1023, 10), rounds: int = 3,
                timeout: float = 300.0) -> SaveTiming:
    """Blocking against asynchronous saves on ``world`` CPU ranks, in a temporary folder removed afterwards."""
    _import_before_fork()
    with tempfile.TemporaryDirectory(prefix="d2lmp-ckpt-") as folder:
        per_rank = launch(save_timing_rank, world, folder, sizes, rounds, backend="gloo", timeout=timeout)

    def slowest(key: str) -> float:
        seconds = [getattr(r, key) for r in per_rank]
        return float(statistics.median(max(s[i] for s in seconds) for i in range(len(seconds[0]))))

    return SaveTiming(world, per_rank[0].parameters, per_rank[0].written, slowest("blocking"),
                      slowest("async_wait"), slowest("async_total"), slowest("load"), rounds)
