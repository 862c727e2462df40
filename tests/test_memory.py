"""Saved activations: measured with autograd's hooks vs predicted from shapes; a whole step's memory."""

import pytest
import torch
from torch import nn

from d2lmp import memory
from d2lmp.memory_records import InferenceMemory, LayerComparison
from d2lmp.model.training_state import MEMORY_PARTS
from d2lmp.models import alexnet_d2l, alexnet_small, lenet5, mlp


@pytest.mark.parametrize("make, shape", [
    (lambda: mlp(64, (256, 256), 10), (32, 1, 8, 8)),
    (lambda: mlp(64, (128, 64, 32), 10, dropout=0.3), (17, 64)),
    (lambda: alexnet_small(), (8, 1, 32, 32)),
    (lambda: alexnet_small(width=8), (3, 1, 32, 32)),
    (lambda: nn.Sequential(nn.Linear(10, 20), nn.Tanh(), nn.Linear(20, 5), nn.Sigmoid()), (4, 10)),
])
def test_saved_activations_match_prediction_within_5_percent(make, shape):
    torch.manual_seed(0)
    result = memory.compare_saved_activations(make(), torch.randn(shape))
    assert result.measured_bytes > 0
    assert abs(result.ratio - 1) <= 0.05, result


def test_saved_storage_counted_once_and_parameters_excluded():
    model = nn.Sequential(nn.Linear(8, 8, bias=False), nn.ReLU(), nn.Linear(8, 8, bias=False))
    out = memory.measure_saved_activations(model, torch.randn(4, 8))
    # input (saved by linear 1) + relu output (saved by relu and by linear 2: one storage)
    assert out.total_bytes == 2 * 4 * 8 * 4
    assert out.saved_tensors > out.unique_storages


def test_nothing_saved_without_grad():
    model = alexnet_small()
    with torch.no_grad():
        assert memory.measure_saved_activations(model, torch.randn(2, 1, 32, 32)).total_bytes == 0


def test_prediction_on_meta_needs_no_memory():
    with torch.device("meta"):
        model = alexnet_d2l()
    pred = memory.predict_step_memory(model, (128, 1, 224, 224), "adam", device_type="cuda")
    assert pred.parameters == 46_764_746 * 4  # D2L's AlexNet, 1 channel, 10 classes (as in test_models)
    assert pred.optimizer_state == 2 * pred.parameters + 4 * 16


def test_unknown_layer_kind_is_named():
    with pytest.raises(ValueError, match="AvgPool2d"):
        memory.predict_saved_activations(lenet5(), (2, 1, 28, 28))


@pytest.mark.parametrize("optimizer", memory.TORCH_OPTIMIZERS)
def test_step_measured_equals_predicted(optimizer):
    torch.manual_seed(0)
    model = alexnet_small(width=4)
    x, y = torch.randn(4, 1, 32, 32), torch.randint(0, 10, (4,))
    measured = memory.measure_step_memory(model, x, y, optimizer)
    predicted = memory.predict_step_memory(model, x.shape, optimizer)
    for key in MEMORY_PARTS[:4]:  # the four parts of a training step
        assert getattr(measured, key) == pytest.approx(getattr(predicted, key), rel=0.05), key


def test_bad_optimizer():
    with pytest.raises(ValueError, match="adam"):
        memory.predict_step_memory(mlp(64, (256, 256), 10), (2, 64), "lion")


def test_breakdown_and_inference_peak():
    model = mlp(64, (100,), 10)
    rows = memory.breakdown_rows(model, (10, 64))
    assert rows[1].gradients == rows[1].saved_activations == 0
    # the widest moment: the input batch (10×64, held by the caller) with the ReLU's input and output (10×100 each)
    assert memory.inference_activation_peak(model, (10, 64)) == (640 + 2 * 1000) * 4
    assert rows[1].live_activations == (640 + 2 * 1000) * 4


