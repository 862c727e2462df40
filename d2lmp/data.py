"""Data that works offline on first run, and an optional Fashion-MNIST download.

The offline default is scikit-learn's handwritten digits (1,797 real 8×8 grey-scale images
shipped inside scikit-learn, no download), resized to what the model needs. Fashion-MNIST
(70,000 28×28 images) is downloaded on request to a cache folder, checked against the
published MD5 sums, and parsed from its IDX files here, with no torchvision.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import struct
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import torch

if TYPE_CHECKING:
    from torch.utils.data import DataLoader

__all__ = ["OFFLINE_DEFAULT", "Dataset", "load_digits", "read_idx", "write_idx", "FASHION_MNIST_MIRRORS",
           "FASHION_MNIST_FILES", "FASHION_MNIST_CLASSES", "DataUnavailable", "cache_dir", "md5sum", "fetch",
           "fashion_mnist_present", "load_fashion_mnist"]

OFFLINE_DEFAULT = "load_digits()"
PathLike = str | os.PathLike[str]


@dataclass
class Dataset:
    """Train and test tensors: images (N, 1, H, W) float32, labels (N,) int64."""

    name: str
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    classes: tuple[str, ...]

    def loaders(self, batch_size: int = 64, shuffle: bool = True,
                seed: int = 0) -> tuple[DataLoader[tuple[torch.Tensor, ...]], DataLoader[tuple[torch.Tensor, ...]]]:
        """(train, test) ``DataLoader``s over the tensors (the train loader shuffles with ``seed``)."""
        from torch.utils.data import DataLoader, TensorDataset

        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        g = torch.Generator().manual_seed(seed)
        train = DataLoader(TensorDataset(self.x_train, self.y_train), batch_size=batch_size, shuffle=shuffle,
                           generator=g)
        test = DataLoader(TensorDataset(self.x_test, self.y_test), batch_size=256)
        return train, test

    def __repr__(self) -> str:
        return (f"Dataset({self.name}: {len(self.x_train)} train, {len(self.x_test)} test, "
                f"images {tuple(self.x_train.shape[1:])}, {len(self.classes)} classes)")


def _resize(x: torch.Tensor, size: int | None) -> torch.Tensor:
    import torch.nn.functional as F

    if size is None or size == x.shape[-1]:
        return x
    if size < 1:
        raise ValueError(f"resize must be a positive size, got {size}")
    return F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)


def _standardise(train: torch.Tensor, test: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    mean, std = train.mean(), train.std()
    return (train - mean) / std, (test - mean) / std


def load_digits(resize: int | None = 32, test_fraction: float = 0.2, seed: int = 0) -> Dataset:
    """scikit-learn's handwritten digits: 1,797 images, 8×8, ten classes; no download needed.

    Images are scaled to [0, 1], resized (bilinear) to ``resize``×``resize`` (None keeps 8×8),
    split at random (``seed``) with ``test_fraction`` held out, then standardised with the
    training set's mean and standard deviation.
    """
    from sklearn.datasets import load_digits as sk_digits

    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must lie strictly between 0 and 1, got {test_fraction}")
    bunch = sk_digits()
    x = torch.tensor(bunch.images, dtype=torch.float32).unsqueeze(1) / 16.0  # pixel values are 0..16
    y = torch.tensor(bunch.target, dtype=torch.int64)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    n_test = int(round(len(y) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    x = _resize(x, resize)
    x_train, x_test = _standardise(x[train], x[test])
    return Dataset("digits (scikit-learn)", x_train, y[train], x_test, y[test], tuple(str(i) for i in range(10)))


# ---------------------------------------------------------------------------------------
# IDX files and Fashion-MNIST

_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: PathLike) -> npt.NDArray[Any]:
    """Parse an IDX file (MNIST's format; gzip-compressed if the name ends in .gz).

    Layout: two zero bytes, a type byte (0x08 unsigned byte … 0x0E double), the number of
    dimensions, each dimension as a big-endian 32-bit integer, then the data, big-endian.
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(f"{path.name} is not an IDX file (it must start with two zero bytes)")
    code, ndim = data[2], data[3]
    if code not in _IDX_TYPES:
        raise ValueError(f"{path.name}: unknown IDX type code 0x{code:02x}; known: "
                         + ", ".join(f"0x{c:02x}" for c in _IDX_TYPES))
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"{path.name}: truncated header ({len(data)} bytes, {ndim} dimensions declared)")
    shape = struct.unpack(f">{ndim}I", data[4:header])
    dtype = np.dtype(_IDX_TYPES[code])
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(data) - header != expected:
        raise ValueError(f"{path.name}: shape {shape} needs {expected} data bytes, found {len(data) - header}")
    return np.frombuffer(data, dtype=dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


def write_idx(path: PathLike, array: npt.ArrayLike) -> Path:
    """Write ``array`` as an IDX file (gzip-compressed if the name ends in .gz); used by the tests."""
    array = np.asarray(array)
    codes = {np.dtype(v).newbyteorder("="): k for k, v in _IDX_TYPES.items()}
    code = codes.get(array.dtype.newbyteorder("="))
    if code is None:
        raise ValueError(f"IDX cannot store dtype {array.dtype}; use uint8, int8, int16, int32, float32 or float64")
    payload = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape) \
        + array.astype(np.dtype(_IDX_TYPES[code])).tobytes()
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wb") as f:
        f.write(payload)
    return path


