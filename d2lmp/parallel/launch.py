"""Run a function on N ranks, each a real process in one torch.distributed group.

``launch(fn, world_size, *args)`` starts ``world_size`` processes; process ``r`` joins the
group as rank ``r`` and calls ``fn(r, world_size, *args)``; ``launch`` returns the results
in rank order. The same worker functions run under ``torchrun`` through ``run_from_env``.

Start method. ``fork`` copies the running interpreter, so the worker may be a function
defined in a notebook, and a rank starts in milliseconds. It is unsafe once CUDA is
initialised in the parent, and NCCL ranks must use CUDA, so those use ``spawn``: a fresh
interpreter that imports the worker by name (it must live in an importable module, not in
the notebook) and takes seconds to start. ``start_method="auto"`` picks fork for gloo
ranks while CUDA is untouched, and spawn otherwise.

Rendezvous. The ranks meet through rank 0's key-value store, which has no authentication, so
everything a launch listens on is bound to loopback: the store serves on a socket the parent
bound to 127.0.0.1, and gloo's pair connections and NCCL's bootstrap use the loopback interface.
Nothing outside this machine can reach a rank. At the end the ranks leave together (a barrier), and rank 0, whose
process serves the store, exits last (``leave_together``).

Hangs. Each rank arms ``stacks.arm`` before it joins the group, so when ranks are still running at the
timeout, ``launch`` asks each for its Python stack (faulthandler, on SIGUSR1) and the error names the
line where every rank waits; a rank that dies of a fatal signal leaves its stack the same way.

Faults. Ranks report through files, never a pipe that a dying rank could leave half written, and the
parent judges which rank failed from the reports and the exit statuses (``launch_outcome``); ranks die
with their caller, and what they start dies with them (``lifetime``).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import shutil
import socket
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, MutableMapping
from datetime import timedelta
from multiprocessing.process import BaseProcess
from typing import IO, Any, TypeVar

import torch
import torch.distributed as dist
from torch.distributed import TCPStore

from d2lmp.parallel import launch_outcome as _report
from d2lmp.parallel import lifetime as _lifetime
from d2lmp.parallel import stacks as _stacks
from d2lmp.parallel.launch_outcome import REPORT_MARGIN_S, Failure, WorkerError

__all__ = ["BACKENDS", "START_METHODS", "LOOPBACK_INTERFACE", "GROUP_TIMEOUT_LEAD_S", "REPORT_MARGIN_S", "Failure",
           "WorkerError", "loopback_listener", "choose_backend", "choose_start_method", "loopback_on_one_machine",
           "threads_per_rank", "rank_device", "launch", "run_from_env", "exit_after_torchrun", "rendezvous",
           "leave_together", "LEAVE_TIMEOUT_S"]

BACKENDS = ("auto", "gloo", "nccl")
START_METHODS = ("auto", "fork", "spawn")
LOOPBACK_INTERFACE = "lo0" if sys.platform == "darwin" else "lo"
T = TypeVar("T")
# launch's default group timeout outlasts its own by this much, so that launch's timeout reports a hang first
GROUP_TIMEOUT_LEAD_S = 30.0
# how long rank 0, which serves the store, waits at the end for the other ranks to leave their group
LEAVE_TIMEOUT_S = 10.0
_LEFT_KEY = "d2lmp/ranks_left"


def loopback_listener() -> socket.socket:
    """A TCP socket bound to 127.0.0.1 on a port the kernel picks, already listening.

    The rendezvous store serves on this socket: loopback only, so nothing outside this machine
    can reach the (unauthenticated) store, and the port is held from the moment it is chosen
    (no gap in which another program could take a port that was merely "free right now").
    """
    return socket.create_server(("127.0.0.1", 0))


def choose_backend(world_size: int, backend: str = "auto") -> tuple[str, str]:
    """(backend, one sentence saying why) for ``world_size`` ranks on this machine."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; available: {', '.join(BACKENDS)}")
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    nccl_ok = gpus >= world_size and dist.is_nccl_available()
    if backend == "nccl" and not nccl_ok:
        raise ValueError(f"backend 'nccl' needs one CUDA GPU per rank: asked for {world_size} ranks, "
                         f"{gpus} GPU(s) present; use backend 'gloo' (CPU ranks)")
    if backend == "nccl" or (backend == "auto" and nccl_ok):
        return "nccl", f"NCCL: {world_size} rank(s), one CUDA GPU each (of {gpus})"
    why = "no CUDA GPU here" if gpus == 0 else f"{gpus} GPU(s) for {world_size} ranks, so ranks run on the CPU"
    return "gloo", f"gloo: {world_size} CPU process(es) ({why})"


