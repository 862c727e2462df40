"""The self-check's result type and the report entries it makes, against the recorded report's layout."""

import pytest

from d2lmp import checks, recorded
from d2lmp.checks import CheckResult


def test_check_result_refuses_unknown_status_and_entry_keys():
    with pytest.raises(ValueError, match="status"):
        CheckResult("ok", "fine")
    with pytest.raises(ValueError, match="seconds"):
        CheckResult("pass", "fine", dict(seconds=1.0))


def test_entry_has_the_recorded_reports_layout():
    entry = CheckResult("pass", "copy bandwidth", dict(bandwidth_gbs=1.0, ratio_to_spec=None)).entry("bandwidth", 0.2)
    assert list(entry) == ["name", "status", "detail", "bandwidth_gbs", "ratio_to_spec", "seconds"]
    assert list(entry) == list(recorded.selfcheck_section("bandwidth"))


def test_the_registry_runs_in_the_recorded_reports_order():
    names = [c.__name__.removeprefix("check_") for c in checks.CHECKS]
    assert names == [c["name"] for c in recorded.load_json()["checks"]]


def test_a_check_returning_something_else_fails_with_a_message():
    def check_dict(device, quick):
        return {"status": "pass", "detail": "old style"}

    (entry,) = checks.run_selfcheck(None, checks=[check_dict], echo=lambda *a: None)["checks"]
    assert entry["status"] == "fail" and "not a CheckResult" in entry["detail"] and "traceback" in entry


def test_nccl_bandwidth_reports_timings_as_plain_json_rows(monkeypatch):
    """The report keeps its JSON layout: each CollectiveTiming becomes a dict with the same keys, in order."""
    import json

    from d2lmp import hardware
    from d2lmp.checks import nccl
    from d2lmp.parallel import launch
    from d2lmp.parallel.collectives import CollectiveTiming

    timing = CollectiveTiming("all_reduce", "torch", 2, 2**20, 1e-4, 10.5, 10.5)
    monkeypatch.setattr(hardware, "gpu_count", lambda: 2)
    monkeypatch.setattr(launch, "launch", lambda *a, **k: [[timing], [timing]])
    result = nccl.check_nccl_bandwidth("cuda:0", True)
    assert result.status == "pass" and "10.5 GB/s" in result.detail
    assert result.data["rows"] == [dict(collective="all_reduce", impl="torch", world=2, size_bytes=2**20,
                                        seconds=1e-4, algbw_gbs=10.5, busbw_gbs=10.5)]
    assert list(result.data["rows"][0]) == ["collective", "impl", "world", "size_bytes", "seconds", "algbw_gbs",
                                            "busbw_gbs"]
    json.dumps(result.data)  # no default= needed


def test_conv_speed_reports_timings_as_the_json_rows_recorded_reads(monkeypatch):
    """Each ConvTiming reaches the report as a plain dict with the fields of recorded.ConvSpeedRow, in order."""
    import dataclasses
    import json

    from d2lmp import recorded
    from d2lmp.bench import conv as bench_conv
    from d2lmp.bench.conv import ConvTiming
    from d2lmp.checks import conv as conv_checks

    def fake_benchmark(layers, batch, device, min_time):
        return [ConvTiming("conv1", impl, device, batch, 1e-3, None if impl == "copy only" else 10.0, ratio, 10**7,
                           10**6) for impl, ratio in (("F.conv2d", 1.0), ("im2col", 2.0), ("c01b", 3.0),
                                                      ("copy only", 0.5), ("GEMM only", 1.5))]

    monkeypatch.setattr(conv_checks, "skip_without_gpu", lambda device: None)
    monkeypatch.setattr(bench_conv, "benchmark_conv", fake_benchmark)
    result = conv_checks.check_conv_speed("cuda:0", True)
    assert result.status == "info" and "b16 im2col 2.0–2.0×" in result.detail and "b128 c01b 3.0–3.0×" in result.detail
    fields = [f.name for f in dataclasses.fields(recorded.ConvSpeedRow)]
    assert all(list(row) == fields for row in result.data["rows"]) and len(result.data["rows"]) == 10
    assert result.data["rows"][3] == dict(layer="conv1", impl="copy only", device="cuda:0", batch=16, seconds=1e-3,
                                          gflops=None, ratio=0.5, flops=10**7, bytes=10**6)
    json.dumps(result.data)  # no default= needed
