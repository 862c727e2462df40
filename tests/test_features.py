"""Hand-designed edge histograms, a network's learned features and the linear classifier that compares them."""

import math

import pytest
import torch

from d2lmp import models
from d2lmp.features import edge_histograms, learned_features, linear_accuracy


def test_edge_histograms_see_the_orientation_of_an_edge():
    vertical = torch.zeros(1, 1, 8, 8)
    vertical[..., 4:] = 1.0  # dark left half, light right half: a vertical edge, horizontal gradient
    horizontal = vertical.transpose(-1, -2)
    fv, fh = edge_histograms(vertical, cells=1, bins=4), edge_histograms(horizontal, cells=1, bins=4)
    assert fv.shape == (1, 4)
    assert fv[0].argmax() == 0  # gradient angle 0: bin [0, π/4)
    assert fh[0].argmax() == 2  # gradient angle π/2: bin [π/2, 3π/4)
    assert fv.norm() == pytest.approx(1.0, abs=1e-4)  # each cell's histogram has unit length
    assert torch.allclose(edge_histograms(1.0 - vertical, cells=1, bins=4), fv)  # light-to-dark counts alike


def test_edge_histograms_one_histogram_per_cell():
    images = torch.zeros(3, 1, 8, 8)
    images[0, 0, :4, :4] = torch.eye(4)  # a diagonal line in the top-left cell only
    f = edge_histograms(images, cells=2, bins=6).reshape(3, 2, 2, 6)
    assert f.shape == (3, 2, 2, 6)
    assert f[0, 0, 0].sum() > 0 and f[0, 1, 1].sum() == 0
    assert torch.all(f[1:] == 0)  # a blank image has no edges
    assert edge_histograms(images[:, 0], cells=2, bins=6).shape == (3, 24)  # (N, H, W) works too
    with pytest.raises(ValueError):
        edge_histograms(torch.zeros(2, 3), cells=2, bins=6)
    with pytest.raises(ValueError):
        edge_histograms(images, cells=16, bins=6)
    assert math.isfinite(float(f.sum()))


def test_learned_features_are_what_the_last_layer_reads():
    torch.manual_seed(0)
    net = models.alexnet_small(num_classes=10, in_channels=1)
    net.train()
    x = torch.randn(5, 1, 32, 32)
    f = learned_features(net, x, net.classifier.fc8, batch_size=2)
    assert f.shape == (5, 256) and net.training  # mode restored
    net.eval()
    with torch.no_grad():
        assert torch.allclose(net.classifier.fc8(f), net(x), atol=1e-5)
    assert not net.classifier.fc8._forward_hooks


def test_linear_accuracy_separates_separable_classes():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(200, 5, generator=g)
    y = (x[:, 0] > 0).long()
    assert linear_accuracy(x[:150], y[:150], x[150:], y[150:]) > 0.95
    assert linear_accuracy(x[:150].numpy(), y[:150].numpy(), x[150:].numpy(), y[150:].numpy()) > 0.95