def choose_start_method(backend: str, start_method: str = "auto") -> str:
    """fork for gloo ranks while CUDA is untouched here (fast, notebook functions work), else spawn."""
    if start_method not in START_METHODS:
        raise ValueError(f"unknown start method {start_method!r}; available: {', '.join(START_METHODS)}")
    can_fork = "fork" in mp.get_all_start_methods()
    if start_method == "fork" and not can_fork:
        raise ValueError("start method 'fork' is not available on this system; use 'spawn'")
    if start_method != "auto":
        return start_method
    if backend == "gloo" and can_fork and not torch.cuda.is_initialized():
        return "fork"
    return "spawn"


def threads_per_rank(world_size: int) -> int:
    """CPU cores divided among the ranks, at least one: ranks that share cores must not oversubscribe them."""
    from d2lmp.hardware import usable_cores

    return max(1, usable_cores() // world_size)


def rank_device(device: str = "auto") -> torch.device:
    """This rank's device. "auto": its GPU under NCCL, else the CPU; "cuda": the GPU ``launch`` assigned to it."""
    if device == "auto":
        device = "cuda" if dist.is_initialized() and dist.get_backend() == "nccl" else "cpu"
    if device == "cuda":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device(device)


def rendezvous(rank: int, world_size: int, listener: socket.socket, timeout: float) -> TCPStore:
    """The group's key-value store: rank 0 serves it on ``listener``, every other rank is a client.

    Rank 0 hands the listening socket's descriptor to the store, which owns (and closes) it from
    then on; the other ranks close their copy, so only rank 0 listens on the port.
    """
    port = listener.getsockname()[1]
    wait = timedelta(seconds=timeout)
    if rank == 0:
        return TCPStore("127.0.0.1", port, world_size, is_master=True, timeout=wait,
                             wait_for_workers=False, master_listen_fd=listener.detach())
    listener.close()
    return TCPStore("127.0.0.1", port, world_size, is_master=False, timeout=wait)


def leave_together(store: TCPStore, rank: int, world_size: int, timeout: float = LEAVE_TIMEOUT_S) -> None:
    """Call once a rank has destroyed its group: a rank other than 0 says it has left; rank 0, which serves the
    store, waits until every other rank has (at most ``timeout`` seconds, a peer may have died), so that none is
    still talking to a store that is gone (PyTorch then prints "recvVector failed ... Connection reset by peer")."""
    if rank != 0:
        store.add(_LEFT_KEY, 1)
        return
    deadline = time.monotonic() + timeout
    while store.add(_LEFT_KEY, 0) < world_size - 1 and time.monotonic() < deadline:
        time.sleep(0.005)


def _deliver(folder: str, rank: int, what: str, write: Callable[[IO[bytes]], object]) -> None:
    """Write a rank's report under a temporary name, then rename it: the parent sees all of it or nothing."""
    final = _report.report_path(folder, rank, what)
    with open(final + ".part", "wb") as f:
        write(f)
    os.replace(final + ".part", final)


def _describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"
    except BaseException:  # noqa: BLE001 - an exception whose str() fails is still reported
        return type(exc).__name__


def _worker(rank: int, world_size: int, fn: Callable[..., object], args: tuple[Any, ...], backend: str,
            listener: socket.socket, threads: int, folder: str, group_timeout: float, parent: int) -> None:
    _lifetime.tie_to_parent(parent)  # this rank, and what it starts, ends when the caller does
    # kept open: the rank's stack is written there on request
    stack_file = _stacks.arm(_report.report_path(folder, rank, "stack"))  # noqa: F841
    port = listener.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank))
    # Gloo's own sockets (one listener per rank, for the pair connections) bind to the address
    # this machine's hostname resolves to, often the LAN address; all ranks are on this machine,
    # so loopback is enough. A user's own choice stays.
    os.environ.setdefault("GLOO_SOCKET_IFNAME", LOOPBACK_INTERFACE)
    # NCCL's bootstrap listens the same way (NCCL_SOCKET_IFNAME; by default it skips loopback).
    os.environ.setdefault("NCCL_SOCKET_IFNAME", LOOPBACK_INTERFACE)
    torch.set_num_threads(threads)
    try:
        if backend == "nccl":
            torch.cuda.set_device(rank)
        store = rendezvous(rank, world_size, listener, group_timeout)
        # device_id binds the NCCL communicator to this rank's GPU (no guessing from the rank)
        dist.init_process_group(backend, store=store, rank=rank,
                                world_size=world_size, timeout=timedelta(seconds=group_timeout),
                                device_id=torch.device("cuda", rank) if backend == "nccl" else None)
        result = fn(rank, world_size, *args)
        # by value, in a file: the parent reads it whole, even after this process is gone
        _deliver(folder, rank, "result", lambda f: torch.save(result, f))
    except BaseException as exc:  # noqa: BLE001 - every failure must reach the parent
        report = {"summary": _describe(exc), "traceback": traceback.format_exc(), "time": time.time()}
        _deliver(folder, rank, "error", lambda f: f.write(json.dumps(report).encode()))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)  # skip interpreter teardown, which can block on a broken process group
    try:  # the result is delivered; now leave together (gloo aborts a peer whose partner vanished)
        dist.barrier()
        dist.destroy_process_group()
        leave_together(store, rank, world_size)  # rank 0's store outlives every peer's group
    except Exception:  # a peer failed after this rank finished: the parent reports that peer
        pass
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown, where torch's C++ threads can abort (see exit_after_torchrun)


