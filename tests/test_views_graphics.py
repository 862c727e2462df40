"""The cube's figure shows the picture and the 4×4 matrix that made it."""

import math

import matplotlib.pyplot as plt
import torch

from d2lmp import graphics
from d2lmp.views.graphics import cube_matrix, format_matrix, plot_cube_view


def test_format_matrix_aligns_rows_and_drops_negative_zero():
    text = format_matrix(torch.tensor([[1.0, -0.0], [-0.5, 12.25]]), decimals=2)
    assert text.splitlines() == ["[  1.00   0.00 ]", "[ -0.50  12.25 ]"]


def test_cube_matrix_is_the_rotation_the_figure_shows():
    m = cube_matrix(30, 20)
    expected = graphics.rotation_x(math.radians(20)) @ graphics.rotation_y(math.radians(30))
    assert torch.allclose(m, expected)
    fig = plot_cube_view(30, 20)
    texts = [t.get_text() for t in fig.axes[1].texts]
    assert any(format_matrix(m) in t for t in texts)
    assert fig.axes[0].get_title() == "yaw 30°, pitch 20°"
    plt.close(fig)
