"""A training loop that survives a lost rank: checkpoint every K steps, and resume exactly where it stopped.

Data-parallel training of a small MLP with dropout, deterministic on CPU ranks (gloo): every rank builds the
same model from the seed, takes its slice of each global batch, and the gradients are summed over the ranks
(an all-reduce), so a run is a pure function of its seed. Everything that run depends on goes into each
checkpoint (``parallel.checkpoint``): the model, Adam's state, the data position (the epoch and the batch
within it; each epoch's order is a permutation drawn from the seed) and every rank's random state (dropout
draws from it). A restarted attempt loads the newest complete checkpoint of its run and continues, so it
must end with exactly the parameters of a run that was never interrupted: ``max_difference`` is 0.

A staged ``Fault`` makes one rank kill itself with SIGKILL, in the first attempt only: during a step (after
its forward and backward, while its peers wait in the all-reduce) or during a checkpoint's save (after its
files are written, before the save is complete). ``EVENTS`` in the run's folder logs each step, save,
kill and resume with the wall-clock time; ``lost_work`` reads it: the steps computed again after each
restart, and the seconds they had cost.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.checkpoint.filesystem import FileSystemWriter
from torch.distributed.checkpoint.planner import SavePlan, SavePlanner
from torch.distributed.checkpoint.state_dict import set_model_state_dict
from torch.distributed.checkpoint.storage import WriteResult
from torch.futures import Future

from d2lmp.models import mlp
from d2lmp.parallel import checkpoint as ckpt
from d2lmp.parallel.checkpoint_marker import check_config

__all__ = ["EVENTS", "FAULT_PLACES", "FORGETTABLE", "RunSpec", "Fault", "ShuffledBatches", "RunResult", "LogEvent",
           "Restart", "check_folder", "build", "train", "checkpoint_state", "resume", "max_difference",
           "read_events", "lost_work"]

EVENTS = "events.jsonl"
FAULT_PLACES = ("step", "save")
FORGETTABLE = ("rng", "data", "optimizer")  # parts a resume can leave out, to see what each one is for


@dataclass(frozen=True)
class RunSpec:
    """The run: ``steps`` optimizer steps, a checkpoint after every ``checkpoint_every`` (not after the last)."""

    steps: int
    checkpoint_every: int
    seed: int = 0
    sizes: tuple[int, ...] = (16, 32, 32, 4)
    examples: int = 96
    batch: int = 24
    lr: float = 1e-2
    dropout: float = 0.1

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise ValueError(f"steps must be at least 1, got {self.steps}")
        if self.checkpoint_every < 1:
            raise ValueError(f"checkpoint-every must be at least 1 step, got {self.checkpoint_every}")
        if not 1 <= self.batch <= self.examples:
            raise ValueError(f"batch must lie between 1 and the {self.examples} examples, got {self.batch}")

    def checkpoint_steps(self) -> list[int]:
        """The steps after which a checkpoint is saved."""
        return list(range(self.checkpoint_every, self.steps, self.checkpoint_every))

    def config(self) -> dict[str, Any]:
        """The settings that decide the training state, kept in each checkpoint's marker: all but ``steps`` and
        ``checkpoint_every``, which say when the run stops and when it saves (a longer run may resume a shorter)."""
        return {k: v for k, v in asdict(self).items() if k not in ("steps", "checkpoint_every")}


@dataclass(frozen=True)
class Fault:
    """Rank ``rank`` kills itself with SIGKILL at step ``step`` (1 = the first), ``during`` the step or its save."""

    rank: int
    step: int
    during: str = "step"

    def check(self, spec: RunSpec, world: int | None = None) -> None:
        """ValueError when this fault cannot happen in ``spec`` on ``world`` ranks."""
        if self.during not in FAULT_PLACES:
            raise ValueError(f"a fault happens during one of {FAULT_PLACES}, got {self.during!r}")
        if not 1 <= self.step <= spec.steps:
            raise ValueError(f"kill step {self.step} is beyond the run: steps are numbered 1 to {spec.steps}")
        if self.during == "save" and self.step not in spec.checkpoint_steps():
            raise ValueError(f"no checkpoint is saved after step {self.step}; saves follow steps "
                             f"{spec.checkpoint_steps() or 'none (the run is shorter than the interval)'}")
        if self.rank < 0 or (world is not None and self.rank >= world):
            raise ValueError(f"kill rank {self.rank} does not exist: the ranks are 0 to {(world or 1) - 1}")


class ShuffledBatches:
    """The data position: global batches of example indices, a fresh permutation from the seed each epoch."""

    def __init__(self, examples: int, batch: int, seed: int) -> None:
        self.examples, self.batch, self.seed = examples, batch, seed
        self.epoch, self.position = 0, 0  # the next batch is batch ``position`` of epoch ``epoch``

    def next(self) -> torch.Tensor:
        """The indices of the next global batch (an epoch's incomplete last batch is skipped)."""
        if (self.position + 1) * self.batch > self.examples:
            self.epoch, self.position = self.epoch + 1, 0
        order = torch.randperm(self.examples, generator=torch.Generator().manual_seed(self.seed * 7919 + self.epoch))
        indices = order[self.position * self.batch:(self.position + 1) * self.batch]
        self.position += 1
        return indices

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "position": self.position}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.position = int(state["epoch"]), int(state["position"])


