"""What a block of code really sends: a logging wrapper around torch.distributed's messages and collectives.

Inside ``with MessageLog() as log:``, every call of ``torch.distributed``'s point-to-point functions (``send``,
``isend``, ``recv``, ``irecv``, and each operation of a ``batch_isend_irecv``) and of its collectives
(``all_reduce``, ``all_gather``, ``reduce_scatter``, ``broadcast``, ``all_to_all`` and their tensor forms,
``reduce``, ``gather``, ``scatter``, ``barrier``, and the object forms ``all_gather_object`` and
``broadcast_object_list``) in this process, that is on this rank, is recorded as a
:class:`Message` (operation, peer, bytes, ranks taking part) and then passed on unchanged; leaving the block
puts the original functions back. Counting the calls themselves, rather than what a schedule says it will
send, catches a message sent twice or not at all (the interleaved pipeline's extra messages are counted this
way), and tells a ring built from send/recv apart from a library collective that gives the same numbers (the
exercises' traffic checks). A collective's size follows nccl-tests: the whole buffer S, and
``Message.sent_bytes`` is what each rank sends when it runs as a ring, S times the bus factor of
``alpha_beta.BUS_FACTORS``. The wrapper replaces the module's attributes, so code must call them as
``dist.name(...)``, as the package does; a function imported by name before the block is not seen.

It is the package's one traffic log. One level up, library code names the collective it is about to run
(``record``): each active log appends a :class:`CommCall` (operation, bytes handed in, label) to ``calls``, so a
reduce-scatter built from our ring is one call there and n - 1 messages in ``messages``; ``wire_bytes`` prices the
calls on a ring (``ring_wire_bytes``, from the bus factors). ``add_seconds`` lets code add time by label (ring
attention's computing and waiting). The active logs are the ones whose wrappers sit on ``dist.send``
(``active_logs``): no registry besides torch.distributed's own attributes, and nested logs all record.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import torch
import torch.distributed as dist

from d2lmp.model.alpha_beta import ring_bytes_per_rank

__all__ = ["Message", "MessageLog", "CommCall", "OPS", "COLLECTIVES", "active_logs", "record", "add_seconds",
           "ring_wire_bytes"]

OPS = ("send", "isend", "recv", "irecv")
SENDS = ("send", "isend")


def _bytes(tensors: Any) -> int:
    """Bytes of a tensor, or of every tensor in a list (None counts nothing)."""
    if tensors is None:
        return 0
    if isinstance(tensors, torch.Tensor):
        return tensors.numel() * tensors.element_size()
    return sum(_bytes(t) for t in tensors)


def _pickled(obj: Any) -> int:
    try:
        return len(pickle.dumps(obj))
    except Exception:  # an object that does not pickle fails in the call itself, which says why
        return 0


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    return args[index] if len(args) > index else kwargs.get(name)


# Each collective: the nccl-tests collective whose bus factor applies (None: no data), its size S in bytes from
# the call's arguments and the world size, and the position of its ``group`` argument. S is the whole buffer:
# the input of an all-reduce, the gathered output of an all-gather, the input that a reduce-scatter cuts.
_Size = Callable[[tuple[Any, ...], dict[str, Any], int], int]


def _first(name: str, index: int = 0, times_world: bool = False) -> _Size:
    return lambda a, k, n: (n if times_world else 1) * _bytes(_arg(a, k, index, name))


_COLLECTIVES: dict[str, tuple[str | None, _Size, int]] = {
    "all_reduce": ("all_reduce", _first("tensor"), 2),
    "broadcast": ("broadcast", _first("tensor"), 2),
    "reduce": ("broadcast", _first("tensor"), 3),  # a broadcast run backwards: each rank sends S once
    "all_gather": ("all_gather", _first("tensor", 1, times_world=True), 2),
    "all_gather_into_tensor": ("all_gather", _first("input_tensor", 1, times_world=True), 2),
    "all_gather_single": ("all_gather", _first("input_tensor", 1, times_world=True), 2),
    "reduce_scatter": ("reduce_scatter", _first("input_list", 1), 3),
    "reduce_scatter_tensor": ("reduce_scatter", _first("input", 1), 3),
    "reduce_scatter_single": ("reduce_scatter", _first("input", 1), 3),
    "all_to_all": ("all_gather", _first("input_tensor_list", 1), 2),  # (n-1)/n of the input leaves each rank
    "all_to_all_single": ("all_gather", _first("input", 1), 4),
    "gather": ("all_gather", _first("tensor", 0, times_world=True), 3),
    "scatter": ("all_gather", _first("tensor", 0, times_world=True), 3),
    "barrier": (None, lambda a, k, n: 0, 0),
    # Python objects travel pickled: S is the pickle's size (a little less than what the call really sends).
    "all_gather_object": ("all_gather", lambda a, k, n: n * _pickled(_arg(a, k, 1, "obj")), 2),
    "broadcast_object_list": ("broadcast", lambda a, k, n: _pickled(_arg(a, k, 0, "object_list")), 2),
}
COLLECTIVES = tuple(_COLLECTIVES)


@dataclass(frozen=True)
class Message:
    """One call on this rank: a point-to-point message or a collective.

    ``op`` is the function's name ("isend", "all_reduce", ...); ``peer`` the other rank of a point-to-point
    message (None for a collective); ``nbytes`` the message's bytes, or a collective's size S (the whole
    buffer, as nccl-tests counts it); ``world`` the ranks taking part (2 for a message); ``tag`` a message's
    tag, where the call gave one (ignored by ``==``).
    """

    op: str
    peer: int | None
    nbytes: int
    world: int = 2
    tag: int | None = field(default=None, compare=False)  # a message's tag where the call gave one

    @property
    def collective(self) -> bool:
        """True for a collective call, False for a point-to-point message."""
        return self.op not in OPS

    @property
    def sent_bytes(self) -> float:
        """Bytes this rank sends: a send's message, nothing for a receive, and for a collective what each rank
        sends when it runs as a ring (S × nccl-tests' bus factor: 2(n-1)/n for an all-reduce, (n-1)/n for an
        all-gather or reduce-scatter, 1 for a broadcast)."""
        if not self.collective:
            return float(self.nbytes) if self.op in SENDS else 0.0
        bus = _COLLECTIVES[self.op][0]
        return ring_bytes_per_rank(bus, self.nbytes, self.world) if bus is not None else 0.0


@dataclass(frozen=True)
class CommCall:
    """One collective that library code named (``record``): the operation, the bytes of the tensor this rank
    handed to it, a label ("... (backward)" for a backward one)."""

    op: str
    bytes: int
    label: str


# What ``record``'s operations are on a ring, and the factor from the tensor handed in to the collective's size S
# (an all-gather is handed this rank's piece, 1/world of S).
_RING_OPS = {"all_reduce": "all_reduce", "all_reduce_max": "all_reduce", "reduce_scatter": "reduce_scatter",
             "all_gather": "all_gather"}


def ring_wire_bytes(op: str, logged_bytes: int, world: int) -> int:
    """Bytes one rank sends in a ring collective, from what ``record`` logs (the tensor handed to it).

    All-reduce of n bytes: 2(t−1)/t·n (a reduce-scatter, then an all-gather); reduce-scatter of n bytes:
    (t−1)/t·n; all-gather of a rank's n/t bytes into n: (t−1)·n/t. So an all-reduce of n bytes sends
    exactly what a reduce-scatter of n bytes and an all-gather back to n bytes send together.
    """
    if world < 1:
        raise ValueError(f"world must be at least 1, got {world}")
    if op not in _RING_OPS:
        raise ValueError(f"unknown collective {op!r}")
    size = logged_bytes * world if op == "all_gather" else logged_bytes
    return round(ring_bytes_per_rank(_RING_OPS[op], size, world))


class _Logged:
    """A torch.distributed function that records each call in ``log`` before running it.

    It compares equal to the function it wraps, so ``dist.P2POp(dist.isend, ...)`` accepts it.
    """

    def __init__(self, log: MessageLog, name: str, original: Callable[..., Any]) -> None:
        self.log, self.name, self.__wrapped__ = log, name, original

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.log._record(self.name, args, kwargs)
        return self.__wrapped__(*args, **kwargs)

    def __eq__(self, other: object) -> bool:
        return _unwrapped(other) is _unwrapped(self)

    def __hash__(self) -> int:
        return hash(_unwrapped(self))


def _unwrapped(fn: Any) -> Any:
    while isinstance(fn, _Logged):
        fn = fn.__wrapped__
    return fn


class MessageLog:
    """Every point-to-point message and collective this rank issues while the ``with`` block runs, in order
    (``messages``); the collectives library code named, by label (``calls``); seconds added by label (``seconds``).
    """

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.calls: list[CommCall] = []
        self.seconds: dict[str, float] = {}
        self._originals: dict[str, Callable[..., Any]] = {}

    def __enter__(self) -> MessageLog:
        for name in (*OPS, *COLLECTIVES, "batch_isend_irecv"):
            original = getattr(dist, name, None)
            if original is None:  # a collective this version of torch does not have
                continue
            self._originals[name] = original
            wrapper: Callable[..., Any] = (self._batch(original) if name == "batch_isend_irecv"
                                           else _Logged(self, name, original))
            setattr(dist, name, wrapper)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        for name, original in self._originals.items():
            setattr(dist, name, original)
        self._originals.clear()

    def _record(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if name in OPS:
            tensor = _arg(args, kwargs, 0, "tensor")
            peer = _arg(args, kwargs, 1, "dst" if name in SENDS else "src")
            if peer is None:
                peer = kwargs.get("group_dst" if name in SENDS else "group_src")
            tag = _arg(args, kwargs, 3, "tag")
            self.messages.append(Message(name, peer, _bytes(tensor), tag=tag))
            return
        _, size, group_at = _COLLECTIVES[name]
        group = _arg(args, kwargs, group_at, "group")
        world = dist.get_world_size(group) if dist.is_initialized() else 1
        self.messages.append(Message(name, None, size(args, kwargs, world), world))

    def _batch(self, original: Callable[[list[dist.P2POp]], list[dist.Work]]) -> Callable[..., Any]:
        isend = _unwrapped(self._originals["isend"])

        def batch_isend_irecv(p2p_op_list: list[dist.P2POp]) -> list[dist.Work]:
            for op in p2p_op_list:
                fn = _unwrapped(op.op)
                op.op = fn  # the original, which batch_isend_irecv tells apart by identity
                self.messages.append(Message("isend" if fn is isend else "irecv", op.peer, _bytes(op.tensor),
                                             tag=op.tag))
            return original(p2p_op_list)

        return batch_isend_irecv

    @property
    def sent(self) -> list[Message]:
        """The messages this process sent (send and isend)."""
        return [m for m in self.messages if m.op in SENDS]

    @property
    def received(self) -> list[Message]:
        """The messages this process received (recv and irecv)."""
        return [m for m in self.messages if m.op in ("recv", "irecv")]

    @property
    def collectives(self) -> list[Message]:
        """The collectives this process called."""
        return [m for m in self.messages if m.collective]

    @property
    def sent_bytes(self) -> float:
        """Bytes this process sent: its messages, plus each collective's share as a ring (``Message.sent_bytes``)."""
        return sum(m.sent_bytes for m in self.messages)

    @property
    def received_bytes(self) -> int:
        """Bytes this process received in messages (recv and irecv)."""
        return sum(m.nbytes for m in self.received)

    def total_bytes(self) -> int:
        """Bytes of the tensors handed to the named collectives (``calls``)."""
        return sum(c.bytes for c in self.calls)

    def wire_bytes(self, world: int, backward: bool | None = None) -> int:
        """Bytes each rank sends for the named collectives over ``world`` ranks under ring algorithms
        (``ring_wire_bytes``); ``backward`` True or False keeps only the backward (or forward) ones."""
        return sum(ring_wire_bytes(c.op, c.bytes, world) for c in self.calls
                   if backward is None or ("(backward" in c.label) == backward)


def active_logs() -> list[MessageLog]:
    """The ``MessageLog``s active on this rank, innermost first: the ones whose wrappers sit on ``dist.send``."""
    logs, fn = [], dist.send
    while isinstance(fn, _Logged):
        logs.append(fn.log)
        fn = fn.__wrapped__
    return logs


def record(op: str, tensor: torch.Tensor, label: str) -> None:
    """Log one collective of ``tensor`` by ``label`` in every active log (``MessageLog.calls``)."""
    for log in active_logs():
        log.calls.append(CommCall(op, _bytes(tensor), label))


def add_seconds(label: str, seconds: float) -> None:
    """Add ``seconds`` to ``label`` in every active log (``MessageLog.seconds``)."""
    for log in active_logs():
        log.seconds[label] = log.seconds.get(label, 0.0) + seconds
