"""The networks the notebooks build (LeNet-5, AlexNets, an MLP) and a per-layer table of their costs.

- ``lenet5``: the LeNet-5 of *Dive into Deep Learning* (sigmoid, average pooling, 28×28 input).
- ``alexnet_d2l``: D2L's single-tower AlexNet for 224×224 inputs (Zhang et al. 2023; bibliography:
  zhang2023d2l_alexnet); its layer shapes give 46,764,746 parameters with 1 input channel and 10 classes.
- ``alexnet2012``: the 2012 paper's network: two towers as grouped convolutions (conv2, conv4,
  conv5), local response normalisation with k=2, n=5, α=1e-4, β=0.75, overlapping 3×3/2 pooling,
  dropout 0.5 in fc6 and fc7 (Krizhevsky et al. 2012, §3.3-§3.5 and §4.2; bibliography:
  krizhevsky2012imagenet); its layer shapes give 60,965,224 parameters ("60 million" in the paper).
- ``alexnet_torchvision``: parameter names and shapes of torchvision's ``alexnet`` (61,100,840
  parameters, its weights' ``num_params``; bibliography: torchvision_alexnet_docs), so its published
  weights load unchanged.
- ``alexnet_small``: an AlexNet-shaped network scaled down for 32×32 inputs and CPU training.
- ``mlp``: the one multilayer-perceptron builder (the digits network, the data-parallel MLPs).
- ``pipeline_model``: a half-width AlexNet as one flat ``nn.Sequential``, the network that pipeline
  parallelism partitions layer by layer.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from d2lmp.layer_profile import flat_sequential

__all__ = ["paper_lrn", "lenet5", "alexnet_d2l", "TowerLRN", "tower_lrn", "alexnet2012", "TorchvisionAlexNet",
           "alexnet_torchvision", "alexnet_small", "mlp", "pipeline_model", "count_parameters", "LayerRow",
           "LayerTotals", "LayerShare", "AlexNetSummary", "layer_table", "totals", "format_layer_table",
           "params_vs_flops", "alexnet_summary"]

# Paper constants (Krizhevsky et al. 2012, §3.3; bibliography: krizhevsky2012imagenet):
# b = a / (k + α Σ a²)^β over n adjacent maps.
LRN_K, LRN_N, LRN_ALPHA, LRN_BETA = 2.0, 5, 1e-4, 0.75


def paper_lrn() -> nn.LocalResponseNorm:
    """The paper's local response normalisation.

    PyTorch's ``LocalResponseNorm`` divides α by n (it computes k + α/n · Σ a²), so the
    paper's α = 1e-4 is passed as n · α.
    """
    return nn.LocalResponseNorm(LRN_N, alpha=LRN_N * LRN_ALPHA, beta=LRN_BETA, k=LRN_K)


def lenet5(num_classes: int = 10) -> nn.Sequential:
    """LeNet-5 as in *Dive into Deep Learning*: sigmoid activations, 2×2 average pooling, 28×28 input."""
    return nn.Sequential(
        nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.Sigmoid(), nn.AvgPool2d(2, 2),
        nn.Conv2d(6, 16, kernel_size=5), nn.Sigmoid(), nn.AvgPool2d(2, 2),
        nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.Sigmoid(),
        nn.Linear(120, 84), nn.Sigmoid(),
        nn.Linear(84, num_classes),
    )


def alexnet_d2l(num_classes: int = 10, in_channels: int = 1) -> nn.Sequential:
    """D2L's AlexNet: one tower, no LRN, 224×224 input (Fashion-MNIST resized in the book)."""
    return nn.Sequential(
        nn.Conv2d(in_channels, 96, kernel_size=11, stride=4, padding=1), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Conv2d(96, 256, kernel_size=5, padding=2), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Conv2d(256, 384, kernel_size=3, padding=1), nn.ReLU(),
        nn.Conv2d(384, 384, kernel_size=3, padding=1), nn.ReLU(),
        nn.Conv2d(384, 256, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Flatten(),
        nn.Linear(6400, 4096), nn.ReLU(), nn.Dropout(0.5),
        nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(0.5),
        nn.Linear(4096, num_classes),
    )


class TowerLRN(nn.Module):
    """The paper's LRN applied within each GPU's maps: channels are cut into ``towers`` groups.

    Each GPU normalised only the kernel maps it held, so in the one-device model the
    "adjacent maps" of the normalisation never cross the boundary between the two towers.
    """

    def __init__(self, towers: int = 2) -> None:
        super().__init__()
        self.towers = towers

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([tower_lrn(part) for part in x.chunk(self.towers, dim=1)], dim=1)


def tower_lrn(x: torch.Tensor) -> torch.Tensor:
    """The paper's LRN on one tower's maps (see ``paper_lrn`` for the α convention)."""
    return F.local_response_norm(x, LRN_N, alpha=LRN_N * LRN_ALPHA, beta=LRN_BETA, k=LRN_K)


def _scaled(channels: int, width: float) -> int:
    # Keep every width even so the two towers (groups=2) split it evenly.
    return max(2, 2 * round(channels * width / 2))


def _pool5_side(input_size: int) -> int:
    """Side of pool5's maps in ``alexnet2012`` for a square input: conv1 (11, stride 4, padding 2), three 3×3
    stride-2 pools; conv2–conv5 keep the size. ValueError when a pool would get no output."""
    side = (input_size + 2 * 2 - 11) // 4 + 1
    for _ in range(3):
        side = (side - 3) // 2 + 1
        if side < 1:
            raise ValueError(f"input {input_size}×{input_size} is too small for alexnet2012 (pool5 gets no output)")
    return side


def alexnet2012(num_classes: int = 1000, width: float = 1.0, input_size: int = 224, init: str = "paper") -> nn.Module:
    """The 2012 paper's AlexNet; ``width`` scales every layer's channels (1.0 = the paper).

    The two GPUs are written as ``groups=2`` in conv2, conv4 and conv5, whose kernels see
    only their own GPU's maps (paper §3.2), and the response normalisations after conv1 and
    conv2 work within each GPU's maps (``TowerLRN``). conv1 uses padding 2 so that a 224×224 input
    gives the paper's 55×55 maps ((224 + 2·2 − 11) // 4 + 1 = 55; without padding a 227×227 input
    would be needed, (227 − 11) / 4 + 1 = 55, though the paper says 224). fc6's input size
    follows ``input_size``. ``init="paper"`` draws weights from N(0, 0.01) with bias 1 in
    conv2, conv4, conv5 and the hidden FC layers, 0 elsewhere (paper §5); "torch" keeps
    PyTorch's default initialisation.
    """
    if init not in ("paper", "torch"):
        raise ValueError(f"init must be 'paper' or 'torch', got {init!r}")
    if width <= 0:
        raise ValueError(f"width must be positive, got {width}")
    c = [_scaled(ch, width) for ch in (96, 256, 384, 384, 256)]
    fc = _scaled(4096, width)
    features = nn.Sequential(OrderedDict([
        ("conv1", nn.Conv2d(3, c[0], 11, stride=4, padding=2)), ("relu1", nn.ReLU()), ("norm1", TowerLRN(2)),
        ("pool1", nn.MaxPool2d(3, 2)),
        ("conv2", nn.Conv2d(c[0], c[1], 5, padding=2, groups=2)), ("relu2", nn.ReLU()), ("norm2", TowerLRN(2)),
        ("pool2", nn.MaxPool2d(3, 2)),
        ("conv3", nn.Conv2d(c[1], c[2], 3, padding=1)), ("relu3", nn.ReLU()),
        ("conv4", nn.Conv2d(c[2], c[3], 3, padding=1, groups=2)), ("relu4", nn.ReLU()),
        ("conv5", nn.Conv2d(c[3], c[4], 3, padding=1, groups=2)), ("relu5", nn.ReLU()),
        ("pool5", nn.MaxPool2d(3, 2)),
    ]))
    flat = c[4] * _pool5_side(input_size) ** 2  # counted, not probed: a probe under torch.device("meta") imports
    # torch._dynamo (seconds) for its ReLUs
    classifier = nn.Sequential(OrderedDict([
        ("fc6", nn.Linear(flat, fc)), ("relu6", nn.ReLU()), ("drop6", nn.Dropout(0.5)),
        ("fc7", nn.Linear(fc, fc)), ("relu7", nn.ReLU()), ("drop7", nn.Dropout(0.5)),
        ("fc8", nn.Linear(fc, num_classes)),
    ]))
    model = nn.Sequential(OrderedDict([("features", features), ("flatten", nn.Flatten()), ("classifier", classifier)]))
    if init == "paper" and not any(p.is_meta for p in model.parameters()):
        with torch.no_grad():
            for name, m in model.named_modules():
                if isinstance(m, (nn.Conv2d, nn.Linear)):
                    m.weight.normal_(0.0, 0.01)
                    bias = 1.0 if name.split(".")[-1] in ("conv2", "conv4", "conv5", "fc6", "fc7") else 0.0
                    m.bias.fill_(bias)  # type: ignore[union-attr]  # every layer here has one
    return model


class TorchvisionAlexNet(nn.Module):
    """torchvision's ``AlexNet`` rewritten here (same module names, so the same state-dict keys)."""

    def __init__(self, num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(dropout), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True),
            nn.Dropout(dropout), nn.Linear(4096, 4096), nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))
        return out