@dataclass(frozen=True)
class RunResult:
    """What one rank ran in one attempt, and the training state it ended with (whole tensors)."""

    rank: int
    world: int
    attempt: int
    resumed_from: int  # the checkpoint's step (0: from the start)
    steps_run: tuple[int, ...]
    saves: dict[int, float] = field(default_factory=dict)  # step -> seconds training waited for its save
    load_seconds: float = 0.0
    state: dict[str, torch.Tensor] = field(default_factory=dict)  # every parameter and Adam tensor, by name


def check_folder(folder: str | os.PathLike[str] | None, run_id: str, spec: RunSpec | None = None,
                 allow_other_config: bool = False) -> None:
    """ValueError unless ``folder`` exists and holds no complete checkpoint of another run, nor one of this run
    saved under another configuration than ``spec``'s (unless ``allow_other_config``)."""
    if folder is None:
        return
    root = Path(folder)
    if root.is_file():
        raise ValueError(f"{root} is a file, not a checkpoint directory")
    if not root.is_dir():
        raise ValueError(f"checkpoint folder {root} does not exist; create it first (mkdir -p {root})")
    for path in sorted(root.glob("step_*")):
        try:
            marker = ckpt.read_marker(path)
        except ckpt.IncompleteCheckpoint:
            continue  # a save that died, or files changed since: the resume skips it too
        if marker.run_id != run_id:
            raise ValueError(f"{path} is a checkpoint of another run ({marker.run_id!r}); "
                             "give each run an empty folder")
        if spec is not None:
            check_config(marker, spec.config(), path, allow_other_config)


def build(spec: RunSpec) -> tuple[nn.Module, torch.optim.Optimizer, torch.Tensor, torch.Tensor]:
    """The model and Adam, identical on every rank, and the data set: all from the seed."""
    g = torch.Generator().manual_seed(spec.seed + 1)
    x = torch.randn(spec.examples, spec.sizes[0], generator=g)
    y = torch.randint(0, spec.sizes[-1], (spec.examples,), generator=g)
    torch.manual_seed(spec.seed)
    model = mlp(spec.sizes[0], spec.sizes[1:-1], spec.sizes[-1], dropout=spec.dropout, flatten=False)
    return model, torch.optim.Adam(model.parameters(), lr=spec.lr, foreach=False), x, y


def _step_gradients(model: nn.Module, x: torch.Tensor, y: torch.Tensor, indices: torch.Tensor,
                    rank: int, world: int) -> None:
    """This rank's part of the global batch's loss, backward: its share of the gradient, not yet summed."""
    mine = indices.tensor_split(world)[rank]
    loss = nn.functional.cross_entropy(model(x[mine]), y[mine], reduction="sum") / len(indices)
    loss.backward()


def _sum_gradients(model: nn.Module) -> None:
    for p in model.parameters():
        assert p.grad is not None
        dist.all_reduce(p.grad)


