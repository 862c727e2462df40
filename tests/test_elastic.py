"""run_elastic: torchrun's agent called in-process restarts every forked rank when one dies, as torchrun does."""

import os
import signal

import pytest

from d2lmp.parallel.elastic import run_elastic


def _dies_once(argv: list[str]) -> int:
    """Rank 1 of the first attempt is killed; every rank of a later attempt prints and returns its attempt and rank."""
    rank, attempt = int(os.environ["RANK"]), int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    if attempt == 0 and rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    print(f"{argv[0]}: rank {rank}, attempt {attempt}")
    return 10 * attempt + rank


@pytest.mark.slow
def test_a_killed_rank_restarts_every_rank_and_the_last_attempt_returns(tmp_path, capsys):
    # capsys: sys.stdout without a file descriptor, as in a notebook kernel started under pytest
    run = run_elastic(_dies_once, ["hello"], nproc=2, max_restarts=1, log_dir=tmp_path)
    assert run.returned == {0: 10, 1: 11}  # attempt 1 on both ranks: rank 0 was restarted too
    assert len(run.failures) == 1 and "exitcode: -9" in run.failures[0] and "local_rank: 1" in run.failures[0]
    assert run.stdout(1) == "hello: rank 1, attempt 1\n"
