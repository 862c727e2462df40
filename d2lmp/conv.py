"""Convolution three ways: readable loops, im2col + GEMM, and the cuda-convnet ("c01b") layout.

All three compute what ``torch.nn.functional.conv2d`` computes (a cross-correlation: the
kernel is not flipped, as in every deep learning framework and in cuda-convnet).

- ``conv2d_loops``: one output value at a time; the definition, for tiny inputs only.
- ``conv2d_im2col``: copy every receptive field into a column (``F.unfold``), then one
  matrix product per group: how Caffe and early cuDNN turned convolution into GEMM.
- ``conv2d_c01b``: tensors stored as (channels, rows, cols, batch), batch innermost, as
  cuda-convnet stores them; the gather reads runs of consecutive images and one GEMM
  writes the output directly in the same layout.

Also: output sizes, multiply-add counts, im2col memory, AlexNet's convolutional layers
(``ALEXNET_2012_CONV``), a correctness check per layer and cuda-convnet's constraints. The
timing of these implementations against ``F.conv2d`` is in ``d2lmp.bench.conv``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

__all__ = ["conv_output_size", "check_conv_shapes", "conv2d_macs", "conv2d_flops", "conv2d_min_bytes", "Im2colSize",
           "im2col_size", "conv2d_loops", "im2col_columns", "conv2d_im2col", "to_c01b", "from_c01b", "filters_to_c01b",
           "check_c01b_shapes", "conv2d_c01b", "ConvLayer", "ALEXNET_2012_CONV", "layer_inputs", "LayerCheck",
           "check_layer", "ConvnetFit", "cuda_convnet_fit"]

# ---------------------------------------------------------------------------------------
# Shapes and checks

Pair = int | Sequence[int]  # a stride, padding or kernel: one int for both axes, or a pair (rows, cols)


def _pair(value: Pair, name: str) -> tuple[int, int]:
    if isinstance(value, int) and not isinstance(value, bool):
        return value, value
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return int(value[0]), int(value[1])
    raise ValueError(f"{name} must be an int or a pair of ints, got {value!r}")


def conv_output_size(size: int, kernel: int, stride: int = 1, padding: int = 0) -> int:
    """Output length along one axis: floor((size + 2·padding − kernel) / stride) + 1."""
    if kernel > size + 2 * padding:
        raise ValueError(f"kernel {kernel} is larger than the padded input {size} + 2·{padding}")
    return (size + 2 * padding - kernel) // stride + 1


def check_conv_shapes(x_shape: Sequence[int], w_shape: Sequence[int], bias_shape: Sequence[int] | None = None,
                      stride: Pair = 1, padding: Pair = 0, groups: int = 1) -> tuple[int, int, int, int]:
    """Validate an NCHW input and OIHW (O, C/groups, kh, kw) weight; return the NCHW output shape.

    Raises ValueError naming the shapes for: wrong rank, channel mismatch, groups that do not
    divide the channels, a kernel larger than the padded input, bad stride/padding or bias.
    """
    x_shape, w_shape = tuple(x_shape), tuple(w_shape)
    if len(x_shape) != 4:
        raise ValueError(f"input must be 4-D (batch, channels, rows, cols), got shape {x_shape}")
    if len(w_shape) != 4:
        raise ValueError(f"weight must be 4-D (out_channels, in_channels/groups, kh, kw), got shape {w_shape}")
    sh, sw = _pair(stride, "stride")
    ph, pw = _pair(padding, "padding")
    if sh < 1 or sw < 1:
        raise ValueError(f"stride must be at least 1, got {stride}")
    if ph < 0 or pw < 0:
        raise ValueError(f"padding must be non-negative, got {padding}")
    if not isinstance(groups, int) or groups < 1:
        raise ValueError(f"groups must be a positive int, got {groups!r}")
    n, c, h, w = x_shape
    o, cg, kh, kw = w_shape
    if c % groups or o % groups:
        raise ValueError(f"groups={groups} must divide the input channels ({c}, input {x_shape}) "
                         f"and the output channels ({o}, weight {w_shape})")
    if cg * groups != c:
        raise ValueError(f"weight {w_shape} expects {cg}×{groups} = {cg * groups} input channels "
                         f"(in_channels/groups × groups), but input {x_shape} has {c}")
    if kh > h + 2 * ph or kw > w + 2 * pw:
        raise ValueError(f"kernel {kh}×{kw} (weight {w_shape}) is larger than the padded input "
                         f"{h + 2 * ph}×{w + 2 * pw} (input {x_shape}, padding {padding})")
    if bias_shape is not None and tuple(bias_shape) != (o,):
        raise ValueError(f"bias must have shape ({o},) for weight {w_shape}, got {tuple(bias_shape)}")
    return n, o, (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1


def conv2d_macs(x_shape: Sequence[int], w_shape: Sequence[int], stride: Pair = 1, padding: Pair = 0,
                groups: int = 1) -> int:
    """Multiply-adds of one convolution: output elements × (in_channels/groups × kh × kw)."""
    n, o, ho, wo = check_conv_shapes(x_shape, w_shape, None, stride, padding, groups)
    _, cg, kh, kw = w_shape
    return n * o * ho * wo * cg * kh * kw


def conv2d_flops(x_shape: Sequence[int], w_shape: Sequence[int], stride: Pair = 1, padding: Pair = 0,
                 groups: int = 1) -> int:
    """FLOPs = 2 × multiply-adds (one multiply and one add each); the bias add is not counted."""
    return 2 * conv2d_macs(x_shape, w_shape, stride, padding, groups)


def conv2d_min_bytes(x_shape: Sequence[int], w_shape: Sequence[int], stride: Pair = 1, padding: Pair = 0,
                     groups: int = 1, element_size: int = 4) -> int:
    """Minimum memory traffic: read the input and the weights once, write the output once."""
    out = check_conv_shapes(x_shape, w_shape, None, stride, padding, groups)
    numel: Callable[[Sequence[int]], int] = lambda s: int(torch.Size(s).numel())  # noqa: E731
    return element_size * (numel(x_shape) + numel(w_shape) + numel(out))


@dataclass
class Im2colSize:
    """The size of the matrix im2col builds, against the input it was built from."""

    rows: int  # in_channels × kh × kw (one row per weight of a filter)
    cols: int  # batch × output positions (one column per receptive field)
    input_elements: int
    element_size: int = 4

    @property
    def elements(self) -> int:
        return self.rows * self.cols

    @property
    def bytes(self) -> int:
        return self.elements * self.element_size

    @property
    def blowup(self) -> float:
        """How many times larger the column matrix is than the input it copies."""
        return self.elements / self.input_elements


def im2col_size(x_shape: Sequence[int], kernel: Pair, stride: Pair = 1, padding: Pair = 0,
                element_size: int = 4) -> Im2colSize:
    """Rows, columns and bytes of the im2col matrix for an NCHW input and a kh×kw kernel."""
    kh, kw = _pair(kernel, "kernel")
    if len(tuple(x_shape)) != 4:
        raise ValueError(f"input must be 4-D (batch, channels, rows, cols), got shape {tuple(x_shape)}")
    n, c, h, w = x_shape
    _, _, ho, wo = check_conv_shapes(x_shape, (1, c, kh, kw), None, stride, padding, 1)
    return Im2colSize(c * kh * kw, n * ho * wo, n * c * h * w, element_size)


# ---------------------------------------------------------------------------------------
# The three implementations


def conv2d_loops(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, stride: Pair = 1,
                 padding: Pair = 0) -> torch.Tensor:
    """The definition, one output value at a time (NCHW input, OIHW weight). Tiny inputs only.

    out[n, o, i, j] = b[o] + Σ_c Σ_u Σ_v x_padded[n, c, i·s + u, j·s + v] · w[o, c, u, v]
    """
    n, o, ho, wo = check_conv_shapes(x.shape, w.shape, None if b is None else b.shape, stride, padding, 1)
    sh, sw = _pair(stride, "stride")
    ph, pw = _pair(padding, "padding")
    kh, kw = w.shape[2:]
    xp = F.pad(x, (pw, pw, ph, ph))
    rows = []
    for img in range(n):
        for f in range(o):
            for i in range(ho):
                for j in range(wo):
                    patch = xp[img, :, i * sh:i * sh + kh, j * sw:j * sw + kw]
                    value = (patch * w[f]).sum()
                    rows.append(value if b is None else value + b[f])
    return torch.stack(rows).reshape(n, o, ho, wo)


def im2col_columns(x: torch.Tensor, kernel_size: Pair, stride: Pair = 1, padding: Pair = 0,
                   groups: int = 1) -> torch.Tensor:
    """im2col's copy: every receptive field of NCHW ``x`` as a column, shape (N, groups, C/groups·kh·kw, Ho·Wo).

    Rows are ordered channel-major like ``F.unfold``'s, so each group's rows are contiguous.
    """
    kh, kw = _pair(kernel_size, "kernel_size")
    (sh, sw), (ph, pw) = _pair(stride, "stride"), _pair(padding, "padding")
    n, c = x.shape[:2]
    xp = F.pad(x, (pw, pw, ph, ph)) if (ph or pw) else x
    windows = xp.unfold(2, kh, sh).unfold(3, kw, sw)  # a view (N, C, Ho, Wo, kh, kw): no copy yet
    ho, wo = windows.shape[2:4]
    return windows.permute(0, 1, 4, 5, 2, 3).reshape(n, groups, c // groups * kh * kw, ho * wo)  # the copy


def conv2d_im2col(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, stride: Pair = 1,
                  padding: Pair = 0, groups: int = 1) -> torch.Tensor:
    """im2col + GEMM: copy receptive fields into columns, then one matrix product per group.

    Same arguments, shapes and results as ``F.conv2d`` for NCHW input; autograd flows through.
    """
    n, o, ho, wo = check_conv_shapes(x.shape, w.shape, None if b is None else b.shape, stride, padding, groups)
    cols = im2col_columns(x, tuple(w.shape[2:]), stride, padding, groups)
    filters = w.reshape(groups, o // groups, cols.shape[2])
    out = torch.matmul(filters, cols)  # (G, O/G, K) @ (N, G, K, L) → (N, G, O/G, L)
    out = out.reshape(n, o, ho, wo)
    if b is not None:
        out += b.view(1, o, 1, 1)  # in place: a fresh output tensor would cost one more pass over memory
    return out


def to_c01b(x: torch.Tensor) -> torch.Tensor:
    """NCHW → c01b: (channels, rows, cols, batch), batch innermost (a contiguous copy)."""
    if x.dim() != 4:
        raise ValueError(f"expected a 4-D NCHW tensor, got shape {tuple(x.shape)}")
    return x.permute(1, 2, 3, 0).contiguous()


def from_c01b(x: torch.Tensor) -> torch.Tensor:
    """c01b (channels, rows, cols, batch) → NCHW (a contiguous copy)."""
    if x.dim() != 4:
        raise ValueError(f"expected a 4-D c01b tensor, got shape {tuple(x.shape)}")
    return x.permute(3, 0, 1, 2).contiguous()


def filters_to_c01b(w: torch.Tensor) -> torch.Tensor:
    """OIHW weights (out, in/groups, kh, kw) → cuda-convnet's (in/groups, kh, kw, out)."""
    if w.dim() != 4:
        raise ValueError(f"expected a 4-D weight (out, in, kh, kw), got shape {tuple(w.shape)}")
    return w.permute(1, 2, 3, 0).contiguous()


