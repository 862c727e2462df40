"""Number formats, underflow with and without loss scaling, mixed-precision training on the CPU."""

import warnings

import pytest
import torch

from d2lmp import models, precision
from d2lmp.data import load_digits


def test_format_table_matches_facts():
    rows = {r["name"]: r for r in precision.format_table()}
    assert rows["FP16"]["max"] == 65504.0
    assert rows["FP16"]["smallest_normal"] == 2.0**-14
    assert rows["FP16"]["smallest_subnormal"] == 2.0**-24
    assert rows["BF16"]["smallest_normal"] == rows["FP32"]["smallest_normal"]
    assert rows["BF16"]["eps"] == 2.0**-7
    assert rows["TF32"]["eps"] == rows["FP16"]["eps"]
    if "FP8 E4M3" in rows:
        assert rows["FP8 E4M3"]["max"] == 448 and rows["FP8 E5M2"]["max"] == 57344


def test_subnormals_really_are_the_smallest():
    for r in precision.format_table():
        if r["name"] in ("FP16", "BF16"):
            dtype = torch.float16 if r["name"] == "FP16" else torch.bfloat16
            assert precision.representable(r["smallest_subnormal"], dtype) == r["smallest_subnormal"]
            assert precision.representable(r["smallest_subnormal"] * 0.49, dtype) == 0.0


def test_underflow_fractions_and_scaling():
    v = torch.tensor([1e-9, 1e-6, 1e-3, 1.0, 0.0])
    f = precision.underflow_fractions(v)
    assert f["count"] == 4 and f["zero"] == 0.25  # 1e-9 < 2^-24 ≈ 6e-8
    assert f["subnormal"] == 0.25  # 1e-6 lies between 2^-24 and 2^-14
    scaled = precision.underflow_fractions(v, 2.0**10)
    assert scaled["zero"] == 0 and scaled["overflow"] == 0
    assert precision.underflow_fractions(v, 2.0**17)["overflow"] == 0.25
    with pytest.raises(ValueError):
        precision.underflow_fractions(v, 0)

@pytest.mark.slow

def test_real_gradients_lose_less_with_scaling():
    # Gradients shrink as training converges: after a few epochs on the digits a clear share of the
    # activation gradients is below FP16's smallest subnormal (notebook 07 measures ~17 % after 8 epochs).
    data = load_digits(resize=None)
    train, test = data.loaders(batch_size=64)
    torch.manual_seed(0)
    model = models.mlp(64, (128, 128), 10)
    precision.train_mixed(model, train, test, "fp32", epochs=5, lr=3e-3)
    g = precision.gradients_of(model, data.x_train[:256], data.y_train[:256])
    assert g["weights"].numel() == sum(p.numel() for p in model.parameters())
    assert g["activations"].numel() > 0
    unscaled, scaled = precision.scale_sweep(g["activations"], (1, 2**12))
    assert unscaled["zero"] > 0.02, unscaled  # measured 16 % on a 2-core AMD EPYC
    assert scaled["zero"] < unscaled["zero"] / 10, (unscaled, scaled)  # measured 0.14 %
    assert scaled["overflow"] == 0


def test_lost_update_threshold():
    assert precision.lost_update_threshold(torch.float16) == 2**11  # binary16's 11-bit significand (IEEE 754)
    assert precision.bits_needed(2.0**-24) == -24
    edges, counts = precision.exponent_histogram(torch.tensor([2.0**-30, 1.0]), -40, 10)
    assert sum(counts) == 2 and len(edges) == 51


def test_bf16_autocast_training_matches_fp32_on_cpu():
    data = load_digits(resize=None)
    train, test = data.loaders(batch_size=128)
    acc = {}
    for mode in ("fp32", "bf16"):
        torch.manual_seed(0)
        acc[mode] = precision.train_mixed(models.mlp(64, (64,), 10), train, test, mode, epochs=2,
                                          lr=3e-3)["test_acc"]
    assert acc["fp32"] > 0.85 and abs(acc["bf16"] - acc["fp32"]) <= 0.03


def test_fp16_mode_needs_cuda_and_modes_are_checked():
    with pytest.raises(ValueError, match="CUDA"):
        precision.train_mixed(models.mlp(64, (256, 256), 10), [], [], "fp16", device="cpu")
    with pytest.raises(ValueError, match="fp32"):
        precision.train_mixed(models.mlp(64, (256, 256), 10), [], [], "fp64")
    with pytest.raises(ValueError):
        models.mlp(64, (), 10)


@pytest.mark.skipif(not precision._has_precision_settings(), reason="torch before 2.9 has no fp32_precision settings")
def test_tf32_off_asks_for_ieee_fp32_and_restores_the_settings():
    cuda, cudnn = torch.backends.cuda, torch.backends.cudnn
    before = cuda.matmul.fp32_precision, cudnn.conv.fp32_precision, cudnn.enabled
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the current API: no deprecation warning from torch
        with precision.tf32_off():
            assert (cuda.matmul.fp32_precision, cudnn.conv.fp32_precision, cudnn.enabled) == ("ieee", "ieee", True)
    assert (cuda.matmul.fp32_precision, cudnn.conv.fp32_precision, cudnn.enabled) == before


def test_tf32_off_uses_the_allow_tf32_flags_on_torch_without_precision_settings(monkeypatch):
    """torch 2.8 has no fp32_precision settings; there the flags are the API, and they turn TF32 off too."""
    monkeypatch.setattr(precision, "_has_precision_settings", lambda: False)
    cuda, cudnn = torch.backends.cuda, torch.backends.cudnn
    before = cuda.matmul.allow_tf32, cudnn.allow_tf32
    with precision.tf32_off():
        assert (cuda.matmul.allow_tf32, cudnn.allow_tf32, cudnn.enabled) == (False, False, True)
    assert (cuda.matmul.allow_tf32, cudnn.allow_tf32) == before
