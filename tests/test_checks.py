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
