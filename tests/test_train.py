"""The training loop: history, accuracy, device choice, the small-AlexNet benchmark (untimed)."""

import pytest
import torch
from conftest import requires_cuda
from torch.utils.data import DataLoader, TensorDataset

from d2lmp.train import History, accuracy, choose_device, train, train_small_alexnet


def _blobs(n=200, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 2, (n,), generator=g)
    x = torch.randn(n, 2, generator=g) + 3 * y[:, None].float()
    return DataLoader(TensorDataset(x, y), batch_size=32)


def test_train_returns_history_and_learns():
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 2)
    seen = []
    h = train(model, _blobs(), _blobs(seed=1), epochs=3, lr=0.2, progress=False,
              on_epoch=lambda history: seen.append(list(history.epoch)))
    assert isinstance(h, History) and h.epoch == [1, 2, 3]
    assert h.device == choose_device(None)[0]  # the default: this machine's accelerator if any, else the CPU
    assert h.train_loss[-1] < h.train_loss[0] and h.final_test_acc > 0.8
    assert h.seconds == sorted(h.seconds) and h.total_seconds > 0
    assert set(h.as_dict()) == {"epoch", "train_loss", "train_acc", "test_acc", "seconds", "device"}
    assert seen == [[1], [1, 2], [1, 2, 3]]  # on_epoch sees the history after each epoch


def test_bad_arguments():
    model = torch.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="epochs"):
        train(model, _blobs(), _blobs(), epochs=0, progress=False)
    with pytest.raises(ValueError, match="optimizer"):
        train(model, _blobs(), _blobs(), optimizer="lbfgs", progress=False)
    with pytest.raises(ValueError, match="available"):
        choose_device("cuda:7")


def test_choose_device_says_why():
    device, why = choose_device()
    assert device in ("cpu", "cuda:0") and len(why) > 10


def test_accuracy_restores_training_mode():
    model = torch.nn.Linear(2, 2).train()
    assert 0 <= accuracy(model, _blobs()) <= 1 and model.training


@pytest.mark.slow
def test_small_alexnet_learns_the_digits():
    # Two epochs only, to keep the unit tests fast; `d2lmp bench train` runs the full benchmark.
    model, history, data = train_small_alexnet(epochs=2, progress=False)
    assert history.test_acc[-1] > 0.3 and history.train_loss[-1] < history.train_loss[0]


@requires_cuda
def test_small_alexnet_trains_on_cuda():
    model, history, _ = train_small_alexnet(epochs=3, device="cuda", progress=False)
    assert history.device == "cuda:0" and history.train_loss[-1] < history.train_loss[0]


def test_bench_train_command_prints_accuracy_and_time(capsys):
    from d2lmp.commands.main import main

    assert main(["bench", "train", "--epochs", "1", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "test accuracy" in out and " s (" in out
    assert "goal: test accuracy after 1 epochs >= 90%: " in out and "goal: training time <= 60 s: " in out
