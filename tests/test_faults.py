"""Each staged hang is reported in a bounded time, with the line where every rank waits; DETAIL names the mismatch."""

import inspect

import pytest
import torch.distributed as dist

from d2lmp.parallel import faults as F

TIMEOUT = 3.0
BOUND = TIMEOUT + 15  # launch's timeout, then a few seconds to collect the stacks and stop the ranks


def _line_of(fn, text: str) -> int:
    """The file line of the first line of ``fn`` that contains ``text``."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _at(fn, text):
    return f"d2lmp/parallel/faults.py:{_line_of(fn, text)} in {fn.__name__}"


def test_a_skipped_collective_hangs_and_the_stacks_name_both_lines():
    d = F.stage("skipped_collective", timeout=TIMEOUT)
    assert d.hung and TIMEOUT <= d.seconds < BOUND, d.summary
    assert d.summary.startswith("rank(s) [0, 1] did not finish within the 3 s timeout")
    assert d.waiting == {0: _at(F.skipped_collective, "dist.all_reduce"), 1: _at(F.skipped_collective, "dist.barrier")}
    assert "rank 1: waits at" in d.message and "in barrier" in d.message and "in all_reduce" in d.message


@pytest.mark.slow
def test_two_sends_deadlock_and_both_ranks_wait_in_send():
    for detail in (False, True):  # DETAIL checks collectives only: point-to-point messages still hang
        d = F.stage("send_send", detail=detail, timeout=TIMEOUT)
        assert d.hung and d.seconds < BOUND
        assert d.waiting == {0: _at(F.send_send, "dist.send"), 1: _at(F.send_send, "dist.send")}


def test_a_shape_mismatch_aborts_a_rank_whose_stack_names_the_line():
    d = F.stage("shape_mismatch", timeout=TIMEOUT)
    assert not d.hung and d.seconds < BOUND
    assert "died without reporting an error (killed by signal 6)" in d.summary, d.summary
    assert set(d.waiting.values()) == {_at(F.shape_mismatch, "dist.all_reduce")}
    assert "died of a fatal signal" in d.message


@pytest.mark.parametrize("fault, expected", [
    ("skipped_collective", ["aspects:   Op type"]),  # which internal ops the two ranks compare varies
    ("shape_mismatch", ["TensorShape=[4]", "TensorShape=[5]", "aspects:   Tensor Tensor shapes"]),
])
def test_detail_reports_the_mismatch_at_once(fault, expected):
    d = F.stage(fault, detail=True, timeout=TIMEOUT)
    assert not d.hung and d.seconds < TIMEOUT, "DETAIL answers before the timeout"
    assert "Detected mismatch between collectives on ranks" in d.summary
    assert all(e in d.message for e in expected), d.message[:2000]
    fn = F.FAULTS[fault]
    calls = {_at(fn, call) for call in ("dist.all_reduce", "dist.barrier") if call in inspect.getsource(fn)}
    assert d.waiting and set(d.waiting.values()) <= calls, d.waiting


def test_debug_level_comes_back():
    before = dist.get_debug_level()
    with F.debug_level(True):
        assert dist.get_debug_level() == dist.DebugLevel.DETAIL
    assert dist.get_debug_level() == before


def test_bad_faults_are_clear_errors():
    with pytest.raises(ValueError, match="unknown fault 'typo'; available: skipped_collective"):
        F.stage("typo")
    with pytest.raises(ValueError, match="world must be 2"):
        F.stage("send_send", world=3)


def test_a_hung_exercise_says_where_each_rank_waits():
    from d2lmp.exercises import when_things_fail as ex
    from d2lmp.exercises._code import RanksFailed, on_ranks

    with pytest.raises(RanksFailed) as info:
        on_ranks(ex.pass_along, 3, timeout=TIMEOUT)
    text = str(info.value)
    assert text.startswith("your ranks hung: 3 ranks did not finish within 3 s")
    assert "Where each rank was waiting when the time was up:" in text
    assert f"rank 0: waits at {_line_at(ex.pass_along, 'dist.recv(')}" in text
    assert "rank 1: finished its function" in text


def _line_at(fn, call):
    return f"d2lmp/exercises/when_things_fail.py:{_line_of(fn, call)} in {fn.__name__}"
