"""Training the small GPT on the offline text: AdamW for a number of steps, with a loss history.

:func:`train_gpt` draws seeded batches from the training split (``d2lmp.text``), takes ``steps`` AdamW
steps (weight decay on the matrices only, gradients clipped to norm 1, as nanoGPT does; ``karpathy_nanogpt``)
and, every ``eval_every`` steps and at the end, estimates the loss on fixed batches of both splits in
evaluation mode (no dropout). It returns an :class:`LMHistory`; a progress bar shows the run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from torch import nn

from d2lmp.gpt import lm_loss
from d2lmp.text import CharData, batches, get_batch
from d2lmp.train import choose_device

__all__ = ["LMHistory", "estimate_loss", "train_gpt"]


@dataclass(frozen=True)
class LMHistory:
    """Loss estimates at the evaluation points of a run: the step, both splits' loss (nats/token), the time."""

    steps: tuple[int, ...]
    train_loss: tuple[float, ...]
    val_loss: tuple[float, ...]
    seconds: tuple[float, ...]  # wall time since the start of training
    device: str
    tokens_per_step: int

    @property
    def final_val_loss(self) -> float:
        return self.val_loss[-1] if self.val_loss else float("nan")

    def add(self, step: int, train_loss: float, val_loss: float, seconds: float) -> LMHistory:
        """This history with one more evaluation point."""
        return replace(self, steps=(*self.steps, step), train_loss=(*self.train_loss, train_loss),
                       val_loss=(*self.val_loss, val_loss), seconds=(*self.seconds, seconds))


@torch.no_grad()
def estimate_loss(model: nn.Module, ids: torch.Tensor, batch_size: int, seq: int, n_batches: int = 4,
                  seed: int = 1234, device: str = "cpu") -> float:
    """Mean loss of ``model`` over ``n_batches`` seeded batches of ``ids`` (the same ones at every call)."""
    was_training = model.training
    model.eval()
    g = torch.Generator().manual_seed(seed)
    total = 0.0
    for _ in range(n_batches):
        x, y = get_batch(ids, batch_size, seq, g)
        total += float(lm_loss(model(x.to(device)), y.to(device)))
    model.train(was_training)
    return total / n_batches


def _optimizer(model: nn.Module, lr: float, weight_decay: float) -> torch.optim.AdamW:
    decay = [p for p in model.parameters() if p.dim() >= 2]  # matrices and embeddings, not biases or norms
    rest = [p for p in model.parameters() if p.dim() < 2]
    groups = [dict(params=decay, weight_decay=weight_decay), dict(params=rest, weight_decay=0.0)]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.99))


def _train_step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> None:
    loss = lm_loss(model(x), y)
    opt.zero_grad(set_to_none=True)
    torch.autograd.backward(loss)
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()


def train_gpt(model: nn.Module, data: CharData, steps: int, seq: int, batch_size: int = 16, lr: float = 3e-3,
              weight_decay: float = 0.1, eval_every: int | None = None, eval_batches: int = 4, seed: int = 0,
              device: str | None = None, progress: bool = True,
              on_eval: Callable[[LMHistory], None] | None = None) -> LMHistory:
    """Train ``model`` (a GPT, or its stages) on ``data`` for ``steps`` steps of ``batch_size`` sequences of ``seq``.

    Evaluates before the first step, every ``eval_every`` steps (default: 10 points in all) and after the
    last; ``on_eval`` is called with the history so far (a live plot).
    """
    from tqdm.auto import tqdm

    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    every = eval_every or max(1, steps // 10)
    device, _ = choose_device(device)
    model.to(device).train()
    opt, stream = _optimizer(model, lr, weight_decay), batches(data.train, batch_size, seq, seed)
    history = LMHistory((), (), (), (), device, batch_size * seq)
    start = time.perf_counter()
    bar = tqdm(range(steps + 1), desc="training", disable=not progress)
    for step in bar:  # step 0 only evaluates the fresh model
        if step > 0:
            x, y = next(stream)
            _train_step(model, opt, x.to(device), y.to(device))
        if step % every == 0 or step == steps:
            train_loss, val_loss = (estimate_loss(model, ids, batch_size, seq, eval_batches, device=device)
                                    for ids in (data.train, data.val))
            history = history.add(step, train_loss, val_loss, time.perf_counter() - start)
            bar.set_postfix(train=f"{train_loss:.3f}", val=f"{val_loss:.3f}")
            if on_eval is not None:
                on_eval(history)
    bar.close()
    return history
