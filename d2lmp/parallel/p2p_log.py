"""The point-to-point messages a block of code really sends: a logging wrapper around torch.distributed's send/recv.

Inside ``with MessageLog() as log:``, every call of ``torch.distributed.send``, ``isend``, ``recv`` and ``irecv``
in this process is recorded (operation, peer, bytes) and then passed on unchanged; leaving the block puts the
original functions back. Counting the calls themselves, rather than what a schedule says it will send, catches
a message sent twice or not at all: the interleaved pipeline's extra messages are counted this way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import torch
import torch.distributed as dist

__all__ = ["Message", "MessageLog", "OPS"]

OPS = ("send", "isend", "recv", "irecv")


@dataclass(frozen=True)
class Message:
    """One point-to-point call: the operation ("send", "isend", "recv", "irecv"), the peer's rank, the bytes."""

    op: str
    peer: int | None
    nbytes: int


class MessageLog:
    """The point-to-point messages issued while the ``with`` block runs, in the order they were issued."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._originals: dict[str, Callable[..., Any]] = {}

    def __enter__(self) -> MessageLog:
        for name in OPS:
            self._originals[name] = getattr(dist, name)
            setattr(dist, name, self._logged(name, self._originals[name]))
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        for name, original in self._originals.items():
            setattr(dist, name, original)
        self._originals.clear()

    def _logged(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def call(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            peer = args[0] if args else kwargs.get("dst", kwargs.get("src"))
            self.messages.append(Message(name, peer, tensor.numel() * tensor.element_size()))
            return original(tensor, *args, **kwargs)

        return call

    @property
    def sent(self) -> list[Message]:
        """The messages this process sent (send and isend)."""
        return [m for m in self.messages if m.op in ("send", "isend")]

    @property
    def received(self) -> list[Message]:
        """The messages this process received (recv and irecv)."""
        return [m for m in self.messages if m.op in ("recv", "irecv")]