class _DiesAfterWriting(FileSystemWriter):
    """DCP's file writer for a rank that dies once its own files are written, before the save completes."""

    def __init__(self, path: Path, on_written: Any) -> None:
        super().__init__(path)
        self.on_written = on_written

    def write_data(self, plan: SavePlan, planner: SavePlanner) -> Future[list[WriteResult]]:
        future = super().write_data(plan, planner)
        future.wait()
        self.on_written()
        return future


def train(rank: int, world: int, spec: RunSpec, folder: str | None = None, run_id: str = "",
          attempt: int = 0, fault: Fault | None = None, forget: Sequence[str] = (),
          allow_other_config: bool = False) -> RunResult:
    """Worker: the run on this rank, resuming from ``folder``'s newest complete checkpoint of ``run_id``.

    ``folder=None``: no checkpoints at all (the uninterrupted reference). ``attempt``: 0 for the first try
    (the only one in which ``fault`` strikes), then 1, 2, ... for each restart. ``forget`` leaves parts of
    the checkpoint out of the resume (see ``FORGETTABLE``), which breaks the equality on purpose.
    A checkpoint saved under another configuration (``RunSpec.config``) is refused unless ``allow_other_config``.
    """
    if fault is not None:
        fault.check(spec, world)
    if unknown := set(forget) - set(FORGETTABLE):
        raise ValueError(f"cannot forget {sorted(unknown)}; the parts are {FORGETTABLE}")
    check_folder(folder, run_id, spec, allow_other_config)
    model, optimizer, x, y = build(spec)
    torch.manual_seed(spec.seed + 1000 * (rank + 1))  # each rank's own dropout stream
    data = ShuffledBatches(spec.examples, spec.batch, spec.seed)
    start, load_seconds = 0, 0.0
    path = ckpt.latest_complete(folder, run_id) if folder is not None else None
    if path is not None:
        start, load_seconds = resume(model, optimizer, data, path, rank, world, forget, spec.config(),
                                     allow_other_config)
    _log(folder, attempt, rank, "resume", start)  # every rank: its process id, and when it was ready

    def die(step: int) -> None:
        _log(folder, attempt, rank, "kill", step, during=fault.during if fault else "step")
        os.kill(os.getpid(), signal.SIGKILL)

    striking = fault is not None and attempt == 0 and rank == fault.rank
    saves: dict[int, float] = {}
    for step in range(start + 1, spec.steps + 1):
        optimizer.zero_grad()
        _step_gradients(model, x, y, data.next(), rank, world)
        if striking and fault is not None and fault.during == "step" and step == fault.step:
            die(step)  # peers wait for this rank's gradient in the all-reduce, which never comes
        _sum_gradients(model)
        optimizer.step()
        if rank == 0:
            _log(folder, attempt, rank, "step", step)
        if folder is not None and step in spec.checkpoint_steps():
            writer = None
            if striking and fault is not None and fault.during == "save" and step == fault.step:
                writer = lambda p, s=step: _DiesAfterWriting(p, lambda: die(s))  # noqa: E731
            state = checkpoint_state(model, optimizer, data, step)
            saves[step] = ckpt.save(state, folder, step, run_id, writer=writer, config=spec.config()).seconds
            if rank == 0:
                _log(folder, attempt, rank, "saved", step)
    full = ckpt.full_training_state(model, optimizer)
    return RunResult(rank, world, attempt, start, tuple(range(start + 1, spec.steps + 1)), saves, load_seconds,
                     full.tensors())


def checkpoint_state(model: nn.Module, optimizer: torch.optim.Optimizer, data: ShuffledBatches,
                     step: int) -> dict[str, Any]:
    """Everything the rest of the run depends on; every rank's random state gathered into one tensor."""
    mine = torch.get_rng_state()
    every = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(every, mine)
    return {**ckpt.training_state(model, optimizer), "data": data.state_dict(), "step": step,
            "rng": torch.stack(every)}


