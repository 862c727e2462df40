"""Worker functions for the launcher's tests (importable, so the spawn start method can run them)."""

import os
import signal
import socket
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist


def note_pid(folder):
    Path(folder, f"{os.getpid()}.pid").write_text(str(os.getpid()))


def rank_info(rank, world, folder):
    note_pid(folder)
    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)
    return dict(rank=rank, world=world, sum=total.item(), threads=torch.get_num_threads(),
                env_rank=int(os.environ["RANK"]))


def raise_on_rank_1(rank, world, folder):
    note_pid(folder)
    dist.barrier()  # every rank has noted its pid before the failure
    if rank == 1:
        raise KeyError("rank one fails on purpose")
    dist.barrier()  # the others wait for rank 1, which never arrives


def killed_rank_1(rank, world, folder):
    note_pid(folder)
    dist.barrier()
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    dist.barrier()


def exits_on_rank_1(rank, world, folder):
    note_pid(folder)
    dist.barrier()
    if rank == 1:
        os._exit(3)  # no error report, no closing barrier
    time.sleep(60)  # rank 0 neither fails nor finishes: launch must notice rank 1's exit on its own


def aborts_on_rank_1(rank, world, folder):
    note_pid(folder)
    dist.barrier()
    if rank == 1:
        os.abort()  # a fatal signal (SIGABRT), as when a C++ library gives up
    dist.barrier()


def rank_0_hangs(rank, world, folder):
    note_pid(folder)
    dist.barrier()
    if rank == 0:
        time.sleep(300)
    return rank


def listening_sockets(pid="self"):
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


def rank_listeners(rank, world):
    """This rank's listening sockets and its launcher's, once every rank has joined the group."""
    dist.barrier()  # the store serves and gloo's connections are up on every rank
    return dict(rank=listening_sockets(), launcher=listening_sockets(os.getppid()),
                store_port=int(os.environ["MASTER_PORT"]), gloo_interface=os.environ.get("GLOO_SOCKET_IFNAME"),
                nccl_interface=os.environ.get("NCCL_SOCKET_IFNAME"))


def collectives_in_small_segments(rank, world, segment_elements):
    """``check_collectives`` with the ring's segments cut to ``segment_elements``, so chunks span many segments,
    with gloo's posting (every receive up front) and then with NCCL's (one batch per step) on these gloo ranks."""
    from d2lmp.checks.ranks import check_collectives
    from d2lmp.parallel import ring_messages as RM

    RM.SEGMENT_ELEMENTS = segment_elements
    results = {"receives up front": check_collectives(rank, world, sizes=(16, 29, 1001))}
    RM.BATCHED_BACKENDS = ("nccl", "gloo")  # NCCL's posting, which gloo's point-to-point calls also run
    results["one batch per step"] = check_collectives(rank, world, sizes=(16, 29, 1001))
    return results