def alexnet_torchvision(num_classes: int = 1000) -> TorchvisionAlexNet:
    """An AlexNet whose parameter names and shapes equal torchvision's ``alexnet`` (61,100,840 parameters)."""
    return TorchvisionAlexNet(num_classes)


def alexnet_small(num_classes: int = 10, in_channels: int = 1, width: int = 16, input_size: int = 32) -> nn.Sequential:
    """A scaled-down AlexNet for 32×32 images and CPU training (not the paper's network).

    Same shape of network: five convolutions with ReLU, three overlapping 3×3/2 max-pools,
    two dropout-regularised hidden FC layers and a classifier; ``width`` channels in conv1
    (the paper has 96), a 5×5 first kernel with stride 1 instead of 11×11 with stride 4,
    no LRN, 256-wide FC layers instead of 4096.
    """
    if width < 2:
        raise ValueError(f"width must be at least 2, got {width}")
    c = [width, 2 * width, 3 * width, 3 * width, 2 * width]
    features = nn.Sequential(OrderedDict([
        ("conv1", nn.Conv2d(in_channels, c[0], 5, padding=2)), ("relu1", nn.ReLU()), ("pool1", nn.MaxPool2d(3, 2)),
        ("conv2", nn.Conv2d(c[0], c[1], 3, padding=1)), ("relu2", nn.ReLU()), ("pool2", nn.MaxPool2d(3, 2)),
        ("conv3", nn.Conv2d(c[1], c[2], 3, padding=1)), ("relu3", nn.ReLU()),
        ("conv4", nn.Conv2d(c[2], c[3], 3, padding=1)), ("relu4", nn.ReLU()),
        ("conv5", nn.Conv2d(c[3], c[4], 3, padding=1)), ("relu5", nn.ReLU()), ("pool5", nn.MaxPool2d(3, 2)),
    ]))
    with torch.no_grad():  # one small forward; a meta-device probe would import torch._dynamo (seconds) for its ReLUs
        flat = features(torch.zeros(1, in_channels, input_size, input_size)).numel()
    classifier = nn.Sequential(OrderedDict([
        ("fc6", nn.Linear(flat, 256)), ("relu6", nn.ReLU()), ("drop6", nn.Dropout(0.5)),
        ("fc7", nn.Linear(256, 256)), ("relu7", nn.ReLU()), ("drop7", nn.Dropout(0.5)),
        ("fc8", nn.Linear(256, num_classes)),
    ]))
    return nn.Sequential(OrderedDict([("features", features), ("flatten", nn.Flatten()), ("classifier", classifier)]))


