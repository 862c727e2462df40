"""The helpers that start servers for the browser tests: another process answering on the chosen port is not taken
for the server being up (a rank's store took a port between our choosing it and JupyterLab binding it, once)."""

import socket
import subprocess
import sys
import threading

import pytest
from serving import fetch_when_up, stop_group


def _answering_garbage() -> tuple[socket.socket, int]:
    """A listening socket that answers every connection with bytes that are not HTTP, as a TCP store would."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve():
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                connection.sendall(b"\xff\x00\x00\x00\r\n")

    threading.Thread(target=serve, daemon=True).start()
    return listener, listener.getsockname()[1]


def test_another_process_on_the_port_is_not_the_server_being_up():
    listener, port = _answering_garbage()
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1)"], start_new_session=True)
    try:
        with pytest.raises(AssertionError, match="exited with 0 before"):
            fetch_when_up(f"http://127.0.0.1:{port}/api/status", 30, server)
    finally:
        listener.close()
        stop_group(server)  # already gone: no error
