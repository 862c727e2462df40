"""Kernels for the browser tests forked from one process that has imported ipykernel, torch and matplotlib already.

A notebook's kernel is a new Python process that imports ipykernel, then, in the notebook's first cells, torch,
matplotlib and ipywidgets: about 6 CPU-seconds on a 2-core machine before the first cell of the lesson runs, twenty
times in a test run. Here a *zygote* process imports those modules once; JupyterLab's kernel spec for the tests
starts this file as a small client (``python -S kernel_zygote.py -f CONNECTION_FILE``, standard library only), which
asks the zygote to fork a kernel with its connection file, working directory, environment and standard streams.
The forked kernel is a fresh ipykernel with its own empty namespace: the notebook still runs every import statement
(they find the modules loaded) and every cell. What it inherits is only what the zygote imported (``PRELOAD``), the
modules every notebook's set-up cell imports anyway.

The client stands in for the kernel towards JupyterLab: it forwards the signals it gets (an interrupt is SIGINT),
exits with the kernel's exit code, and when it is killed the zygote kills the kernel. The zygote forks from a
single thread of its own (numpy's OpenBLAS may start a worker, whose fork handler keeps it safe); ``start``
starts it, ``serving.stop_group`` stops it and its kernels; a kernel also dies with the zygote (parent-death
signal) and takes its own process group with it when killed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time

# What the zygote imports before it forks kernels: ipykernel's own start, and the libraries each notebook's set-up
# cell imports (tests/test_browser.py runs only notebooks of this series). torch._dynamo (seconds) is imported by
# ``launch`` and by the first ``torch.optim`` step in most notebooks; it is one of torch's lazy modules, which
# ``torch._dynamo`` imports on first use anyway, so a notebook cannot tell it was loaded before.
PRELOAD = ("ipykernel.kernelapp", "ipykernel.ipkernel", "matplotlib.pyplot", "torch", "torch._dynamo", "ipywidgets")
SOCKET_ENV = "D2LMP_KERNEL_ZYGOTE"
CONNECT_TIMEOUT_S = 120
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def _send(conn: socket.socket, message: dict) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


def _receive(stream) -> dict | None:
    line = stream.readline()
    return json.loads(line) if line else None


# --- for the tests: the kernel spec and the zygote process


def kernel_spec_env(root) -> dict[str, str]:
    """Write a "python3" kernel spec that starts this file's client, under ``root``; return the environment that puts
    it ahead of ipykernel's own on the Jupyter path and names the zygote's socket (also under ``root``)."""
    from pathlib import Path

    spec = Path(root) / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-S", os.path.abspath(__file__), "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)", "language": "python", "metadata": {"debugger": True}}))
    path = os.pathsep.join(p for p in (str(Path(root) / "jupyter"), os.environ.get("JUPYTER_PATH")) if p)
    return {"JUPYTER_PATH": path, SOCKET_ENV: str(Path(root) / "zygote.sock")}


def start(env: dict[str, str]):
    """Start the zygote with ``env`` (the environment its kernels would have had, with ``kernel_spec_env``'s) in a
    session of its own; stop it with ``serving.stop_group``. Clients wait for its socket while it imports. Its own
    output (an import that failed, say) goes to ``log_path(env)``."""
    import subprocess

    with open(log_path(env), "wb") as log:
        return subprocess.Popen([sys.executable, os.path.abspath(__file__), "serve", env[SOCKET_ENV]], env=env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def log_path(env: dict[str, str]) -> str:
    """Where the zygote started with ``env`` writes its own output (beside its socket)."""
    return env[SOCKET_ENV] + ".log"


def died(process, env: dict[str, str]) -> str | None:
    """None while the zygote runs; once it has exited, a sentence with its exit code and the end of its output."""
    if process.poll() is None:
        return None
    with open(log_path(env), errors="replace") as log:
        tail = log.read()[-2000:]
    return f"the kernel zygote (tests/kernel_zygote.py) exited with code {process.returncode}: {tail}"


# --- the client: what JupyterLab starts as "the kernel"


def client(argv: list[str]) -> int:
    """Ask the zygote for a kernel with ``argv`` (``-f CONNECTION_FILE``); wait for it; return its exit code."""
    kernel: dict[str, int] = {}
    early: list[int] = []  # signals that came before the kernel's pid did

    def forward(signum, _frame):
        if "pid" not in kernel:
            early.append(signum)
            return
        try:  # to the kernel's process group, as jupyter_client signals a kernel it launched
            os.killpg(kernel["pid"], signum)
        except ProcessLookupError:
            pass

    for signum in FORWARDED:
        signal.signal(signum, forward)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while True:
        try:
            conn.connect(os.environ[SOCKET_ENV])
            break
        except FileNotFoundError:  # the zygote has not bound its socket yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}
    socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
    stream = conn.makefile("r")
    answer = _receive(stream)
    if answer is None:
        sys.exit("the kernel zygote closed the connection before it started a kernel")
    kernel["pid"] = answer["pid"]
    for signum in early:
        forward(signum, None)
    answer = _receive(stream)
    if answer is None:
        return 1
    code = answer["exit"]
    if code < 0:  # killed by a signal: end the same way, as the kernel's own process would have
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


# --- the zygote


def _preload() -> None:
    import importlib

    # as ipykernel sets it in each kernel, before matplotlib reads it at import
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    for name in PRELOAD:
        importlib.import_module(name)


def _become_kernel(request: dict, fds: list[int], inherited: list) -> None:
    """In the forked child: take the client's streams, directory and environment, new random seeds, then run
    ipykernel's app. It dies with the zygote (parent-death signal, and ipykernel's own watch of its parent)."""
    try:
        zygote = os.getppid()
        for thing in inherited:  # the zygote's socket, selector and other kernels' connections
            thing.close()
        os.setsid()
        _die_with_parent(zygote)
        for signum in FORWARDED + (signal.SIGCHLD,):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        del sys.path[0]  # this file's folder; ipykernel_launcher removes the working directory there likewise
        sys.argv = ["ipykernel_launcher", *request["argv"]]
        _reseed()
        from ipykernel import kernelapp

        # parent_handle's default was read from the zygote's environment at import: give the kernel's own
        kernelapp.launch_new_instance(argv=request["argv"],
                                      parent_handle=int(request["env"].get("JPY_PARENT_PID") or 0))
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 0
    except BaseException:  # noqa: BLE001 - the kernel's failure goes to its stderr, as a launched kernel's would
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _die_with_parent(parent: int) -> None:
    """Ask Linux to SIGKILL this process when its parent ends; end now if the parent has gone already."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)


