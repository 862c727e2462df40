"""Graphics as the first GPU workload: 4×4 matrices transforming many vertices.

A 3-D renderer moves every vertex of a scene with the same 4×4 matrix in homogeneous
coordinates (x, y, z, 1). One vertex is a matrix-vector product; all vertices at once
are a single matrix-matrix product, the operation deep learning also runs on.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

__all__ = ["cube_vertices", "cube_edges", "rotation_y", "rotation_x", "translation", "transform_loop",
           "transform_batched", "project", "TransformRate", "measure_transforms"]


def cube_vertices(dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The 8 corners of the cube [-1, 1]³ as homogeneous row vectors, shape (8, 4)."""
    corners = [(x, y, z, 1.0) for x in (-1.0, 1.0) for y in (-1.0, 1.0) for z in (-1.0, 1.0)]
    return torch.tensor(corners, dtype=dtype)


def cube_edges() -> list[tuple[int, int]]:
    """Pairs of vertex indices that differ in exactly one coordinate: the cube's 12 edges."""
    return [(i, j) for i in range(8) for j in range(i + 1, 8) if bin(i ^ j).count("1") == 1]


def rotation_y(angle: float) -> torch.Tensor:
    """4×4 rotation by ``angle`` radians about the y axis."""
    c, s = math.cos(angle), math.sin(angle)
    return torch.tensor([[c, 0, s, 0], [0, 1, 0, 0], [-s, 0, c, 0], [0, 0, 0, 1]], dtype=torch.float32)


def rotation_x(angle: float) -> torch.Tensor:
    """4×4 rotation by ``angle`` radians about the x axis."""
    c, s = math.cos(angle), math.sin(angle)
    return torch.tensor([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1]], dtype=torch.float32)


def translation(dx: float, dy: float, dz: float) -> torch.Tensor:
    """4×4 translation; homogeneous coordinates turn a shift into a matrix product."""
    m = torch.eye(4)
    m[:3, 3] = torch.tensor([dx, dy, dz])
    return m


def transform_loop(vertices: torch.Tensor, matrix: torch.Tensor) -> torch.Tensor:
    """One 4×4 matrix-vector product per vertex, in a Python loop (how one core would do it)."""
    if vertices.ndim != 2 or vertices.shape[1] != 4 or matrix.shape != (4, 4):
        raise ValueError(f"need vertices (N, 4) and a (4, 4) matrix, "
                         f"got {tuple(vertices.shape)} and {tuple(matrix.shape)}")
    return torch.stack([matrix @ v for v in vertices])


def transform_batched(vertices: torch.Tensor, matrix: torch.Tensor) -> torch.Tensor:
    """All vertices at once: (N, 4) @ (4, 4)ᵀ, one matrix-matrix product."""
    if vertices.ndim != 2 or vertices.shape[1] != 4 or matrix.shape != (4, 4):
        raise ValueError(f"need vertices (N, 4) and a (4, 4) matrix, "
                         f"got {tuple(vertices.shape)} and {tuple(matrix.shape)}")
    return vertices @ matrix.T.to(vertices.device, vertices.dtype)


def project(vertices: torch.Tensor, focal: float = 3.0) -> torch.Tensor:
    """Perspective projection of homogeneous points seen from z = focal: (N, 4) → (N, 2)."""
    depth = focal - vertices[:, 2]
    if torch.any(depth <= 0):
        raise ValueError("a vertex lies at or behind the camera; move it further away")
    return vertices[:, :2] * (focal / depth).unsqueeze(1)


@dataclass(frozen=True)
class TransformRate:
    """One method ("loop" or "batched"), device and vertex count of ``measure_transforms``: seconds, rate."""

    method: str
    device: str
    vertices: int
    seconds: float
    vertices_per_s: float


def measure_transforms(counts: Iterable[int], devices: Iterable[str] = ("cpu",), loop_limit: int = 2000,
                       min_time: float = 0.1) -> list[TransformRate]:
    """Vertices per second of the per-vertex loop and the batched product, for each vertex count.

    The loop runs on the CPU only and only up to ``loop_limit`` vertices (it is slow on
    purpose). Returns one ``TransformRate`` per method, device and count.
    """
    from d2lmp.timing import benchmark, resolve_device

    counts = list(counts)
    if not counts or any(not isinstance(n, int) or n <= 0 for n in counts):
        raise ValueError(f"vertex counts must be positive integers, got {counts}")
    names = [resolve_device(d) for d in devices]
    m = rotation_x(0.3) @ rotation_y(0.5)
    rows: list[TransformRate] = []
    for n in counts:
        v = torch.randn(n, 4)
        jobs: list[tuple[str, str, Callable[[], object]]] = []
        if n <= loop_limit:
            jobs.append(("loop", "cpu", functools.partial(transform_loop, v, m)))
        for d in names:
            vd, md = v.to(d), m.to(d)
            jobs.append(("batched", d, functools.partial(transform_batched, vd, md)))
        for method, device, fn in jobs:
            t = benchmark(fn, device, min_time=min_time).median
            rows.append(TransformRate(method=method, device=device, vertices=n, seconds=t, vertices_per_s=n / t))
    return rows
