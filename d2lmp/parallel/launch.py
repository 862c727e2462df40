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
Nothing outside this machine can reach a rank.

Hangs. Each rank arms ``stacks.arm`` before it joins the group, so when ranks are still running at the
timeout, ``launch`` asks each for its Python stack (faulthandler, on SIGUSR1) and the error names the
line where every rank waits; a rank that dies of a fatal signal leaves its stack the same way.
"""

from __future__ import annotations

import io
import multiprocessing as mp
import os
import queue
import shutil
import socket
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from typing import Any, Literal, TypeVar, cast

import torch
import torch.distributed as dist
from torch.distributed import TCPStore

from d2lmp.parallel import stacks as _stacks

__all__ = ["BACKENDS", "START_METHODS", "LOOPBACK_INTERFACE", "Failure", "WorkerError", "loopback_listener",
           "choose_backend", "choose_start_method", "threads_per_rank", "rank_device", "launch", "run_from_env",
           "exit_after_torchrun", "rendezvous"]

BACKENDS = ("auto", "gloo", "nccl")
START_METHODS = ("auto", "fork", "spawn")
LOOPBACK_INTERFACE = "lo0" if sys.platform == "darwin" else "lo"
T = TypeVar("T")
# How a launch failed: a rank raised, a rank exited with a non-zero code or was killed by a signal without
# reporting an error, or ranks were still running at the timeout (a hang).
Failure = Literal["raised", "exited", "killed", "timeout"]


class WorkerError(RuntimeError):
    """A rank failed: raised an exception, died, or did not finish in time (``kind`` says which)."""

    def __init__(self, rank: int | None, message: str, remote_traceback: str = "",
                 stacks: dict[int, str] | None = None, *, kind: Failure) -> None:
        self.rank = rank
        self.kind: Failure = kind
        self.remote_traceback = remote_traceback
        self.stacks = dict(stacks or {})  # rank -> faulthandler's report of that rank's Python stack
        text = message if rank is None else f"rank {rank}: {message}"
        if remote_traceback:
            text += "\n\n--- traceback from the worker ---\n" + remote_traceback
        if self.stacks:
            text += ("\n\n--- where each rank was (Python stacks, innermost call first) ---\n"
                     + _stacks.format_stacks(self.stacks))
        super().__init__(text)


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


def _worker(rank: int, world_size: int, fn: Callable[..., object], args: tuple[Any, ...], backend: str,
            listener: socket.socket, timeout: float, threads: int, results: Queue[Any], stack_path: str,
            group_timeout: float) -> None:
    stack_file = _stacks.arm(stack_path)  # noqa: F841 - kept open: the rank's stack is written there on request
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
        store = rendezvous(rank, world_size, listener, timeout)
        # device_id binds the NCCL communicator to this rank's GPU (no guessing from the rank)
        dist.init_process_group(backend, store=store, rank=rank,
                                world_size=world_size, timeout=timedelta(seconds=group_timeout),
                                device_id=torch.device("cuda", rank) if backend == "nccl" else None)
        result = fn(rank, world_size, *args)
        buffer = io.BytesIO()
        torch.save(result, buffer)  # by value: the parent may read it after this process is gone
        results.put(("ok", rank, buffer.getvalue()))
    except BaseException as exc:  # noqa: BLE001 - every failure must reach the parent
        results.put(("error", rank, f"{type(exc).__name__}: {exc}", traceback.format_exc(), time.time()))
        results.close()
        results.join_thread()  # flush the message before leaving
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)  # skip interpreter teardown, which can block on a broken process group
    try:  # the result is delivered; now leave together (gloo aborts a peer whose partner vanished)
        dist.barrier()
        dist.destroy_process_group()
    except Exception:  # a peer failed after this rank finished: the parent reports that peer
        pass
    results.close()
    results.join_thread()  # the result has left this process
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown, where torch's C++ threads can abort (see exit_after_torchrun)


def launch(fn: Callable[..., T], world_size: int, *args: Any, backend: str = "auto", start_method: str = "auto",
           timeout: float = 120.0, threads: int | None = None, group_timeout: float | None = None) -> list[T]:
    """Run ``fn(rank, world_size, *args)`` on ``world_size`` ranks; return the results in rank order.

    A rank that raises makes ``launch`` raise ``WorkerError`` with that rank's traceback
    as soon as it arrives; a rank that dies without one (killed, segfault) is reported
    the same way; ranks still running after ``timeout`` seconds are stopped and reported.
    In every case all ranks are stopped before ``launch`` returns or raises.
    Ranks still running at the timeout are asked for their Python stacks first, and the error shows
    where each one waits (``WorkerError.stacks``). ``timeout`` also bounds ``init_process_group`` and
    every collective, unless ``group_timeout`` sets the group's own limit: a longer one keeps the
    ranks blocked, so that ``launch``'s timeout finds them where they hang. ``threads`` is each rank's compute
    thread count: forked ranks always use one (see below); spawned ranks default to
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
    ctx = mp.get_context("fork") if method == "fork" else mp.get_context("spawn")
    results: Queue[Any] = ctx.Queue()
    # The parent binds and listens before any rank starts, so the port is held throughout, and
    # hands every rank the socket itself: a forked rank inherits it, a spawned rank receives it
    # through multiprocessing (which passes a socket argument to the child as an open descriptor).
    listener = loopback_listener()
    threads = threads or threads_per_rank(world_size)
    stack_dir = tempfile.mkdtemp(prefix="d2lmp-stacks-")
    stack_paths = {r: os.path.join(stack_dir, f"rank{r}.txt") for r in range(world_size)}
    procs: list[BaseProcess] = [
        ctx.Process(target=_worker, args=(r, world_size, fn, args, backend, listener, timeout, threads, results,
                                          stack_paths[r], group_timeout or timeout),
                    daemon=True, name=f"d2lmp-rank{r}") for r in range(world_size)]
    try:
        for p in procs:
            p.start()
        listener.close()  # the ranks hold their own copies now; rank 0 serves on its copy
        return _collect(procs, results, world_size, timeout, stack_paths)
    finally:
        listener.close()
        _stop(procs)
        results.close()
        results.join_thread()
        shutil.rmtree(stack_dir, ignore_errors=True)


