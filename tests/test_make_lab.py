"""The README's main command, `make lab`, really serves the notebooks (no browser needed)."""

import json
import subprocess
import time

import pytest
from serving import fetch_when_up, free_port, port_is_free, stop_group

from tools.notebooks import ROOT, paths

NOTEBOOKS = paths()

@pytest.mark.slow

def test_make_lab_serves_the_notebooks(tmp_path):
    """Start `make lab`, fetch the notebook listing and the tree page, stop it and check the port is released."""
    port = free_port()
    log = tmp_path / "lab.log"
    with open(log, "w") as sink:
        lab = subprocess.Popen(
            ["make", "lab", f"LAB_ARGS=--no-browser --port={port} --ServerApp.port_retries=0 --ip=127.0.0.1 "
                             "--ServerApp.token="],
            cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)

    def show_log():
        return log.read_text()[-3000:]

    try:
        listing = json.loads(fetch_when_up(f"http://127.0.0.1:{port}/api/contents", 180, lab, show_log))
        names = {item["name"] for item in listing["content"]}
        assert {nb.name for nb in NOTEBOOKS} <= names, f"served: {sorted(names)}"
        tree = fetch_when_up(f"http://127.0.0.1:{port}/lab/tree", 30, lab, show_log).decode()
        assert "JupyterLab" in tree
    finally:
        stop_group(lab)
    deadline = time.monotonic() + 10
    while not port_is_free(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert port_is_free(port), f"port {port} still answers after make lab was stopped"
