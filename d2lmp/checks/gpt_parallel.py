"""Rank functions that prove the split GPT equals one device.

They check its tensor-parallel block (with and without sequence parallelism), the whole tensor-parallel GPT, and the
GPT trained on a data × pipeline × tensor grid.

Each runs on every rank (``rank, world`` first) and returns the largest |difference| from the one-device
computation by name, so that ``launch``, ``torchrun`` entry points and the GPU self-checks can all run them.
The one-device reference is computed on every rank from the same seed; the split version is cut from it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import cast

import torch
from torch import nn

from d2lmp.config import pick
from d2lmp.gpt import GPT, Block, GPTConfig, lm_loss, preset
from d2lmp.parallel.gpt_tp import TensorParallelGPT, sequence_parallel_gradients
from d2lmp.parallel.grid3d import sgd_step, train_3d
from d2lmp.parallel.launch import rank_device
from d2lmp.parallel.transformer_tp import SEQ_DIM, TPBlock, TPGroup, cut_like, take_shards, tp_group

__all__ = ["TOLERANCE", "MODES", "tiny_for", "check_tp_block", "check_tp_gpt", "check_gpt_tensor", "check_3d"]

TOLERANCE = 1e-5  # float32 sums in another order
MODES = (("TP", False, True), ("TP + SP", True, True), ("TP + SP, input kept gathered", True, False))


def tiny_for(world: int, **changes: object) -> GPTConfig:
    """The tiny preset with heads, hidden and sequence that split over ``world`` ranks (4 heads of 4 for 1, 2 or 4)."""
    heads = 4 if 4 % world == 0 else world
    seq = 16 if 16 % world == 0 else 4 * world
    return preset("tiny", **{"heads": heads, "hidden": 4 * heads, "seq": seq, **changes})


def _max_error(got: dict[str, torch.Tensor], want: dict[str, torch.Tensor]) -> float:
    return max(float((g.cpu() - want[k].cpu()).abs().max()) for k, g in got.items())


def _grads(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)
            for k, p in model.named_parameters()}


def check_tp_block(config: GPTConfig, tp: TPGroup, batch: int = 3, seed: int = 0) -> dict[str, float]:
    """A ``TPBlock`` against the block it is cut from: output, input gradient and every weight's gradient
    (this rank's cut of the full gradient), for a loss that weights each output by a fixed random probe."""
    dev = rank_device("auto")
    full = cast(Block, GPT(config, seed).blocks[0]).to(dev)
    g = torch.Generator().manual_seed(seed + 1)
    x, probe = (torch.randn(batch, config.seq, config.hidden, generator=g).to(dev) for _ in range(2))
    xf = x.clone().requires_grad_()
    out = full(xf)
    (out * probe).sum().backward()
    block = TPBlock(full, config, tp).to(dev)  # the causal mask buffer too
    mine, mine_probe, want_out, want_dx = x, probe, out.detach(), cast(torch.Tensor, xf.grad)
    if tp.sequence_parallel:  # this rank's chunk of the sequence in, its chunk out
        mine, mine_probe, want_out, want_dx = (t.tensor_split(tp.size, SEQ_DIM)[tp.rank]
                                               for t in (x, probe, want_out, want_dx))
    xt = mine.clone().requires_grad_()
    got = block(xt)
    (got * mine_probe).sum().backward()
    sequence_parallel_gradients(block, tp)
    return {"output": float((got.detach() - want_out).abs().max()),
            "input gradient": float((cast(torch.Tensor, xt.grad) - want_dx).abs().max()),
            "weight gradients": _max_error(_grads(block), take_shards(block, _grads(full)))}


def check_tp_gpt(config: GPTConfig, tp: TPGroup, batch: int = 3, seed: int = 0) -> dict[str, float]:
    """A ``TensorParallelGPT`` against the ``GPT`` it is cut from: mean loss, this rank's logits, every gradient."""
    dev = rank_device("auto")
    g = torch.Generator().manual_seed(seed + 2)
    idx, targets = (torch.randint(config.vocab, (batch, config.seq), generator=g).to(dev) for _ in range(2))
    full = GPT(config, seed).to(dev)
    logits = full(idx)
    loss = lm_loss(logits, targets)
    torch.autograd.backward(loss)
    model = TensorParallelGPT(GPT(config, seed), tp.group, tp.sequence_parallel, tp.regather).to(dev)
    mine = model(idx)
    mine_loss = model.head.cross_entropy(mine, targets).mean()
    torch.autograd.backward(mine_loss)
    sequence_parallel_gradients(model, tp)
    vocab = logits.detach().tensor_split(tp.size, -1)[tp.rank]
    return {"loss": abs(loss.item() - mine_loss.item()), "logits": float((mine.detach() - vocab).abs().max()),
            "gradients": _max_error(_grads(model), take_shards(model, _grads(full)))}


def check_gpt_tensor(rank: int, world: int) -> dict[str, float]:
    """Every case on this rank: the block in each mode (TP; TP + SP; TP + SP keeping the gathered input)
    without, with selective and with full recomputation, and with flash attention; the whole GPT in each
    mode, with tied and with separate embeddings."""
    config = tiny_for(world)
    errors: dict[str, float] = {}
    for mode, sp, regather in MODES:
        tp = tp_group(None, sp, regather)
        variants = [(f"recompute {r}", replace(config, recompute=r)) for r in ("none", "selective", "full")]
        variants.append(("flash attention", replace(config, flash=True)))
        for what, variant in variants:
            for name, err in check_tp_block(variant, tp).items():
                errors[f"{mode} block, {what}: {name}"] = err
        for tied in (True, False):
            for name, err in check_tp_gpt(replace(config, tied=tied), tp).items():
                errors[f"{mode} GPT, {'tied' if tied else 'separate'} embeddings: {name}"] = err
    return errors


def check_3d(rank: int, world: int, steps: int | None = None, lr: float = 0.1) -> dict[str, float]:
    """The GPT trained on a (world/4) × 2 × 2 data × pipeline × tensor grid (2 × 2 × 2 on 8 ranks), TP and TP + SP,
    against one device's SGD: every step's loss, the first step's gradients, the parameters after the last."""
    if world % 4:
        raise ValueError(f"the 3D check runs a (world/4) x 2 x 2 grid: world must be a multiple of 4, got {world}")
    steps = steps if steps is not None else pick(3, 2)
    data, config = world // 4, tiny_for(2, tied=False)
    g = torch.Generator().manual_seed(3)
    x, y = (torch.randint(config.vocab, (4 * data, config.seq), generator=g) for _ in range(2))
    reference = GPT(config, 0)
    stages = reference.sequential()
    losses: list[float] = []
    first: dict[str, torch.Tensor] = {}
    for step in range(steps):
        reference.zero_grad()
        loss = lm_loss(reference(x), y)
        torch.autograd.backward(loss)
        losses.append(loss.item())
        first = _grads(stages) if step == 0 else first
        sgd_step(reference, lr)
    final = {k: p.detach() for k, p in stages.named_parameters()}
    errors = {}
    for sp in (False, True):
        got = train_3d(rank, world, config, x, y, data, 2, 2, sp, steps, lr)
        name = f"3D {data} x 2 x 2 (data x pipeline x tensor), {'TP + SP' if sp else 'TP'}"
        errors[f"{name}: losses"] = max(abs(a - b) for a, b in zip(got.losses, losses))
        errors[f"{name}: first-step gradients"] = _max_error(got.grads, cut_like(got.cuts, first))
        errors[f"{name}: parameters after {steps} steps"] = _max_error(got.parameters, cut_like(got.cuts, final))
    return errors
