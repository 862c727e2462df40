"""The one convention for figures: draw on the axes given (or a new figure), and show a widget's figure once.

Every plotting function in ``d2lmp.views`` takes plain data and an optional ``ax`` and returns its
matplotlib Figure; every widget callback draws with ``show``, which displays the figure in the
widget's output and closes it, so that the notebook does not draw it a second time.
"""

from __future__ import annotations

from typing import Any

__all__ = ["fig_ax", "show"]


def fig_ax(ax: Any = None, figsize: tuple[float, float] = (6.5, 4)) -> tuple[Any, Any]:
    """(figure, axes) to draw on: ``ax`` and its figure, or a new figure of ``figsize`` inches."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
    return ax.figure, ax


def show(fig) -> None:
    """Display ``fig`` (inside a widget's callback: in the widget's output) and close it."""
    import matplotlib.pyplot as plt
    from IPython.display import display

    display(fig)
    plt.close(fig)
