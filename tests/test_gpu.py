"""GPU paths; skipped without CUDA. Run on a GPU machine with `pytest tests/test_gpu.py`."""

import torch
from conftest import requires_cuda

from d2lmp.bandwidth import measure_bandwidth
from d2lmp.graphics import rotation_y, transform_batched
from d2lmp.timing import Timer, matmul_flops, matmul_sweep


@requires_cuda
def test_gpu_matmul_sweep_stays_below_vendor_peak():
    rows = matmul_sweep([2048, 4096], ["float32", "bfloat16"], ["cuda:0"], min_time=0.1)
    for r in rows:
        assert r.gflops > 0
        if r.fraction_of_peak is not None:
            assert r.fraction_of_peak < 1.05, r


@requires_cuda
def test_timer_waits_for_the_gpu():
    a = torch.randn(8192, 8192, device="cuda")
    a @ a
    with Timer("cuda") as t:
        a @ a
    # 1.1 TFLOP cannot finish in under 0.5 ms on any GPU that exists (it would be > 2 PFLOP/s).
    assert t.seconds > 0.0005, matmul_flops(8192) / t.seconds


@requires_cuda
def test_gpu_transform_matches_cpu():
    v, m = torch.randn(10_000, 4), rotation_y(0.4)
    torch.testing.assert_close(transform_batched(v.cuda(), m.cuda()).cpu(), transform_batched(v, m),
                               rtol=1e-5, atol=1e-5)


@requires_cuda
def test_gpu_bandwidth_positive():
    assert measure_bandwidth("cuda", megabytes=256, min_time=0.05) > 0


# Notebooks 04-07: host-device copies, FP16 with a gradient scaler, the allocator's peak, int8 on the GPU.


@requires_cuda
def test_pinned_host_copies_are_not_slower_than_pageable():
    from d2lmp.bandwidth import host_device_copy

    for direction in ("h2d", "d2h"):
        pageable = host_device_copy("cuda:0", 64, pinned=False, direction=direction, min_time=0.05)
        pinned = host_device_copy("cuda:0", 64, pinned=True, direction=direction, min_time=0.05)
        assert pageable > 0 and pinned >= 0.9 * pageable, (direction, pageable, pinned)


@requires_cuda
def test_fp16_with_grad_scaler_matches_fp32():
    from d2lmp.data import load_digits
    from d2lmp.models import mlp
    from d2lmp.precision import train_mixed

    train, test = load_digits(resize=None).loaders(batch_size=64)
    runs = {}
    for mode in ("fp32", "fp16"):
        torch.manual_seed(0)
        runs[mode] = train_mixed(mlp(64, (64,), 10), train, test, mode, epochs=3, lr=3e-3, device="cuda:0")
    assert all(torch.isfinite(torch.tensor(runs["fp16"].losses)))
    assert runs["fp16"].final_scale > 0
    assert runs["fp32"].test_acc > 0.85 and abs(runs["fp16"].test_acc - runs["fp32"].test_acc) <= 0.03


@requires_cuda
def test_saved_activations_on_cuda_use_one_byte_dropout_masks():
    from d2lmp.memory import compare_saved_activations
    from d2lmp.models import mlp

    torch.manual_seed(0)
    result = compare_saved_activations(mlp(64, (256, 256), 10, dropout=0.5).cuda(), torch.randn(32, 64, device="cuda"))
    assert abs(result.ratio - 1) <= 0.05, result


@requires_cuda
def test_cuda_peak_memory_against_the_predictions():
    from d2lmp.memory import cuda_peak_memory, judge_cuda_peaks, predict_inference_memory, predict_step_memory
    from d2lmp.models import alexnet_small

    torch.manual_seed(0)
    model = alexnet_small().cuda()
    shape = (32, 1, 32, 32)
    x, y = torch.randn(shape, device="cuda"), torch.randint(0, 10, (32,), device="cuda")
    infer = cuda_peak_memory(model, x, y, train=False)
    train = cuda_peak_memory(model, x, y, train=True)
    assert infer.parameter_bytes == train.parameter_bytes and train.optimizer_state_bytes > 0
    verdict = judge_cuda_peaks(predict_step_memory(model, shape, "adam", device_type="cuda"),
                               predict_inference_memory(model, shape), train.peak_bytes, infer.peak_bytes)
    assert verdict.inference_ok, verdict
    assert verdict.train_ok, verdict
    assert train.peak_bytes > infer.peak_bytes


@requires_cuda
def test_int8_on_the_gpu():
    from torch import nn

    from d2lmp import quantize

    assert quantize.has_int_mm("cuda") == quantize.has_int_mm(torch.device("cuda:0"))  # cached per device type
    g = torch.Generator().manual_seed(0)
    a = torch.randint(-127, 128, (33, 64), generator=g, dtype=torch.int8)
    b = torch.randint(-127, 128, (64, 24), generator=g, dtype=torch.int8)
    exact = a.double() @ b.double()
    for method in ("auto", "int32"):
        out = quantize.int8_matmul(a.cuda(), b.cuda(), method)
        assert out.dtype == torch.int32 and torch.equal(out.double().cpu(), exact)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    x, y = torch.randn(256, 64), torch.randint(0, 10, (256,))
    rows = {r.method: r for r in quantize.compare_inference(model, x, y, min_time=0.01, device="cuda:0")}
    assert rows["int8"].agrees_with_fp32 >= 0.9 and rows["int8"].device.startswith("cuda")
    lin = nn.Linear(64, 32).cuda()
    xs = torch.randn(20, 64, device="cuda")
    ref = lin(xs)
    assert (quantize.Int8Linear(lin)(xs) - ref).abs().max() / ref.abs().max() < 0.03