def _collect(procs: list[BaseProcess], results: Queue[Any], world_size: int, timeout: float,
             stack_paths: dict[int, str]) -> list[Any]:
    outputs: dict[int, object] = {}
    deadline = time.monotonic() + timeout
    dead_since: dict[int, float] = {}
    while len(outputs) < world_size:
        try:
            message = results.get(timeout=0.05)
        except queue.Empty:
            message = None
        if message is not None:
            if message[0] == "error":
                error = _first_error(message, results)
                raise _killed_rank(procs, {error.rank}, stack_paths) or error
            _, rank, payload = message
            outputs[rank] = torch.load(io.BytesIO(payload), weights_only=False)
            continue
        now = time.monotonic()
        for rank, p in enumerate(procs):
            if rank in outputs or p.exitcode is None:
                continue
            # Exited without a result: allow a moment for a message still in the pipe.
            if now - dead_since.setdefault(rank, now) > 1.0:
                how = f"killed by signal {-p.exitcode}" if p.exitcode < 0 else f"exit code {p.exitcode}"
                raise WorkerError(rank, f"died without reporting an error ({how})",
                                  stacks=_every_stack(procs, stack_paths),
                                  kind="killed" if p.exitcode < 0 else "exited")
        if now > deadline:
            missing = [r for r in range(world_size) if r not in outputs]
            running = {r: stack_paths[r] for r, p in enumerate(procs) if p.exitcode is None}
            _stacks.request(cast(int, procs[r].pid) for r in running)  # started, so each has a pid
            raise WorkerError(None, f"rank(s) {missing} did not finish within the {timeout:g} s timeout "
                                    "(a hang: often a collective that some rank never joined)",
                              stacks=_stacks.collect(running), kind="timeout")
    return [outputs[r] for r in range(world_size)]


def _first_error(message: tuple[Any, ...], results: Queue[Any], grace: float = 0.5) -> WorkerError:
    """The earliest of the errors that arrive within ``grace`` seconds.

    When one rank fails, its peers often fail a moment later inside a collective
    ("connection closed"); the earliest error is the cause, the others are echoes.
    """
    errors = [message]
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            m = results.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        if m[0] == "error":
            errors.append(m)
    _, rank, summary, remote_tb, _ = min(errors, key=lambda m: m[4])
    others = sorted(m[1] for m in errors if m[1] != rank)
    note = f" (rank(s) {others} failed after it)" if others else ""
    return WorkerError(rank, f"raised {summary}{note}", remote_tb, kind="raised")


def _killed_rank(procs: list[BaseProcess], reported: set[int | None],
                 stack_paths: dict[int, str]) -> WorkerError | None:
    """A rank that died by a signal without reporting: the cause, not an echo, of its peers' errors."""
    for rank, p in enumerate(procs):
        if rank not in reported and p.exitcode is not None and p.exitcode < 0:
            return WorkerError(rank, f"died without reporting an error (killed by signal {-p.exitcode})",
                               stacks=_every_stack(procs, stack_paths), kind="killed")
    return None


def _every_stack(procs: list[BaseProcess], stack_paths: dict[int, str]) -> dict[int, str]:
    """The stacks of the ranks still running (asked for now) and of any that died of a fatal signal."""
    running = [r for r, p in enumerate(procs) if p.exitcode is None]
    _stacks.request(cast(int, procs[r].pid) for r in running)  # started, so each has a pid
    written = {r: path for r, path in stack_paths.items() if r in running or os.path.getsize(path) > 0}
    return _stacks.collect(written, wait=1.0)


def _stop(procs: list[BaseProcess]) -> None:
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + 5
    for p in procs:
        if p.pid is None:
            continue
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join(1)


def run_from_env(fn: Callable[..., T], *args: Any) -> tuple[int, int, T]:
    """Run a worker under ``torchrun``: join the group from the environment, call ``fn(rank, world, *args)``."""
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

