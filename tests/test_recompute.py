import copy

import pytest
import torch
from torch import nn

from d2lmp import recompute as R
from d2lmp.models import alexnet_small, mlp


def _alexnet():
    torch.manual_seed(0)
    return alexnet_small(width=8), torch.randn(4, 1, 32, 32), torch.randint(0, 10, (4,))


def _mlp():
    torch.manual_seed(0)
    return mlp(784, [256, 256, 256, 256], 10, dropout=0.2), torch.randn(16, 1, 28, 28), torch.randint(0, 10, (16,))


MODELS = {"alexnet_small": _alexnet, "mlp": _mlp}
# An int asks for equal layer counts; a list of layers per segment cuts where we choose.
ONE_LAYER_EACH = [1] * 13 + [2] + [1] * 6  # AlexNet: every layer its own segment (Flatten joins fc6)
SEGMENTS = {"alexnet_small": [2, 3, [3, 3, 4, 4, 7], ONE_LAYER_EACH], "mlp": [2, 3, [4, 3, 3, 4], [2, 3, 3, 6]]}


@pytest.mark.parametrize("name", MODELS)
def test_saved_bytes_equal_the_prediction_exactly(name):
    model, x, _ = MODELS[name]()
    for segments in SEGMENTS[name]:
        predicted = R.predict_saved_with_recompute(model, tuple(x.shape), segments)
        measured = R.measure_saved_with_recompute(model, x, segments)
        assert measured == predicted, f"{name}, segments {segments}"
        assert predicted["after_forward"] == sum(predicted["boundaries"]) + predicted["last_segment"]
        if segments != ONE_LAYER_EACH:
            assert predicted["peak"] < predicted["plain"]


def test_one_layer_per_segment_keeps_more_than_the_plain_model():
    """Every layer's input becomes a boundary, also a convolution's output before its ReLU, which the plain
    model never keeps (ReLU saves its output): too fine a cut costs memory."""
    model, x, _ = _alexnet()
    result = R.predict_saved_with_recompute(model, tuple(x.shape), ONE_LAYER_EACH)
    assert result["after_forward"] > result["plain"]


def test_one_segment_is_the_plain_model():
    model, x, _ = _alexnet()
    result = R.predict_saved_with_recompute(model, tuple(x.shape), 1)
    assert result["boundaries"] == [] and result["held_in_backward"] == []
    assert result["after_forward"] == result["plain"] == result["peak"]
    assert not any(isinstance(m, R.CheckpointedSegment) for m in R.checkpointed(model, 1).modules())


def test_boundaries_are_the_segment_inputs():
    """MLP of 784 -> 256 (x4) -> 10 after Flatten, 16 examples: cuts after Linear 1, Linear 2 and Linear 3."""
    model, x, _ = _mlp()  # layers: Flatten, (Linear, ReLU, Dropout) x 4, Linear
    result = R.predict_saved_with_recompute(model, tuple(x.shape), [2, 3, 3, 6])
    assert result["boundaries"] == [16 * 784 * 4, 16 * 256 * 4, 16 * 256 * 4]


@pytest.mark.parametrize("name", MODELS)
def test_gradients_equal_the_plain_model(name):
    model, x, y = MODELS[name]()
    for segments in SEGMENTS[name]:
        plain, ck = copy.deepcopy(model), R.checkpointed(copy.deepcopy(model), segments)
        grads = []
        for m in (plain, ck):
            torch.manual_seed(1)  # the same dropout masks; checkpoint replays them in the recomputation
            nn.functional.cross_entropy(m(x), y).backward()
            grads.append([p.grad for p in m.parameters()])
        assert len(grads[0]) == len(grads[1])
        for a, b in zip(*grads):
            torch.testing.assert_close(b, a, rtol=0, atol=0)


def test_backward_runs_each_checkpointed_layer_once_more():
    """The price: one more forward of the checkpointed segments, and none of the last (plain) one."""
    model, x, y = _alexnet()
    sizes = [3, 3, 4, 4, 7]  # conv1-pool1 | conv2-pool2 | conv3-relu4 | conv5-flatten | fc6-fc8
    ck = R.checkpointed(model, sizes)
    entered: dict[str, int] = {}
    flat = [(name, layer) for seg in ck for name, layer in seg.named_children()]
    for name, layer in flat:
        layer.register_forward_pre_hook(lambda mod, args, n=name: entered.__setitem__(n, entered.get(n, 0) + 1))
    out = ck(x)
    assert all(entered[name] == 1 for name, _ in flat)
    entered.clear()
    nn.functional.cross_entropy(out, y).backward()
    # Flatten saves nothing and ends its segment: checkpoint stops a recomputation once the segment's last
    # saved tensor is back, so it is not run again.
    again = [name for name, _ in flat[:sum(sizes[:-1])] if name != "flatten"]
    assert sorted(entered) == sorted(again)
    assert set(entered.values()) == {1}


def test_bad_segments():
    model, _, _ = _mlp()
    with pytest.raises(ValueError, match="between 1 and the number of layers"):
        R.checkpointed(model, 0)
    with pytest.raises(ValueError, match="add up to the 14 layers"):
        R.checkpointed(model, [3, 3])
    with pytest.raises(ValueError, match=r"segment \(0\) only reshapes its input"):
        R.checkpointed(model, [1, 13])
    with pytest.raises(ValueError, match="nn.Sequential"):
        R.checkpointed(nn.Linear(2, 2), 2)


def test_time_recompute_reports_the_measured_and_predicted_ratios():
    """The arithmetic only: what the ratios come to is for the benchmark (d2lmp.bench.recompute) to print."""
    from d2lmp.bench.recompute import time_recompute

    model, x, y = _mlp()
    t = time_recompute(model, x, y, 3, rounds=1, min_time=0.01)
    assert t.ratio == t.checkpointed_s / t.plain_s
    assert t.predicted == 1 + t.recomputed_forward_s / t.plain_s
    assert t.one_extra_forward == 1 + t.forward_s / t.plain_s
    assert all(p.grad is None for p in model.parameters())
    with pytest.raises(ValueError, match="rounds"):
        time_recompute(model, x, y, 3, rounds=0)