def test_inference_peak_keeps_the_inputs_of_running_blocks():
    # While the second block runs, the first block's output is still its input: it stays alive.
    model = nn.Sequential(nn.Linear(8, 64), nn.Sequential(nn.Linear(64, 4), nn.ReLU(), nn.Linear(4, 4)))
    peak = memory.inference_activation_peak(model, (2, 8))
    # x (2×8) + block input (2×64) + ReLU input and output (2×4 each)
    assert peak == (16 + 128 + 8 + 8) * 4
    pred = memory.predict_inference_memory(model, (2, 8))
    assert pred == InferenceMemory(parameters=sum(p.numel() for p in model.parameters()) * 4, live_activations=peak)


@pytest.mark.parametrize("make, shape", [
    (lambda: mlp(64, (256, 256), 10, dropout=0.5), (32, 1, 8, 8)),
    (lambda: alexnet_small(), (8, 1, 32, 32)),
])
def test_saved_activations_match_per_layer(make, shape):
    torch.manual_seed(0)
    result = memory.compare_saved_activations(make(), torch.randn(shape))
    names = [r.name for r in result.per_layer]
    assert len(names) == len(set(names)) and memory.OUTSIDE not in names
    for r in result.per_layer:
        assert r.measured == pytest.approx(r.predicted, rel=0.05), r
    assert sum(r.measured for r in result.per_layer) == result.measured_bytes


class _TanhHead(nn.Module):
    """A layer, then a functional op in the parent's forward: tanh saves its output outside any layer."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 5)
        self.out = nn.Linear(5, 3)

    def forward(self, x):
        return self.out(torch.tanh(self.fc(x)) * 2)


def test_saves_outside_layers_are_reported_not_credited_to_the_previous_layer():
    x = torch.randn(4, 6)
    measured = memory.measure_saved_activations(_TanhHead(), x)
    rows = {r.name: r for r in measured.per_layer}
    assert rows["fc"].bytes == 4 * 6 * 4  # its input only, not tanh's output
    assert rows[memory.OUTSIDE].bytes == 4 * 5 * 4  # tanh's output (the product by 2 saves nothing)
    assert rows["out"].bytes == 4 * 5 * 4  # the scaled tensor, a new storage
    assert measured.total_bytes == sum(r.bytes for r in rows.values())


def test_compare_keeps_rows_only_one_side_has():
    result = memory.compare_saved_activations(_TanhHead(), torch.randn(4, 6))
    by = {r.name: r for r in result.per_layer}
    assert by[memory.OUTSIDE] == LayerComparison(name=memory.OUTSIDE, kind="", measured=4 * 5 * 4, predicted=0)
    assert sum(r.measured for r in result.per_layer) == result.measured_bytes
    assert sum(r.predicted for r in result.per_layer) == result.predicted_bytes
    assert result.ratio > 1  # the prediction misses what tanh saved


def test_hooks_are_removed_after_an_exception():
    model = nn.Sequential(nn.Linear(3, 3), nn.Linear(4, 4))  # shapes do not fit: the second layer raises
    with pytest.raises(RuntimeError):
        memory.measure_saved_activations(model, torch.randn(2, 3))
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def test_judge_cuda_peaks_with_the_recorded_h200_figures():
    from d2lmp import recorded

    rows = {r.model: r for r in recorded.memory_cuda_rows()}
    alex = rows["alexnet_small"]
    assert alex.inference_peak == alex.inference_predicted  # 16 MiB + parameters + batch
    assert rows["mlp"].inference_peak == rows["mlp"].inference_predicted
    model = alexnet_small()
    pred = memory.predict_step_memory(model, (128, 1, 32, 32), "adam", device_type="cuda")
    verdict = memory.judge_cuda_peaks(pred, memory.predict_inference_memory(model, (128, 1, 32, 32)),
                                      alex.train_peak, alex.inference_peak)
    assert verdict.inference_ok and verdict.inference_ratio == 1.0
    assert verdict.train_ok and verdict.train_lower_bound == pred.total - pred.gradients
    bad = memory.judge_cuda_peaks(pred, memory.predict_inference_memory(model, (128, 1, 32, 32)),
                                  verdict.train_lower_bound // 2, alex.inference_peak * 1.2)
    assert not bad.train_ok and not bad.inference_ok


def test_cuda_peak_memory_refuses_cpu_tensors():
    with pytest.raises(ValueError, match="CUDA"):
        memory.cuda_peak_memory(mlp(64, (256, 256), 10), torch.randn(2, 64), torch.zeros(2, dtype=torch.long))
