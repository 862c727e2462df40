"""Every strategy runs under torchrun through one entry point, on one machine and as two "machines".

``python -m d2lmp.commands.demo STRATEGY ...`` runs each named strategy's rank check in one process group.
Two launches cover them all: one standalone job on 2 ranks (every strategy that 2 ranks can run), and
one job of two torchrun agents with 2 ranks each, as one would start on two hosts (one command per
node), meeting through the c10d rendezvous on a loopback port, running every strategy on 4 ranks; a job
on real machines only changes the endpoint to the first node's address. The verdict (which checks
print, the exit status, the message naming the rank) and the input errors are tested in-process.
"""

import math
import re
import socket
import subprocess
import sys

import pytest

from d2lmp.checks import ranks
from d2lmp.commands import demo

RUN = [sys.executable, "-m", "torch.distributed.run"]
ENTRY = ["-m", "d2lmp.commands.demo"]
# strategy -> the checks its rank function reports, one line each
CHECKS = {"dp": 4, "collectives": 6, "pipeline": 3, "interleaved": 2, "context": 32, "all-to-all": (7, 8),
          "experts": 12, "tensor": 2, "zero": 4, "gpt-tensor": 54, "3d": 6, "hybrid": 1}  # (on 2 ranks, on 4)


def _count(strategy: str, world: int) -> int:
    """How many check lines ``strategy`` reports on ``world`` (2 or 4) ranks."""
    n = CHECKS[strategy]
    return n if isinstance(n, int) else n[world // 2 - 1]
# The 2-rank job: the hybrid and 3d need 4 ranks; gpt-tensor runs on 4 in the two-agent job and on 2 and 4 in
# tests/test_gpt_tensor.py, which is enough for its 54 cases.
ON_TWO_RANKS = [name for name in CHECKS if name not in ("hybrid", "3d", "gpt-tensor")]


def _blocks(stdout: str) -> dict[str, tuple[int, list[str]]]:
    """Rank 0's report: strategy -> (ranks, its check lines)."""
    blocks: dict[str, tuple[int, list[str]]] = {}
    current: list[str] | None = None
    for line in stdout.splitlines():
        head = re.match(r"([\w-]+) on (\d+) ranks: ", line)
        if head:
            current = []
            blocks[head.group(1)] = (int(head.group(2)), current)
        elif line.startswith("  ") and current is not None:
            current.append(line)
    return blocks


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def standalone():
    """One torchrun job on 2 ranks running every strategy 2 ranks can run."""
    return subprocess.run([*RUN, "--standalone", "--nproc-per-node", "2", *ENTRY, *ON_TWO_RANKS],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def two_nodes():
    """Two torchrun agents of 2 ranks each on 127.0.0.1, as on two machines, running every strategy on 4 ranks."""
    port = _free_port()
    agents = [subprocess.Popen([*RUN, "--nnodes", "2", "--node-rank", str(node), "--nproc-per-node", "2",
                                "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}", *ENTRY, "all"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for node in (0, 1)]
    try:
        outputs = [agent.communicate(timeout=300) for agent in agents]
    finally:
        for agent in agents:
            if agent.poll() is None:
                agent.kill()
    return [agent.returncode for agent in agents], outputs


def test_the_tests_cover_every_strategy():
    assert set(CHECKS) == set(demo.STRATEGIES)
    assert all(demo.STRATEGIES[name].world_problem(2) is None for name in ON_TWO_RANKS)
    assert all(s.world_problem(4) is None for s in demo.STRATEGIES.values())
    assert all(s.check.__module__.startswith("d2lmp.checks.") for s in demo.STRATEGIES.values())


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ON_TWO_RANKS)
def test_strategy_under_torchrun(standalone, strategy):
    assert standalone.returncode == 0, standalone.stderr[-2000:]
    assert "MISMATCH" not in standalone.stderr
    world, lines = _blocks(standalone.stdout)[strategy]
    assert world == 2 and len(lines) == _count(strategy, 2), standalone.stdout
    assert all(line.endswith("matches: True") for line in lines), standalone.stdout


@pytest.mark.slow
def test_collectives_report_every_check_of_the_rank_function(standalone):
    from d2lmp.parallel.launch import launch

    names = set(launch(ranks.check_collectives, 1, (1,))[0])  # the checks the entry point reports, one line each
    _, lines = _blocks(standalone.stdout)["collectives"]
    assert {line.split()[0] for line in lines} == names and len(names) == CHECKS["collectives"]
    assert all("exact comparison: equal" in line for line in lines)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", list(CHECKS))
def test_strategy_on_two_nodes_on_loopback(two_nodes, strategy):
    codes, outputs = two_nodes
    for code, (_, err) in zip(codes, outputs):
        assert code == 0, err[-2000:]
    stdout = "".join(out for out, _ in outputs)  # the global rank 0 prints, on whichever agent it landed
    world, lines = _blocks(stdout)[strategy]
    assert world == 4 and len(lines) == _count(strategy, 4), stdout
    assert all(line.endswith("matches: True") for line in lines), stdout
    if strategy == "hybrid":
        assert "hybrid 2 x 2 (data x tensor)" in lines[0]


@pytest.mark.parametrize("rank, results, message", [
    (1, {"zero": {"ZeRO stage 3": 3e-3, "ZeRO stage 0": 0.0}},
     "MISMATCH on rank 1 of 2: zero: ZeRO stage 3, max |difference| 3.00e-03 (tolerance 1e-05)"),
    (1, {"dp": {"allreduce": 0.0, "ddp": 3e-3}}, "MISMATCH on rank 1 of 2: dp: ddp, max |difference| 3.00e-03"),
    (0, {"collectives": {"ring_all_reduce": True, "tree_all_reduce": False}},
     "MISMATCH on rank 0 of 2: collectives: tree_all_reduce, exact comparison: DIFFERENT"),
    (0, {"tensor": {"column": 0.0, "row": math.nan}}, "MISMATCH on rank 0 of 2: tensor: row, max |difference| nan"),
])
def test_a_mismatch_names_rank_check_error_and_tolerance_and_exits_1(capsys, rank, results, message):
    assert demo.report(rank, 2, results) == 1
    out, err = capsys.readouterr()
    assert err.startswith(f"{demo.PROG}: ") and message in err and err.count("\n") == 1
    assert ("matches: False" in out) == (rank == 0) and ("matches: True" in out) == (rank == 0)


def test_every_check_matching_exits_0_and_rank_0_alone_prints(capsys):
    results = {"zero": {"ZeRO stage 0": 0.0, "ZeRO stage 3": 2e-8}, "collectives": {"ring_all_reduce": True}}
    assert demo.report(0, 2, results) == 0
    out, err = capsys.readouterr()
    assert not err and out.count("matches: True") == 3 and "zero on 2 ranks: ZeRO stages 0-3" in out
    assert "max |difference| 2.00e-08 (tolerance 1e-05)" in out
    assert demo.report(1, 2, results) == 0
    assert capsys.readouterr() == ("", "")


def _torchrun_env(world: int, local_rank: int = 0) -> dict[str, str]:
    return {"RANK": str(local_rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(local_rank)}


@pytest.mark.parametrize("argv, env, message", [
    (["zero", "sharding"], _torchrun_env(2),
     "unknown strategy 'sharding'; available: dp, collectives, pipeline, interleaved, context, all-to-all, experts, "
     "tensor, zero, "
     "gpt-tensor, 3d, hybrid (or all)"),
    (["hybrid"], _torchrun_env(2), "cannot run on 2 ranks: hybrid needs at least 4 ranks, an even number"),
    (["hybrid"], _torchrun_env(6 - 1), "cannot run on 5 ranks: hybrid needs at least 4 ranks, an even number"),
    (["all"], _torchrun_env(8), "cannot run on 8 ranks: pipeline needs at most 7 ranks; "
     "interleaved needs at least 2 and at most 5 ranks; gpt-tensor needs at least 2 and at most 4 ranks"),
    (["zero"], {}, "run this under torchrun"),
])
def test_bad_input_is_one_line_and_exit_2_before_joining_the_group(monkeypatch, capsys, argv, env, message):
    monkeypatch.setattr(demo, "run_from_env", lambda *a: pytest.fail("joined the group before checking the input"))
    assert demo.main(argv, env=env) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{demo.PROG}: ") and message in err and err.count("\n") == 1
    if env:  # every rank says it: torchrun stops the others as soon as the first exits, whichever that is
        assert demo.main(argv, env=_torchrun_env(int(env["WORLD_SIZE"]), local_rank=1)) == 2
        assert capsys.readouterr().err == err


@pytest.mark.slow
def test_a_world_size_the_strategies_cannot_use_is_told_by_torchrun_too():
    """A real job on 2 ranks asked for every strategy: the reason on stderr, and last in torchrun's failure summary,
    beside the rank's exit status 2 (torchrun's own status is 1: the launcher's, which no rank sets)."""
    result = subprocess.run([*RUN, "--standalone", "--nproc-per-node", "2", *ENTRY, "all"],
                            capture_output=True, text=True, timeout=300)
    reason = f"{demo.PROG}: cannot run on 2 ranks: 3d needs at least 4 ranks, a multiple of 4; hybrid"
    assert result.returncode == 1 and "Traceback" in result.stderr  # torchrun's ChildFailedError
    assert any(line.startswith(reason) for line in result.stderr.splitlines()), result.stderr
    summary = result.stderr[result.stderr.index("Root Cause"):]
    assert "exitcode  : 2" in summary and f"traceback : {reason}" in summary, summary
    assert "matches" not in result.stdout  # no check ran


def test_main_runs_the_named_strategies_in_order(monkeypatch, capsys):
    def fake_run_from_env(fn, names):
        assert fn is demo.run_checks
        return 0, 4, {name: {"x": 0.0} for name in names}

    monkeypatch.setattr(demo, "run_from_env", fake_run_from_env)
    assert demo.main(["zero", "dp", "zero"], env=_torchrun_env(4)) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines() if not line.startswith(" ")] \
        == ["zero", "dp"]
    assert demo.main(["all"], env=_torchrun_env(4)) == 0
    assert capsys.readouterr().out.count(" on 4 ranks: ") == len(demo.STRATEGIES)


def test_exit_after_torchrun_passes_the_status_on():
    code = ("import d2lmp.commands.demo as demo\n"
            "from d2lmp.parallel.launch import exit_after_torchrun\n"
            "demo.run_from_env = lambda fn, names: (0, 2, {'dp': {'ddp': 1.0}})\n"
            "exit_after_torchrun(demo.main(['dp'], env={'RANK': '0', 'WORLD_SIZE': '2'}))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "MISMATCH on rank 0 of 2: dp: ddp" in result.stderr
