"""The rotating cube: a projected wireframe, and a widget that turns it and shows the 4×4 matrix it applies."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from d2lmp.views.figure import fig_ax, show

if TYPE_CHECKING:
    import ipywidgets
    import numpy.typing as npt
    import torch
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["CAMERA_DISTANCE", "plot_wireframe", "format_matrix", "cube_matrix", "plot_cube_view", "cube_widget"]

# How far from the cube's centre the camera looks (``graphics.project``'s focal, in half-edges of the cube). At 3 the
# near face is twice the far one and a turned cube reads as a funnel; at 8 it reads as a cube, still in perspective.
CAMERA_DISTANCE = 8.0


def plot_wireframe(points_2d: torch.Tensor | npt.ArrayLike, edges: Iterable[tuple[int, int]], ax: Axes | None = None,
                   title: str = "") -> Figure:
    """Draw a projected wireframe (e.g. the rotating cube of notebook 01)."""
    fig, ax = fig_ax(ax, figsize=(4, 4))
    pts = np.asarray(points_2d)
    for i, j in edges:
        ax.plot(pts[[i, j], 0], pts[[i, j], 1], "b-")
    ax.plot(pts[:, 0], pts[:, 1], "ro", ms=4)
    ax.set(xlim=(-2.5, 2.5), ylim=(-2.5, 2.5), aspect="equal", title=title)
    ax.axis("off")
    return fig


def format_matrix(matrix: torch.Tensor | npt.ArrayLike, decimals: int = 3) -> str:
    """A matrix as aligned rows of numbers between brackets, e.g. for a 4×4 transform."""
    rows = np.asarray(matrix, dtype=float).round(decimals) + 0.0  # + 0.0 turns -0.0 into 0.0
    width = max(len(f"{v:.{decimals}f}") for v in rows.flat)
    return "\n".join("[ " + "  ".join(f"{v:>{width}.{decimals}f}" for v in row) + " ]" for row in rows)


def cube_matrix(yaw: float, pitch: float) -> torch.Tensor:
    """The 4×4 matrix that turns the cube: rotate by ``yaw`` degrees about y, then ``pitch`` about x."""
    import math

    from d2lmp.graphics import rotation_x, rotation_y

    return rotation_x(math.radians(pitch)) @ rotation_y(math.radians(yaw))


def plot_cube_view(yaw: float = 30, pitch: float = 20) -> Figure:
    """The cube turned by ``cube_matrix(yaw, pitch)`` and seen from ``CAMERA_DISTANCE``, with that matrix printed
    beside the picture."""
    import matplotlib.pyplot as plt

    from d2lmp.graphics import cube_edges, cube_vertices, project, transform_batched

    m = cube_matrix(yaw, pitch)
    fig, (ax_cube, ax_m) = plt.subplots(1, 2, figsize=(8, 4), gridspec_kw=dict(width_ratios=(1, 1.1)))
    plot_wireframe(project(transform_batched(cube_vertices(), m), CAMERA_DISTANCE), cube_edges(), ax=ax_cube,
                   title=f"yaw {yaw}°, pitch {pitch}°")
    ax_m.axis("off")
    text = "M =\n" + format_matrix(m) + "\n\nall 8 vertices (rows of V) at once:\nV' = V Mᵀ, one (8, 4) @ (4, 4)"
    ax_m.text(0.0, 0.5, text, family="monospace", fontsize=10, va="center", ha="left", transform=ax_m.transAxes)
    fig.tight_layout()
    return fig


def cube_widget() -> ipywidgets.interactive:
    """Rotate a cube with two sliders: every frame is one (8, 4) @ (4, 4) product, with its matrix shown."""
    import ipywidgets as w

    def draw(yaw: int = 30, pitch: int = 20) -> None:
        show(plot_cube_view(yaw, pitch))

    return w.interactive(draw, yaw=w.IntSlider(30, 0, 360, 5, description="yaw (°)"),
                         pitch=w.IntSlider(20, -90, 90, 5, description="pitch (°)"))
