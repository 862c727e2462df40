"""Distributed checkpoints that reshard, and a marker so that a half-written checkpoint is never loaded.

PyTorch's distributed checkpoint (``torch.distributed.checkpoint``, DCP) saves a sharded training state in
parallel: each rank writes only the shards it holds (``__<rank>_<n>.distcp``) and rank 0 writes
``.metadata``, which says which slice of each tensor lies where. Loading reads that map, so a state saved
by 4 ranks loads into 2, or into one plain model: each rank reads exactly the slices its own shards need.

A job can die in the middle of a save, so a checkpoint here is a folder ``step_00000012/`` that counts
only once it holds ``COMPLETE.json``. Rank 0 writes that marker after DCP's save has returned, which DCP
does only after every rank's files are written; the marker (``parallel.checkpoint_marker``) lists every
file with its size and CRC-32, and the run's configuration. ``latest_complete`` skips a folder
without a valid marker, and ``load`` refuses one with ``IncompleteCheckpoint``; ``load`` also refuses a
checkpoint of another configuration, or one whose tensors are not exactly those the state asks for
(``CheckpointMismatch``). Every failure is a ``CheckpointError``. ``AsyncSaver`` saves in
the background (DCP's ``async_save``): training waits only while the state is copied, and the marker is
written when the background write has finished.
"""

from __future__ import annotations

import os
import re
import shutil
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.checkpoint._nested_dict import flatten_state_dict
from torch.distributed.checkpoint.api import CheckpointException
from torch.distributed.checkpoint.filesystem import FileSystemReader, FileSystemWriter
from torch.distributed.checkpoint.metadata import Metadata
from torch.distributed.checkpoint.planner import LoadPlan, LoadPlanner
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict, set_state_dict
from torch.distributed.checkpoint.state_dict_loader import load as dcp_load
from torch.distributed.checkpoint.state_dict_saver import async_save as dcp_async_save
from torch.distributed.checkpoint.state_dict_saver import save as dcp_save
from torch.distributed.checkpoint.storage import StorageWriter
from torch.futures import Future as TorchFuture

from d2lmp.parallel.checkpoint_marker import (
    MARKER,
    CheckpointError,
    CheckpointMismatch,
    IncompleteCheckpoint,
    Marker,
    check_config,
    read_marker,
    step_of,
    write_marker,
)

__all__ = ["SavedPiece", "saved_pieces", "MARKER",
           "CheckpointError", "IncompleteCheckpoint", "CheckpointMismatch", "Marker", "SaveReport",
           "LoadReport", "FullState", "step_dir", "training_state", "restore_training_state", "full_training_state",
           "save", "AsyncSaver", "read_marker",
           "is_complete", "latest_complete", "load", "check_names", "bytes_per_rank"]

_RANK_FILE = re.compile(r"__(\d+)_\d+\.distcp$")


def _quiet_dcp_storage_warning() -> None:
    """Ignore the one TypedStorage deprecation warning DCP's own file writer gives on CPU tensors in torch 2.8
    (``_SerialCpuLoader`` calls ``tensor.storage()``); d2lmp itself uses ``untyped_storage``. A filter for that
    message from that module only, installed by ``_prepare`` before a save (the writer's thread sees it too)."""
    warnings.filterwarnings("ignore", message="TypedStorage is deprecated", category=UserWarning,
                            module=r"torch\.distributed\.checkpoint\.filesystem")


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
         process_group: dist.ProcessGroup | None = None, writer: Callable[[Path], StorageWriter] | None = None,
         config: Mapping[str, Any] | None = None) -> SaveReport:
    """Save ``state`` as the checkpoint of ``step`` under ``root`` (every rank calls it); return when complete.

    An incomplete folder of the same step (a save that died) is cleared first; a complete one is never
    overwritten. ``config``: the run's settings, kept in the marker. ``writer(path)`` may supply DCP's
    storage writer (default: files in ``path``).
    """
    path = _prepare(root, step, process_group)
    start = time.perf_counter()
    with _as_checkpoint_error("save", path):
        dcp_save(state, storage_writer=(writer or FileSystemWriter)(path), process_group=process_group,
                 no_dist=not dist.is_initialized())
    if _rank(process_group) == 0:
        write_marker(path, step, _world(process_group), run_id, config)
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
        self._pending: tuple[Future[Any], Path, int, str, Mapping[str, Any] | None] | None = None

    def save(self, state: dict[str, Any], root: str | os.PathLike[str], step: int, run_id: str = "",
             config: Mapping[str, Any] | None = None) -> float:
        """Start saving ``state`` as the checkpoint of ``step``; return the seconds training waited."""
        self.wait()
        path = _prepare(root, step, self.group)
        start = time.perf_counter()
        with _as_checkpoint_error("save", path):
            future = dcp_async_save(state, storage_writer=FileSystemWriter(path), process_group=self.group)
        assert isinstance(future, Future)  # the thread checkpointer's result: a Future of the metadata
        self._pending = (future, path, step, run_id, config)
        return time.perf_counter() - start

    def wait(self) -> float:
        """Finish the save in flight (if any) and write its marker; return the seconds spent waiting."""
        if self._pending is None:
            return 0.0
        future, path, step, run_id, config = self._pending
        self._pending = None
        start = time.perf_counter()
        with _as_checkpoint_error("save", path):
            future.result()
        if _rank(self.group) == 0:
            write_marker(path, step, _world(self.group), run_id, config)
        _barrier(self.group)
        return time.perf_counter() - start


