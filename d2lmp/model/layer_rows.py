"""What the layer-table cost model reads of a layer: the fields of ``models.LayerRow``, as a protocol.

``models.layer_table`` measures a network with torch and returns ``LayerRow`` records; the cost model
(``costmodel``, ``model_size``) only reads them, so it names the fields it reads here and never imports
``models`` (which imports torch). Any frozen dataclass with these fields will do, a ``LayerRow`` among them.
"""

from __future__ import annotations

from dataclasses import Field
from typing import Any, ClassVar, Protocol

__all__ = ["LayerRowLike"]


class LayerRowLike(Protocol):
    """One leaf layer: its class name (``kind``: "Conv2d", "Linear", ...), its output's shape (batch first), and for
    the whole batch its parameters, multiply-adds, FLOPs (2 × ``macs``) and output bytes."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]  # a dataclass: the model rescales rows with ``replace``

    @property
    def kind(self) -> str: ...

    @property
    def output_shape(self) -> tuple[int, ...]: ...

    @property
    def params(self) -> float: ...

    @property
    def macs(self) -> float: ...

    @property
    def flops(self) -> float: ...

    @property
    def activation_bytes(self) -> float: ...
