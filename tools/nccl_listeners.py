"""Print what one NCCL rank started by ``launch`` listens on: with launch's default and with NCCL's own.

Usage: python -m tools.nccl_listeners   (needs a CUDA GPU; ``tools/record_gpu.sh`` runs it)

NCCL's own default (every interface but loopback and docker*) is what a launch without ``NCCL_SOCKET_IFNAME``
did; the test ``tests/test_rendezvous.py::test_nccl_bootstrap_listens_on_loopback_only`` checks the first case.
The rank function ``rank_listeners`` lives here and the tests import it from here (tools never import tests).
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Any

from d2lmp.parallel.launch import launch


def listening_sockets(pid: int | str = "self") -> list[tuple[str, int]]:
    """(address, port) of every TCP socket in the LISTEN state that process ``pid`` holds (Linux /proc).

    /proc/<pid>/net/tcp{,6} list the sockets of the network namespace; those whose inode is
    one of the process's open descriptors are its own.
    """
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    found = []
    for table, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():  # no IPv6 in this kernel
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A: TCP_LISTEN; field 9: the inode
                continue
            address, port = fields[1].split(":")
            raw = bytes.fromhex(address)  # 32-bit words, each in host byte order
            if sys.byteorder == "little":
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
            found.append((socket.inet_ntop(family, raw), int(port, 16)))
    return found


def rank_listeners(rank: int, world: int) -> dict[str, Any]:
    """This rank's listening sockets and its launcher's, once every rank has joined the group."""
    import torch.distributed as dist

    dist.barrier()  # the store serves and gloo's connections are up on every rank
    return dict(rank=listening_sockets(), launcher=listening_sockets(os.getppid()),
                store_port=int(os.environ["MASTER_PORT"]), gloo_interface=os.environ.get("GLOO_SOCKET_IFNAME"),
                nccl_interface=os.environ.get("NCCL_SOCKET_IFNAME"))


def main() -> int:
    """Launch one NCCL rank under each interface setting and print what it and its launcher listen on."""
    for label, interface in (("launch's default", None), ("NCCL's own default", "^docker,lo")):
        os.environ.pop("NCCL_SOCKET_IFNAME", None)
        if interface is not None:
            os.environ["NCCL_SOCKET_IFNAME"] = interface
        (report,) = launch(rank_listeners, 1, backend="nccl", timeout=120)
        print(f"{label}: NCCL_SOCKET_IFNAME={report['nccl_interface']!r}")
        print(f"  rank listens on     {sorted(report['rank'])}")
        print(f"  launcher listens on {sorted(report['launcher'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
