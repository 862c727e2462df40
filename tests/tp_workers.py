"""Workers comparing tensor-parallel layers with the unsplit layer on every rank."""

import torch
from torch import nn

from d2lmp.parallel import tensor_parallel as TP
from d2lmp.parallel.p2p_log import MessageLog


def _compare(full, split, x, slices):
    """Forward and backward through both; returns max errors of output, input grad and weight-shard grads."""
    probe = torch.randn(full(x).shape, generator=torch.Generator().manual_seed(7))
    xf = x.clone().requires_grad_(True)
    (full(xf) * probe).sum().backward()
    xs = x.clone().requires_grad_(True)
    with MessageLog() as log:
        out = split(xs)
        (out * probe).sum().backward()
    errors = {"output": float((out - full(x)).abs().max()), "input_grad": float((xs.grad - xf.grad).abs().max())}
    for name, (param, reference) in slices(full, split).items():
        errors[name] = float((param.grad - reference).abs().max())
    return errors, [(c.op, c.bytes, c.label) for c in log.calls]


def linear_layers(rank, world):
    torch.manual_seed(0)
    x = torch.randn(5, 8)
    full = nn.Linear(8, 12)
    r, k = rank, 12 // world
    col = TP.ColumnParallelLinear(full, gather_output=True)
    col_err, col_calls = _compare(full, col, x, lambda f, s: {
        "weight": (s.weight, f.weight.grad[r * k:(r + 1) * k]), "bias": (s.bias, f.bias.grad[r * k:(r + 1) * k])})
    full.zero_grad()
    row = TP.RowParallelLinear(full, input_is_parallel=False)
    ki = 8 // world
    row_err, row_calls = _compare(full, row, x, lambda f, s: {
        "weight": (s.weight, f.weight.grad[:, r * ki:(r + 1) * ki]), "bias": (s.bias, f.bias.grad)})
    torch.manual_seed(1)
    mlp = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
    par = TP.parallel_mlp(mlp)
    k1 = 16 // world
    mlp_err, mlp_calls = _compare(mlp, par, x, lambda f, s: {
        "fc1.weight": (s[0].weight, f[0].weight.grad[r * k1:(r + 1) * k1]),
        "fc2.weight": (s[2].weight, f[2].weight.grad[:, r * k1:(r + 1) * k1])})
    return dict(column=(col_err, col_calls), row=(row_err, row_calls), mlp=(mlp_err, mlp_calls))


def conv_layers(rank, world):
    torch.manual_seed(0)
    x = torch.randn(2, 8, 9, 9)
    full = nn.Conv2d(8, 12, 3, stride=2, padding=1)
    r, k, ki = rank, 12 // world, 8 // world
    out_split = TP.ChannelParallelConv2d(full)
    out_err, out_calls = _compare(full, out_split, x, lambda f, s: {
        "weight": (s.weight, f.weight.grad[r * k:(r + 1) * k]), "bias": (s.bias, f.bias.grad[r * k:(r + 1) * k])})
    full.zero_grad()
    in_split = TP.InputChannelParallelConv2d(full, input_is_parallel=False)
    in_err, in_calls = _compare(full, in_split, x, lambda f, s: {
        "weight": (s.weight, f.weight.grad[:, r * ki:(r + 1) * ki]), "bias": (s.bias, f.bias.grad)})
    return dict(out_channels=(out_err, out_calls), in_channels=(in_err, in_calls))


def indivisible(rank, world):
    TP.ColumnParallelLinear(nn.Linear(4, 5))