def _import_before_fork() -> None:
    """Import in the parent what ranks would otherwise import after fork, each rank of every launch anew:
    ``torch._dynamo``, which the first ``torch.optim`` optimizer a process builds imports (seconds each time)."""
    import torch._dynamo  # noqa: F401


def launch(fn: Callable[..., T], world_size: int, *args: Any, backend: str = "auto", start_method: str = "auto",
           timeout: float = 120.0, threads: int | None = None, group_timeout: float | None = None) -> list[T]:
    """Run ``fn(rank, world_size, *args)`` on ``world_size`` ranks; return the results in rank order.

    ``launch`` returns or raises within ``timeout`` + ``REPORT_MARGIN_S`` seconds, whatever the ranks do. A rank
    that raises makes it raise ``WorkerError`` with that rank's traceback as soon as it arrives; a rank that
    dies without one (an exit code, a signal) is named as the cause, before any peer whose error is an echo
    ("Connection closed by peer"); ranks still running after ``timeout`` are reported with their Python stacks
    (``WorkerError.stacks``) and the error names any rank that did not answer (a stopped one, say). Every rank,
    and every process a rank started, is stopped before ``launch`` returns or raises, and ends if the caller
    dies (``lifetime``). ``group_timeout`` bounds ``init_process_group`` and every collective; by default it is
    ``timeout + GROUP_TIMEOUT_LEAD_S``, so that ``launch``'s own timeout comes first and finds the ranks where they
    hang, instead of a rank's timeout error blaming whichever rank timed out first. ``threads`` is each rank's
    compute thread count: forked ranks always use one (see below); spawned ranks default to
    usable cores / world size, at least 1.

    Why one thread after fork: the parent's OpenMP thread pool does not survive ``fork``,
    and a child that starts a multi-threaded operator can hang forever.
    """
    if not callable(fn):
        raise ValueError(f"fn must be callable, got {type(fn).__name__}")
    if not isinstance(world_size, int) or isinstance(world_size, bool) or world_size < 1:
        raise ValueError(f"world_size must be an integer >= 1, got {world_size!r}")
    if timeout <= 0:
        raise ValueError(f"timeout must be positive, got {timeout}")
    if group_timeout is not None and group_timeout <= 0:
        raise ValueError(f"group_timeout must be positive, got {group_timeout}")
    backend, _ = choose_backend(world_size, backend)
    method = choose_start_method(backend, start_method)
    if method == "spawn" and getattr(fn, "__module__", None) == "__main__":
        raise ValueError(f"{fn.__name__} is defined in __main__ (a notebook or script), which spawned processes "
                         "cannot import; move it into a module, or use start_method='fork' with backend 'gloo'")
    if method == "fork":
        # A forked child inherits the parent's OpenMP thread pool in a broken state: the first
        # multi-threaded operator would hang. One thread per rank never enters that pool.
        if threads not in (None, 1):
            raise ValueError(f"threads={threads} with start method 'fork' would hang in OpenMP; "
                             "forked ranks run one thread each (use start_method='spawn' for more)")
        threads = 1
        _import_before_fork()
    ctx = mp.get_context("fork") if method == "fork" else mp.get_context("spawn")
    # The parent binds and listens before any rank starts, so the port is held throughout, and
    # hands every rank the socket itself: a forked rank inherits it, a spawned rank receives it
    # through multiprocessing (which passes a socket argument to the child as an open descriptor).
    listener = loopback_listener()
    threads = threads or threads_per_rank(world_size)
    folder = tempfile.mkdtemp(prefix="d2lmp-launch-")  # each rank's result, error and stack, one file each
    group = group_timeout or timeout + GROUP_TIMEOUT_LEAD_S
    procs: list[BaseProcess] = [
        ctx.Process(target=_worker, args=(r, world_size, fn, args, backend, listener, threads, folder, group,
                                          os.getpid()),
                    daemon=True, name=f"d2lmp-rank{r}") for r in range(world_size)]
    try:
        for p in procs:
            p.start()
        listener.close()  # the ranks hold their own copies now; rank 0 serves on its copy
        return _report.collect(procs, folder, timeout)
    finally:
        listener.close()
        _report.stop(procs)
        shutil.rmtree(folder, ignore_errors=True)


