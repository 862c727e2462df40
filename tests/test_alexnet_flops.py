"""AlexNet's forward FLOPs per image, as notebook 13's data-parallel example derives them from the layer table.

torchvision's metadata `_ops` (0.714 G) counts multiply-adds; one multiply-add is two floating-point operations.
"""

import pytest
import torch

from d2lmp.models import alexnet_torchvision, layer_table, totals


def test_torchvision_alexnet_forward_flops_are_twice_its_multiply_adds():
    with torch.device("meta"):
        model = alexnet_torchvision()
    t = totals(layer_table(model, (1, 3, 224, 224)))
    assert t.macs == 714_188_480  # torchvision's `_ops` 0.714 G
    assert t.flops == 2 * t.macs
    assert t.flops / 1e9 == pytest.approx(1.428, abs=5e-4)


def test_one_gpu_step_of_the_data_parallel_example():
    """Forward plus backward ≈ 3 × forward, a global batch of 1024 at 51 TFLOP/s: about 86 ms, not 43 ms."""
    with torch.device("meta"):
        model = alexnet_torchvision()
    flops = totals(layer_table(model, (1, 3, 224, 224))).flops
    assert 1024 * 3 * flops / 51e12 == pytest.approx(0.086, abs=5e-4)
