"""What a training step stores and what inference does not: measured, and predicted by formula.

A training step keeps four kinds of tensors in memory:

- **parameters** (the weights),
- **gradients** (one number per parameter),
- **optimizer state** (SGD with momentum: one buffer per parameter; Adam: two, plus a step counter),
- **saved activations**: the tensors autograd keeps from the forward pass because backward needs them.

Their names and the bytes each optimizer keeps per parameter come from ``training_state``.

Inference keeps only the parameters and the few activations alive at any moment.
``measure_saved_activations`` records every tensor autograd saves, through
``torch.autograd.graph.saved_tensors_hooks``, and counts each *storage* once (a ReLU's output
that the next layer also saves, or a flattened view of it, is one block of memory).
``predict_saved_activations`` gets the same total from layer shapes and a rule per layer kind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

import torch
from torch import nn

from d2lmp import memory_records as rec
from d2lmp.model.training_state import optimizer_bytes

__all__ = ["SAVE_RULES", "TORCH_OPTIMIZERS", "OUTSIDE", "measure_saved_activations", "predict_saved_activations",
           "compare_saved_activations", "predict_step_memory", "measure_step_memory", "inference_activation_peak",
           "predict_inference_memory", "cuda_peak_memory", "judge_cuda_peaks", "breakdown_rows"]

# What autograd saves for each supported leaf layer (the rule the prediction uses):
SAVE_RULES = {
    "Conv2d": "its input (needed for the weight gradient)",
    "Linear": "its input (needed for the weight gradient)",
    "ReLU": "its output (the gradient is passed where output > 0)",
    "Sigmoid": "its output (σ' = σ(1 − σ))",
    "Tanh": "its output (tanh' = 1 − tanh²)",
    "MaxPool2d": "its input and the int64 index of each maximum (output-shaped)",
    "Dropout": "the random mask (output-shaped): float on the CPU, one byte (bool) on CUDA; nothing in eval mode",
    "Flatten": "nothing: its output is a view of its input",
    "Identity": "nothing",
}

# The rows of ``training_state.OPTIMIZERS`` that a real step here can run with a torch optimizer (FP32).
TORCH_OPTIMIZERS = ("sgd", "momentum", "adam")


def _storage_key(t: torch.Tensor) -> tuple[str, int]:
    return (t.device.type, t.untyped_storage().data_ptr())


def _leaf_modules(model: nn.Module) -> list[tuple[str, nn.Module]]:
    return [(name, m) for name, m in model.named_modules() if not list(m.children())]


OUTSIDE = "(outside any layer)"


def measure_saved_activations(model: nn.Module, x: torch.Tensor) -> rec.MeasuredSaves:
    """Run ``model(x)`` and record every tensor autograd saves for backward (parameters excluded).

    Each storage is counted once, at the first layer that saves it. A save is credited to the
    leaf layer running at that moment; a save made between layers (a functional op such as
    ``torch.tanh`` in a parent module's ``forward``) goes to the row ``OUTSIDE``, which appears
    only when something was saved there. Returns a ``MeasuredSaves``: the total, one ``LayerSaves`` per
    layer, how many saves, how many distinct storages, and the output. Under ``torch.no_grad()`` nothing
    is saved and the total is 0.
    """
    param_keys = {_storage_key(p) for p in model.parameters()}
    running: list[str] = []  # leaf layers whose forward is in progress (a stack, should one call another)
    per_layer: dict[str, rec.LayerSaves] = {}
    seen: set[tuple[str, int]] = set()
    count = {"saves": 0}
    hooks = []

    def enter(name: str) -> Callable[[nn.Module, object], None]:
        def pre(mod: nn.Module, args: object) -> None:
            running.append(name)  # returns None: the input is left as it is
        return pre

    def leave(mod: nn.Module, args: object, out: object) -> None:
        running.pop()  # returns None: the output is left as it is

    for name, module in _leaf_modules(model):
        hooks.append(module.register_forward_pre_hook(enter(name)))
        hooks.append(module.register_forward_hook(leave, always_call=True))
        per_layer[name] = rec.LayerSaves(name=name, kind=type(module).__name__, bytes=0, tensors=0)

    def pack(t: torch.Tensor) -> torch.Tensor:
        count["saves"] += 1
        key = _storage_key(t)
        if key not in param_keys and key not in seen:
            seen.add(key)
            name = running[-1] if running else OUTSIDE
            row = per_layer.setdefault(name, rec.LayerSaves(name=name, kind="", bytes=0, tensors=0))
            per_layer[name] = replace(row, bytes=row.bytes + t.untyped_storage().nbytes(), tensors=row.tensors + 1)
        return t

    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = model(x)
    finally:
        for h in hooks:
            h.remove()
    rows = list(per_layer.values())
    return rec.MeasuredSaves(total_bytes=sum(r.bytes for r in rows), per_layer=rows, saved_tensors=count["saves"],
                         unique_storages=len(seen), output=out)


def _tensor_id(t: torch.Tensor) -> int:
    base = t._base if t._base is not None else t
    return id(base)


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def predict_saved_activations(model: nn.Module, input_shape: Sequence[int], dtype: torch.dtype = torch.float32,
                              device_type: str | None = None, training: bool = True) -> rec.SavedActivations:
    """Saved-activation bytes from layer shapes and ``SAVE_RULES`` (no autograd involved).

    Shapes come from one forward pass under ``torch.no_grad()`` on the model's device (build
    the model on ``meta`` for big ones: no arithmetic happens there). ``device_type`` ("cpu"
    or "cuda") decides the dropout mask's size; default: where the parameters are. Raises
    ValueError for a layer kind without a rule. Returns the total and one ``LayerSaves`` per layer, as
    ``measure_saved_activations`` counts them.
    """
    leaves = _leaf_modules(model)
    for name, m in leaves:
        if type(m).__name__ not in SAVE_RULES:
            raise ValueError(f"no saved-activation rule for layer {name!r} ({type(m).__name__}); "
                             f"known kinds: {', '.join(SAVE_RULES)}")
    device = next((p.device for p in model.parameters()), torch.device("cpu"))  # a ReLU alone has none
    device_type = device_type or device.type
    if device_type == "meta":
        device_type = "cpu"
    if device_type not in ("cpu", "cuda"):
        raise ValueError(f"device_type must be 'cpu' or 'cuda', got {device_type!r}")
    records: list[tuple[str, nn.Module, torch.Tensor, torch.Tensor]] = []
    hooks = [m.register_forward_hook(lambda mod, args, out, name=name: records.append((name, mod, args[0], out)))
             for name, m in leaves]
    x = torch.zeros(tuple(input_shape), dtype=dtype, device=device)
    was_training = model.training
    try:
        model.train(training)  # in training mode dropout makes a new tensor, as it does when autograd records
        with torch.no_grad():
            model(x)
    finally:
        for h in hooks:
            h.remove()
        model.train(was_training)
    saved: dict[object, int] = {}  # tensor id -> bytes, first saver wins
    rows: list[rec.LayerSaves] = []
    for name, mod, inp, out in records:
        kind = type(mod).__name__
        saves: list[tuple[object, int]] = []  # (key, bytes) of what this layer saves
        if kind in ("Conv2d", "Linear"):
            saves.append((_tensor_id(inp), _nbytes(inp)))
        elif kind in ("ReLU", "Sigmoid", "Tanh"):
            saves.append((_tensor_id(out), _nbytes(out)))
        elif kind == "MaxPool2d":
            saves += [(_tensor_id(inp), _nbytes(inp)), ((name, "indices"), out.numel() * 8)]
        elif kind == "Dropout" and training and 0 < mod.p < 1:  # type: ignore[operator]
            saves.append(((name, "mask"), out.numel() * (1 if device_type == "cuda" else out.element_size())))
        row = rec.LayerSaves(name=name, kind=kind, bytes=0, tensors=0)
        for key, nbytes in saves:
            if key not in saved:
                saved[key] = nbytes
                row = replace(row, bytes=row.bytes + nbytes, tensors=row.tensors + 1)
        rows.append(row)
    return rec.SavedActivations(total_bytes=sum(r.bytes for r in rows), per_layer=rows)


def compare_saved_activations(model: nn.Module, x: torch.Tensor) -> rec.SavedComparison:
    """Measured and predicted saved-activation bytes for ``model(x)`` in training mode, and their ratio.

    ``per_layer`` pairs the rows by layer name, in the order the layers ran; a row only one side
    has (``OUTSIDE``: saved by a functional op between layers, which no rule predicts) is kept
    with 0 on the other side, so every measured byte appears in some row.
    """
    model.train()
    measured = measure_saved_activations(model, x)
    predicted = predict_saved_activations(model, tuple(x.shape), x.dtype, x.device.type)
    m, p = measured.total_bytes, predicted.total_bytes
    rows: dict[str, rec.LayerComparison] = {}
    for r in predicted.per_layer:  # execution order; a layer called twice is summed
        row = rows.setdefault(r.name, rec.LayerComparison(name=r.name, kind=r.kind, measured=0, predicted=0))
        rows[r.name] = replace(row, predicted=row.predicted + r.bytes)
    for r in measured.per_layer:
        row = rows.setdefault(r.name, rec.LayerComparison(name=r.name, kind=r.kind, measured=0, predicted=0))
        rows[r.name] = replace(row, measured=row.measured + r.bytes)
    return rec.SavedComparison(measured_bytes=m, predicted_bytes=p, ratio=m / p if p else float("nan"),
                           per_layer=list(rows.values()))


# ---------------------------------------------------------------------------------------
# A whole training step


def _make_optimizer(name: str, params: Iterable[nn.Parameter], lr: float = 1e-3) -> torch.optim.Optimizer:
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr)
    if name == "momentum":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr)
    raise ValueError(f"optimizer must be one of {', '.join(TORCH_OPTIMIZERS)}, got {name!r}")


def predict_step_memory(model: nn.Module, input_shape: Sequence[int], optimizer: str = "adam",
                        device_type: str | None = None) -> rec.StepMemory:
    """Bytes of parameters, gradients, optimizer state and saved activations for one FP32 training step.

    P parameters times the bytes per parameter of each part in ``training_state.OPTIMIZERS[optimizer]``:
    gradients as many as the parameters; optimizer state 0 (plain SGD), 4 P (momentum) or 8 P (Adam), and
    for Adam a 4-byte step counter per parameter tensor, which PyTorch's Adam keeps beside its moments.
    Inference needs the parameters only, plus the activations alive at one moment (not counted here).
    """
    if optimizer not in TORCH_OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(TORCH_OPTIMIZERS)}, got {optimizer!r}")
    params = list(model.parameters())
    count = sum(p.numel() for p in params)
    per_param = optimizer_bytes(optimizer).state_per_parameter
    step_counters = 4 * len(params) if optimizer == "adam" else 0  # one float32 scalar per parameter tensor
    acts = predict_saved_activations(model, input_shape, device_type=device_type).total_bytes
    return rec.StepMemory(parameters=count * per_param["parameters"], gradients=count * per_param["gradients"],
                      optimizer_state=count * per_param["optimizer_state"] + step_counters, saved_activations=acts)


def measure_step_memory(model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                        optimizer: str = "adam") -> rec.StepMemory:
    """Run one real training step and add up the tensors each part holds (bytes).

    Parameters and gradients from the tensors themselves, optimizer state from the optimizer's
    ``state`` after ``step()``, saved activations with ``measure_saved_activations`` (the loss's
    own few saved tensors are left out, as in the prediction).
    """
    model.train()
    opt = _make_optimizer(optimizer, model.parameters())
    opt.zero_grad(set_to_none=True)
    out = measure_saved_activations(model, x)
    loss = nn.functional.cross_entropy(out.output, y)
    loss.backward()
    opt.step()
    params = list(model.parameters())
    state_bytes = sum(_nbytes(v) for s in opt.state.values() for v in s.values() if torch.is_tensor(v))
    return rec.StepMemory(parameters=sum(_nbytes(p) for p in params),
                      gradients=sum(_nbytes(p.grad) for p in params if p.grad is not None),
                      optimizer_state=state_bytes, saved_activations=out.total_bytes)


def inference_activation_peak(model: nn.Module, input_shape: Sequence[int], dtype_bytes: int = 4) -> int:
    """Predicted activation bytes inference holds at once, the input batch included.

    While a leaf layer runs, its input and its output are alive, and so is the input of every
    module still running around it: the model's own input (its caller holds it) and, say, the
    input of an ``nn.Sequential`` block, which the enclosing module still refers to. Everything
    older has been freed, because without autograd nothing else refers to it. The prediction is
    the largest such set over the leaf layers, each storage counted once (a view counts as the
    tensor it views). ``d2lmp selfcheck`` compares it with the CUDA allocator's peak.
    """
    param = next(model.parameters())
    running: list[torch.Tensor | None] = []  # inputs of the modules whose forward is in progress
    sizes = []

    def base(t: torch.Tensor) -> torch.Tensor:
        return t._base if t._base is not None else t

    def enter(mod: nn.Module, args: tuple[object, ...]) -> None:
        running.append(base(args[0]) if args and isinstance(args[0], torch.Tensor) else None)

    def leave(mod: nn.Module, args: object, out: object) -> None:
        if not list(mod.children()) and isinstance(out, torch.Tensor):
            alive = {id(t): t.numel() for t in running + [base(out)] if t is not None}
            sizes.append(sum(alive.values()) * dtype_bytes)
        running.pop()

    hooks = []
    for m in model.modules():
        hooks.append(m.register_forward_pre_hook(enter))
        hooks.append(m.register_forward_hook(leave, always_call=True))
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            model(torch.zeros(tuple(input_shape), device=param.device))
    finally:
        for h in hooks:
            h.remove()
        model.train(was_training)
    return max(sizes)


def predict_inference_memory(model: nn.Module, input_shape: Sequence[int],
                             dtype_bytes: int = 4) -> rec.InferenceMemory:
    """Bytes an inference pass holds at its peak: the parameters and the activations alive together
    (``inference_activation_peak``, which includes the input batch)."""
    p_bytes = sum(p.numel() for p in model.parameters()) * dtype_bytes
    return rec.InferenceMemory(parameters=p_bytes,
                           live_activations=inference_activation_peak(model, input_shape, dtype_bytes))


def cuda_peak_memory(model: nn.Module, x: torch.Tensor, y: torch.Tensor, train: bool = True,
                     optimizer: str = "adam") -> rec.CudaPeak:
    """The CUDA caching allocator's peak during one training step (``train``) or one inference pass.

    Counted as the predictions count: the parameters, the input batch ``x`` and, for training, the
    optimizer's state are included; anything else that was already allocated (the labels, other
    tensors, library workspaces) is left out. One unmeasured call runs first (a training step, or a
    forward pass), so that Adam's state exists, as it does in every step after the first, and
    one-time workspaces are already allocated. With ``train`` the weights change (two steps).

    Returns a ``CudaPeak``: the peak, the parameter, input and optimizer-state bytes, the other bytes
    (allocated before the measured call and not counted), and the step bytes (the peak above everything
    allocated before the call: what the call itself added).
    """
    device = x.device
    if device.type != "cuda":
        raise ValueError(f"cuda_peak_memory needs tensors on a CUDA device, got {device}")
    model.to(device)
    params = list(model.parameters())
    if train:
        model.train()
        opt = _make_optimizer(optimizer, params)

        def run() -> None:
            opt.zero_grad(set_to_none=True)  # gradients are made anew in each step, as in a training loop
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    else:
        model.eval()

        def run() -> None:
            with torch.no_grad():
                model(x)

    run()  # unmeasured: creates the optimizer's state and any one-time workspaces
    if train:
        opt.zero_grad(set_to_none=True)
    state_bytes = 0
    if train:
        state_bytes = sum(_nbytes(v) for st in opt.state.values() for v in st.values()
                          if torch.is_tensor(v) and v.device == device)  # Adam's step counters live on the CPU
    parameter_bytes = sum(_nbytes(p) for p in params)
    input_bytes = _nbytes(x)
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    run()
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device)
    other = before - parameter_bytes - input_bytes - state_bytes
    return rec.CudaPeak(peak_bytes=peak - other, parameter_bytes=parameter_bytes, input_bytes=input_bytes,
                    optimizer_state_bytes=state_bytes, other_bytes=other, step_bytes=peak - before)


def judge_cuda_peaks(predicted_step: rec.StepMemory, predicted_inference: rec.InferenceMemory, train_peak: int,
                     inference_peak: int, tolerance: float = 0.05) -> rec.PeakVerdict:
    """Compare the allocator's peaks (``cuda_peak_memory``) with the predictions; pure arithmetic.

    Inference: the peak should match ``predict_inference_memory`` within ``tolerance``. Training: the
    four parts of ``predict_step_memory`` are not all alive at one moment (gradients appear during
    backward while the saved activations are being freed), and backward adds temporaries no formula
    here counts, so their sum bounds the peak in neither direction. Two moments are certain: at the
    end of the forward pass the parameters, the optimizer's state and every saved activation are
    alive; at the optimizer step the parameters, gradients and state. The peak must reach the larger
    (``train_lower_bound``, allowed 1 % below for the few bytes of optimizer state kept on the CPU).
    """
    s = predicted_step
    params, grads, opt_state, acts = s.parameters, s.gradients, s.optimizer_state, s.saved_activations
    infer_pred = predicted_inference.total
    lower = params + opt_state + max(acts, grads)
    total = params + grads + opt_state + acts
    ratio = inference_peak / infer_pred
    return rec.PeakVerdict(inference_predicted=infer_pred, inference_ratio=ratio,
                           inference_ok=abs(ratio - 1) <= tolerance, train_lower_bound=lower,
                           train_formula_total=total, train_over_formula=train_peak / total,
                           train_ok=train_peak >= 0.99 * lower)


def breakdown_rows(model: nn.Module, input_shape: Sequence[int], optimizer: str = "adam",
                   device_type: str | None = None) -> list[rec.MemoryBar]:
    """Two rows for a bar chart, "training" and "inference", with bytes per component (predicted).

    The input batch counts in both: in training as the first layer's saved input, in inference
    among the live activations (``inference_activation_peak``).
    """
    train = predict_step_memory(model, input_shape, optimizer, device_type=device_type)
    return [rec.MemoryBar(f"training step ({optimizer})", train.parameters, train.gradients, train.optimizer_state,
                          train.saved_activations, live_activations=0),
            rec.MemoryBar("inference (forward only)", train.parameters, gradients=0, optimizer_state=0,
                          saved_activations=0, live_activations=inference_activation_peak(model, input_shape))]
