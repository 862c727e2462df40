"""Run-time settings a notebook can see and change: quick mode, seeds, Colab, threads.

Nothing here runs at import time; every setting is read when a function is called,
so a notebook that sets ``os.environ["D2LMP_QUICK"] = "1"`` sees the change at once.
"""

from __future__ import annotations

import contextlib
import os
import random
import sys
from collections.abc import Iterator
from typing import TypeVar

__all__ = ["T", "QUICK_ENV", "quick_mode", "quick_mode_set", "pick", "set_seed", "in_colab", "set_threads"]

T = TypeVar("T")

QUICK_ENV = "D2LMP_QUICK"


def quick_mode() -> bool:
    """True when ``D2LMP_QUICK`` is set to a true value ("1", "true", "yes", "on").

    Quick mode (used by CI and nbval) shrinks problem sizes and epochs; it never
    changes which code runs.
    """
    value = os.environ.get(QUICK_ENV, "").strip().lower()
    return value in {"1", "true", "yes", "on"}


@contextlib.contextmanager
def quick_mode_set(on: bool) -> Iterator[None]:
    """Within the block, quick mode is ``on``; the previous setting comes back afterwards."""
    previous = os.environ.get(QUICK_ENV)
    os.environ[QUICK_ENV] = "1" if on else "0"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(QUICK_ENV, None)
        else:
            os.environ[QUICK_ENV] = previous


def pick(full: T, quick: T) -> T:
    """Return ``quick`` in quick mode and ``full`` otherwise.

    >>> pick(full=[256, 512, 1024], quick=[64, 128])  # doctest: +SKIP
    """
    return quick if quick_mode() else full


def set_seed(seed: int = 0) -> None:
    """Seed Python's, NumPy's and PyTorch's random number generators."""
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def in_colab() -> bool:
    """True when running inside Google Colab."""
    return "google.colab" in sys.modules


def set_threads(n: int) -> int:
    """Set PyTorch's intra-op thread count to ``n`` and return the previous value."""
    import torch

    if n < 1:
        raise ValueError(f"thread count must be at least 1, got {n}")
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    return previous
