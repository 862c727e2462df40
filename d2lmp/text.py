"""Offline text for a character-level language model: a corpus that ships with Python, a tokenizer, batches.

The corpus is the help text of Python's own documentation topics (``pydoc_data.topics``, what ``help("if")``
prints), which every CPython installation carries: about half a megabyte of English, nothing to download.
Its few typographic characters are written in ASCII, so the alphabet is fixed at 96 characters (newline and
the printable ASCII range) whatever the Python version. The first 90 % is the training split, the rest the
validation split; batches of ``(input, target)`` sequences, the target shifted by one character, are drawn
at random positions by a seeded generator, so a seed always gives the same batches.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch

__all__ = ["ALPHABET", "corpus_text", "CharTokenizer", "CharData", "char_data", "get_batch", "batches",
           "unigram_cross_entropy"]

ALPHABET = "\n" + "".join(chr(c) for c in range(32, 127))  # 96 characters
_ASCII = str.maketrans({"\t": "    ", "–": "-", "—": "--", "‘": "'", "’": "'", "“": '"', "”": '"', "…": "...",
                        "ß": "ss", "°": " degrees", "\r": ""})


@functools.lru_cache(maxsize=1)
def corpus_text() -> str:
    """Python's documentation topics, sorted by name, in the 96-character alphabet (other characters dropped)."""
    try:
        from pydoc_data.topics import topics
        parts = [topics[name] for name in sorted(topics)]
    except ImportError:  # a Python built without its documentation topics: the built-ins' docstrings instead
        import builtins
        import inspect
        parts = [inspect.getdoc(getattr(builtins, name)) or "" for name in sorted(dir(builtins))]
    text = "\n\n".join(parts).translate(_ASCII)
    keep = set(ALPHABET)
    return "".join(c for c in text if c in keep)


@dataclass(frozen=True)
class CharTokenizer:
    """One token per character of ``alphabet``: ``encode`` text to ids, ``decode`` ids to text."""

    alphabet: str = ALPHABET

    @property
    def vocab_size(self) -> int:
        return len(self.alphabet)

    def encode(self, text: str) -> torch.Tensor:
        index = {c: i for i, c in enumerate(self.alphabet)}
        unknown = set(text) - set(index)
        if unknown:
            raise ValueError(f"characters outside the alphabet: {''.join(sorted(unknown))!r}")
        return torch.tensor([index[c] for c in text], dtype=torch.long)

    def decode(self, ids: torch.Tensor | list[int]) -> str:
        return "".join(self.alphabet[int(i)] for i in ids)


@dataclass(frozen=True)
class CharData:
    """A corpus as token ids, split into training and validation."""

    train: torch.Tensor
    val: torch.Tensor
    tokenizer: CharTokenizer

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size


def char_data(val_fraction: float = 0.1, text: str | None = None) -> CharData:
    """``text`` (default: :func:`corpus_text`) encoded; the last ``val_fraction`` of it is the validation split."""
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must be between 0 and 1, got {val_fraction!r}")
    tokenizer = CharTokenizer()
    ids = tokenizer.encode(corpus_text() if text is None else text)
    cut = int(len(ids) * (1 - val_fraction))
    return CharData(train=ids[:cut], val=ids[cut:], tokenizer=tokenizer)


def get_batch(ids: torch.Tensor, batch_size: int, seq: int,
              generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch_size`` windows of ``seq`` ids at random starts, and the same windows one id later (the targets)."""
    if len(ids) <= seq:
        raise ValueError(f"a split of {len(ids)} tokens has no window of {seq} + 1 tokens")
    starts = torch.randint(len(ids) - seq, (batch_size,), generator=generator)
    x = torch.stack([ids[i:i + seq] for i in starts.tolist()])
    y = torch.stack([ids[i + 1:i + 1 + seq] for i in starts.tolist()])
    return x, y


def batches(ids: torch.Tensor, batch_size: int, seq: int, seed: int = 0) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """An endless stream of :func:`get_batch` batches; the same ``seed`` gives the same stream."""
    g = torch.Generator().manual_seed(seed)
    while True:
        yield get_batch(ids, batch_size, seq, g)


def unigram_cross_entropy(train: torch.Tensor, val: torch.Tensor, vocab: int) -> float:
    """Nats per token on ``val`` of the best context-free guess: character frequencies counted on ``train``.

    Add-one smoothing gives a character never seen in training a small probability. A language model
    that beats this number has learned something from the preceding characters.
    """
    counts = torch.bincount(train, minlength=vocab).double() + 1.0
    logp = torch.log(counts / counts.sum())
    return -float(logp[val].mean()) if len(val) else math.nan
