import os
import time

import parallel_workers as W
import pytest

from d2lmp.parallel.launch import WorkerError, choose_backend, choose_start_method, launch


def _assert_all_gone(folder, world):
    pids = [int(p.stem) for p in folder.glob("*.pid")]
    assert len(pids) == world, f"{len(pids)} of {world} workers noted their pid"
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.parametrize("world", [1, 2, 4])
def test_results_come_back_in_rank_order(tmp_path, world):
    results = launch(W.rank_info, world, str(tmp_path))
    assert [r["rank"] for r in results] == list(range(world))
    assert [r["env_rank"] for r in results] == list(range(world))
    assert all(r["sum"] == world * (world + 1) / 2 for r in results)
    assert all(r["threads"] == 1 for r in results)  # forked ranks: one thread each
    _assert_all_gone(tmp_path, world)


@pytest.mark.slow
def test_spawn_start_method_runs_module_workers(tmp_path):
    results = launch(W.rank_info, 2, str(tmp_path), start_method="spawn")
    assert [r["sum"] for r in results] == [3.0, 3.0]
    assert all(r["threads"] == max(1, len(os.sched_getaffinity(0)) // 2) for r in results)
    _assert_all_gone(tmp_path, 2)


def test_worker_defined_here_runs_with_fork(tmp_path):
    def local_worker(rank, world):  # a closure, as a notebook would define it
        return rank * 10

    assert launch(local_worker, 3) == [0, 10, 20]


# fork starts a rank in milliseconds, spawn in seconds (a fresh interpreter imports torch):
# the time limits allow for that start, and are far below the 60 s timeout.
@pytest.mark.parametrize("method, limit", [("fork", 15), pytest.param("spawn", 30, marks=pytest.mark.slow)])
def test_exception_names_rank_and_carries_traceback(tmp_path, method, limit):
    start = time.monotonic()
    with pytest.raises(WorkerError) as info:
        launch(W.raise_on_rank_1, 3, str(tmp_path), timeout=60, start_method=method)
    assert time.monotonic() - start < limit, "a failure must be reported within seconds, not at the timeout"
    err = info.value
    assert isinstance(err, RuntimeError)
    assert err.rank == 1 and err.kind == "raised"
    assert "KeyError" in str(err) and "rank one fails on purpose" in str(err)
    assert "raise_on_rank_1" in err.remote_traceback
    _assert_all_gone(tmp_path, 3)


def test_killed_rank_is_reported(tmp_path):
    start = time.monotonic()
    with pytest.raises(WorkerError, match=r"rank 1: died without reporting an error \(killed by signal 9\)") as info:
        launch(W.killed_rank_1, 2, str(tmp_path), timeout=60)
    assert info.value.kind == "killed"
    assert time.monotonic() - start < 15, "a killed rank must be reported within seconds, not at the timeout"
    _assert_all_gone(tmp_path, 2)


def test_rank_that_exits_without_a_result_is_reported(tmp_path):
    start = time.monotonic()
    with pytest.raises(WorkerError, match=r"rank 1: died without reporting an error \(exit code 3\)") as info:
        launch(W.exits_on_rank_1, 2, str(tmp_path), timeout=60)
    assert info.value.kind == "exited"
    assert time.monotonic() - start < 15, "an exited rank must be reported within seconds, not at the timeout"
    _assert_all_gone(tmp_path, 2)


def test_hanging_rank_ends_at_the_timeout(tmp_path):
    start = time.monotonic()
    with pytest.raises(WorkerError, match=r"rank\(s\) \[0\] did not finish within the 2 s timeout") as info:
        launch(W.rank_0_hangs, 2, str(tmp_path), timeout=2)
    assert info.value.kind == "timeout" and info.value.rank is None
    assert set(info.value.stacks) == {0, 1}, "the default group timeout outlasts launch's: both ranks still wait"
    assert time.monotonic() - start < 12
    _assert_all_gone(tmp_path, 2)


def test_a_hang_shows_where_every_rank_waits(tmp_path):
    """At the timeout each rank still running writes its Python stack: the line of the hang, and the finished peer."""
    import inspect

    from d2lmp.parallel import stacks

    with pytest.raises(WorkerError) as info:
        # the group's own timeout outlasts launch's: rank 1 stays in the closing barrier, where its stack shows it
        launch(W.rank_0_hangs, 2, str(tmp_path), timeout=3, group_timeout=60)
    err = info.value
    assert set(err.stacks) == {0, 1}, "both ranks were still running: both stacks come back"
    sleep_line = inspect.getsourcelines(W.rank_0_hangs)[1] + 4  # the time.sleep(300) of rank 0
    where = stacks.waiting_line(err.stacks[0])
    assert where is not None and where.function == "rank_0_hangs" and where.line == sleep_line, where
    assert f"rank 0: waits at {where}" in str(err)
    assert "rank 1: finished its function" in str(err)
    assert "parallel_workers.py" not in str(err).split("rank 1:", 1)[1], "the parent's frames are cut off"
    _assert_all_gone(tmp_path, 2)


def test_a_rank_that_aborts_leaves_its_stack(tmp_path):
    with pytest.raises(WorkerError, match=r"rank 1: died without reporting an error \(killed by signal 6\)") as info:
        launch(W.aborts_on_rank_1, 2, str(tmp_path), timeout=60)
    assert info.value.kind == "killed"
    assert "rank 1: died of a fatal signal at" in str(info.value) and "in aborts_on_rank_1" in str(info.value)
    _assert_all_gone(tmp_path, 2)


@pytest.mark.parametrize("args, kwargs, message", [
    ((W.rank_info, 0), {}, "world_size must be an integer >= 1"),
    ((W.rank_info, "2"), {}, "world_size must be an integer >= 1"),
    (("not a function", 2), {}, "fn must be callable"),
    ((W.rank_info, 2), dict(backend="mpi"), "available: auto, gloo, nccl"),
    ((W.rank_info, 2), dict(start_method="thread"), "available: auto, fork, spawn"),
    ((W.rank_info, 1), dict(start_method="fork", threads=2), "would hang in OpenMP"),
    ((W.rank_info, 2), dict(group_timeout=0), "group_timeout must be positive"),
])
def test_bad_input(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        launch(*args, **kwargs)


def test_nccl_without_enough_gpus_names_what_is_there():
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    with pytest.raises(ValueError, match=rf"{gpus} GPU\(s\) present"):
        choose_backend(gpus + 1, "nccl")


def test_spawn_refuses_functions_from_main():
    def fn(rank, world):
        return rank

    fn.__module__ = "__main__"
    with pytest.raises(ValueError, match="cannot import"):
        launch(fn, 2, start_method="spawn")


def test_auto_choices_on_this_machine():
    import torch

    if not torch.cuda.is_available():
        backend, why = choose_backend(2)
        assert backend == "gloo" and "no CUDA GPU" in why
        assert choose_start_method("gloo") == "fork"
    assert choose_start_method("nccl") == "spawn"


def _multithreaded_matmul(rank, world):
    import torch

    a = torch.randn(512, 512)
    return float((a @ a).sum())


def test_forked_rank_survives_a_parent_that_used_openmp():
    import torch

    a = torch.randn(1024, 1024)
    a @ a  # the parent's OpenMP pool is now busy-initialised
    assert len(launch(_multithreaded_matmul, 1, timeout=30)) == 1


# --------------------------------------------------------------------------------------------
# Faults: launch returns within its timeout plus REPORT_MARGIN_S, names the rank that failed, leaves nothing behind


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is gone, only not yet reaped by its parent
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("how, message, kind", [
    ("os._exit", r"rank 1: died without reporting an error \(exit code 3\)", "exited"),
    ("thread", r"rank 1: died without reporting an error \(exit code 4\)", "exited"),
    ("SIGKILL", r"rank 1: died without reporting an error \(killed by signal 9\)", "killed"),
    ("sys.exit", r"rank 1: raised SystemExit: 5", "raised"),
])
def test_the_rank_that_ended_is_named_not_the_peer_that_saw_it_go(tmp_path, how, message, kind):
    start = time.monotonic()
    with pytest.raises(WorkerError, match=message) as info:
        launch(W.exits_in_a_collective, 2, str(tmp_path), how, timeout=60)
    assert info.value.kind == kind and info.value.rank == 1
    assert time.monotonic() - start < 15, "reported within seconds, not at the timeout"
    _assert_all_gone(tmp_path, 2)


def test_a_rank_killed_while_its_result_is_written_is_named(tmp_path):
    import signal

    start = time.monotonic()
    with pytest.raises(WorkerError, match=r"rank 1: died without reporting an error \(killed by signal 9\)"):
        launch(W.dies_while_sending, 2, str(tmp_path), signal.SIGKILL, timeout=30)
    assert time.monotonic() - start < 15
    _assert_all_gone(tmp_path, 2)


def test_a_rank_stopped_while_its_result_is_written_is_named_at_the_timeout(tmp_path):
    import signal

    from d2lmp.parallel.launch import REPORT_MARGIN_S

    timeout = 1.0
    start = time.monotonic()
    with pytest.raises(WorkerError, match=r"rank\(s\) \[1\] did not finish") as info:
        launch(W.dies_while_sending, 2, str(tmp_path), signal.SIGSTOP, timeout=timeout)
    assert time.monotonic() - start < timeout + REPORT_MARGIN_S
    assert info.value.kind == "timeout"
    assert "rank(s) [1] did not answer the request for their stacks" in str(info.value)
    assert "rank(s) [1] stopped, as by SIGSTOP" in str(info.value)
    _assert_all_gone(tmp_path, 2)


def test_ranks_and_what_they_started_die_with_their_caller(tmp_path):
    """A caller SIGKILLed mid-launch (a notebook kernel restarted) leaves no rank and no rank's child behind."""
    import signal

    caller = os.fork()
    if caller == 0:  # the caller: launch ranks that each start a process, and wait
        try:
            launch(W.starts_a_child_and_waits, 2, str(tmp_path), timeout=60)
        finally:
            os._exit(0)
    try:
        deadline = time.monotonic() + 20
        while len(list(tmp_path.glob("*.pid"))) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        pids = [int(p.stem) for p in tmp_path.glob("*.pid")]
        assert len(pids) == 4, "two ranks and their two children noted their pids"
    finally:
        os.kill(caller, signal.SIGKILL)
        os.waitpid(caller, 0)
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in pids if _alive(pid)], "every rank and every rank's child ended with the caller"


@pytest.mark.parametrize("env, applies", [
    ({"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2"}, True),  # torchrun --standalone: every rank here
    ({"WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2"}, False),  # two nodes: gloo must reach the other one
    ({"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "GLOO_SOCKET_IFNAME": "eth1"}, True),  # the user's choice stays
])
def test_torchrun_ranks_on_one_machine_use_loopback(env, applies):
    from d2lmp.parallel.launch import LOOPBACK_INTERFACE, loopback_on_one_machine

    chosen = env.get("GLOO_SOCKET_IFNAME", LOOPBACK_INTERFACE)
    assert loopback_on_one_machine(env) == applies
    assert env.get("GLOO_SOCKET_IFNAME") == (chosen if applies else None)
    assert env.get("NCCL_SOCKET_IFNAME") == (LOOPBACK_INTERFACE if applies else None)


def test_bench_faults_runs_the_campaign_and_prints_its_goals(capsys):
    from d2lmp.commands.main import main

    assert main(["bench", "faults", "--runs", "1", "--worlds", "2", "--seed", "1"]) == 0  # seed 1: an os._exit
    out = capsys.readouterr().out
    import re

    assert re.search(r"^exit +1 ", out, re.M) and "died without reporting an error (exit code 3)" in out, out
    for what in ("launches past their timeout + margin", "reports naming the wrong rank or none",
                 "processes left alive (ranks and their children)", "plain launches that failed right after a fault"):
        assert f"goal: {what} <= 0: 0 of 1 runs (met)" in out, out


def test_rank_0_serves_the_store_until_every_other_rank_has_left():
    """``leave_together``: rank 0 returns only once the other ranks said they left (or at its timeout), so no rank
    reads from a store that is gone; a rank other than 0 returns at once."""
    import threading
    from datetime import timedelta

    from torch.distributed import TCPStore

    from d2lmp.parallel.launch import leave_together, loopback_listener

    listener = loopback_listener()
    port = listener.getsockname()[1]
    server = TCPStore("127.0.0.1", port, 3, is_master=True, timeout=timedelta(seconds=10), wait_for_workers=False,
                      master_listen_fd=listener.detach())
    clients = [TCPStore("127.0.0.1", port, 3, is_master=False, timeout=timedelta(seconds=10)) for _ in range(2)]
    late = 0.3

    def leave(rank, delay):
        time.sleep(delay)
        leave_together(clients[rank - 1], rank, 3)

    peers = [threading.Thread(target=leave, args=(1, 0.0)), threading.Thread(target=leave, args=(2, late))]
    start = time.monotonic()
    for t in peers:
        t.start()
    leave_together(server, 0, 3)
    waited = time.monotonic() - start
    for t in peers:
        t.join()
    assert late <= waited < late + 5  # it waited for the late rank, not for its timeout
    start = time.monotonic()
    leave_together(server, 0, 4, timeout=0.2)  # a rank that never leaves (it died): rank 0 gives up at the timeout
    assert 0.2 <= time.monotonic() - start < 2
