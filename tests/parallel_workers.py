"""Worker functions for the launcher's tests (importable, so the spawn start method can run them)."""

import os
import signal
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


def exits_in_a_collective(rank, world, folder, how):
    """The last rank ends while the others wait in an all-reduce: the peers see "Connection closed by peer"."""
    import sys
    import threading

    note_pid(folder)
    dist.barrier()
    if rank == world - 1:
        if how == "os._exit":
            os._exit(3)
        elif how == "thread":  # a C library's exit() from a thread of its own ends the whole process
            threading.Thread(target=os._exit, args=(4,)).start()
            time.sleep(60)
        elif how == "sys.exit":
            sys.exit(5)
        else:
            os.kill(os.getpid(), signal.SIGKILL)
    dist.all_reduce(torch.ones(4))
    return rank


class _SignalWhilePickled:
    """A result whose pickling sends its own rank a signal: the rank dies or stops halfway through its report."""

    def __init__(self, sig):
        self.sig = sig

    def __reduce__(self):
        os.kill(os.getpid(), self.sig)
        time.sleep(5)
        return (int, (0,))


def dies_while_sending(rank, world, folder, sig):
    """The last rank returns a large tensor and then an object whose pickling signals the rank (SIGKILL, SIGSTOP)."""
    note_pid(folder)
    if rank == world - 1:
        return [torch.zeros(1 << 18), _SignalWhilePickled(sig)]
    return rank


def starts_a_child_and_waits(rank, world, folder):
    """Each rank starts a process of its own (sleep), notes both pids, and waits."""
    import subprocess

    note_pid(folder)
    child = subprocess.Popen(["sleep", "120"])
    Path(folder, f"{child.pid}.pid").write_text(str(child.pid))
    time.sleep(120)
    return rank
