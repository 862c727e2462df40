"""A restart that loses nothing: a rank killed with SIGKILL, torchrun restarts the job, it resumes and ends equal.

Two torchrun runs (the issue's two kill configurations: another rank, another step, one of them killed while
writing a checkpoint) check the whole path; the entry point compares each with an uninterrupted run it trains
itself. The in-process tests restart by hand with ``launch`` (fork, fast): a half-written checkpoint is skipped,
the resume is exact, and leaving the random state out of the resume breaks the equality, so the comparison can fail.
"""

import os
import subprocess
import sys

import pytest
import torch

from d2lmp.commands import resilient as cmd
from d2lmp.parallel import checkpoint as ckpt
from d2lmp.parallel import resilient as RS
from d2lmp.parallel.launch import WorkerError, launch

RUN = [sys.executable, "-m", "torch.distributed.run", "--max-restarts", "1", "--standalone", "--nproc-per-node", "2",
       "--monitor-interval", "0.1", "-m", "d2lmp.commands.demo", "resilient"]  # the one entry point's strategy


@pytest.mark.slow
@pytest.mark.parametrize("rank, step, during, every, resumed, recomputed", [
    (1, 5, "step", 2, 4, 1),  # killed in its step's all-reduce: the step after the checkpoint is lost
    (0, 6, "save", 3, 3, 3),  # killed while writing the checkpoint of step 6: that checkpoint never counts
])
@pytest.mark.slow
def test_a_killed_rank_restarts_under_torchrun_and_ends_equal(tmp_path, rank, step, during, every, resumed,
                                                               recomputed):
    result = subprocess.run([*RUN, "--steps", "8", "--checkpoint-every", str(every), "--kill-rank", str(rank),
                             "--kill-step", str(step), "--kill-during", during, "--dir", str(tmp_path)],
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    assert lines[-1].startswith("largest difference from an uninterrupted run: 0 ("), lines
    assert f"restart 1: killed at step {step}, resumed from step {resumed}: {recomputed} step(s) recomputed" \
        in result.stdout
    events = RS.read_events(tmp_path)
    assert {e.attempt for e in events} == {0, 1}
    kill = next(e for e in events if e.event == "kill")
    assert (kill.rank, kill.step, kill.during) == (rank, step, during)
    for pid in {e.pid for e in events}:  # every rank of both attempts is gone
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert all(ckpt.is_complete(p) for p in tmp_path.glob("step_*")), "the restart rewrote the half-written one"


def test_a_half_written_checkpoint_is_skipped_and_the_resume_is_exact(tmp_path):
    spec = RS.RunSpec(steps=6, checkpoint_every=2)
    fault = RS.Fault(rank=1, step=4, during="save")
    reference = launch(RS.train, 2, spec, backend="gloo")
    with pytest.raises(WorkerError, match=r"rank 1: died without reporting an error \(killed by signal 9\)"):
        launch(RS.train, 2, spec, str(tmp_path), "t", 0, fault, backend="gloo")
    half = ckpt.step_dir(tmp_path, 4)
    assert half.is_dir() and not ckpt.is_complete(half)
    with pytest.raises(ckpt.IncompleteCheckpoint, match="its save never finished"):
        ckpt.read_marker(half)
    assert ckpt.latest_complete(tmp_path, "t") == ckpt.step_dir(tmp_path, 2)

    resumed = launch(RS.train, 2, spec, str(tmp_path), "t", 1, fault, backend="gloo")
    assert [r.resumed_from for r in resumed] == [2, 2] and resumed[0].steps_run == (3, 4, 5, 6)
    assert [RS.max_difference(a.state, b.state) for a, b in zip(resumed, reference)] == [0.0, 0.0]
    [restart] = RS.lost_work(RS.read_events(tmp_path))
    assert (restart.killed_at, restart.resumed_from, restart.steps_recomputed) == (4, 2, 2)
    assert restart.lost_seconds > 0 and restart.restart_seconds > 0

    # the same resume without the random state: dropout draws other masks, and the comparison sees it
    forgetful = launch(RS.train, 2, spec, str(tmp_path), "t", 2, None, ("rng",), backend="gloo")
    assert forgetful[0].resumed_from == 4
    assert RS.max_difference(forgetful[0].state, reference[0].state) > 0


def test_the_entry_point_exits_1_when_the_runs_differ(tmp_path, monkeypatch):
    spec = RS.RunSpec(steps=2, checkpoint_every=1)
    (tmp_path / "ok").mkdir()
    (tmp_path / "bad").mkdir()
    assert launch(cmd.run, 2, spec, str(tmp_path / "ok"), "a", 0, None, backend="gloo") == [0, 0]
    monkeypatch.setattr(RS, "max_difference", lambda a, b: 0.5)  # the forked ranks inherit the broken comparison
    assert launch(cmd.run, 2, spec, str(tmp_path / "bad"), "b", 0, None, backend="gloo") == [1, 1]


EIGHT = ["--steps", "8", "--checkpoint-every", "2"]


@pytest.mark.parametrize("argv, message", [
    ([*EIGHT, "--kill-rank", "1", "--kill-step", "9"], "kill step 9 is beyond the run: steps are numbered 1 to 8"),
    ([*EIGHT, "--kill-rank", "1", "--kill-step", "0"], "kill step 0 is beyond the run"),
    ([*EIGHT, "--kill-rank", "2", "--kill-step", "3"], "kill rank 2 does not exist: the ranks are 0 to 1"),
    ([*EIGHT, "--kill-rank", "1"], "give --kill-rank and --kill-step together"),
    (["--steps", "8", "--checkpoint-every", "3", "--kill-rank", "1", "--kill-step", "4", "--kill-during", "save"],
     "no checkpoint is saved after step 4"),
    (["--steps", "8", "--checkpoint-every", "0"], "checkpoint-every must be at least 1"),
    (["--steps", "0", "--checkpoint-every", "1"], "steps must be at least 1"),
    (["--steps", "8"], "required: --checkpoint-every"),
    ([*EIGHT, "--kill-during", "lunch"], "invalid choice: 'lunch'"),
])
def test_bad_arguments_are_clear_errors(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert cmd.main([*argv, "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{cmd.PROG}: error: ") and message in err, err


@pytest.mark.filterwarnings("ignore:torch.distributed is disabled")
def test_a_missing_or_foreign_checkpoint_folder_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    args = ["--steps", "4", "--checkpoint-every", "2", "--dir"]
    assert cmd.main([*args, str(tmp_path / "missing")]) == 2
    assert f"checkpoint folder {tmp_path / 'missing'} does not exist; create it first" in capsys.readouterr().err
    ckpt.save({"w": torch.ones(2)}, tmp_path, 2, run_id="an-earlier-run")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "this-run")
    assert cmd.main([*args, str(tmp_path)]) == 2
    assert "is a checkpoint of another run ('an-earlier-run')" in capsys.readouterr().err


def test_outside_torchrun_the_entry_point_says_how_to_run_it(monkeypatch, capsys):
    monkeypatch.delenv("RANK", raising=False)
    assert cmd.main(["--steps", "2"]) == 2
    assert "run me under torchrun" in capsys.readouterr().err


def test_the_data_position_resumes_the_same_batches():
    data = RS.ShuffledBatches(10, 4, seed=3)
    first = [data.next() for _ in range(5)]  # 2 batches per epoch: epochs 0, 1 and the start of 2
    assert not torch.equal(first[0], first[2]), "each epoch draws its own order"
    again = RS.ShuffledBatches(10, 4, seed=3)
    [again.next() for _ in range(3)]
    state = again.state_dict()
    resumed = RS.ShuffledBatches(10, 4, seed=3)
    resumed.load_state_dict(state)
    assert all(torch.equal(a, b) for a, b in zip([resumed.next(), resumed.next()], first[3:]))


def test_lost_work_reads_the_events():
    E = RS.LogEvent
    events = [E(attempt=0, rank=0, event="resume", step=0, time=0.0, pid=1),
              E(attempt=0, rank=0, event="saved", step=3, time=3.0, pid=1),
              E(attempt=0, rank=1, event="kill", step=5, time=5.5, pid=2, during="step"),
              E(attempt=1, rank=0, event="resume", step=3, time=9.5, pid=3),
              E(attempt=1, rank=1, event="resume", step=3, time=9.4, pid=4)]
    [r] = RS.lost_work(events)
    assert (r.attempt, r.killed_at, r.resumed_from, r.steps_recomputed) == (1, 5, 3, 2)
    assert r.lost_seconds == pytest.approx(2.5) and r.restart_seconds == pytest.approx(3.9)
    assert RS.lost_work(events[:3]) == [], "a kill with no restart after it is not a restart"


def test_bad_runs_and_faults_are_clear_errors():
    with pytest.raises(ValueError, match="batch must lie between"):
        RS.RunSpec(steps=2, checkpoint_every=1, batch=1000)
    spec = RS.RunSpec(steps=4, checkpoint_every=2)
    assert spec.checkpoint_steps() == [2]
    with pytest.raises(ValueError, match="a fault happens during one of"):
        RS.Fault(0, 1, "lunch").check(spec)
    with pytest.raises(ValueError, match="cannot forget"):
        RS.train(0, 1, spec, forget=("weights",))


@pytest.mark.filterwarnings("ignore:torch.distributed is disabled")
def test_a_resume_under_other_settings_is_refused_unless_allowed(tmp_path, monkeypatch, capsys):
    spec = RS.RunSpec(steps=4, checkpoint_every=2)
    assert "seed" in spec.config() and "steps" not in spec.config()  # a longer run may resume a shorter one
    ckpt.save({"w": torch.ones(2)}, tmp_path, 2, run_id="this-run", config=spec.config())
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "this-run")
    args = ["--steps", "6", "--checkpoint-every", "2", "--dir", str(tmp_path)]
    assert cmd.main([*args, "--seed", "1"]) == 2
    err = capsys.readouterr().err
    assert "was saved by another configuration (seed: saved 0, now 1)" in err and "--allow-other-config" in err
    RS.check_folder(tmp_path, "this-run", RS.RunSpec(steps=6, checkpoint_every=2))
    assert cmd.parse([*args, "--seed", "1", "--allow-other-config"], 2, "this-run")[3] is True


def test_the_report_counts_torchruns_restarts_whatever_killed_the_rank(tmp_path, capsys):
    spec = RS.RunSpec(steps=4, checkpoint_every=2)
    for attempt, step in ((0, 0), (1, 2)):  # attempt 0 lost a rank from outside: no kill in the log
        RS._log(str(tmp_path), attempt, 0, "resume", step)
    result = RS.RunResult(0, 2, 1, 2, (3, 4))
    cmd._report(spec, 2, 1, result, str(tmp_path), 0.0)
    out = capsys.readouterr().out
    assert "restart 1: a rank was lost without the staged kill; resumed from step 2" in out
    assert out.strip().splitlines()[-1].endswith("after 1 restart(s))")
