"""A sequence tensor cut into each rank's chunks for context parallelism, and put back together.

Which chunks a rank holds is the layout (``d2lmp.model.context_layout``: plain, or balanced as in Llama 3);
``split_sequence`` gives every rank its part of the whole sequence, ``gather_sequence`` is its inverse.
"""

from __future__ import annotations

import torch

from d2lmp.model.context_layout import chunk_count, chunks_of, chunks_per_rank

__all__ = ["split_sequence", "gather_sequence"]


def split_sequence(x: torch.Tensor, world: int, layout: str = "plain", dim: int = 2) -> list[torch.Tensor]:
    """Every rank's part of the whole sequence ``x`` (along ``dim``), in rank order: its chunks, concatenated."""
    pieces = torch.chunk(x, chunk_count(x.shape[dim], world, layout), dim=dim)
    return [torch.cat([pieces[c] for c in chunks_of(r, world, layout)], dim=dim) for r in range(world)]


def gather_sequence(parts: list[torch.Tensor], layout: str = "plain", dim: int = 2) -> torch.Tensor:
    """The whole sequence back from every rank's part (in rank order): the inverse of ``split_sequence``."""
    world, per_rank = len(parts), chunks_per_rank(layout)
    pieces: list[torch.Tensor | None] = [None] * (world * per_rank)
    for rank, part in enumerate(parts):
        for chunk, piece in zip(chunks_of(rank, world, layout), torch.chunk(part, per_rank, dim=dim)):
            pieces[chunk] = piece
    return torch.cat([p for p in pieces if p is not None], dim=dim)
