"""Activation recomputation (gradient checkpointing): keep the segment boundaries, recompute the rest in backward.

``checkpointed(model, segments)`` cuts an ``nn.Sequential`` (nested ones are flattened) into
consecutive segments and runs each one but the last under ``torch.utils.checkpoint.checkpoint``
(non-reentrant). The last segment stays plain, as in ``torch.utils.checkpoint.checkpoint_sequential``:
its backward starts right after its forward, so recomputing it would lower no peak.

Two quantities are compared, both in bytes of saved activations counted as ``memory`` counts them
(each storage once, parameters excluded):

- **after forward**: what is stored between the forward and the backward pass: the input of each
  checkpointed segment (its boundary) and whatever the plain last segment saves. Nothing inside a
  checkpointed segment is kept. ``memory.measure_saved_activations`` measures it on the real model.
- **held in backward**: when backward reaches checkpointed segment k, it runs that segment's forward
  again and its saves come back, while the boundaries of segments 0..k are still held (the later
  ones, and the last segment's saves, are already freed). The largest of these and the
  after-forward figure is the peak of saved activations over the whole step.

The price is one more forward of the checkpointed segments during backward (checkpoint stops a
recomputation early once the segment's last saved tensor is back, so trailing layers that save
nothing, a Flatten, are not run again).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from d2lmp.layer_profile import flat_sequential
from d2lmp.memory import measure_saved_activations, predict_saved_activations
from d2lmp.model.pipeline_balance import equal_split
from d2lmp.pipeline_memory import counting_saves, storage_key

__all__ = ["CheckpointedSegment", "checkpointed", "SavedWithRecompute", "measure_saved_with_recompute",
           "predict_saved_with_recompute",
           "saves_its_input", "segment_sizes", "split_segments", "VIEW_LAYERS"]


VIEW_LAYERS = ("Flatten", "Identity")  # their output is a view of their input: no memory of its own


class CheckpointedSegment(nn.Sequential):
    """An ``nn.Sequential`` whose forward keeps only its input for backward and runs again during backward."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = checkpoint(super().forward, x, use_reentrant=False)
        return out


def segment_sizes(layers: int, segments: int | Sequence[int]) -> list[int]:
    """Layers per segment: an int asks for that many segments of (nearly) equal layer counts; a list is checked."""
    if isinstance(segments, int):
        if not 1 <= segments <= layers:
            raise ValueError(f"segments must be between 1 and the number of layers ({layers}), got {segments}")
        return equal_split(layers, segments)
    sizes = [int(s) for s in segments]
    if not sizes or min(sizes) < 1 or sum(sizes) != layers:
        raise ValueError(f"segment sizes {sizes} must be positive and add up to the {layers} layers")
    return sizes


def split_segments(model: nn.Sequential, segments: int | Sequence[int]) -> list[nn.Sequential]:
    """The flattened model cut into consecutive plain segments (the layers are shared with ``model``, not copied).

    A segment made only of layers that return a view of their input (Flatten, Identity) is refused.
    """
    if not isinstance(model, nn.Sequential):
        raise ValueError(f"recomputation needs an nn.Sequential, got {type(model).__name__}")
    flat = flat_sequential(model)
    layers = list(flat.named_children())
    out, start = [], 0
    for size in segment_sizes(len(layers), segments):
        part = layers[start:start + size]
        if all(type(layer).__name__ in VIEW_LAYERS for _, layer in part):
            names = ", ".join(name for name, _ in part)
            raise ValueError(f"segment ({names}) only reshapes its input: nothing to recompute, and its output "
                             "would share the boundary's memory; join it to a neighbouring segment")
        out.append(nn.Sequential(OrderedDict(part)))
        start += size
    return out


def checkpointed(model: nn.Sequential, segments: int | Sequence[int]) -> nn.Sequential:
    """``model`` with every segment but the last checkpointed; the layers (and so the parameters) are shared.

    ``segments=1`` leaves the model as it is (nothing is checkpointed). Child ``i`` of the result is
    segment ``i``, whose children keep the flattened layer names ("features_conv1", ...).
    """
    parts = split_segments(model, segments)
    wrapped = [CheckpointedSegment(OrderedDict(p.named_children())) for p in parts[:-1]]
    return nn.Sequential(*wrapped, parts[-1])


def saves_its_input(segment: nn.Sequential) -> bool:
    """Whether a plain forward of ``segment`` saves its input tensor, by the rules of ``memory.SAVE_RULES``.

    Conv2d, Linear and MaxPool2d save their input; Flatten and Identity pass a view of it on, so the
    next layer decides; any other layer makes a new tensor first (ReLU saves its output).
    """
    for layer in segment:
        kind = type(layer).__name__
        if kind not in VIEW_LAYERS:
            return kind in ("Conv2d", "Linear", "MaxPool2d")
    return False


