"""Every strategy runs under torchrun, on one machine and as two "machines" (two agents on 127.0.0.1).

The multi-node test starts two torchrun agents, as one would on two hosts (one command per node),
meeting through the c10d rendezvous on a loopback port; a job on real machines only changes the
endpoint to the first node's address.
"""

import socket
import subprocess
import sys

import pytest

from d2lmp.parallel.launch import report_errors

RUN = [sys.executable, "-m", "torch.distributed.run"]


@pytest.mark.slow
@pytest.mark.parametrize("module, ranks, checks", [
    ("demo_pipeline", 2, 5), ("demo_tensor", 2, 2), ("demo_zero", 2, 4), ("demo_hybrid", 4, 1),
])
def test_demo_under_torchrun(module, ranks, checks):
    result = subprocess.run([*RUN, "--standalone", "--nproc-per-node", str(ranks), "-m", f"d2lmp.parallel.{module}"],
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.count(f"on {ranks} ranks") == result.stdout.count("matches: True") == checks, result.stdout
    assert "MISMATCH" not in result.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.parametrize("module, per_node, expected", [
    ("demo_dp", 1, "matches: True"), ("demo_hybrid", 2, "hybrid 2 x 2 (data x tensor)"),
])
def test_two_nodes_on_loopback(module, per_node, expected):
    port = _free_port()
    agents = [subprocess.Popen([*RUN, "--nnodes", "2", "--node-rank", str(node), "--nproc-per-node", str(per_node),
                                "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
                                "-m", f"d2lmp.parallel.{module}"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for node in (0, 1)]
    try:
        outputs = [agent.communicate(timeout=180) for agent in agents]
    finally:
        for agent in agents:
            if agent.poll() is None:
                agent.kill()
    for agent, (_, err) in zip(agents, outputs):
        assert agent.returncode == 0, err[-2000:]
    stdout = "".join(out for out, _ in outputs)  # the global rank 0 prints, on whichever agent it landed
    assert expected in stdout and "matches: False" not in stdout
    assert f"on {2 * per_node} ranks" in stdout


def test_report_errors_exits_1_on_a_mismatch(capsys):
    assert report_errors("demo_zero", 1, 2, {"ZeRO stage 3": 3e-3, "ZeRO stage 0": 0.0}, 1e-5) == 1
    err = capsys.readouterr().err
    assert "demo_zero: MISMATCH on rank 1 of 2: ZeRO stage 3 differs from one device by 3.00e-03" in err
    assert report_errors("demo_zero", 0, 2, {"ZeRO stage 0": 0.0}, 1e-5) == 0
    assert "matches: True" in capsys.readouterr().out
