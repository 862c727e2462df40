"""A small training loop: device choice, a progress bar, a call after each epoch (e.g. a live plot), a history."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import torch
from torch import nn

if TYPE_CHECKING:
    from d2lmp.data import Dataset

__all__ = ["choose_device", "Loader", "History", "accuracy", "train", "train_small_alexnet"]


def choose_device(device: str | None = None) -> tuple[str, str]:
    """(device, one sentence saying why): the first CUDA GPU if there is one, else the CPU."""
    if device is not None:
        from d2lmp.timing import resolve_device

        return resolve_device(device), f"using {device}, as asked"
    if torch.cuda.is_available():
        return "cuda:0", f"using cuda:0 ({torch.cuda.get_device_name(0)})"
    return "cpu", f"no CUDA GPU visible to torch, so training runs on the CPU ({torch.get_num_threads()} threads)"


class Loader(Protocol):
    """What the loop reads: batches of (inputs, labels), and how many there are (a ``DataLoader``, a list)."""

    def __iter__(self) -> Iterator[Sequence[torch.Tensor]]: ...

    def __len__(self) -> int: ...


@dataclass
class History:
    """Per-epoch records of a training run."""

    epoch: list[int] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    train_acc: list[float] = field(default_factory=list)
    test_acc: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)  # wall time since the start, at each epoch's end
    device: str = "cpu"

    @property
    def final_test_acc(self) -> float:
        return self.test_acc[-1] if self.test_acc else float("nan")

    @property
    def total_seconds(self) -> float:
        return self.seconds[-1] if self.seconds else 0.0

    def as_dict(self) -> dict[str, list[int] | list[float] | str]:
        """The fields by name (for a JSON report)."""
        return dict(epoch=self.epoch, train_loss=self.train_loss, train_acc=self.train_acc,
                    test_acc=self.test_acc, seconds=self.seconds, device=self.device)


def accuracy(model: nn.Module, loader: Loader, device: str = "cpu") -> float:
    """Fraction of correctly classified examples in ``loader`` (model in eval mode, no autograd)."""
    was_training = model.training
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            pred = model(x.to(device)).argmax(dim=1)
            correct += int((pred == y.to(device)).sum())
            total += len(y)
    model.train(was_training)
    return correct / max(total, 1)


def train(model: nn.Module, train_loader: Loader, test_loader: Loader, epochs: int = 5, lr: float = 1e-3,
          optimizer: str = "adam", device: str | None = None, progress: bool = True,
          on_epoch: Callable[[History], None] | None = None, weight_decay: float = 0.0) -> History:
    """Train ``model`` with cross-entropy; evaluate on ``test_loader`` after each epoch.

    ``optimizer``: "adam" or "sgd" (momentum 0.9, as in the AlexNet paper). ``progress`` shows a
    tqdm bar (a widget in notebooks); ``on_epoch``, if given, is called with the ``History`` after
    each epoch (a notebook passes ``d2lmp.views.training.LivePlot(epochs)`` to redraw the curves
    in place). Returns the ``History``.
    """
    from tqdm.auto import tqdm

    if epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    if optimizer not in ("adam", "sgd"):
        raise ValueError(f"optimizer must be 'adam' or 'sgd', got {optimizer!r}")
    device, _ = choose_device(device)
    model.to(device)
    opt = (torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay) if optimizer == "adam"
           else torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=weight_decay))
    loss_fn = nn.CrossEntropyLoss()
    history = History(device=device)
    bar = tqdm(total=epochs * len(train_loader), desc="training", disable=not progress)
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        model.train()
        loss_sum = 0.0
        correct = seen = 0
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            out = model(x)
            loss = loss_fn(out, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += float(loss.detach()) * len(y)
            correct += int((out.argmax(1) == y).sum())
            seen += len(y)
            bar.update(1)
        history.epoch.append(epoch)
        history.train_loss.append(loss_sum / seen)
        history.train_acc.append(correct / seen)
        history.test_acc.append(accuracy(model, test_loader, device))
        if device.startswith("cuda"):
            torch.cuda.synchronize(device)
        history.seconds.append(time.perf_counter() - start)
        bar.set_postfix(loss=f"{history.train_loss[-1]:.3f}", test_acc=f"{history.test_acc[-1]:.3f}")
        if on_epoch is not None:
            on_epoch(history)
    bar.close()
    return history


def train_small_alexnet(epochs: int = 10, batch_size: int = 64, lr: float = 2e-3, width: int = 16, seed: int = 0,
                        device: str | None = None, progress: bool = True,
                        on_epoch: Callable[[History], None] | None = None) -> tuple[nn.Sequential, History, Dataset]:
    """The quick benchmark: ``models.alexnet_small`` on the offline digits (resized to 32×32).

    Returns (model, history, dataset).
    """
    from d2lmp.config import set_seed
    from d2lmp.data import load_digits
    from d2lmp.models import alexnet_small

    set_seed(seed)
    data = load_digits(resize=32, seed=seed)
    model = alexnet_small(num_classes=10, in_channels=1, width=width)
    train_loader, test_loader = data.loaders(batch_size=batch_size, seed=seed)
    history = train(model, train_loader, test_loader, epochs=epochs, lr=lr, device=device,
                    progress=progress, on_epoch=on_epoch)
    return model, history, data
