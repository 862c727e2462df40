"""Training curves: loss and accuracy per epoch, drawn once or redrawn live while ``train.train`` runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from d2lmp.train import History

__all__ = ["plot_history", "LivePlot"]


def plot_history(history: History, axes: Sequence[Axes] | None = None, epochs: int | None = None) -> Figure:
    """Training loss (left) and train/test accuracy (right) per epoch from a ``train.History``."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    ax_loss, ax_acc = axes
    ax_loss.plot(history.epoch, history.train_loss, "o-", label="training loss")
    ax_acc.plot(history.epoch, history.train_acc, "o-", label="train accuracy")
    ax_acc.plot(history.epoch, history.test_acc, "s-", label="test accuracy")
    last = epochs or (history.epoch[-1] if history.epoch else 1)
    for ax in axes:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlim(0.5, last + 0.5)
        ax.set_xlabel("epoch")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    ax_loss.set(ylabel="cross-entropy", title="loss")
    ax_acc.set(ylabel="accuracy", ylim=(0, 1.02), title=f"accuracy on {history.device}")
    fig = cast("Figure", ax_loss.figure)
    fig.tight_layout()
    return fig


class LivePlot:
    """A loss/accuracy figure updated in place in a notebook: one display, redrawn each epoch.

    Pass it as ``train.train(..., on_epoch=LivePlot(epochs))``: it is called with the
    ``History`` after every epoch.
    """

    def __init__(self, epochs: int) -> None:
        import matplotlib.pyplot as plt
        from IPython.display import display

        self.fig, (self.ax_loss, self.ax_acc) = plt.subplots(1, 2, figsize=(9, 3.2))
        self.epochs = epochs
        self.handle = display(self.fig, display_id=True)
        plt.close(self.fig)

    def __call__(self, history: History) -> None:
        self.ax_loss.clear()
        self.ax_acc.clear()
        plot_history(history, axes=(self.ax_loss, self.ax_acc), epochs=self.epochs)
        self.handle.update(self.fig)
