"""The rotating cube: a projected wireframe and a widget that turns it with two sliders."""

from __future__ import annotations

import numpy as np

from .figure import fig_ax, show

__all__ = ["plot_wireframe", "cube_widget"]


def plot_wireframe(points_2d, edges, ax=None, title: str = ""):
    """Draw a projected wireframe (e.g. the rotating cube of notebook 01)."""
    fig, ax = fig_ax(ax, figsize=(4, 4))
    pts = np.asarray(points_2d)
    for i, j in edges:
        ax.plot(pts[[i, j], 0], pts[[i, j], 1], "b-")
    ax.plot(pts[:, 0], pts[:, 1], "ro", ms=4)
    ax.set(xlim=(-3, 3), ylim=(-3, 3), aspect="equal", title=title)
    ax.axis("off")
    return fig


def cube_widget():
    """Rotate a cube with two sliders: every frame is one (8, 4) @ (4, 4) matrix product."""
    import ipywidgets as w

    from ..graphics import cube_edges, cube_vertices, project, rotation_x, rotation_y, transform_batched

    def draw(yaw=30, pitch=20):
        import math

        m = rotation_x(math.radians(pitch)) @ rotation_y(math.radians(yaw))
        pts = project(transform_batched(cube_vertices(), m))
        show(plot_wireframe(pts, cube_edges(), title=f"yaw {yaw}°, pitch {pitch}°"))

    return w.interactive(draw, yaw=w.IntSlider(30, 0, 360, 5, description="yaw (°)"),
                         pitch=w.IntSlider(20, -90, 90, 5, description="pitch (°)"))
