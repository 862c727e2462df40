"""AlexNet's original two-GPU layout (Krizhevsky et al. 2012, §3.2 and Fig. 2) on two ranks.

Rank t holds tower t: half of every layer's kernels (and neurons). The towers talk
exactly where the paper's network crosses GPUs:

* conv3 reads all of conv2's maps: all-gather the pooled conv2 maps (backward: reduce-scatter);
* fc6, fc7 and fc8 read every neuron of the layer below: all-gather before each;
* the two halves of fc8's output are gathered for the softmax/loss, computed on both ranks.

conv1, conv2, conv4 and conv5 (and the response normalisations) stay within a tower.
Built from a single-device ``models.alexnet2012``, whose ``groups=2`` layers and
``TowerLRN`` are that same split, so the two ranks reproduce its outputs and gradients.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn import functional as F

from d2lmp.models import tower_lrn
from d2lmp.parallel.tensor_parallel import gather_for_split_compute, gather_from_parallel

__all__ = ["TowerConv", "TowerLinear", "AlexNetTower", "crossing_bytes"]


def _rows(t: torch.Tensor, rank: int, towers: int = 2) -> nn.Parameter:
    size = t.shape[0] // towers
    return nn.Parameter(t.detach()[rank * size:(rank + 1) * size].clone())


class TowerConv(nn.Module):
    """Tower ``rank``'s share of a convolution's output channels (its own input maps or all of them)."""

    def __init__(self, full: nn.Conv2d, rank: int) -> None:
        super().__init__()
        self.weight, self.bias = _rows(full.weight, rank), _rows(full.bias, rank)  # type: ignore[arg-type]
        self.stride, self.padding = full.stride, full.padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding)


class TowerLinear(nn.Module):
    """Tower ``rank``'s share of a fully connected layer's neurons, reading every input."""

    def __init__(self, full: nn.Linear, rank: int) -> None:
        super().__init__()
        self.weight, self.bias = _rows(full.weight, rank), _rows(full.bias, rank)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight, self.bias)


class AlexNetTower(nn.Module):
    """One rank's tower of a two-GPU AlexNet, built from the single-device ``alexnet2012``."""

    def __init__(self, full: nn.Module) -> None:
        super().__init__()
        if dist.get_world_size() != 2:
            raise ValueError(f"the 2012 layout has exactly two towers; this group has {dist.get_world_size()} ranks")
        rank = dist.get_rank()
        f: Any = full.features  # alexnet2012's layers, by name
        c: Any = full.classifier
        self.conv1, self.conv2 = TowerConv(f.conv1, rank), TowerConv(f.conv2, rank)
        self.conv3, self.conv4, self.conv5 = (TowerConv(f.conv3, rank), TowerConv(f.conv4, rank),
                                              TowerConv(f.conv5, rank))
        self.fc6, self.fc7, self.fc8 = TowerLinear(c.fc6, rank), TowerLinear(c.fc7, rank), TowerLinear(c.fc8, rank)
        self.lrn = tower_lrn  # the paper's LRN, applied to this tower's maps only
        self.drop6, self.drop7 = c.drop6, c.drop7
        self.pool = nn.MaxPool2d(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.lrn(F.relu(self.conv1(x))))                     # own 48 maps
        x = self.pool(self.lrn(F.relu(self.conv2(x))))                     # own 128 maps from own 48
        x = gather_for_split_compute(x, 1, "conv2 → conv3 (all maps)")     # cross-GPU
        x = F.relu(self.conv3(x))                                          # own 192 maps from all 256
        x = F.relu(self.conv4(x))                                          # own 192 from own 192
        x = self.pool(F.relu(self.conv5(x)))                               # own 128 from own 192
        x = gather_for_split_compute(x.flatten(1), 1, "pool5 → fc6")       # cross-GPU
        x = self.drop6(F.relu(self.fc6(x)))
        x = gather_for_split_compute(x, 1, "fc6 → fc7")                    # cross-GPU
        x = self.drop7(F.relu(self.fc7(x)))
        x = gather_for_split_compute(x, 1, "fc7 → fc8")                    # cross-GPU
        return gather_from_parallel(self.fc8(x), 1, "fc8 → softmax")       # both ranks hold all logits


def crossing_bytes(batch: int, full: nn.Module, input_size: int, element_size: int = 4) -> dict[str, int]:
    """Bytes each rank sends into each forward all-gather: its half of the tensor at that crossing."""
    shapes: dict[str, torch.Size] = {}
    x = torch.zeros(batch, 3, input_size, input_size, device="meta")
    f: Any = full.features  # alexnet2012's layers, by name
    c: Any = full.classifier
    for name, layer in f.named_children():
        x = layer(x)
        shapes[name] = x.shape
    pool2, pool5 = shapes["pool2"], shapes["pool5"]
    half: Callable[[torch.Size], int] = lambda shape: shape.numel() // 2 * element_size  # noqa: E731
    return {
        "conv2 → conv3 (all maps)": half(pool2),
        "pool5 → fc6": half(pool5),
        "fc6 → fc7": batch * c.fc6.out_features // 2 * element_size,
        "fc7 → fc8": batch * c.fc7.out_features // 2 * element_size,
        "fc8 → softmax": batch * c.fc8.out_features // 2 * element_size,
    }