def is_complete(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a checkpoint whose save finished on every rank."""
    try:
        read_marker(path)
        return True
    except IncompleteCheckpoint:
        return False


def latest_complete(root: str | os.PathLike[str], run_id: str | None = None) -> Path | None:
    """The newest complete checkpoint under ``root`` (of run ``run_id`` if given), or None.

    Folders are ordered by the number of their step, of any length; one without a marker (a save that
    died) is skipped, one whose marker is malformed or whose files changed is skipped with a warning.
    """
    root = Path(root)
    if root.is_file():
        raise ValueError(f"{root} is a file, not a checkpoint directory")
    if not root.is_dir():
        raise ValueError(f"checkpoint folder {root} does not exist")
    steps = sorted((step, p) for p in root.iterdir() if (step := step_of(p)) is not None and p.is_dir())
    for _, path in reversed(steps):
        try:
            marker = read_marker(path)
        except IncompleteCheckpoint as err:
            if (path / MARKER).exists():
                warnings.warn(f"skipping a checkpoint that cannot be trusted: {err}", stacklevel=2)
            continue
        if run_id is None or marker.run_id == run_id:
            return path
    return None


def load(state: dict[str, Any], path: str | os.PathLike[str], process_group: dist.ProcessGroup | None = None,
         config: Mapping[str, Any] | None = None, allow_other_config: bool = False) -> LoadReport:
    """Fill ``state`` (allocated, sharded as this job shards it) from a complete checkpoint, in place.

    Refused before anything is read: a checkpoint half-written or changed since its save, one saved under
    another ``config`` (unless ``allow_other_config``), one whose tensors are not those ``state`` asks for.
    Each rank reads only the saved records that overlap the shards it holds; the report counts them.
    """
    marker = read_marker(path)  # refuses a half-written or changed checkpoint before reading any of it
    check_config(marker, config, path, allow_other_config)
    reader = _CountingReader(path)
    check_names(state, reader.read_metadata(), path)
    start = time.perf_counter()
    with _as_checkpoint_error("load", path):
        dcp_load(state, storage_reader=reader, process_group=process_group, no_dist=not dist.is_initialized())
    return LoadReport(time.perf_counter() - start, reader.bytes_read)


def check_names(state: dict[str, Any], metadata: Metadata, path: str | os.PathLike[str]) -> None:
    """``CheckpointMismatch`` unless, in each part of ``state`` (``model``, ``optim``, ...), the saved names are
    exactly the names asked for: a model with fewer layers, or more, is not this checkpoint's model.

    A part ``state`` leaves out (loading the model alone, say) is not read, and not compared."""
    wanted = set(flatten_state_dict(state)[0])
    parts = {key.split(".")[0] for key in wanted} | set(state)
    saved = {key for key in metadata.state_dict_metadata if key.split(".")[0] in parts}
    if saved != wanted:
        raise CheckpointMismatch(f"{path} holds other tensors than this state: only in the checkpoint: "
                                 f"{_few(saved - wanted)}; only in this state: {_few(wanted - saved)}")


def bytes_per_rank(path: str | os.PathLike[str]) -> dict[int, int]:
    """Bytes of the data files each rank wrote (DCP names them ``__<rank>_<n>.distcp``); metadata not counted."""
    out: dict[int, int] = {}
    for p in Path(path).iterdir():
        if m := _RANK_FILE.match(p.name):
            out[int(m.group(1))] = out.get(int(m.group(1)), 0) + p.stat().st_size
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class SavedPiece:
    """One record of a DCP checkpoint: a block of tensor ``name`` (its ``offsets`` and ``sizes`` in the whole
    tensor) stored in ``file`` at byte ``offset``, ``length`` bytes long."""

    name: str
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    file: str
    offset: int
    length: int


def saved_pieces(path: str | os.PathLike[str]) -> list[SavedPiece]:
    """Every tensor record of the checkpoint at ``path``, as its metadata file maps it: which block, which file."""
    metadata = FileSystemReader(str(path)).read_metadata()
    sizes = {(name, tuple(chunk.offsets)): tuple(chunk.sizes) for name, meta in metadata.state_dict_metadata.items()
             for chunk in getattr(meta, "chunks", ())}  # tensors only: other values have no chunks
    return [SavedPiece(index.fqn, tuple(index.offset or ()), sizes[index.fqn, tuple(index.offset or ())],
                       info.relative_path, info.offset, info.length)
            for index, info in (metadata.storage_data or {}).items() if (index.fqn, tuple(index.offset or ())) in sizes]


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
    if Path(root).is_file():
        raise ValueError(f"{root} is a file, not a checkpoint directory")
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


def _few(names: set[str], shown: int = 6) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return (", ".join(sorted(names)[:shown]) + more) if names else "none"


@contextmanager
def _as_checkpoint_error(what: str, path: Path | str | os.PathLike[str]) -> Iterator[None]:
    """DCP's ``CheckpointException`` (a ``BaseException``, which ``except Exception`` misses) as a ``CheckpointError``
    naming each failed rank and its error."""
    try:
        yield
    except CheckpointException as err:
        failures = "; ".join(f"rank {r}: {type(e).__name__}: {e}" for r, (e, _) in sorted(err.failures.items()))
        raise CheckpointError(f"the {what} of {path} failed: {failures}") from err
