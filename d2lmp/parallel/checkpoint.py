"""Distributed checkpoints that reshard, and a marker so that a half-written checkpoint is never loaded.

PyTorch's distributed checkpoint (``torch.distributed.checkpoint``, DCP) saves a sharded training state in
parallel: each rank writes only the shards it holds (``__<rank>_<n>.distcp``) and rank 0 writes
``.metadata``, which says which slice of each tensor lies where. Loading reads that map, so a state saved
by 4 ranks loads into 2, or into one plain model: each rank reads exactly the slices its own shards need.

A job can die in the middle of a save, so a checkpoint here is a folder ``step_00000012/`` that counts
only once it holds ``COMPLETE.json``. Rank 0 writes that marker after DCP's save has returned, which DCP
does only after every rank's files are written; the marker lists every file and its size and is written
atomically (a temporary file, flushed to disk, then renamed). ``latest_complete`` ignores a folder
without a valid marker, and ``load`` refuses one with ``IncompleteCheckpoint``. ``AsyncSaver`` saves in
the background (DCP's ``async_save``): training waits only while the state is copied, and the marker is
written when the background write has finished.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import warnings
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.checkpoint.filesystem import FileSystemReader, FileSystemWriter
from torch.distributed.checkpoint.planner import LoadPlan, LoadPlanner
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict, set_state_dict
from torch.distributed.checkpoint.state_dict_loader import load as dcp_load
from torch.distributed.checkpoint.state_dict_saver import async_save as dcp_async_save
from torch.distributed.checkpoint.state_dict_saver import save as dcp_save
from torch.distributed.checkpoint.storage import StorageWriter
from torch.futures import Future as TorchFuture

__all__ = ["MARKER", "IncompleteCheckpoint", "Marker", "SaveReport", "LoadReport", "FullState", "step_dir",
           "training_state", "restore_training_state", "full_training_state", "save", "AsyncSaver", "read_marker",
           "is_complete", "latest_complete", "load", "bytes_per_rank"]

MARKER = "COMPLETE.json"
_STEP_DIR = re.compile(r"step_(\d{8})$")
_RANK_FILE = re.compile(r"__(\d+)_\d+\.distcp$")


def _quiet_dcp_storage_warning() -> None:
    """Ignore the one TypedStorage deprecation warning DCP's own file writer gives on CPU tensors in torch 2.8
    (``_SerialCpuLoader`` calls ``tensor.storage()``); d2lmp itself uses ``untyped_storage``. A filter for that
    message from that module only, installed by ``_prepare`` before a save (the writer's thread sees it too)."""
    warnings.filterwarnings("ignore", message="TypedStorage is deprecated", category=UserWarning,
                            module=r"torch\.distributed\.checkpoint\.filesystem")


class IncompleteCheckpoint(ValueError):
    """A checkpoint folder that is not complete: no marker, or files missing or of the wrong size."""


@dataclass(frozen=True)
class Marker:
    """What ``COMPLETE.json`` records: the step, the ranks that saved it, the run, every file and its size."""

    step: int
    world: int
    run_id: str
    files: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class SaveReport:
    """One save as this rank saw it: the folder, the seconds training waited, the bytes each rank wrote."""

    path: str
    seconds: float
    bytes_per_rank: dict[int, int]


@dataclass(frozen=True)
class LoadReport:
    """One load as this rank saw it: the seconds it took and the bytes of saved records it read."""

    seconds: float
    bytes_read: int


@dataclass(frozen=True)
class FullState:
    """A training state with every tensor whole (``full_training_state``), to compare two states: the model's
    parameters by name, and each parameter's optimizer state by the parameter's name (tensors, and numbers)."""

    model: dict[str, torch.Tensor]
    optim: dict[str, dict[str, Any]]

    def tensors(self) -> dict[str, torch.Tensor]:
        """Every tensor under one flat name: ``model.<parameter>`` and ``optim.<parameter>.<key>``."""
        out = {f"model.{k}": v for k, v in self.model.items()}
        out.update({f"optim.{n}.{k}": v for n, per in self.optim.items() for k, v in per.items() if torch.is_tensor(v)})
        return out


def step_dir(root: str | os.PathLike[str], step: int) -> Path:
    """The folder of the checkpoint taken after ``step`` steps."""
    if step < 0:
        raise ValueError(f"a step count is never negative, got {step}")
    return Path(root) / f"step_{step:08d}"


def training_state(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """The model's and the optimizer's state as DCP saves it: this rank's shards, keyed by parameter name.

    ``get_state_dict`` names the optimizer's state by parameter name (not by position), so that a model
    split differently, or not at all, finds its state at load time.
    """
    model_state, optim_state = get_state_dict(model, optimizer)
    return {"model": model_state, "optim": optim_state}


def restore_training_state(model: nn.Module, optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
    """Put a loaded ``training_state`` back into the model and the optimizer."""
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])


def full_training_state(model: nn.Module, optimizer: torch.optim.Optimizer) -> FullState:
    """Every parameter and optimizer tensor whole (gathered from the ranks), to compare two states."""
    model_state, optim_state = get_state_dict(model, optimizer, options=StateDictOptions(full_state_dict=True))
    per_param: dict[str, dict[str, Any]] = optim_state["state"]  # type: ignore[assignment]
    params: dict[str, torch.Tensor] = model_state  # type: ignore[assignment]
    return FullState({k: v.detach().clone() for k, v in params.items()},
                     {name: {k: v.detach().clone() if torch.is_tensor(v) else v for k, v in per.items()}
                      for name, per in per_param.items()})


def save(state: dict[str, Any], root: str | os.PathLike[str], step: int, run_id: str = "",
         process_group: dist.ProcessGroup | None = None,
         writer: Callable[[Path], StorageWriter] | None = None) -> SaveReport:
    """Save ``state`` as the checkpoint of ``step`` under ``root`` (every rank calls it); return when complete.

    An incomplete folder of the same step (a save that died) is cleared first; a complete one is never
    overwritten. ``writer(path)`` may supply DCP's storage writer (default: files in ``path``).
    """
    path = _prepare(root, step, process_group)
    start = time.perf_counter()
    dcp_save(state, storage_writer=(writer or FileSystemWriter)(path), process_group=process_group,
             no_dist=not dist.is_initialized())
    if _rank(process_group) == 0:
        _write_marker(path, step, _world(process_group), run_id)
    _barrier(process_group)
    return SaveReport(str(path), time.perf_counter() - start, bytes_per_rank(path))


class AsyncSaver:
    """Checkpoints written in the background (DCP's ``async_save``) on a process group of their own.

    ``save`` returns once the state is copied to staging memory; training goes on while a thread writes
    it. ``wait`` blocks until the write is done and the marker written; the next ``save`` waits first.
    The writes talk over their own gloo group, so they never interleave with training's collectives.
    """

    def __init__(self) -> None:
        self.group = dist.new_group(backend="gloo")
        self._pending: tuple[Future[Any], Path, int, str] | None = None

    def save(self, state: dict[str, Any], root: str | os.PathLike[str], step: int, run_id: str = "") -> float:
        """Start saving ``state`` as the checkpoint of ``step``; return the seconds training waited."""
        self.wait()
        path = _prepare(root, step, self.group)
        start = time.perf_counter()
        future = dcp_async_save(state, storage_writer=FileSystemWriter(path), process_group=self.group)
        assert isinstance(future, Future)  # the thread checkpointer's result: a Future of the metadata
        self._pending = (future, path, step, run_id)
        return time.perf_counter() - start

    def wait(self) -> float:
        """Finish the save in flight (if any) and write its marker; return the seconds spent waiting."""
        if self._pending is None:
            return 0.0
        future, path, step, run_id = self._pending
        self._pending = None
        start = time.perf_counter()
        future.result()
        if _rank(self.group) == 0:
            _write_marker(path, step, _world(self.group), run_id)
        _barrier(self.group)
        return time.perf_counter() - start


def read_marker(path: str | os.PathLike[str]) -> Marker:
    """The marker of a complete checkpoint; ``IncompleteCheckpoint`` says what is missing otherwise."""
    path = Path(path)
    if not path.is_dir():
        raise IncompleteCheckpoint(f"{path} is not a checkpoint folder (it does not exist)")
    try:
        marker = Marker(**json.loads((path / MARKER).read_text()))
    except FileNotFoundError:
        raise IncompleteCheckpoint(f"{path} has no {MARKER}: its save never finished (the job died while "
                                   "writing it), so it may hold only some ranks' shards") from None
    except (ValueError, TypeError) as err:
        raise IncompleteCheckpoint(f"{path}/{MARKER} is unreadable: {err}") from None
    wrong = [name for name, size in marker.files.items()
             if not (path / name).is_file() or (path / name).stat().st_size != size]
    if wrong:
        raise IncompleteCheckpoint(f"{path}: files missing or changed since the save: {', '.join(sorted(wrong))}")
    return marker


def is_complete(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a checkpoint whose save finished on every rank."""
    try:
        read_marker(path)
        return True
    except IncompleteCheckpoint:
        return False


def latest_complete(root: str | os.PathLike[str], run_id: str | None = None) -> Path | None:
    """The newest complete checkpoint under ``root`` (of run ``run_id`` if given), or None; skips incomplete ones."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"checkpoint folder {root} does not exist")
    steps = sorted((int(m.group(1)), p) for p in root.iterdir() if (m := _STEP_DIR.match(p.name)) and p.is_dir())
    for _, path in reversed(steps):
        if is_complete(path) and (run_id is None or read_marker(path).run_id == run_id):
            return path
    return None


def load(state: dict[str, Any], path: str | os.PathLike[str],
         process_group: dist.ProcessGroup | None = None) -> LoadReport:
    """Fill ``state`` (allocated, sharded as this job shards it) from a complete checkpoint, in place.

    Each rank reads only the saved records that overlap the shards it holds; the report counts them.
    """
    read_marker(path)  # refuses a half-written checkpoint before reading any of it
    reader = _CountingReader(path)
    start = time.perf_counter()
    dcp_load(state, storage_reader=reader, process_group=process_group, no_dist=not dist.is_initialized())
    return LoadReport(time.perf_counter() - start, reader.bytes_read)


def bytes_per_rank(path: str | os.PathLike[str]) -> dict[int, int]:
    """Bytes of the data files each rank wrote (DCP names them ``__<rank>_<n>.distcp``); metadata not counted."""
    out: dict[int, int] = {}
    for p in Path(path).iterdir():
        if m := _RANK_FILE.match(p.name):
            out[int(m.group(1))] = out.get(int(m.group(1)), 0) + p.stat().st_size
    return dict(sorted(out.items()))


# ---------------------------------------------------------------------------------------------------

def _rank(group: dist.ProcessGroup | None) -> int:
    return dist.get_rank(group) if dist.is_initialized() else 0


def _world(group: dist.ProcessGroup | None) -> int:
    return dist.get_world_size(group) if dist.is_initialized() else 1


def _barrier(group: dist.ProcessGroup | None) -> None:
    if dist.is_initialized():
        dist.barrier(group)


def _prepare(root: str | os.PathLike[str], step: int, group: dist.ProcessGroup | None) -> Path:
    """The step's folder, empty and ready on every rank; a complete checkpoint there is an error. Every save starts
    here, so here DCP's writer is kept quiet on torch 2.8 (``_quiet_dcp_storage_warning``)."""
    _quiet_dcp_storage_warning()
    if not Path(root).is_dir():
        raise ValueError(f"checkpoint folder {root} does not exist; create it first")
    path = step_dir(root, step)
    if _rank(group) == 0:
        if is_complete(path):
            raise ValueError(f"{path} already holds a complete checkpoint; refusing to overwrite it")
        shutil.rmtree(path, ignore_errors=True)  # what a save that died left there
        path.mkdir()
    _barrier(group)
    return path


class _CountingReader(FileSystemReader):
    """DCP's file reader, counting the bytes of the saved records this rank reads."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path)
        self.bytes_read = 0

    def read_data(self, plan: LoadPlan, planner: LoadPlanner) -> TorchFuture[None]:
        records = {item.storage_index for item in plan.items}
        self.bytes_read += sum(self.storage_data[index].length for index in records)
        return super().read_data(plan, planner)


def _write_marker(path: Path, step: int, world: int, run_id: str) -> None:
    """Write ``COMPLETE.json`` atomically: the file appears whole or not at all, and only on disk."""
    files = {p.name: p.stat().st_size for p in sorted(path.iterdir()) if p.is_file() and p.name != MARKER}
    text = json.dumps(asdict(Marker(step, world, run_id, files)), indent=1)
    tmp = path / (MARKER + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path / MARKER)
    folder = os.open(path, os.O_RDONLY)
    try:
        os.fsync(folder)  # the rename itself reaches the disk
    finally:
        os.close(folder)
