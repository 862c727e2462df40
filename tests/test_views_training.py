"""Training curves: the history figure, and the live plot that train() redraws after each epoch."""

import torch
from torch.utils.data import DataLoader, TensorDataset

from d2lmp.train import train
from d2lmp.views.training import LivePlot, plot_history


def _blobs(n=200, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 2, (n,), generator=g)
    x = torch.randn(n, 2, generator=g) + 3 * y[:, None].float()
    return DataLoader(TensorDataset(x, y), batch_size=32)


class _Handle:
    """Stands in for the notebook's display handle: counts the redraws."""

    def __init__(self):
        self.updates = 0

    def update(self, fig):
        self.updates += 1


def test_history_figure_and_live_plot(monkeypatch):
    handle = _Handle()
    monkeypatch.setattr("IPython.display.display", lambda *objs, **kw: handle)
    torch.manual_seed(0)
    live = LivePlot(epochs=3)
    h = train(torch.nn.Linear(2, 2), _blobs(), _blobs(seed=1), epochs=3, lr=0.2, progress=False, on_epoch=live)
    assert handle.updates == 3
    assert [line.get_label() for line in live.ax_acc.lines] == ["train accuracy", "test accuracy"]
    fig = plot_history(h)
    assert len(fig.axes) == 2