def mlp(in_features: int, hidden: Sequence[int], classes: int, dropout: float = 0.0,
        flatten: bool = True) -> nn.Sequential:
    """A multilayer perceptron: Flatten, then Linear + ReLU [+ Dropout] per hidden width, then Linear.

    The layers are created in order, so after ``torch.manual_seed`` the weights are reproducible.
    ``flatten=False`` leaves out the leading ``nn.Flatten`` for inputs that are already vectors
    (pipeline and tensor-parallel splits count every module as a layer).
    """
    hidden = tuple(hidden)
    if not hidden or any(h < 1 for h in hidden):
        raise ValueError(f"hidden must list positive layer widths, got {hidden!r}")
    if in_features < 1 or classes < 1:
        raise ValueError(f"in_features and classes must be positive, got {in_features} and {classes}")
    layers: list[nn.Module] = [nn.Flatten()] if flatten else []
    width = in_features
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()] + ([nn.Dropout(dropout)] if dropout > 0 else [])
        width = h
    layers.append(nn.Linear(width, classes))
    return nn.Sequential(*layers)


def pipeline_model() -> nn.Sequential:
    """A half-width AlexNet (paper layout) on 115×115 inputs as one flat nn.Sequential, seeded."""
    torch.manual_seed(0)
    return flat_sequential(alexnet2012(num_classes=10, width=0.5, input_size=115, init="torch"))