def loopback_on_one_machine(env: MutableMapping[str, str]) -> bool:
    """Under torchrun with every rank on this machine (``LOCAL_WORLD_SIZE`` = ``WORLD_SIZE``), have gloo and NCCL
    use the loopback interface, as ``launch`` does, unless the user chose one; True when it applies."""
    if "WORLD_SIZE" not in env or env.get("LOCAL_WORLD_SIZE") != env["WORLD_SIZE"]:
        return False
    env.setdefault("GLOO_SOCKET_IFNAME", LOOPBACK_INTERFACE)
    env.setdefault("NCCL_SOCKET_IFNAME", LOOPBACK_INTERFACE)
    return True


def run_from_env(fn: Callable[..., T], *args: Any) -> tuple[int, int, T]:
    """Run a worker under ``torchrun``: join the group from the environment, call ``fn(rank, world, *args)``.

    On one machine the ranks' own sockets stay on loopback (``loopback_on_one_machine``)."""
    loopback_on_one_machine(os.environ)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    backend = "nccl" if torch.cuda.is_available() and torch.cuda.device_count() > local else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(local)
    dist.init_process_group(backend, timeout=timedelta(seconds=120),
                            device_id=torch.device("cuda", local) if backend == "nccl" else None)
    result = fn(rank, world, *args)
    dist.barrier()  # nobody leaves while a peer still talks to it (gloo aborts on a closed connection)
    dist.destroy_process_group()
    return rank, world, result


def exit_after_torchrun(code: int = 0) -> None:
    """End a ``torchrun`` worker at once, after its group is destroyed and its output flushed.

    The work is done and checked by then; what is skipped is the interpreter's own teardown,
    where torch's C++ threads can still be alive and abort now and then on small machines
    ("terminate called without an active exception", after ``destroy_process_group`` has returned
    on every rank), which torchrun would report as a failed rank.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)