@dataclass(frozen=True)
class SavedWithRecompute:
    """Saved-activation bytes of a checkpointed model (``predict_saved_with_recompute``, ``measure_...``).

    ``sizes``: layers per segment; ``plain``: the model without recomputation; ``boundaries``: bytes of
    each checkpointed segment's input; ``last_segment``: what the plain last segment saves;
    ``after_forward``: boundaries + last segment; ``recomputed``: what each checkpointed segment saves
    again when it is recomputed; ``held_in_backward``: per checkpointed segment k, the boundaries of
    segments 0..k and segment k's recomputed saves, a boundary the segment saves itself counted once;
    ``peak``: the largest of after_forward and held_in_backward.
    """

    sizes: list[int]
    plain: int
    boundaries: list[int]
    last_segment: int
    after_forward: int
    recomputed: list[int]
    held_in_backward: list[int]
    peak: int


def predict_saved_with_recompute(model: nn.Sequential, input_shape: Sequence[int], segments: int | Sequence[int],
                                 dtype: torch.dtype = torch.float32,
                                 device_type: str | None = None) -> SavedWithRecompute:
    """Saved-activation bytes of ``checkpointed(model, segments)`` in training mode, from shapes alone."""
    parts = split_segments(model, segments)
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    shapes: list[tuple[int, ...]] = []
    x = torch.zeros(tuple(input_shape), dtype=dtype, device=device)
    was_training = model.training
    try:
        model.train()  # as in predict_saved_activations: the shapes of a training forward
        with torch.no_grad():
            for part in parts:
                shapes.append(tuple(x.shape))
                x = part(x)
    finally:
        model.train(was_training)
    itemsize = torch.empty((), dtype=dtype).element_size()
    saves = [predict_saved_activations(part, shape, dtype, device_type).total_bytes
             for part, shape in zip(parts, shapes)]
    boundaries = [torch.Size(shape).numel() * itemsize for shape in shapes[:-1]]
    after_forward = sum(boundaries) + saves[-1]
    held = [sum(boundaries[:k]) + saves[k] + (0 if saves_its_input(parts[k]) else boundaries[k])
            for k in range(len(boundaries))]
    return SavedWithRecompute(sizes=[len(p) for p in parts],
                              plain=predict_saved_activations(model, input_shape, dtype, device_type).total_bytes,
                              boundaries=boundaries, last_segment=saves[-1], after_forward=after_forward,
                              recomputed=saves[:-1], held_in_backward=held, peak=max([after_forward] + held))


def _saved_storages(run: Callable[[], object], params: Iterable[torch.Tensor]) -> dict[tuple[str, int], int]:
    """{storage key: bytes} of every tensor autograd saves while ``run()`` runs, parameters excluded."""
    with counting_saves({storage_key(p) for p in params}) as saved:
        run()
    return saved


def measure_saved_with_recompute(model: nn.Sequential, x: torch.Tensor,
                                 segments: int | Sequence[int]) -> SavedWithRecompute:
    """The quantities of ``predict_saved_with_recompute``, measured with saved-tensor hooks (training mode).

    "plain" and "after_forward" are ``memory.measure_saved_activations`` of the model and of its
    checkpointed version. The boundaries are the storages the checkpointed forward saved for each
    segment's input; "recomputed" runs each checkpointed segment's forward on its boundary, which is
    what recomputation does (checkpoint itself checks that the recomputation saves as many tensors
    as the first forward did). "held_in_backward" counts the union of those storages.
    """
    model.train()
    parts = split_segments(model, segments)
    params = list(model.parameters())
    plain = measure_saved_activations(model, x).total_bytes
    ck = checkpointed(model, segments)
    inputs: list[torch.Tensor] = []  # each segment's input in the checkpointed forward
    hooks = [seg.register_forward_pre_hook(lambda mod, args: inputs.append(args[0])) for seg in ck]
    try:
        after_forward = measure_saved_activations(ck, x).total_bytes
    finally:
        for h in hooks:
            h.remove()
    boundary_keys = [storage_key(t) for t in inputs[:-1]]
    boundaries = [t.untyped_storage().nbytes() for t in inputs[:-1]]
    last = _saved_storages(lambda: parts[-1](inputs[-1]), params)
    recomputed: list[int] = []
    held: list[int] = []
    for k, part in enumerate(parts[:-1]):
        again = _saved_storages(lambda part=part, k=k: part(inputs[k]), params)  # type: ignore[misc]
        recomputed.append(sum(again.values()))
        union = dict(zip(boundary_keys[:k + 1], boundaries[:k + 1])) | again
        held.append(sum(union.values()))
    return SavedWithRecompute(sizes=[len(p) for p in parts], plain=plain, boundaries=boundaries,
                              last_segment=sum(last.values()), after_forward=after_forward,
                              recomputed=recomputed, held_in_backward=held, peak=max([after_forward] + held))