def check_c01b_shapes(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, stride: Pair = 1,
                      padding: Pair = 0, groups: int = 1) -> tuple[int, int]:
    """Validate c01b images (C, H, W, N) and filters (C/groups, kh, kw, O); return the output's (rows, cols).

    The same checks as ``check_conv_shapes`` (each error also names the c01b shapes), plus the rank of each tensor.
    """
    if x.dim() != 4:
        raise ValueError(f"input must be 4-D (channels, rows, cols, batch), got shape {tuple(x.shape)}")
    if w.dim() != 4:
        raise ValueError(f"filters must be 4-D (in_channels/groups, kh, kw, out_channels), got shape {tuple(w.shape)}")
    c, h, wd, n = x.shape
    cg, kh, kw, o = w.shape
    try:
        _, _, ho, wo = check_conv_shapes((n, c, h, wd), (o, cg, kh, kw), None if b is None else b.shape,
                                         stride, padding, groups)
    except ValueError as exc:
        raise ValueError(f"{exc} [c01b input {tuple(x.shape)}, filters {tuple(w.shape)}]") from None
    return ho, wo


def conv2d_c01b(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, stride: Pair = 1,
                padding: Pair = 0, groups: int = 1) -> torch.Tensor:
    """Convolution in cuda-convnet's layout: images (C, H, W, N), filters (C/groups, kh, kw, O).

    The result is (O, Ho, Wo, N), batch innermost again; ``check_c01b_shapes`` checks the shapes. The gather
    copies runs of consecutive images (the batch axis is contiguous) and one GEMM per group writes the output
    straight into the same layout, so no transposes are needed between layers.
    """
    ho, wo = check_c01b_shapes(x, w, b, stride, padding, groups)
    c, _, _, n = x.shape
    cg, kh, kw, o = w.shape
    (sh, sw), (ph, pw) = _pair(stride, "stride"), _pair(padding, "padding")
    xp = F.pad(x, (0, 0, pw, pw, ph, ph)) if (ph or pw) else x.contiguous()
    s = xp.stride()
    # View (C, kh, kw, Ho, Wo, N) of the padded images: no copy yet.
    patches = xp.as_strided((c, kh, kw, ho, wo, n), (s[0], s[1], s[2], s[1] * sh, s[2] * sw, s[3]))
    k = cg * kh * kw
    cols = patches.reshape(groups, k, ho * wo * n)  # the copy: innermost runs of n consecutive images
    filters = w.reshape(k, groups, o // groups).permute(1, 2, 0)  # (G, O/G, K)
    out = torch.bmm(filters, cols).reshape(o, ho, wo, n)
    if b is not None:
        out += b.view(o, 1, 1, 1)  # in place, as in conv2d_im2col
    return out


# ---------------------------------------------------------------------------------------
# AlexNet's convolutional layers, the check against F.conv2d, cuda-convnet's constraints


@dataclass(frozen=True)
class ConvLayer:
    """One convolution's shape: input channels and size, filters, kernel, stride, padding, groups."""

    name: str
    in_channels: int
    size: int
    out_channels: int
    kernel: int
    stride: int = 1
    padding: int = 0
    groups: int = 1

    def x_shape(self, batch: int) -> tuple[int, int, int, int]:
        return (batch, self.in_channels, self.size, self.size)

    @property
    def w_shape(self) -> tuple[int, int, int, int]:
        return (self.out_channels, self.in_channels // self.groups, self.kernel, self.kernel)

    def macs(self, batch: int) -> int:
        return conv2d_macs(self.x_shape(batch), self.w_shape, self.stride, self.padding, self.groups)

    def flops(self, batch: int) -> int:
        return 2 * self.macs(batch)

    def min_bytes(self, batch: int, element_size: int = 4) -> int:
        return conv2d_min_bytes(self.x_shape(batch), self.w_shape, self.stride, self.padding, self.groups, element_size)


# The 2012 paper's five convolutions (Krizhevsky et al. 2012, §3.5 and Fig. 2; bibliography:
# krizhevsky2012imagenet): 224×224 input with padding 2 in conv1, so conv1 gives (224 + 2·2 − 11) // 4 + 1
# = 55 rows and columns; groups=2 where a layer sees only its own GPU's maps (§3.2).
ALEXNET_2012_CONV = (
    ConvLayer("conv1", 3, 224, 96, 11, stride=4, padding=2),
    ConvLayer("conv2", 96, 27, 256, 5, padding=2, groups=2),
    ConvLayer("conv3", 256, 13, 384, 3, padding=1),
    ConvLayer("conv4", 384, 13, 384, 3, padding=1, groups=2),
    ConvLayer("conv5", 384, 13, 256, 3, padding=1, groups=2),
)


def layer_inputs(layer: ConvLayer, batch: int, device: str | torch.device = "cpu",
                 seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded random input, weights (scaled by 0.01) and bias for one layer, NCHW/OIHW, on ``device``."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(layer.x_shape(batch), generator=g).to(device)
    w = (torch.randn(layer.w_shape, generator=g) * 0.01).to(device)
    b = torch.randn(layer.out_channels, generator=g).to(device)
    return x, w, b


@dataclass(frozen=True)
class LayerCheck:
    """``check_layer``'s result: the largest |output| of ``F.conv2d`` on the layer, and the largest absolute
    difference from it of im2col and of c01b."""

    layer: str
    max_abs_ref: float
    im2col: float
    c01b: float


def check_layer(layer: ConvLayer, batch: int = 2, device: str | torch.device = "cpu") -> LayerCheck:
    """Largest absolute difference of each implementation from ``F.conv2d`` on one layer."""
    x, w, b = layer_inputs(layer, batch, device)
    s, p, g = layer.stride, layer.padding, layer.groups
    with torch.no_grad():
        ref = F.conv2d(x, w, b, stride=s, padding=p, groups=g)
        c01b = from_c01b(conv2d_c01b(to_c01b(x), filters_to_c01b(w), b, stride=s, padding=p, groups=g))
        im2col = conv2d_im2col(x, w, b, stride=s, padding=p, groups=g)
    return LayerCheck(layer.name, float(ref.abs().max()), im2col=float((im2col - ref).abs().max()),
                      c01b=float((c01b - ref).abs().max()))


@dataclass(frozen=True)
class ConvnetFit:
    """Which of cuda-convnet's constraints a layer and batch meet (``cuda_convnet_fit``), and the images each
    thread computes at that batch."""

    filters_multiple_of_16: bool
    channels_supported: bool
    stride_at_most_kernel: bool
    batch_multiple_of_128: bool
    images_per_thread: int


def cuda_convnet_fit(layer: ConvLayer, batch: int) -> ConvnetFit:
    """Which of cuda-convnet's constraints a layer and batch meet (read from cuda-convnet2's
    ``cudaconv3/src/filter_acts.cu`` and the pylearn2 wrapper's docstrings; bibliography:
    krizhevsky_cuda_convnet2, pylearn2_cuda_convnet).

    - filters a multiple of 16 per group (``assert(numFilters % (16 * numGroups) == 0)``), required;
    - input channels 1, 2, 3 or a multiple of 4 per group, required;
    - square filters and stride ≤ filter size, required;
    - batch a multiple of 128 for full speed (``imgsPerThread = numImages % 128 == 0 ? 4 : ...``); other
      batches work, slower.
    """
    cin = layer.in_channels // layer.groups
    return ConvnetFit(
        filters_multiple_of_16=layer.out_channels % (16 * layer.groups) == 0,
        channels_supported=cin in (1, 2, 3) or cin % 4 == 0,
        stride_at_most_kernel=layer.stride <= layer.kernel,
        batch_multiple_of_128=batch % 128 == 0,
        images_per_thread=4 if batch % 128 == 0 else 2 if batch % 64 == 0 else 1,
    )
