"""The completion marker of a checkpoint: what a load checks before it trusts a folder of files.

``COMPLETE.json`` is written by rank 0 once every rank's files are on disk (``parallel.checkpoint.save``).
It lists every file with its size and its CRC-32 checksum, the run's configuration (the settings that
decide what the state is: a seed, a learning rate, sizes) and a seal, the SHA-256 digest of the marker's
own other fields. ``read_marker`` refuses a folder whose marker is missing, malformed or unsealed, or whose
files are missing or differ from what was written (a bit flipped in any file is refused). The files'
checksums are CRC-32s, cheaper to compute than a cryptographic digest (each reads every byte the save
wrote): they guard against decay and torn writes, not against someone who rewrites the marker as well.
``check_config`` refuses a checkpoint of another configuration unless the caller allows it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

__all__ = ["MARKER", "CheckpointError", "IncompleteCheckpoint", "CheckpointMismatch", "Marker", "step_of",
           "as_config", "checksum", "write_marker", "read_marker", "check_config"]

MARKER = "COMPLETE.json"
_STEP_DIR = re.compile(r"step_(\d{8,})$")
_CHUNK = 1 << 20  # bytes hashed per read: a program setting


class CheckpointError(ValueError):
    """A checkpoint that cannot be saved or loaded as asked."""


class IncompleteCheckpoint(CheckpointError):
    """A checkpoint folder that is not complete: no marker, a malformed one, or files missing or changed."""


class CheckpointMismatch(CheckpointError):
    """A complete checkpoint that is not the one asked for: another configuration, or other tensors."""


@dataclass(frozen=True)
class Marker:
    """What ``COMPLETE.json`` records: the step, the ranks that saved it, the run, every file's size and
    CRC-32, the run's configuration, and ``seal``: the SHA-256 digest of all the other fields."""

    step: int
    world: int
    run_id: str
    files: dict[str, int] = field(default_factory=dict)
    crc32: dict[str, str] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    seal: str = ""

    def sealed(self) -> Marker:
        """This marker with its seal computed from its other fields."""
        return Marker(**{**asdict(self), "seal": _seal(self)})


def step_of(path: str | os.PathLike[str]) -> int | None:
    """The step a checkpoint folder is named after (``step_00000012`` -> 12, any number of digits), or None."""
    m = _STEP_DIR.match(Path(path).name)
    return int(m.group(1)) if m else None


def as_config(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """A configuration as the marker stores it (JSON: tuples become lists); ValueError if it is not JSON."""
    try:
        return dict(json.loads(json.dumps(dict(config or {}), sort_keys=True)))
    except (TypeError, ValueError) as err:
        raise ValueError(f"a checkpoint's configuration must be JSON (numbers, strings, lists): {err}") from None


def checksum(path: Path) -> str:
    """The CRC-32 of a file, as 8 hex digits."""
    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            crc = zlib.crc32(chunk, crc)
    return f"{crc:08x}"


def write_marker(path: Path, step: int, world: int, run_id: str, config: Mapping[str, Any] | None) -> None:
    """Write ``COMPLETE.json`` atomically (the file appears whole or not at all, and only on disk)."""
    names = [p.name for p in sorted(path.iterdir()) if p.is_file() and not p.name.startswith(MARKER)]
    marker = Marker(step, world, run_id, {n: (path / n).stat().st_size for n in names},
                    {n: checksum(path / n) for n in names}, as_config(config)).sealed()
    tmp = path / (MARKER + ".tmp")
    with open(tmp, "w") as f:
        f.write(json.dumps(asdict(marker), indent=1))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path / MARKER)
    folder = os.open(path, os.O_RDONLY)
    try:
        os.fsync(folder)  # the rename itself reaches the disk
    finally:
        os.close(folder)


def read_marker(path: str | os.PathLike[str]) -> Marker:
    """The marker of a complete checkpoint whose files are as written; ``IncompleteCheckpoint`` otherwise."""
    path = Path(path)
    if path.is_file():
        raise IncompleteCheckpoint(f"{path} is a file, not a checkpoint directory")
    if not path.is_dir():
        raise IncompleteCheckpoint(f"{path} is not a checkpoint folder (it does not exist)")
    try:
        text = (path / MARKER).read_bytes()
    except FileNotFoundError:
        raise IncompleteCheckpoint(f"{path} has no {MARKER}: its save never finished (the job died while "
                                   "writing it), so it may hold only some ranks' shards") from None
    marker = _parse(text, path)
    wrong = [name for name, size in marker.files.items()
             if not (path / name).is_file() or (path / name).stat().st_size != size
             or checksum(path / name) != marker.crc32[name]]
    if wrong:
        raise IncompleteCheckpoint(f"{path}: files missing or changed since the save (size or CRC-32): "
                                   f"{', '.join(sorted(wrong))}")
    return marker


def check_config(marker: Marker, config: Mapping[str, Any] | None, path: str | os.PathLike[str],
                 allow_other_config: bool = False) -> None:
    """``CheckpointMismatch`` naming each setting that differs, unless the configurations agree or it is allowed."""
    saved, now = marker.config, as_config(config)
    differ = sorted(k for k in saved.keys() | now.keys() if saved.get(k, _ABSENT) != now.get(k, _ABSENT))
    if differ and not allow_other_config:
        what = "; ".join(f"{k}: saved {saved.get(k, _ABSENT)}, now {now.get(k, _ABSENT)}" for k in differ)
        raise CheckpointMismatch(f"{path} was saved by another configuration ({what}); resuming it would continue "
                                 "that run's state under these settings. Allow it explicitly "
                                 "(allow_other_config=True, --allow-other-config) if that is meant")


# ---------------------------------------------------------------------------------------------------

_ABSENT = "(absent)"
_TYPES = {"step": int, "world": int, "run_id": str, "files": dict, "crc32": dict, "config": dict, "seal": str}


def _seal(marker: Marker) -> str:
    body = {k: v for k, v in asdict(marker).items() if k != "seal"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _parse(text: bytes, path: Path) -> Marker:
    """The marker in ``text``, checked field by field and against its seal; ``IncompleteCheckpoint`` if malformed."""
    bad = f"{path}/{MARKER} is malformed"
    try:
        raw = json.loads(text.decode())
    except (UnicodeDecodeError, ValueError) as err:
        raise IncompleteCheckpoint(f"{bad}: {err}") from None
    if not isinstance(raw, dict) or set(raw) != {f.name for f in fields(Marker)}:
        raise IncompleteCheckpoint(f"{bad}: expected an object with the fields {sorted(_TYPES)}")
    wrong = [k for k, kind in _TYPES.items() if not isinstance(raw[k], kind) or isinstance(raw[k], bool)]
    if wrong or set(raw["files"]) != set(raw["crc32"]) or not all(
            isinstance(v, int) and not isinstance(v, bool) and n == Path(n).name not in ("", ".", "..")
            for n, v in raw["files"].items()):
        raise IncompleteCheckpoint(f"{bad}: fields of the wrong kind: {wrong or ['files', 'crc32']}")
    marker = Marker(**raw)
    if marker.seal != _seal(marker):
        raise IncompleteCheckpoint(f"{bad}: its seal does not match its contents (changed since it was written)")
    if (named := step_of(path)) is not None and named != marker.step:
        raise IncompleteCheckpoint(f"{bad}: it says step {marker.step}, the folder says step {named}")
    return marker
