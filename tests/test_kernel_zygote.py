"""The browser tests' kernels, forked from a zygote (tests/kernel_zygote.py), behave as launched kernels do.

A fresh namespace with the preloaded modules in ``sys.modules``, the test run's startup file (a torch deprecation
fails the cell), an interrupt that reaches the running cell, and no kernel left behind when JupyterLab kills the
process it started (the client).
"""

import os
import signal
import socket
import time
import warnings

import kernel_zygote
import nbformat
import pytest
from jupyter_client import KernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from serving import stop_group

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def zygote(tmp_path_factory):
    """A running zygote and the environment (kernel spec, socket) that makes ``python3`` kernels its forks."""
    env = kernel_zygote.kernel_spec_env(tmp_path_factory.mktemp("zygote"))
    process = kernel_zygote.start(dict(os.environ, **env))
    yield process, env
    stop_group(process)


@pytest.fixture
def forked(zygote, monkeypatch):
    process, env = zygote
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return process.pid


def _notebook(*sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in sources]
    return nb


class _Hung(Exception):
    """An attempt to run a notebook that did not finish in time."""


def _execute(nb, seconds: float = 180, attempts: int = 2):
    """Run ``nb`` on a ``python3`` kernel (a fork, in these tests), starting a second client if the first hangs.

    Once (CONTRIBUTING, "Tests") a client's first request to the kernel it had just started never went out and
    nothing timed it out, which would hold a CI run to its limit. The alarm repeats every 30 s, so a clean-up that
    hangs as well is cut short too; the retry is reported as a warning, never passed over in silence."""

    def give_up(signum, frame):
        raise _Hung(f"no result from the kernel in {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, give_up)
    try:
        for attempt in range(1, attempts + 1):
            signal.setitimer(signal.ITIMER_REAL, seconds, 30)
            try:
                return NotebookClient(nb, timeout=120, kernel_name="python3").execute()
            except _Hung:
                if attempt == attempts:
                    raise
                warnings.warn(f"attempt {attempt} to run a notebook hung; starting a new client", stacklevel=2)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)


def _gone(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_a_forked_kernel_has_a_fresh_namespace_the_preloaded_modules_and_the_startup_file(forked):
    nb = _notebook("import os, sys\nprint('torch' in globals(), 'torch' in sys.modules, os.getppid())",
                   "import torch\ntorch.cuda.amp.GradScaler(enabled=False)")
    with pytest.raises(CellExecutionError, match="FutureWarning"):
        _execute(nb)
    assert nb.cells[0].outputs[0]["text"] == f"False True {forked}\n"


def _started(kernel: KernelManager):
    kernel.start_kernel()
    client = kernel.client()
    client.start_channels()
    client.wait_for_ready(timeout=120)
    reply = client.execute_interactive("import os; print(os.getpid(), os.getppid())", timeout=60,
                                       output_hook=lambda msg: outputs.append(msg))
    assert reply["content"]["status"] == "ok"
    return client


outputs: list = []


def _pids(client) -> tuple[int, int]:
    outputs.clear()
    client.execute_interactive("print(os.getpid(), os.getppid())", timeout=60, output_hook=outputs.append)
    text = "".join(m["content"].get("text", "") for m in outputs if m["msg_type"] == "stream")
    kernel, parent = text.split()
    return int(kernel), int(parent)


def test_an_interrupt_reaches_the_running_cell_and_shutdown_ends_the_kernel(forked):
    kernel = KernelManager(kernel_name="python3")
    client = _started(kernel)
    try:
        pid, parent = _pids(client)
        assert parent == forked and pid != kernel.provisioner.process.pid
        client.execute("import time\ntime.sleep(60)")
        time.sleep(1)
        kernel.interrupt_kernel()
        reply = client.get_shell_msg(timeout=30)
        while reply["parent_header"].get("msg_type") != "execute_request" or "sleep" not in str(reply):
            reply = client.get_shell_msg(timeout=30)
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
    finally:
        client.stop_channels()
        kernel.shutdown_kernel(now=False)
    assert _gone(pid), "the forked kernel outlived its shutdown"


def test_killing_the_process_jupyter_started_kills_the_forked_kernel_and_its_children(forked):
    kernel = KernelManager(kernel_name="python3")
    client = _started(kernel)
    pid, _ = _pids(client)
    outputs.clear()
    client.execute_interactive("import subprocess; child = subprocess.Popen(['sleep', '60']); print(child.pid)",
                               timeout=60, output_hook=outputs.append)
    child = int("".join(m["content"].get("text", "") for m in outputs if m["msg_type"] == "stream"))
    client.stop_channels()
    kernel.shutdown_kernel(now=True)  # SIGKILL to the client: it cannot forward that; the zygote sees it close
    assert _gone(pid), "the forked kernel outlived the killed client"
    assert _gone(child), "a process the kernel started outlived it"


def test_two_forked_kernels_draw_different_random_numbers(forked):
    draws = []
    for _ in range(2):
        nb = _notebook("import random, numpy, torch\nprint(random.random(), numpy.random.rand(), torch.rand(1).item())")
        _execute(nb)
        draws.append(nb.cells[0].outputs[0]["text"])
    assert draws[0] != draws[1] and len(set(draws[0].split()) & set(draws[1].split())) == 0, draws


def _connect(path: str) -> socket.socket:
    """Connect to the zygote's socket as its kernel client does: the zygote binds it only once its imports are done,
    so a test that runs first in its worker may ask before it exists."""
    deadline = time.monotonic() + kernel_zygote.CONNECT_TIMEOUT_S
    while True:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(path)
            return conn
        except FileNotFoundError:
            conn.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_a_client_that_leaves_before_asking_does_not_stop_the_zygote(forked, zygote):
    _, env = zygote
    quitter = _connect(env[kernel_zygote.SOCKET_ENV])
    quitter.close()
    nb = _notebook("print('still serving')")
    _execute(nb)
    assert nb.cells[0].outputs[0]["text"] == "still serving\n"


def test_a_zygote_that_cannot_start_says_why(tmp_path):
    env = dict(os.environ, **kernel_zygote.kernel_spec_env(tmp_path))
    env[kernel_zygote.SOCKET_ENV] = str(tmp_path / ("z" * 120))  # longer than a Unix socket's address may be
    process = kernel_zygote.start(env)
    process.wait(120)
    message = kernel_zygote.died(process, env)
    assert message is not None and "exited with code 1" in message and "too long" in message, message


def test_a_notebook_that_hangs_is_given_up_on_twice_and_reported(forked):
    nb = _notebook("import time\ntime.sleep(60)")
    with pytest.warns(UserWarning, match="attempt 1 to run a notebook hung"), pytest.raises(_Hung):
        _execute(nb, seconds=4)
