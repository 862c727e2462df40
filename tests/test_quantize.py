"""Hand-written int8 inference: exact integer products, small quantisation error, same predictions."""

import pytest
import torch
from torch import nn

from d2lmp import quantize


def test_int8_matmul_is_exact():
    g = torch.Generator().manual_seed(0)
    a = torch.randint(-127, 128, (33, 64), generator=g, dtype=torch.int8)
    b = torch.randint(-127, 128, (64, 24), generator=g, dtype=torch.int8)
    exact = (a.double() @ b.double())
    for method in ("auto", "int32"):
        out = quantize.int8_matmul(a, b, method)
        assert out.dtype == torch.int32 and torch.equal(out.double(), exact)
    with pytest.raises(ValueError):
        quantize.int8_matmul(a.float(), b)


def test_per_channel_symmetric_quantisation():
    w = torch.tensor([[1.0, -0.5, 0.25], [100.0, 0.0, -50.0], [0.0, 0.0, 0.0]])
    q, s = quantize.quantize_symmetric(w, dim=1)
    assert q.dtype == torch.int8 and s.shape == (3, 1)
    assert q.abs().max() == 127 and torch.equal(q[2], torch.zeros(3, dtype=torch.int8))
    err = (quantize.dequantize(q, s) - w).abs()
    assert torch.all(err <= s / 2 + 1e-6)  # rounding error at most half a step per row


def test_int8_linear_close_to_float():
    torch.manual_seed(0)
    lin = nn.Linear(64, 32)
    x = torch.randn(20, 64)
    q = quantize.Int8Linear(lin)
    ref = lin(x)
    rel = (q(x) - ref).abs().max() / ref.abs().max()
    assert rel < 0.03


def test_quantized_model_predictions_and_size():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    x, y = torch.randn(64, 64), torch.randint(0, 10, (64,))
    qmodel = quantize.quantize_linear_layers(model)
    assert isinstance(model[0], nn.Linear) and isinstance(qmodel[0], quantize.Int8Linear)
    assert quantize.weight_bytes(qmodel) < quantize.weight_bytes(model) / 3
    rows = quantize.compare_inference(model, x, y, min_time=0.01, methods=("fp32", "bf16", "int8", "int8-int32"))
    by = {r["method"]: r for r in rows}
    assert by["int8"]["agrees_with_fp32"] >= 0.9
    assert by["int8-int32"]["agrees_with_fp32"] == by["int8"]["agrees_with_fp32"]
    assert all(r["timed_calls"] >= 5 and not r["budget_cut"] for r in rows)  # at least min_blocks blocks
    # A budget smaller than any call: each variant runs its accuracy call, one warm-up and one timed block.
    cut = quantize.compare_inference(model, x, y, min_time=0.01, methods=("fp32", "int8"), max_time=1e-6)
    assert [(r["method"], r["budget_cut"]) for r in cut] == [("fp32", True), ("int8", True)]
    assert [r["accuracy"] for r in cut] == [by["fp32"]["accuracy"], by["int8"]["accuracy"]]
    with pytest.raises(ValueError):
        quantize.compare_inference(model, x, y, methods=("int4",))


def test_linear_intensity():
    assert quantize.linear_intensity(1, 4096, 4096, 1) == pytest.approx(2, rel=1e-3)
    assert quantize.linear_intensity(64, 4096, 4096, 1) == pytest.approx(
        2 * quantize.linear_intensity(64, 4096, 4096, 2))
    with pytest.raises(ValueError):
        quantize.linear_intensity(0, 1, 1, 1)


def test_int8_linear_pads_odd_sizes():
    torch.manual_seed(0)
    lin = nn.Linear(13, 10)
    q = quantize.Int8Linear(lin)
    assert q.qweight_t.shape == (16, 16)
    x = torch.randn(32, 13)
    assert q(x).shape == (32, 10)
    assert (q(x) - lin(x)).abs().max() / lin(x).abs().max() < 0.03


def test_int_mm_probe_runs_once_per_device_type(monkeypatch):
    calls = []
    real = torch._int_mm

    def counting(a, b):
        calls.append(tuple(a.shape))
        return real(a, b)

    quantize._probe_int_mm.cache_clear()
    monkeypatch.setattr(torch, "_int_mm", counting)
    layer = quantize.Int8Linear(nn.Linear(64, 32))
    x = torch.randn(24, 64)
    for _ in range(3):
        layer(x)
    probes = [c for c in calls if c == (32, 32)]
    assert len(probes) == 1  # one probe for "cpu", then three real products (24 × 64)
    assert quantize.has_int_mm("cpu") == quantize.has_int_mm(torch.device("cpu")) == quantize.has_int_mm()
    assert len([c for c in calls if c == (32, 32)]) == 1
    assert quantize._probe_int_mm.cache_info().currsize == 1
    quantize._probe_int_mm.cache_clear()


def test_dispatched_operations_counts_kernels_not_views():
    lin = nn.Linear(64, 32)
    x = torch.randn(24, 64)
    assert quantize.dispatched_operations(lambda: lin(x)) == ["addmm"]
    q = quantize.Int8Linear(lin)
    q(x)  # the first call may probe for torch._int_mm; count a later one
    ops = quantize.dispatched_operations(lambda: q(x))
    assert len(ops) > 8 and ops.count("round") == 1
    assert "view" not in ops and "t" not in ops
