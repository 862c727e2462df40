"""The typed accessors of d2lmp.recorded on the shipped H200 report, and their errors on a damaged one."""

import copy
import dataclasses

import pytest

from d2lmp import recorded
from d2lmp.hardware import GPUInfo
from d2lmp.roofline import OpPoint

ACCESSORS = {"gpu_environment", "matmul_rows", "copy_bandwidth", "roofline_points", "pinned_copies",
             "memory_cuda_rows", "int8_inference", "fp16_grad_scaler", "conv_speed"}


def test_every_accessor_is_tested_here():
    helpers = {"load_json", "selfcheck_section", "memory_cuda_models"}
    functions = {n for n in recorded.__all__ if callable(getattr(recorded, n)) and n[0].islower()}
    assert functions - helpers == ACCESSORS


def test_gpu_environment():
    env = recorded.gpu_environment()
    assert env.detail == "Using 1 CUDA GPU(s): NVIDIA H200." and env.torch.startswith("2.")
    (gpu,) = env.gpus
    assert isinstance(gpu, GPUInfo) and gpu.name == "NVIDIA H200"
    assert (gpu.pcie_gen, gpu.pcie_width, gpu.power_limit_w) == (5, 16, 700.0) and 130 < gpu.memory_gib < 150


def test_matmul_rows():
    rows = recorded.matmul_rows()
    assert {r.dtype for r in rows} == {"float32", "float16", "bfloat16"}
    fp32 = recorded.matmul_rows("float32")
    assert [r.size for r in fp32] == [1024, 2048, 4096, 8192]
    for r in rows:
        assert isinstance(r, recorded.MatmulRow) and r.device == "cuda:0"
        assert 0 < r.gflops < r.peak_gflops * 1.05 and r.fraction_of_peak == pytest.approx(r.gflops / r.peak_gflops)
    assert 45_000 < max(r.gflops for r in fp32) < 67_000
    raw = recorded.selfcheck_section("matmul_sweep")["rows"]
    assert [dataclasses.asdict(r) for r in rows] == raw  # the dataclass holds every recorded field, nothing more
    with pytest.raises(ValueError, match="float64.*bfloat16"):
        recorded.matmul_rows("float64")


def test_copy_bandwidth():
    bw = recorded.copy_bandwidth()
    assert 3_000 < bw.bandwidth_gbs < 4_800 and bw.ratio_to_spec == pytest.approx(bw.bandwidth_gbs / 4_800)


def test_roofline_points():
    points = recorded.roofline_points()
    assert all(isinstance(p, OpPoint) for p in points) and points[0].name == "add: z = x + y"
    raw = recorded.selfcheck_section("roofline_points")["points"]
    for p, r in zip(points, raw, strict=True):
        assert (p.intensity, p.gflops, p.gbs) == (pytest.approx(r["intensity"]), pytest.approx(r["gflops"]),
                                                  pytest.approx(r["gbs"], rel=1e-9))


def test_pinned_copies():
    copies = recorded.pinned_copies()
    assert copies.detail.startswith("1024 MiB h2d") and copies.pcie_link_gbs == pytest.approx(63.0, abs=0.1)
    big = {(r.direction, r.pinned): r.gbs for r in copies.rows if r.megabytes == 1024}
    assert set(big) == {("h2d", False), ("h2d", True), ("d2h", False), ("d2h", True)}
    assert big[("h2d", True)] > big[("h2d", False)] and max(big.values()) < copies.pcie_link_gbs


def test_memory_cuda_rows_count_what_the_formula_counts():
    rows = recorded.memory_cuda_rows()
    assert [(r.model, r.batch) for r in rows] == [("mlp", 256), ("alexnet_small", 128)]
    for r in rows:
        assert r.inference_peak == r.inference_predicted and r.train_peak > r.inference_peak
        assert all(isinstance(v, int) for v in (r.train_peak, r.inference_peak, r.train_formula))


def test_int8_inference():
    result = recorded.int8_inference()
    assert result.detail.startswith("_int_mm on GPU: True")
    assert [r.method for r in result.rows] == ["fp32", "bf16", "int8"]
    assert all(0.9 < r.accuracy <= 1 and r.median_s > 0 for r in result.rows)


def test_fp16_grad_scaler():
    result = recorded.fp16_grad_scaler()
    assert set(result.runs) == {"fp32", "bf16", "fp16"} and "GradScaler" in result.detail
    assert result.runs["fp16"].final_scale > 0 and result.runs["fp32"].final_scale is None
    assert all(0.9 < r.test_acc <= 1 for r in result.runs.values())


def test_conv_speed():
    rows = recorded.conv_speed(batch=128)
    assert len(rows) == 25 and {r.batch for r in rows} == {128}
    assert {r.layer for r in rows} == {"conv1", "conv2", "conv3", "conv4", "conv5"}
    assert all(r.ratio == 1.0 for r in rows if r.impl == "F.conv2d")
    assert len(recorded.conv_speed()) == 50
    raw = [r for r in recorded.selfcheck_section("conv_speed")["rows"] if r["batch"] == 128]
    assert [r.as_dict() for r in rows] == raw


def test_records_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        recorded.copy_bandwidth().bandwidth_gbs = 1.0


@pytest.mark.parametrize("accessor, check, path", [
    ("gpu_environment", "environment", ("torch",)),
    ("gpu_environment", "environment", ("gpus", 0, "pcie_gen")),
    ("matmul_rows", "matmul_sweep", ("rows", 2, "gflops")),
    ("copy_bandwidth", "bandwidth", ("bandwidth_gbs",)),
    ("roofline_points", "roofline_points", ("points", 3, "intensity")),
    ("pinned_copies", "pinned_copies", ("rows", 1, "gbs")),
    ("pinned_copies", "pinned_copies", ("pcie_link_gbs",)),
    ("memory_cuda_rows", "memory_cuda", ("models", "alexnet_small", "train_peak")),
    ("memory_cuda_rows", "memory_cuda", ("accounting",)),  # an old report, which counted less: refused
    ("int8_inference", "int8_inference", ("rows", 0, "accuracy")),
    ("fp16_grad_scaler", "fp16_grad_scaler", ("results", "fp16", "final_scale")),
    ("conv_speed", "conv_speed", ("rows", 7, "ratio")),
])
def test_a_missing_field_is_named(monkeypatch, accessor, check, path):
    report = copy.deepcopy(recorded.load_json())
    (entry,) = [c for c in report["checks"] if c["name"] == check]
    *parents, last = path
    for key in parents:
        entry = entry[key]
    del entry[last]
    monkeypatch.setattr(recorded, "load_json", lambda name=recorded.H200_SELFCHECK: report)
    with pytest.raises(recorded.RecordedFieldError, match=f"check '{check}'.* no field '{last}'"):
        getattr(recorded, accessor)()


def test_a_missing_check_is_named(monkeypatch):
    report = {"checks": [c for c in recorded.load_json()["checks"] if c["name"] != "bandwidth"]}
    monkeypatch.setattr(recorded, "load_json", lambda name=recorded.H200_SELFCHECK: report)
    with pytest.raises(recorded.RecordedFieldError, match="no check 'bandwidth'"):
        recorded.copy_bandwidth()
    with pytest.raises(KeyError):  # a RecordedFieldError is a KeyError
        recorded.copy_bandwidth()