FASHION_MNIST_MIRRORS = (
    "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/",
    "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
)
# Published MD5 sums of the four files (the same as torchvision's FashionMNIST resources).
FASHION_MNIST_FILES = {
    "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
    "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
    "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
    "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310",
}
FASHION_MNIST_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                         "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")


class DataUnavailable(RuntimeError):
    """A download failed (typically: no internet); the message names the offline default."""

    attempts: list[str]  # set by ``fetch``: one line per mirror tried


def cache_dir() -> Path:
    """Where downloads go: ``$D2LMP_DATA`` if set, else ~/.cache/d2lmp."""
    return Path(os.environ.get("D2LMP_DATA") or Path.home() / ".cache" / "d2lmp")


def md5sum(path: PathLike) -> str:
    """The MD5 hex digest of a file."""
    digest = hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(name: str, md5: str, folder: PathLike, mirrors: Sequence[str] = FASHION_MNIST_MIRRORS,
          timeout: float = 30.0) -> Path:
    """Return ``folder/name``, downloading it from the first mirror that answers if it is missing.

    A cached file is used only if its MD5 matches; a download whose MD5 does not match is
    deleted and reported. With no mirror reachable, raises ``DataUnavailable``.
    """
    folder = Path(folder)
    target = folder / name
    if target.exists():
        if md5sum(target) == md5:
            return target
        target.unlink()  # a partial or corrupted earlier download
    folder.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    for base in mirrors:
        tmp = target.with_suffix(target.suffix + ".part")
        try:
            with urllib.request.urlopen(base + name, timeout=timeout) as response, open(tmp, "wb") as out:
                while chunk := response.read(1 << 20):
                    out.write(chunk)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            errors.append(f"{base}: {exc}")
            tmp.unlink(missing_ok=True)
            continue
        got = md5sum(tmp)
        if got != md5:
            tmp.unlink()
            raise ValueError(f"checksum mismatch for {name} from {base}: MD5 {got}, expected {md5}")
        tmp.replace(target)
        return target
    error = DataUnavailable(f"Could not download {name} (no internet connection?), so use the offline default "
                            f"data set, d2lmp.data.{OFFLINE_DEFAULT}, instead.")
    error.attempts = errors  # one line per mirror tried, for whoever wants the details
    raise error


def fashion_mnist_present(folder: PathLike | None = None) -> bool:
    """True when all four Fashion-MNIST files are already in ``folder`` (default: the cache), so that
    ``load_fashion_mnist`` needs no download. Only their presence is checked here; loading checks the MD5s."""
    folder = Path(folder) if folder is not None else cache_dir() / "fashion-mnist"
    return all((folder / name).is_file() for name in FASHION_MNIST_FILES)


def load_fashion_mnist(resize: int | None = None, folder: PathLike | None = None,
                       mirrors: Sequence[str] = FASHION_MNIST_MIRRORS, files: Mapping[str, str] | None = None,
                       timeout: float = 30.0) -> Dataset:
    """Fashion-MNIST (60,000 train, 10,000 test, 28×28), downloaded once to ``folder``.

    ``folder`` defaults to ``cache_dir() / "fashion-mnist"``; ``files`` maps the four file
    names to their MD5 sums (default: the published ones). Offline, raises ``DataUnavailable``
    with one sentence naming the offline default, ``load_digits()``.
    """
    folder = Path(folder) if folder is not None else cache_dir() / "fashion-mnist"
    files = dict(FASHION_MNIST_FILES if files is None else files)
    paths = {name: fetch(name, md5, folder, mirrors, timeout) for name, md5 in files.items()}

    def part(prefix: str) -> tuple[torch.Tensor, torch.Tensor]:
        images = read_idx(paths[f"{prefix}-images-idx3-ubyte.gz"])
        labels = read_idx(paths[f"{prefix}-labels-idx1-ubyte.gz"])
        if len(images) != len(labels):
            raise ValueError(f"{prefix}: {len(images)} images but {len(labels)} labels")
        x = torch.tensor(images, dtype=torch.float32).unsqueeze(1) / 255.0
        return _resize(x, resize), torch.tensor(labels, dtype=torch.int64)

    x_train, y_train = part("train")
    x_test, y_test = part("t10k")
    x_train, x_test = _standardise(x_train, x_test)
    return Dataset("Fashion-MNIST", x_train, y_train, x_test, y_test, FASHION_MNIST_CLASSES)
