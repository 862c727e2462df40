import math

import pytest
import torch

from d2lmp.graphics import (
    cube_edges,
    cube_vertices,
    project,
    rotation_x,
    rotation_y,
    transform_batched,
    transform_loop,
    translation,
)


def test_cube():
    assert cube_vertices().shape == (8, 4)
    assert len(cube_edges()) == 12


def test_loop_equals_batched():
    v = torch.randn(50, 4)
    m = rotation_x(0.3) @ rotation_y(1.1) @ translation(1, 2, 3)
    torch.testing.assert_close(transform_loop(v, m), transform_batched(v, m))


def test_rotation_keeps_lengths_and_translation_moves_points():
    v = cube_vertices()
    r = transform_batched(v, rotation_y(math.pi / 5))
    torch.testing.assert_close(r[:, :3].norm(dim=1), v[:, :3].norm(dim=1))
    t = transform_batched(v, translation(1, 0, 0))
    torch.testing.assert_close(t[:, 0], v[:, 0] + 1)


def test_projection_and_errors():
    p = project(cube_vertices())
    assert p.shape == (8, 2)
    with pytest.raises(ValueError, match="behind the camera"):
        project(transform_batched(cube_vertices(), translation(0, 0, 5)))
    with pytest.raises(ValueError, match=r"\(N, 4\)"):
        transform_batched(torch.ones(3, 3), torch.eye(4))


def test_measure_transforms_rows_and_loop_limit():
    from d2lmp.graphics import measure_transforms

    rows = measure_transforms([10, 100], loop_limit=50, min_time=0.01)
    assert [(r.method, r.vertices) for r in rows] == [("loop", 10), ("batched", 10), ("batched", 100)]
    for r in rows:
        assert r.vertices_per_s == pytest.approx(r.vertices / r.seconds)
    with pytest.raises(ValueError, match="positive"):
        measure_transforms([0])
