import numpy as np
import pytest

from d2lmp import conv, recorded
from d2lmp.roofline import (
    OPERATIONS,
    OpPoint,
    attainable_gflops,
    best_matmul,
    measure_operations,
    operation_cost,
    place_operation,
    points_from_records,
    ridge_point,
    speedups,
    summarise,
)


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


def test_op_point_from_rates_keeps_intensity_and_rate():
    p = OpPoint.from_rates("dot", intensity=0.25, gflops=1000.0)
    assert p.intensity == pytest.approx(0.25)
    assert p.gflops == pytest.approx(1000.0)
    assert p.gbs == pytest.approx(4000.0)  # rate / intensity
    q = OpPoint.from_rates("dot", intensity=0.25, gflops=1000.0, bytes=4e9)
    assert (q.gflops, q.seconds) == (pytest.approx(1000.0), pytest.approx(1e-3))
    with pytest.raises(ValueError):
        OpPoint.from_rates("bad", intensity=0.0, gflops=1.0)


def test_points_from_recorded_h200_selfcheck():
    records = recorded.selfcheck_section("roofline_points")["points"]
    points = points_from_records(records)
    assert [p.name for p in points] == [r["name"] for r in records]
    for p, r in zip(points, records):
        assert p.intensity == pytest.approx(r["intensity"])
        assert p.gflops == pytest.approx(r["gflops"])
        assert p.gbs == pytest.approx(r["gbs"], rel=1e-9)
    with pytest.raises(ValueError, match="gflops"):
        points_from_records([{"name": "x", "intensity": 1.0}])


def test_best_matmul_summarise_and_speedups():
    slow = [OpPoint("add", 1, 12, 1e-9), OpPoint("matmul n=2", 480, 24, 1e-9), OpPoint("matmul n=4", 1920, 48, 1e-9)]
    fast = [OpPoint("add", 1, 12, 1e-10), OpPoint("matmul n=4", 1920, 48, 1e-11), OpPoint("only here", 1, 1, 1)]
    assert best_matmul(slow).name == "matmul n=4"
    with pytest.raises(ValueError):
        best_matmul(slow[:1])
    rows = summarise(slow, peak_gflops=100.0, bandwidth_gbs=10.0)  # ridge at 10 FLOP/byte
    assert [r.bound for r in rows] == ["memory", "compute", "compute"]
    assert rows[0].roof_gflops == pytest.approx(10 / 12)
    assert rows[0].fraction_of_roof == pytest.approx(1.0 / (10 / 12))
    assert speedups(slow, fast) == [("add", pytest.approx(10.0)), ("matmul n=4", pytest.approx(100.0))]


def test_operation_cost_counts_what_each_operation_reads_and_does():
    flops, nbytes = operation_cost("matmul", 1024)
    assert (flops, nbytes) == (2 * 1024**3, 3 * 1024 * 1024 * 4)
    assert flops / nbytes == pytest.approx(1024 / 6)  # a matmul's intensity grows as n/6 in FP32
    assert np.divide(*operation_cost("elementwise add", 64)) == pytest.approx(1 / 12)
    assert np.divide(*operation_cost("reduction", 64)) == pytest.approx(1 / 4)
    assert np.divide(*operation_cost("elementwise add", 64, "bfloat16")) == pytest.approx(1 / 6)  # half the bytes
    x, w = (32, 256, 13, 13), (256, 256, 3, 3)
    assert operation_cost("conv layer", 256) == (conv.conv2d_flops(x, w, padding=1),
                                                 conv.conv2d_min_bytes(x, w, padding=1))
    assert set(OPERATIONS) == {"matmul", "elementwise add", "reduction", "conv layer"}
    for bad in (("fft", 8, "float32"), ("matmul", 0, "float32"), ("matmul", 8, "int4")):
        with pytest.raises(ValueError):
            operation_cost(*bad)


def test_place_operation_puts_it_on_its_roof():
    add = place_operation("elementwise add", 4096, "float32", peak_gflops=1000.0, bandwidth_gbs=100.0)
    assert add.bound == "memory" and add.attainable_gflops == pytest.approx(100 / 12)
    big = place_operation("matmul", 4096, "float32", peak_gflops=1000.0, bandwidth_gbs=100.0)
    assert big.bound == "compute" and big.attainable_gflops == 1000.0
    assert big.seconds == pytest.approx(2 * 4096**3 / 1e12)
    point = big.point()
    assert (point.intensity, point.gflops) == (pytest.approx(4096 / 6), pytest.approx(1000.0))
    assert point.name == "matmul, n=4096, float32"


def test_vendor_roofs_are_the_t4_datasheet_figures_and_formats_without_one_are_left_out():
    from d2lmp.gpu_specs import find_gpu_spec
    from d2lmp.roofline import vendor_roofs

    t4, v100 = find_gpu_spec("T4"), find_gpu_spec("V100")
    assert vendor_roofs(t4) == {"FP32": 8100.0, "FP16 tensor": 65000.0, "INT8 tensor": 130000.0}
    assert list(vendor_roofs(v100)) == ["FP32", "FP16 tensor"]  # no INT8 tensor mode on the V100


def test_linear_layer_intensity_moves_with_the_batch_and_crosses_each_ridge():
    from d2lmp.quantize import linear_intensity
    from d2lmp.roofline import place_linear_layer, ridge_point

    roofs, bw = {"FP32": 8100.0, "FP16 tensor": 65000.0, "INT8 tensor": 130000.0}, 320.0
    one = place_linear_layer(1, 4096, "INT8 tensor", roofs, bw)
    assert one.flops == 2 * 4096 * 4096 and one.intensity == pytest.approx(linear_intensity(1, 4096, 4096, 1))
    assert one.bound == "memory" and one.attainable_gflops == pytest.approx(one.intensity * bw)
    assert one.bytes == pytest.approx(4096 * 4096 + 2 * 4096)  # INT8: one byte per weight, input and output
    fp16 = place_linear_layer(1, 4096, "FP16 tensor", roofs, bw)
    assert fp16.intensity == pytest.approx(one.intensity / 2)  # twice the bytes for the same operations
    rising = [place_linear_layer(b, 4096, "FP32", roofs, bw).intensity for b in (1, 8, 64, 512)]
    assert rising == sorted(rising) and len(set(rising)) == 4
    for fmt, peak in roofs.items():
        big = place_linear_layer(4096, 4096, fmt, roofs, bw)
        assert big.intensity > ridge_point(peak, bw) and big.bound == "compute" and big.attainable_gflops == peak
    with pytest.raises(ValueError, match="no roof"):
        place_linear_layer(1, 4096, "INT4 tensor", roofs, bw)
    with pytest.raises(ValueError, match="positive"):
        place_linear_layer(0, 4096, "FP32", roofs, bw)
