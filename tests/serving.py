"""Helpers for tests that start a server: a free port, waiting for an address, stopping a process group."""

import http.client
import os
import signal
import socket
import subprocess
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def fetch_when_up(url: str, seconds: float, server: subprocess.Popen | None = None, describe=lambda: "") -> bytes:
    """The body at url once it answers; fails early if ``server`` exits, with ``describe()`` (e.g. its log)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server is not None and server.poll() is not None:
            raise AssertionError(f"the server exited with {server.returncode} before {url} answered\n{describe()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return response.read()
        except (OSError, http.client.HTTPException):  # not up yet, or another process answers on the port for now
            time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer within {seconds} s\n{describe()}")


def stop_group(process: subprocess.Popen, grace: float = 20) -> None:
    """SIGTERM the process group started with start_new_session=True; SIGKILL it if it lingers."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:  # the group is gone already
        process.wait(5)
        return
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(5)