def count_parameters(model: nn.Module) -> int:
    """Number of learnable parameters."""
    return sum(p.numel() for p in model.parameters())


# ---------------------------------------------------------------------------------------
# The layer table


@dataclass(frozen=True)
class LayerRow:
    """One leaf layer of ``layer_table``: its output shape (batch first), parameters, multiply-adds and
    FLOPs for the whole batch (only convolutions and linear layers count), and the output's bytes."""

    name: str
    kind: str  # the module's class name: "Conv2d", "Linear", "ReLU", ...
    output_shape: tuple[int, ...]
    params: int
    macs: int
    flops: int  # 2 × macs
    activation_bytes: float  # whole bytes from layer_table; the cost model rescales them to other widths


@dataclass(frozen=True)
class LayerTotals:
    """Sums over a layer table (``totals``)."""

    params: int
    macs: int
    flops: int
    activation_bytes: float


@dataclass(frozen=True)
class LayerShare:
    """A conv or linear layer's share of all parameters and of all FLOPs (``params_vs_flops``)."""

    name: str
    kind: str
    params: int
    flops: int
    param_share: float
    flop_share: float


@dataclass(frozen=True)
class AlexNetSummary:
    """``alexnet_summary``: the layer table, its totals, and where the FLOPs and parameters live."""

    rows: list[LayerRow]
    totals: LayerTotals
    conv_flop_share: float
    fc_param_share: float


