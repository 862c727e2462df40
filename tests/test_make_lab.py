"""The README's main command, `make lab`, really serves the notebooks (no browser needed)."""

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url, seconds, server, log):
    """The body at url once the server answers; fails early, with the server's log, if it exits."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"make lab exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return response.read()
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"{url} did not answer within {seconds} s:\n{log.read_text()[-3000:]}")


def _port_is_free(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_make_lab_serves_the_notebooks(tmp_path):
    """Start `make lab`, fetch the notebook listing and the tree page, stop it and check the port is released."""
    port = _free_port()
    log = tmp_path / "lab.log"
    with open(log, "w") as sink:
        lab = subprocess.Popen(
            ["make", "lab", f"LAB_ARGS=--no-browser --port={port} --ip=127.0.0.1 --ServerApp.token="],
            cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        listing = json.loads(_get(f"http://127.0.0.1:{port}/api/contents", 180, lab, log))
        names = {item["name"] for item in listing["content"]}
        assert {nb.name for nb in NOTEBOOKS} <= names, f"served: {sorted(names)}"
        tree = _get(f"http://127.0.0.1:{port}/lab/tree", 30, lab, log).decode()
        assert "JupyterLab" in tree
    finally:
        os.killpg(lab.pid, signal.SIGTERM)
        try:
            lab.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(lab.pid, signal.SIGKILL)
            lab.wait(5)
    deadline = time.monotonic() + 10
    while not _port_is_free(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _port_is_free(port), f"port {port} still answers after make lab was stopped"
