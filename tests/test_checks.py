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