def resume(model: nn.Module, optimizer: torch.optim.Optimizer, data: ShuffledBatches, path: Path, rank: int,
           world: int, forget: Sequence[str], config: dict[str, Any] | None = None,
           allow_other_config: bool = False) -> tuple[int, float]:
    """Load ``path`` into the run's state (refused if saved under another ``config``, unless allowed); return
    (its step, the seconds the load took)."""
    marker = ckpt.read_marker(path)
    if marker.world != world:
        raise ValueError(f"{path} was saved by {marker.world} ranks; this loop resumes on the same number "
                         f"(each rank's random state is its own), not on {world}")
    state = checkpoint_state(model, optimizer, data, 0)
    seconds = ckpt.load(state, path, config=config, allow_other_config=allow_other_config).seconds  # in place
    if "optimizer" in forget:
        set_model_state_dict(model, state["model"])
        optimizer.state.clear()  # Adam starts afresh: no moments, step count 0
    else:
        ckpt.restore_training_state(model, optimizer, state)
    if "data" not in forget:
        data.load_state_dict(state["data"])
    else:  # the position restarts at the beginning of the data, as if no position had been saved
        data.load_state_dict({"epoch": 0, "position": 0})
    if "rng" not in forget:
        torch.set_rng_state(state["rng"][rank].clone())  # a copy: torch 2.13 crashes on a row that is a view
    return int(state["step"]), seconds


def max_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """The largest |difference| between two ``RunResult.state``s (infinite when names or shapes differ)."""
    if set(a) != set(b) or any(a[k].shape != b[k].shape for k in a):
        return float("inf")
    return max(((a[k].double() - b[k].double()).abs().max().item() for k in a if a[k].numel()), default=0.0)


# ---------------------------------------------------------------------------------------------------
# The run's log: what happened when, and the work lost to each restart

def _log(folder: str | os.PathLike[str] | None, attempt: int, rank: int, event: str, step: int,
         **more: str) -> None:
    """Append one event to the run's log (one short line, written with O_APPEND: ranks never interleave)."""
    if folder is None:
        return
    line = json.dumps({"attempt": attempt, "rank": rank, "event": event, "step": step, "time": time.time(),
                       "pid": os.getpid(), **more}) + "\n"
    fd = os.open(Path(folder) / EVENTS, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class LogEvent:
    """One line of a run's ``EVENTS`` log: the attempt and rank, what happened ("resume", "step", "saved" or
    "kill") at which step, when (``time.time()``), in which process; a kill says what the rank was ``during``."""

    attempt: int
    rank: int
    event: str
    step: int
    time: float
    pid: int
    during: str | None = None


def read_events(folder: str | os.PathLike[str]) -> list[LogEvent]:
    """The run's events in the order they were written (none when nothing was logged)."""
    path = Path(folder) / EVENTS
    return [LogEvent(**json.loads(line)) for line in path.read_text().splitlines()] if path.exists() else []


@dataclass(frozen=True)
class Restart:
    """One failure and the restart after it."""

    attempt: int  # the attempt that resumed
    killed_at: int  # the step during which (or after which, in its save) a rank died
    resumed_from: int  # the step of the checkpoint it resumed from
    steps_recomputed: int  # steps resumed_from + 1 .. killed_at, computed twice
    lost_seconds: float  # from the end of the checkpoint it resumed from (or the start) to the kill
    restart_seconds: float  # from the kill to the resumed state being loaded


def lost_work(events: Sequence[LogEvent]) -> list[Restart]:
    """Each restart in a run's events: the steps computed again and the time they had cost."""
    out = []
    for kill in (e for e in events if e.event == "kill"):
        after = [e for e in events if e.event == "resume" and e.attempt > kill.attempt]
        if not after:
            continue
        resumed = min(after, key=lambda e: e.time)  # the first resume after the kill
        before = [e for e in events if e.attempt == kill.attempt and e.time <= kill.time]
        mark = [e.time for e in before if e.event in ("saved", "resume") and e.step == resumed.step]
        begun = min((e.time for e in before), default=kill.time)
        out.append(Restart(resumed.attempt, kill.step, resumed.step, kill.step - resumed.step,
                           kill.time - (mark[-1] if mark else begun), resumed.time - kill.time))
    return out
