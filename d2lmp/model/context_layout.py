"""Context parallelism's layout: which chunks of the sequence each rank holds, and which score blocks it computes.

The sequence is cut into equal chunks. In the *plain* layout rank r of p holds chunk r of p; in the
*balanced* layout the sequence is cut into 2p chunks and rank r holds chunks r and 2p−1−r, one early and
one late, the layout of Llama 3's context parallelism (Dubey et al. 2024, §3.3.2). Ring attention passes
each rank's K/V chunk(s) to the right once per step, so at step s rank r holds rank (r−s) mod p's. Under a
causal mask a query chunk attends fully to earlier key chunks, to its own chunk through the triangular mask
(the "diagonal" block), and not at all to later chunks, which are skipped. ``ring_attention_schedule`` is that
schedule as data: ``parallel.context_parallel`` runs it, ``views.context_parallel`` draws it, and ``workload``
counts the score elements each rank computes, the plain layout's imbalance. Plain arithmetic, no process group;
``parallel.sequence_chunks`` cuts a tensor by this layout.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LAYOUTS", "BLOCK_KINDS", "chunks_per_rank", "chunks_of", "chunk_count", "block_kind", "Block", "RingStep",
           "ring_attention_schedule", "Workload", "workload"]

LAYOUTS = ("plain", "balanced")
BLOCK_KINDS = ("full", "diagonal", "skipped")


def chunks_per_rank(layout: str) -> int:
    """How many chunks of the sequence one rank holds: 1 in the plain layout, 2 in the balanced one."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; available: {', '.join(LAYOUTS)}")
    return 1 if layout == "plain" else 2


def chunks_of(rank: int, world: int, layout: str = "plain") -> tuple[int, ...]:
    """The chunks rank ``rank`` of ``world`` holds, in sequence order: (r,) of p, or (r, 2p−1−r) of 2p."""
    per_rank = chunks_per_rank(layout)
    if not isinstance(world, int) or world < 1 or not 0 <= rank < world:
        raise ValueError(f"need world >= 1 and 0 <= rank < world, got world={world!r}, rank={rank!r}")
    return (rank,) if per_rank == 1 else (rank, 2 * world - 1 - rank)


def block_kind(query_chunk: int, key_chunk: int, causal: bool = True) -> str:
    """"full", "diagonal" (the causal triangle inside one chunk) or "skipped" (keys entirely in the future)."""
    if not causal or key_chunk < query_chunk:
        return "full"
    return "diagonal" if key_chunk == query_chunk else "skipped"


def chunk_count(seq_len: int, world: int, layout: str) -> int:
    """How many equal chunks a sequence of ``seq_len`` tokens is cut into; ValueError when it does not divide."""
    n = world * chunks_per_rank(layout)
    if seq_len % n:
        raise ValueError(f"a sequence of {seq_len} tokens does not split into {n} equal chunks "
                         f"({chunks_per_rank(layout)} per rank on {world} ranks, layout {layout!r}): "
                         f"pad it to a multiple of {n} tokens (next: {seq_len + n - seq_len % n})")
    return n


@dataclass(frozen=True)
class Block:
    """One score block: a query chunk against a key chunk (global chunk numbers), and its kind."""

    query: int
    key: int
    kind: str


@dataclass(frozen=True)
class RingStep:
    """What one rank does at one step of the ring: whose K/V it holds, and every block of its queries × those keys."""

    step: int
    rank: int
    holder: int  # the rank whose K/V chunk(s) this rank holds at this step
    queries: tuple[int, ...]  # the chunks of this rank's queries
    keys: tuple[int, ...]  # the chunks of the K/V it holds
    blocks: tuple[Block, ...]

    def computed(self) -> list[tuple[int, int, bool]]:
        """(position among its query pieces, position among the key pieces, diagonal?) of each block not skipped."""
        return [(self.queries.index(b.query), self.keys.index(b.key), b.kind == "diagonal")
                for b in self.blocks if b.kind != "skipped"]


def ring_attention_schedule(world: int, layout: str = "plain", causal: bool = True) -> list[list[RingStep]]:
    """Ring attention's schedule: one list per step, one ``RingStep`` per rank.

    At step s rank r holds rank (r−s) mod p's K/V (each step passes them one rank to the right) and pairs
    every chunk of its queries with every chunk it holds.
    """
    steps = []
    for step in range(world):
        row = []
        for rank in range(world):
            holder = (rank - step) % world
            queries, keys = chunks_of(rank, world, layout), chunks_of(holder, world, layout)
            blocks = tuple(Block(q, k, block_kind(q, k, causal)) for q in queries for k in keys)
            row.append(RingStep(step, rank, holder, queries, keys, blocks))
        steps.append(row)
    return steps


@dataclass(frozen=True)
class Workload:
    """Score elements each rank computes for one head of one sequence, and how uneven that is.

    ``computed`` counts every element of every block not skipped (a diagonal block is computed whole, then
    masked); ``unmasked`` counts the query-key pairs the mask lets through.
    """

    world: int
    seq_len: int
    layout: str
    causal: bool
    computed: tuple[int, ...]
    unmasked: tuple[int, ...]

    @property
    def imbalance(self) -> float:
        """The busiest rank's computed elements over the mean: 1.0 is perfectly even."""
        return max(self.computed) / (sum(self.computed) / self.world)


def workload(world: int, seq_len: int, layout: str = "plain", causal: bool = True) -> Workload:
    """Count, from the schedule, the score elements each rank computes for one head (see ``Workload``)."""
    chunk = seq_len // chunk_count(seq_len, world, layout)
    size = {"full": chunk * chunk, "diagonal": chunk * chunk, "skipped": 0}
    kept = {"full": chunk * chunk, "diagonal": chunk * (chunk + 1) // 2, "skipped": 0}
    computed, unmasked = [0] * world, [0] * world
    for row in ring_attention_schedule(world, layout, causal):
        for todo in row:
            computed[todo.rank] += sum(size[b.kind] for b in todo.blocks)
            unmasked[todo.rank] += sum(kept[b.kind] for b in todo.blocks)
    return Workload(world, seq_len, layout, causal, tuple(computed), tuple(unmasked))