def layer_table(model: nn.Module, input_shape: Sequence[int], dtype_bytes: int = 4,
                device: str | torch.device | None = None) -> list[LayerRow]:
    """One ``LayerRow`` per leaf layer (in execution order) for an input of ``input_shape`` (batch first).

    The forward pass runs where the parameters are; build the model on the ``meta`` device
    (``with torch.device("meta"):``) to get shapes without arithmetic. ``dtype_bytes`` sizes
    the activations.
    """
    input_shape = tuple(input_shape)
    if len(input_shape) < 2:
        raise ValueError(f"input_shape must include the batch, e.g. (1, 3, 224, 224), got {input_shape}")
    rows: list[LayerRow] = []
    hooks = []

    def hook(name: str) -> Callable[[nn.Module, object, torch.Tensor], None]:
        def record(module: nn.Module, inputs: object, output: torch.Tensor) -> None:
            params = sum(p.numel() for p in module.parameters(recurse=False))
            if isinstance(module, nn.Conv2d):
                macs = (output.numel() * (module.in_channels // module.groups)
                        * module.kernel_size[0] * module.kernel_size[1])
            elif isinstance(module, nn.Linear):
                macs = output.numel() * module.in_features
            else:
                macs = 0
            rows.append(LayerRow(name, type(module).__name__, tuple(output.shape), params, macs, 2 * macs,
                                 output.numel() * dtype_bytes))
        return record

    for name, module in model.named_modules():
        if not list(module.children()):
            hooks.append(module.register_forward_hook(hook(name)))
    was_training = model.training
    try:
        model.eval()
        if device is None:
            device = next(model.parameters()).device
        with torch.no_grad():
            model(torch.zeros(input_shape, device=device))
    finally:
        for h in hooks:
            h.remove()
        model.train(was_training)
    return rows


def totals(rows: list[LayerRow]) -> LayerTotals:
    """Sums of params, macs, flops and activation bytes over a layer table."""
    return LayerTotals(params=sum(r.params for r in rows), macs=sum(r.macs for r in rows),
                       flops=sum(r.flops for r in rows), activation_bytes=sum(r.activation_bytes for r in rows))


def format_layer_table(rows: list[LayerRow], skip_kinds: Sequence[str] = ("ReLU", "Dropout", "Flatten")) -> str:
    """A plain-text table (shapes without the batch, parameters, MFLOPs, activation KiB) plus a total row.

    Layers of ``skip_kinds`` are left out; the activation total sums the rows shown.
    """
    from d2lmp.report import table

    body = [[r.name, r.kind, "×".join(str(s) for s in r.output_shape[1:]), f"{r.params:,}",
             f"{r.flops / 1e6:,.1f}", f"{r.activation_bytes / 2**10:,.1f}"]
            for r in rows if r.kind not in skip_kinds]
    t = totals(rows)
    shown = sum(r.activation_bytes for r in rows if r.kind not in skip_kinds)
    body.append(["total", "", "", f"{t.params:,}", f"{t.flops / 1e6:,.1f}", f"{shown / 2**10:,.1f}"])
    return table(body, ["layer", "kind", "output", "params", "MFLOPs", "activations KiB"])


def params_vs_flops(rows: list[LayerRow]) -> list[LayerShare]:
    """For each conv/linear layer: its share of all parameters and of all FLOPs."""
    learned = [r for r in rows if r.kind in ("Conv2d", "Linear")]
    p_total = sum(r.params for r in learned)
    f_total = sum(r.flops for r in learned)
    return [LayerShare(r.name, r.kind, r.params, r.flops, r.params / p_total, r.flops / f_total) for r in learned]


def alexnet_summary(input_size: int = 224, width: float = 1.0, num_classes: int = 1000) -> AlexNetSummary:
    """Shapes, parameters and FLOPs of ``alexnet2012`` at an input size and width (built on ``meta``).

    ValueError when the input is too small for the network (the last pooling needs ≥ 1×1 maps).
    """
    if input_size < 1:
        raise ValueError(f"input_size must be positive, got {input_size}")
    try:
        with torch.device("meta"):
            model = alexnet2012(num_classes, width=width, input_size=input_size, init="torch")
    except (RuntimeError, ValueError) as exc:
        raise ValueError(f"input {input_size}×{input_size} is too small for AlexNet's five conv and three "
                         f"pooling layers (try 63 or more): {exc}") from None
    rows = layer_table(model, (1, 3, input_size, input_size))
    shares = params_vs_flops(rows)
    return AlexNetSummary(rows, totals(rows),
                          conv_flop_share=sum(s.flop_share for s in shares if s.kind == "Conv2d"),
                          fc_param_share=sum(s.param_share for s in shares if s.kind == "Linear"))