def _reseed() -> None:
    """Fresh random seeds, as a new process would draw: every fork would otherwise share the zygote's state. (The
    string-hash seed is fixed at interpreter start and stays the zygote's.)"""
    import random

    import numpy
    import torch

    random.seed()
    numpy.random.seed()
    torch.seed()


def serve(path: str) -> None:
    """Listen on the Unix socket ``path``, import ``PRELOAD``, then fork a kernel for each client, until SIGTERM."""
    import selectors

    from d2lmp.parallel.lifetime import end_group  # SIGKILL a kernel's group (it called setsid) and the kernel

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)  # first, so that a socket it cannot have fails at once; clients wait in the backlog
    listener.listen()
    _preload()
    running = {"on": True}
    signal.signal(signal.SIGTERM, lambda *_: running.update(on=False))
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    kernels: dict[int, socket.socket] = {}  # kernel pid -> its client's connection
    while running["on"]:
        for key, _ in selector.select(timeout=0.2):
            if key.fileobj is listener:
                conn, _ = listener.accept()
                request, fds = _request(conn)
                if request is None:  # the client went away before it asked
                    conn.close()
                    continue
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    _become_kernel(request, fds, [listener, selector, conn, *kernels.values()])
                for fd in fds:
                    os.close(fd)
                try:
                    _send(conn, {"pid": pid})
                except OSError:  # the client died meanwhile: nobody will talk to this kernel
                    end_group(pid)
                    conn.close()
                    continue
                kernels[pid] = conn
                selector.register(conn, selectors.EVENT_READ, pid)
            else:  # a client closed its end (it was killed): so is its kernel, with what it started
                selector.unregister(key.fileobj)
                end_group(key.data)
        while kernels:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            conn = kernels.pop(pid, None)
            if conn is not None:
                try:
                    selector.unregister(conn)
                except KeyError:
                    pass
                try:
                    _send(conn, {"exit": os.waitstatus_to_exitcode(status)})
                except OSError:
                    pass
                conn.close()
    for pid in kernels:
        end_group(pid)


def _request(conn: socket.socket) -> tuple[dict | None, list[int]]:
    """A client's request and its three descriptors; (None, []) if it closed the connection before a whole one."""
    message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    while message and not message.endswith(b"\n"):
        chunk = conn.recv(1 << 20)
        message = message + chunk if chunk else b""
    if not message or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        return None, []
    return json.loads(message), fds


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        sys.exit(client(sys.argv[1:]))
