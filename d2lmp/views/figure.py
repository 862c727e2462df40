"""The one convention for figures: draw on the axes given (or a new figure), and show a widget's figure once.

Every plotting function in ``d2lmp.views`` takes plain data and an optional ``ax`` and returns its
matplotlib Figure; every widget callback draws with ``show``, which displays the figure in the
widget's output and closes it, so that the notebook does not draw it a second time. A label written beside a bar
or a point stays inside its axes: ``fit_x_to_labels`` widens the x range until it does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from collections.abc import Iterable

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.text import Annotation

__all__ = ["fig_ax", "fit_x_to_labels", "show"]


def fig_ax(ax: Axes | None = None, figsize: tuple[float, float] = (6.5, 4)) -> tuple[Figure, Axes]:
    """(figure, axes) to draw on: ``ax`` and its figure, or a new figure of ``figsize`` inches."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
    return cast("Figure", ax.figure), ax  # a top-level figure: these functions never draw on a subfigure


def show(fig: Figure) -> None:
    """Display ``fig`` (inside a widget's callback: in the widget's output) and close it."""
    import matplotlib.pyplot as plt
    from IPython.display import display

    display(fig)
    plt.close(fig)


def fit_x_to_labels(ax: Axes, labels: Iterable[Annotation]) -> None:
    """Widen ``ax``'s linear x range (its right end) until every label, each anchored at a data point and written
    to its right, ends inside the axes. Call it once the figure's layout is final (after ``tight_layout``)."""
    lo, hi = ax.get_xlim()
    box = ax.get_window_extent()
    needed = hi
    for label in labels:
        anchor_x = float(label.xy[0])
        anchor_px = ax.transData.transform((anchor_x, 0.0))[0]
        beyond = label.get_window_extent().x1 - anchor_px + 4  # how far the label reaches past its anchor, + 4 px
        if beyond < box.width:
            needed = max(needed, lo + (anchor_x - lo) * box.width / (box.width - beyond))
    ax.set_xlim(lo, needed)
