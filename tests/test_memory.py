"""Saved activations: measured with autograd's hooks vs predicted from shapes; a whole step's memory."""

import pytest
import torch
from torch import nn

from d2lmp import memory
from d2lmp.models import alexnet_d2l, alexnet_small, lenet5
from d2lmp.precision import digits_mlp


@pytest.mark.parametrize("make, shape", [
    (lambda: digits_mlp(), (32, 1, 8, 8)),
    (lambda: digits_mlp(hidden=(128, 64, 32), dropout=0.3), (17, 64)),
    (lambda: alexnet_small(), (8, 1, 32, 32)),
    (lambda: alexnet_small(width=8), (3, 1, 32, 32)),
    (lambda: nn.Sequential(nn.Linear(10, 20), nn.Tanh(), nn.Linear(20, 5), nn.Sigmoid()), (4, 10)),
])
def test_saved_activations_match_prediction_within_5_percent(make, shape):
    torch.manual_seed(0)
    result = memory.compare_saved_activations(make(), torch.randn(shape))
    assert result["measured_bytes"] > 0
    assert abs(result["ratio"] - 1) <= 0.05, result


def test_saved_storage_counted_once_and_parameters_excluded():
    model = nn.Sequential(nn.Linear(8, 8, bias=False), nn.ReLU(), nn.Linear(8, 8, bias=False))
    out = memory.measure_saved_activations(model, torch.randn(4, 8))
    # input (saved by linear 1) + relu output (saved by relu and by linear 2: one storage)
    assert out["total_bytes"] == 2 * 4 * 8 * 4
    assert out["saved_tensors"] > out["unique_storages"]


def test_nothing_saved_without_grad():
    model = alexnet_small()
    with torch.no_grad():
        assert memory.measure_saved_activations(model, torch.randn(2, 1, 32, 32))["total_bytes"] == 0


def test_prediction_on_meta_needs_no_memory():
    with torch.device("meta"):
        model = alexnet_d2l()
    pred = memory.predict_step_memory(model, (128, 1, 224, 224), "adam", device_type="cuda")
    assert pred["parameters"] == 46_764_746 * 4  # facts.md §1.4c
    assert pred["optimizer_state"] == 2 * pred["parameters"] + 4 * 16


def test_unknown_layer_kind_is_named():
    with pytest.raises(ValueError, match="AvgPool2d"):
        memory.predict_saved_activations(lenet5(), (2, 1, 28, 28))


@pytest.mark.parametrize("optimizer", memory.OPTIMIZERS)
def test_step_measured_equals_predicted(optimizer):
    torch.manual_seed(0)
    model = alexnet_small(width=4)
    x, y = torch.randn(4, 1, 32, 32), torch.randint(0, 10, (4,))
    measured = memory.measure_step_memory(model, x, y, optimizer)
    predicted = memory.predict_step_memory(model, x.shape, optimizer)
    for key in measured:
        assert measured[key] == pytest.approx(predicted[key], rel=0.05), key


def test_bad_optimizer():
    with pytest.raises(ValueError, match="adam"):
        memory.predict_step_memory(digits_mlp(), (2, 64), "lion")


def test_breakdown_and_inference_peak():
    model = digits_mlp(hidden=(100,))
    rows = memory.breakdown_rows(model, (10, 64))
    assert rows[1]["gradients"] == rows[1]["saved_activations"] == 0
    # the widest neighbouring pair: the ReLU's input and output, 10×100 numbers each
    assert memory.inference_activation_peak(model, (10, 64)) == 2 * 1000 * 4
