"""The linear learning-rate scaling rule with gradual warm-up (Goyal et al. 2017), as a schedule you can print.

When data parallelism multiplies the global batch by k (k times the ranks, or k times the examples per rank), one
step averages k times more examples, and a run of fixed epochs takes k times fewer steps. The linear scaling rule
(bibliography: goyal2017accurate, §2.1) multiplies the learning rate by k to make up for it: η̂ = k·η, where η is
the learning rate that works at the base batch. Early in training the weights change fast and k·η can be too
much, so the rule comes with a gradual warm-up (§2.2): start at η and add the same amount every step until k·η
is reached after the warm-up steps, then stay there (a batch below the base scales η down, with no warm-up).
``LRSchedule`` holds one such schedule; ``lr(step)`` is the learning rate of a step, and with ``scaled=False``
every step uses η, the rule switched off. Plain arithmetic: no torch, no process group.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LRSchedule", "linear_scaling", "warmup_steps_for"]


@dataclass(frozen=True)
class LRSchedule:
    """The learning rate of every step: η at ``base_batch``; k·η at ``global_batch`` = k·``base_batch`` when
    ``scaled``, reached by a linear warm-up from η over ``warmup_steps`` steps."""

    base_lr: float
    base_batch: int
    global_batch: int
    warmup_steps: int = 0
    scaled: bool = True

    @property
    def k(self) -> float:
        """How many times the base batch the global batch is."""
        return self.global_batch / self.base_batch

    @property
    def peak_lr(self) -> float:
        """The learning rate after the warm-up: k·η with the rule, η without it."""
        return self.base_lr * self.k if self.scaled else self.base_lr

    def lr(self, step: int) -> float:
        """The learning rate of step ``step`` (counted from 0): η + (peak − η)·step / warm-up steps, then the peak.
        A schedule whose peak is not above η (the rule off, or a global batch below the base) has no warm-up."""
        if step < 0:
            raise ValueError(f"step must be >= 0, got {step}")
        if step >= self.warmup_steps or self.peak_lr <= self.base_lr:
            return self.peak_lr
        return self.base_lr + (self.peak_lr - self.base_lr) * step / self.warmup_steps

    def lrs(self, steps: int) -> tuple[float, ...]:
        """The learning rates of the first ``steps`` steps."""
        return tuple(self.lr(t) for t in range(steps))


def linear_scaling(base_lr: float, base_batch: int, global_batch: int, warmup_steps: int = 0,
                   scaled: bool = True) -> LRSchedule:
    """The schedule for ``global_batch``, given the learning rate ``base_lr`` that suits ``base_batch``. A schedule
    with nothing to ramp up to (``scaled=False``, or a global batch not above the base) gets no warm-up steps."""
    if not base_lr > 0:
        raise ValueError(f"base_lr must be positive, got {base_lr}")
    if base_batch < 1 or global_batch < 1:
        raise ValueError(f"batch sizes must be positive, got base_batch={base_batch}, global_batch={global_batch}")
    if warmup_steps < 0:
        raise ValueError(f"warmup_steps must be >= 0, got {warmup_steps}")
    ramp = scaled and global_batch > base_batch
    return LRSchedule(base_lr, base_batch, global_batch, warmup_steps if ramp else 0, scaled)


def warmup_steps_for(epochs: float, steps_per_epoch: int) -> int:
    """Warm-up steps for a warm-up of ``epochs`` epochs (a fraction allowed), rounded to whole steps."""
    if epochs < 0 or steps_per_epoch < 1:
        raise ValueError(f"need epochs >= 0 and steps_per_epoch >= 1, got {epochs} and {steps_per_epoch}")
    return round(epochs * steps_per_epoch)
