import numpy as np
import pytest

from d2lmp.roofline import OpPoint, attainable_gflops, measure_bandwidth, measure_operations, ridge_point


def test_roofline_has_two_regimes():
    peak, bw = 1000.0, 100.0
    assert ridge_point(peak, bw) == 10.0
    assert attainable_gflops(1.0, peak, bw) == 100.0  # memory-bound: AI × bandwidth
    assert attainable_gflops(50.0, peak, bw) == 1000.0  # compute-bound: the peak
    curve = attainable_gflops(np.array([0.1, 10.0, 100.0]), peak, bw)
    np.testing.assert_allclose(curve, [10.0, 1000.0, 1000.0])


def test_roofline_rejects_nonsense():
    with pytest.raises(ValueError):
        attainable_gflops(1.0, 0, 100)
    with pytest.raises(ValueError):
        attainable_gflops(-1.0, 10, 100)


def test_op_point_arithmetic():
    p = OpPoint("x", flops=2e9, bytes=1e9, seconds=0.5)
    assert (p.intensity, p.gflops, p.gbs) == (2.0, 4.0, 2.0)


def test_measured_operations_order_by_intensity():
    points = measure_operations("cpu", vector_megabytes=4, matmul_sizes=(64, 256), min_time=0.01)
    names = [p.name for p in points]
    assert names[:4] == ["add: z = x + y", "axpy: z = 2x + y", "sum(x)", "dot(x, y)"]
    by_name = {p.name: p for p in points}
    assert by_name["add: z = x + y"].intensity == pytest.approx(1 / 12)
    assert by_name["matmul n=256"].intensity == pytest.approx(2 * 256**3 / (3 * 256 * 256 * 4))
    assert all(p.seconds > 0 for p in points)


def test_bandwidth_is_positive_and_bad_size_rejected():
    assert measure_bandwidth("cpu", megabytes=8, min_time=0.01) > 0
    with pytest.raises(ValueError):
        measure_bandwidth("cpu", megabytes=0)
