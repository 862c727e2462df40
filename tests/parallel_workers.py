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
