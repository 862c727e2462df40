"""GPU paths; skipped without CUDA. Run on a GPU machine with `pytest tests/test_gpu.py`."""

import torch

from conftest import requires_cuda
from d2lmp.graphics import rotation_y, transform_batched
from d2lmp.roofline import measure_bandwidth
from d2lmp.timing import Timer, matmul_flops, matmul_sweep


@requires_cuda
def test_gpu_matmul_sweep_stays_below_vendor_peak():
    rows = matmul_sweep([2048, 4096], ["float32", "bfloat16"], ["cuda:0"], min_time=0.1)
    for r in rows:
        assert r["gflops"] > 0
        if r["fraction_of_peak"] is not None:
            assert r["fraction_of_peak"] < 1.05, r


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
    torch.testing.assert_close(transform_batched(v.cuda(), m.cuda()).cpu(), transform_batched(v, m), rtol=1e-5, atol=1e-5)


@requires_cuda
def test_gpu_bandwidth_positive():
    assert measure_bandwidth("cuda", megabytes=256, min_time=0.05) > 0
