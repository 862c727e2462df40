"""While ``launch`` runs, nothing outside this machine can reach its ranks: every listening socket is loopback.

The rendezvous store is unauthenticated, and so are gloo's pair connections; on a shared
JupyterHub node or a laptop on public Wi-Fi, a socket on ``*`` or the LAN address is open to anyone.
"""

import ipaddress
import os

import pytest
from conftest import requires_cuda

from d2lmp.parallel.launch import LOOPBACK_INTERFACE, launch
from tools.nccl_listeners import rank_listeners

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/net/tcp"), reason="reads Linux /proc")


def _loopback(address):
    ip = ipaddress.ip_address(address)
    return (getattr(ip, "ipv4_mapped", None) or ip).is_loopback


@pytest.mark.parametrize("world, method", [(2, "fork"), (4, "fork"), pytest.param(2, "spawn", marks=pytest.mark.slow)])
def test_every_listening_socket_is_loopback(monkeypatch, world, method):
    monkeypatch.delenv("GLOO_SOCKET_IFNAME", raising=False)  # the launcher's default, not the user's choice
    reports = launch(rank_listeners, world, start_method=method, timeout=60)
    for rank, report in enumerate(reports):
        for who in ("rank", "launcher"):
            exposed = [s for s in report[who] if not _loopback(s[0])]
            assert not exposed, f"rank {rank}'s {who} process listens beyond this machine: {exposed}"
        assert report["gloo_interface"] == LOOPBACK_INTERFACE
        assert report["nccl_interface"] == LOOPBACK_INTERFACE
    # The store serves from rank 0 on the launcher's port (so the /proc reading found it);
    # no other rank keeps a copy of that socket.
    port = reports[0]["store_port"]
    assert ("127.0.0.1", port) in reports[0]["rank"]
    assert all(port not in [p for _, p in r["rank"]] for r in reports[1:])


@requires_cuda
def test_nccl_bootstrap_listens_on_loopback_only(monkeypatch):
    """One NCCL rank on this machine's GPU: the barrier builds the communicator, whose bootstrap listens."""
    monkeypatch.delenv("NCCL_SOCKET_IFNAME", raising=False)
    monkeypatch.delenv("GLOO_SOCKET_IFNAME", raising=False)
    (report,) = launch(rank_listeners, 1, backend="nccl", timeout=120)
    for who in ("rank", "launcher"):
        exposed = [s for s in report[who] if not _loopback(s[0])]
        assert not exposed, f"the NCCL rank's {who} process listens beyond this machine: {exposed}"
    assert report["nccl_interface"] == LOOPBACK_INTERFACE
    assert ("127.0.0.1", report["store_port"]) in report["rank"]
