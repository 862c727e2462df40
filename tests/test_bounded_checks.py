"""A hostile answer gets a verdict within the check's time limit, and leaves this process as it was."""

import os
import random
import sys
import threading
import time

import pytest
import torch

from d2lmp.exercises import bounded as B
from d2lmp.exercises.core import Exercise, Verdict, function_checker

LIMIT = 1.5


def _exercise(limit=LIMIT):
    checker = function_checker(lambda fn: [("f(2)", fn(2), 4)], lambda got, expected: got == expected)
    return Exercise("square", 1, "q", "h", "s", checker=checker, time_limit=limit)


def _sleeps(x):
    time.sleep(60)


def _exits(x):
    sys.exit(3)


def _interrupts(x):
    raise KeyboardInterrupt


def _leaves_the_process(x):
    os._exit(0)


def _disturbs(x):
    random.seed(1)
    torch.manual_seed(1)
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
    return x * x


def _reseeds(x):
    random.seed(1)
    torch.manual_seed(1)
    return x * x


class _SleepsWhenUnpickled:
    def __reduce__(self):
        return (time.sleep, (60,))


def _returns_a_result_that_sleeps_when_read(rank, world):
    return _SleepsWhenUnpickled()


@pytest.mark.parametrize("answer, message", [
    (_sleeps, f"the check did not finish within {LIMIT:g} s"),
    (_exits, "your function raised SystemExit: 3"),
    (_interrupts, "your function raised KeyboardInterrupt"),
    (_leaves_the_process, "your function ended the checking process (exit code 0) before a verdict"),
])
def test_a_hostile_answer_gets_a_verdict_in_time(answer, message, capsys):
    start = time.monotonic()
    verdict = _exercise().check(answer)
    assert time.monotonic() - start < LIMIT + 2
    assert isinstance(verdict, Verdict) and not verdict.correct and message in verdict.message, verdict


def test_the_answer_leaves_random_state_and_threads_as_they_were(capsys):
    random.seed(7)
    torch.manual_seed(7)
    before = random.random(), torch.rand(1).item(), threading.active_count()
    random.seed(7)
    torch.manual_seed(7)
    assert _exercise().check(_disturbs).correct
    assert (random.random(), torch.rand(1).item(), threading.active_count()) == before


def test_a_result_that_sleeps_when_unpickled_is_bounded_with_the_ranks_that_made_it(capsys):
    from d2lmp.exercises._code import code_checker, on_ranks

    checker = code_checker(lambda fn: [("2 ranks", on_ranks(fn, 2, timeout=10)[0], 0)], lambda *_: None, "ok")
    ex = Exercise("ranks", 1, "q", "h", "s", checker=checker, time_limit=LIMIT + 1)
    start = time.monotonic()
    verdict = ex.check(_returns_a_result_that_sleeps_when_read)
    assert time.monotonic() - start < LIMIT + 3
    assert not verdict.correct and "did not finish" in verdict.message, verdict


def test_the_stub_is_still_not_answered(capsys):
    def stub(x):
        raise NotImplementedError

    assert _exercise().check(stub) is None
    assert "not answered yet" in capsys.readouterr().out


def test_a_number_is_checked_here_with_every_thread():
    """A number's check may time this machine (float64_ratio does), which a forked child could do on one thread."""
    threads = torch.get_num_threads()
    ex = Exercise("threads", 1, "q", "h", "s", checker=lambda answer: Verdict(torch.get_num_threads() == answer, ""))
    assert ex.check(threads).correct


def test_without_fork_an_exit_is_a_verdict_and_the_random_state_comes_back(monkeypatch):
    monkeypatch.setattr(B, "can_fork", lambda: False)
    assert "raised SystemExit" in B.bounded(lambda: _exits(0)).message
    random.seed(3)
    torch.manual_seed(3)
    expected = random.random(), torch.rand(1).item()
    random.seed(3)
    torch.manual_seed(3)
    assert B.bounded(lambda: Verdict(_reseeds(2) == 4, "")).correct
    assert (random.random(), torch.rand(1).item()) == expected
