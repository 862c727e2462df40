"""The cost model asked about a network grown to any size: widening keeps proportions, the state per device follows
ZeRO's accounting for each strategy, and the memory curves cross the device's memory where ``fits`` says."""

import pytest
import torch

from d2lmp import models
from d2lmp.model import costmodel as CM
from d2lmp.model import model_size as MS
from d2lmp.model.training_state import OPTIMIZERS, STATE_PARTS

H100 = CM.PRESETS["8x H100 (NVSwitch)"]


@pytest.fixture(scope="module")
def rows():
    with torch.device("meta"):
        return models.layer_table(models.alexnet2012(), (1, 3, 224, 224))


def test_default_optimizer_is_the_cost_models(rows):
    preds = MS.predictions(rows, H100, 1024)
    assert list(preds) == list(CM.STRATEGIES)
    for s in CM.STRATEGIES:
        p = CM.predict(rows, s, H100, 1024, micro_batches=8)
        assert preds[s].step_s == pytest.approx(p.step_s) and preds[s].memory == pytest.approx(p.memory)


def test_state_per_device_follows_zero_memory(rows):
    big = MS.widen(rows, 4e9)
    params = round(sum(r.params for r in big))
    preds = MS.predictions(big, H100, 1024, "adam_mixed")
    state = sum(preds["data"].memory[k] for k in STATE_PARTS)
    assert state == pytest.approx(16 * params)  # 2 + 2 + 12 bytes per parameter on every device
    assert state == pytest.approx(sum(CM.zero_memory(params, 8, 0).values()))
    for s in ("pipeline", "tensor"):
        assert preds[s].memory == pytest.approx(CM.zero_memory(params, 8, 3) | {
            "saved_activations": preds[s].memory["saved_activations"]})
    conv = round(sum(r.params for r in big if r.kind != "Linear"))
    trick = {k: a + b for (k, a), b in zip(CM.zero_memory(conv, 8, 0).items(),
                                           CM.zero_memory(params - conv, 8, 3).values())}
    assert {k: preds[CM.WEIRD_TRICK].memory[k] for k in STATE_PARTS} == pytest.approx(trick, rel=1e-6)
    # the cost model's layerwise split gathers every layer's output, so every device keeps the whole batch's
    # activations (Megatron's column-then-row split keeps the wide ones split: transformer_accounting)
    assert preds["tensor"].memory["saved_activations"] == pytest.approx(8 * preds["data"].memory["saved_activations"])
    fp32 = MS.predictions(big, H100, 1024, "adam")
    assert fp32["data"].memory["saved_activations"] == pytest.approx(2 * preds["data"].memory["saved_activations"])
    sgd = MS.predictions(big, H100, 1024, "sgd")
    assert sgd["data"].memory["optimizer_state"] == 0
    assert sgd["data"].comm_s == pytest.approx(fp32["data"].comm_s)  # both send FP32 gradients
    assert preds["data"].comm_s < fp32["data"].comm_s  # mixed precision sends 2-byte gradients


def test_widening_keeps_proportions(rows):
    big = MS.widen(rows, 4 * sum(r.params for r in rows))
    assert sum(r.params for r in big) == pytest.approx(4 * sum(r.params for r in rows))
    assert sum(r.flops for r in big) == pytest.approx(4 * sum(r.flops for r in rows))
    assert sum(r.activation_bytes for r in big) == pytest.approx(2 * sum(r.activation_bytes for r in rows))
    assert big[0].output_shape[1] == 2 * rows[0].output_shape[1]
    with pytest.raises(ValueError):
        MS.widen(rows, 0)


def test_data_parallelism_stops_fitting_while_others_still_fit(rows):
    small = MS.predictions(rows, H100, 1024, "adam")
    assert all(MS.fits(small, H100.memory_bytes).values())
    big = MS.predictions(MS.widen(rows, 16e9), H100, 1024, "adam")
    ok = MS.fits(big, H100.memory_bytes)
    assert not ok["data"] and ok["pipeline"] and ok[CM.WEIRD_TRICK]
    with pytest.raises(ValueError, match="unknown optimizer"):
        MS.predictions(rows, H100, 1024, "lion")


def test_memory_by_size_crosses_the_device_line_where_fits_says(rows):
    sizes = [6.1e7, 1e9, 4e9, 16e9]
    curves = MS.memory_by_size(rows, H100, 1024, "adam", sizes)
    assert set(curves) == set(CM.STRATEGIES) and all(len(v) == len(sizes) for v in curves.values())
    for i, size in enumerate(sizes):
        ok = MS.fits(MS.predictions(MS.widen(rows, size), H100, 1024, "adam"), H100.memory_bytes)
        assert all((curves[s][i] <= H100.memory_bytes) == ok[s] for s in CM.STRATEGIES)
    assert all(a < b for a, b in zip(curves["data"], curves["data"][1:]))


def test_every_optimizer_row_is_sourced_and_the_mixed_one_is_zeros():
    assert OPTIMIZERS["adam_mixed"].state_per_parameter == {"parameters": 2, "gradients": 2, "optimizer_state": 12}
    assert [o.bytes_per_parameter for o in OPTIMIZERS.values()] == [8, 12, 16, 16]
