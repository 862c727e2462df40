"""Features for a linear classifier: raw pixels, hand-designed edge histograms, or a trained network's own.

AlexNet's lesson is that features learned from data beat features designed by hand. To measure it, the
same linear classifier (multinomial logistic regression) is trained on three descriptions of the same
images: the pixels themselves, histograms of oriented edge gradients (the idea of HOG, Dalal and Triggs,
CVPR 2005, without its block normalisation), and the activations a trained CNN computes just before its
last layer.
"""

from __future__ import annotations

import math
from typing import Any

import numpy.typing as npt
import torch

__all__ = ["edge_histograms", "learned_features", "linear_accuracy"]


def edge_histograms(images: torch.Tensor, cells: int = 4, bins: int = 8) -> torch.Tensor:
    """Hand-designed features: per cell of a ``cells``×``cells`` grid, a histogram of edge orientations.

    ``images``: (N, 1, H, W) or (N, H, W). At each pixel the gradient (central differences) has a
    strength and an orientation in [0, π) (an edge from dark to light and from light to dark count
    alike); each pixel adds its strength to its orientation's bin in its cell, and each cell's
    histogram is scaled to unit length. Returns (N, cells·cells·bins).
    """
    x = images[:, 0] if images.dim() == 4 else images
    if x.dim() != 3 or cells < 1 or bins < 1 or min(x.shape[1:]) < cells:
        raise ValueError(f"need images (N, [1,] H, W) with H, W ≥ cells ≥ 1 and bins ≥ 1, "
                         f"got shape {tuple(images.shape)}, cells={cells}, bins={bins}")
    x = x.float()
    gx, gy = torch.zeros_like(x), torch.zeros_like(x)
    gx[:, :, 1:-1] = x[:, :, 2:] - x[:, :, :-2]  # horizontal change
    gy[:, 1:-1, :] = x[:, 2:, :] - x[:, :-2, :]  # vertical change
    strength = torch.hypot(gx, gy)
    orientation = torch.atan2(gy, gx) % math.pi
    which_bin = (orientation / math.pi * bins).long().clamp(max=bins - 1)
    votes = torch.nn.functional.one_hot(which_bin, bins) * strength.unsqueeze(-1)  # (N, H, W, bins)
    n, h, w = x.shape
    ch, cw = h // cells, w // cells  # pixels per cell; a remainder at the edge is left out
    hist: torch.Tensor = votes[:, :ch * cells, :cw * cells].reshape(n, cells, ch, cells, cw, bins).sum(dim=(2, 4))
    hist = hist / (hist.norm(dim=-1, keepdim=True) + 1e-6)
    return hist.flatten(1)


@torch.no_grad()
def learned_features(model: torch.nn.Module, images: torch.Tensor, layer: torch.nn.Module,
                     batch_size: int = 512) -> torch.Tensor:
    """What ``model`` feeds into ``layer`` (e.g. its last Linear: the penultimate activations), in eval mode.

    The model's training mode is restored afterwards. Returns (N, features) on the CPU.
    """
    captured = []
    handle = layer.register_forward_hook(lambda module, inputs, output: captured.append(inputs[0].flatten(1).cpu()))
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    try:
        for start in range(0, len(images), batch_size):
            model(images[start:start + batch_size].to(device))
    finally:
        handle.remove()
        model.train(was_training)
    return torch.cat(captured)


def _as_numpy(t: torch.Tensor | npt.NDArray[Any]) -> npt.NDArray[Any]:
    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else t


def linear_accuracy(x_train: torch.Tensor | npt.NDArray[Any], y_train: torch.Tensor | npt.NDArray[Any],
                    x_test: torch.Tensor | npt.NDArray[Any], y_test: torch.Tensor | npt.NDArray[Any],
                    max_iter: int = 1000) -> float:
    """Test accuracy of multinomial logistic regression (scikit-learn) trained on (x_train, y_train).

    Features are standardised with the training set's mean and spread first, so that every kind of
    feature meets the same classifier on the same footing. The fit runs on one BLAS thread: these
    matrices are small, and more threads only wait for one another on a busy machine.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    x_train, x_test = _as_numpy(x_train).reshape(len(x_train), -1), _as_numpy(x_test).reshape(len(x_test), -1)
    classifier = make_pipeline(StandardScaler(), LogisticRegression(max_iter=max_iter))
    with threadpool_limits(1):
        classifier.fit(x_train, _as_numpy(y_train))
        return float(classifier.score(x_test, _as_numpy(y_test)))
