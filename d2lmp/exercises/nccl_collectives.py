"""Exercises for notebook 12 (collectives): ring arithmetic, the α-β model, and collectives from send/recv.

The three code exercises (a naive all-gather, the ring's reduce-scatter, and a ring all-reduce given with
a bug to find) run the student's function on 2 and 3 real gloo ranks and compare it with
torch.distributed's own collective; each rank's messages are then checked against the algorithm's, so a
library collective and a slice fails (``_ring_code``). The α-β numbers come from the cost model's H100
preset, the one the notebook's table uses.
"""

from __future__ import annotations

import math

from d2lmp.exercises import _ring_code as R
from d2lmp.exercises import _swap_code
from d2lmp.exercises._code import bug_hunt
from d2lmp.exercises.core import Exercise, number_checker
from d2lmp.model.alpha_beta import BUS_FACTORS
from d2lmp.model.costmodel import PRESETS

__all__ = ["EXERCISES", "ring_bytes", "ring_beats_tree", "all_gather_code", "all_gather_busbw", "slow_link",
           "reduce_scatter_code", "ring_bug", "swap_code"]

RING_GIB = BUS_FACTORS["all_reduce"](8)  # bytes each rank sends for a 1 GiB all-reduce on 8 ranks, in GiB

_H100 = PRESETS["8x H100 (NVSwitch)"]  # the notebook's α-β table: NCCL's α, NVLink 4 per direction, 8 GPUs
ALPHA, BETA, N = _H100.alpha, 1 / _H100.link_bytes_per_s, _H100.devices
CROSSOVER_BYTES = (2 * (N - 1) - 2 * math.ceil(math.log2(N))) * ALPHA / (
    (2 * math.ceil(math.log2(N)) - 2 * (N - 1) / N) * BETA)  # tree time = ring time: ≈ 2.9 MB
_DECADE = 10 ** math.floor(math.log10(CROSSOVER_BYTES))  # the table's sizes are powers of ten


ring_bytes = Exercise(
    key="ring_bytes", number=1, title="The ring's bytes",
    question="Derive the ring all-reduce's bytes per rank, $2\\frac{n-1}{n}S$, from the reduce-scatter and "
             "all-gather steps in the grid. How many GiB does each rank send to all-reduce 1 GiB on 8 ranks?",
    hint_text="The buffer is cut into n chunks of S/n bytes. Count the steps of each phase and what one rank "
              "sends per step.",
    solution_text="Reduce-scatter: n − 1 steps, each rank sends one chunk of S/n bytes per step: (n − 1)S/n. "
                  "All-gather: another n − 1 steps of one chunk each: (n − 1)S/n. Together 2(n − 1)S/n, which "
                  "approaches 2S as n grows. For 1 GiB on 8 ranks: 2 × 7/8 = 1.75 GiB per rank.",
    checker=number_checker(RING_GIB, "GiB", rel_tol=0.01, near_misses=[
        (RING_GIB / 2, "that is one phase only: the reduce-scatter is followed by an all-gather of the same size"),
        (2.0, "2S is the limit for many ranks; with 8 ranks each phase sends 7 chunks of S/8"),
        (14.0, "each step sends one chunk, S/n, not the whole buffer")]),
    reference=RING_GIB, wrong=[(0.875, "one phase only"), (2.0, "limit for many ranks")],
    how_to_answer="Pass the GiB each rank sends.")


ring_beats_tree = Exercise(
    key="ring_beats_tree", number=2, title="Ring against tree",
    question=f"In the α-β table (α = {ALPHA * 1e6:g} µs, {1 / BETA / 1e9:g} GB/s, {N} ranks), find the message "
             "size at which the ring overtakes the tree, analytically and with the widget. Answer in bytes.",
    hint_text="Tree: 2⌈log₂ n⌉(α + Sβ); ring: 2(n − 1)(α + Sβ/n). Set them equal and solve for S.",
    solution_text=f"6(α + Sβ) = 14α + 1.75Sβ ⇒ 4.25 Sβ = 8α ⇒ S = 8α/(4.25β) = 8 × {ALPHA * 1e6:g} µs × "
                  f"{1 / BETA / 1e9:g} GB/s / 4.25 ≈ {CROSSOVER_BYTES:,.0f} bytes (about "
                  f"{CROSSOVER_BYTES / 1e6:.2g} MB). Below it the tree's 6 steps beat the ring's 14 latencies; "
                  f"above it the ring's smaller messages win, as the table shows between {_DECADE:,.0f} and "
                  f"{10 * _DECADE:,.0f} bytes.",
    checker=number_checker(CROSSOVER_BYTES, "bytes", rel_tol=0.02, near_misses=[
        (11 * ALPHA / (1.25 * BETA), "the tree has 2⌈log₂ n⌉ = 6 steps (up and down), not 3"),
        (8 * ALPHA / (6 * BETA), "the ring's messages are S/n bytes: its bandwidth term is 14 · S/8 · β")]),
    reference=CROSSOVER_BYTES, wrong=[(11 * ALPHA / (1.25 * BETA), "6 steps")],
    how_to_answer="Pass the message size in bytes.")


all_gather_code = Exercise(
    function="my_all_gather(tensor)",
    key="all_gather_code", number=3, title="An all-gather from messages",
    question="Implement a naive all-gather from point-to-point messages (every rank sends its tensor to every "
             "other rank) in a notebook-defined function, `my_all_gather(tensor)`, returning every rank's tensor "
             "stacked in rank order, shape (world, *tensor.shape), as `torch.stack` of `dist.all_gather`'s list. "
             "It is checked against `dist.all_gather` on 2 and 3 gloo ranks with tensors of odd sizes, and each "
             "rank's messages are counted: one to every other rank, no library collective.",
    hint_text="Get `dist.get_rank()` and `dist.get_world_size()` inside the function. Post all sends and receives "
              "without blocking (`dist.isend`, `dist.irecv` into row `peer` of the result), then wait for all "
              "of them: blocking sends in the same order on every rank can deadlock.",
    solution_text="Allocate out = torch.empty((world, *shape)), copy the own tensor into out[rank], post "
                  "dist.isend(tensor, peer) and dist.irecv(out[peer], peer) for every other peer, then wait on "
                  "all requests. Each rank sends (n − 1) × S and receives as much: the same bytes as a ring "
                  "all-gather, but in n − 1 messages at once per rank instead of n − 1 steps, fine for small n "
                  "and a full-bisection network.",
    checker=R.gather_checker, reference=R.my_all_gather, wrong=R.GATHER_WRONG)


all_gather_busbw = Exercise(
    key="all_gather_busbw", number=4, title="All-gather's bus bandwidth",
    question="Measure gloo's `all_gather` with `C.measure_collective(\"all_gather\", \"torch\", ...)` and compare "
             "its busbw with all-reduce's. Why should they be close?",
    hint_text="Run both inside one `launch`ed worker at the same sizes (they must be called on every rank). "
              "busbw multiplies algbw by (n − 1)/n for all-gather and 2(n − 1)/n for all-reduce: what does each "
              "factor count?",
    solution_text="busbw counts the bytes each rank must move per second in the best algorithm: an all-reduce "
                  "moves 2(n − 1)/n × S (reduce-scatter + all-gather), an all-gather (n − 1)/n × S. Both are then "
                  "limited by the same link (here loopback TCP and memory copies), so their busbw should be "
                  "close at large sizes; all-reduce is often a little lower because it also adds numbers, and at "
                  "small sizes latency dominates both.")


slow_link = Exercise(
    key="slow_link", number=5, title="One slow link",
    question="A ring over 8 GPUs where one link is four times slower than the others: which term of the model "
             "changes, and by how much? Answer with the factor by which the bandwidth term grows.",
    hint_text="In every step of a ring all ranks send at once and the next step needs the previous one's data: "
              "the step lasts as long as its slowest transfer.",
    solution_text="The bandwidth term, 2(n − 1)·S/n·β, grows fourfold: each of the 14 steps waits for the chunk "
                  "on the slow link, so β becomes 4β for the whole ring (the α term is unchanged). Averaging the "
                  "links (1 + 3/8 = 1.375×) would be wrong, because the ring is a pipeline paced by its slowest "
                  "stage. NCCL mitigates this by building rings that avoid slow links or by using several "
                  "rings/trees.",
    checker=number_checker(4.0, "×", rel_tol=0.01, near_misses=[
        (1.375, "averaging over the links: every ring step waits for its slowest transfer, so all 14 steps run at "
                "the slow link's speed"),
        (1.0, "the bandwidth term changes: the slow link carries a chunk in every step")]),
    reference=4.0, wrong=[(1.375, "averaging over the links")],
    how_to_answer="Pass the factor.")


reduce_scatter_code = Exercise(
    function="my_reduce_scatter(tensor)",
    key="reduce_scatter_code", number=6, title="The ring's first half",
    question="Build the ring's first half yourself: `my_reduce_scatter(tensor)` from `dist.isend`/`dist.irecv` "
             "(or `send`/`recv`), returning this rank's chunk of the sum over ranks, "
             "`torch.tensor_split(total.flatten(), world)[rank]`. Use a ring: n − 1 steps, in each a rank sends "
             "one chunk to its right neighbour and adds the chunk received from its left one. It is checked "
             "against torch's sum (all-reduce, cut like a reduce-scatter) on 2 and 3 gloo ranks, with sizes whose "
             "chunks are unequal, and each rank's messages are counted: n − 1 chunks, to the right neighbour "
             "only, and no library collective.",
    hint_text="In step s (0 … n−2), rank r sends chunk (r − s − 1) mod n and receives, into a fresh buffer of the "
              "same size, chunk (r − s − 2) mod n, which it adds to its own copy; after the last step chunk r is "
              "complete. Post the send and the receive together (isend, irecv, then wait on both).",
    solution_text="Cut the flattened tensor with torch.tensor_split into n chunks (unequal when n does not divide "
                  "the size). For s in 0 … n−2: isend chunk (r − s − 1) mod n to r + 1, irecv a buffer shaped like "
                  "chunk (r − s − 2) mod n from r − 1, wait, and add it to that chunk. The chunk a rank receives "
                  "is the one its left neighbour sent, so the sizes always match; each partial sum travels n − 1 "
                  "hops and collects one contribution per hop, ending complete at rank r. Each rank sends "
                  "(n − 1)·S/n bytes.",
    checker=R.scatter_checker, reference=R.my_reduce_scatter, wrong=R.SCATTER_WRONG)


ring_bug = Exercise(
    key="ring_bug", number=7, title="Find the bug: a ring all-reduce", function="my_ring_all_reduce(tensor)",
    imports="import torch\nimport torch.distributed as dist",
    question="The function below is a whole ring all-reduce from `dist.isend`/`dist.irecv`: a reduce-scatter, then "
             "an all-gather, n − 1 steps each. It runs without an error and returns numbers of the right size and "
             "about the right magnitude, but it has a bug. Find it the way this notebook checks its own "
             "collectives: in a `launch`ed worker, compare its result with `dist.all_reduce`'s with `torch.equal`, "
             "on 2 and 3 ranks and on a tensor whose values tell the ranks apart; look at which chunks differ and "
             "what they hold. Fix it in the cell and run the check (2 and 3 gloo ranks, unequal chunks, and the "
             "messages of a ring).",
    hint_text="Return the chunks right after the reduce-scatter, before the all-gather, and compare them with the "
              "sum: which chunk is complete on rank r? Then ask which chunk the first step of the all-gather "
              "sends.",
    solution_text="The all-gather starts from the wrong chunk: it uses the reduce-scatter's index, "
                  "rank − step − 1, so rank r first sends chunk r − 1, which holds only a partial sum, and its "
                  "complete chunk r is overwritten by a partial one. After the reduce-scatter rank r holds the "
                  "complete chunk r; the all-gather must send rank − step (no lag), so that each step passes on "
                  "the chunk completed or received in the step before. Each rank then sends 2(n − 1) chunks, every "
                  "one to its right neighbour.",
    checker=bug_hunt(R.given_ring_all_reduce, R.all_reduce_checker,
                     "Compare it with dist.all_reduce on 2 and 3 ranks, chunk by chunk, as the notebook's "
                     "check_collectives does."),
    reference=R.my_ring_all_reduce, given=R.given_ring_all_reduce,
    wrong=[(R.given_ring_all_reduce, "bug included"), *R.ALL_REDUCE_WRONG])


swap_code = Exercise(
    key="swap_code", number=8, title="Swap without a deadlock", function="my_swap(tensor)",
    imports="import torch\nimport torch.distributed as dist",
    question="`send_then_receive` in this notebook deadlocks: both ranks block in `dist.send`, each waiting for a "
             "receive the other never reaches. Write `my_swap(tensor)` that, run on each of two ranks, returns "
             "the other rank's `tensor` (same shape) and finishes. It is checked on 2 gloo ranks for the result "
             "and for the messages: each rank sends its tensor once to the other and receives once, with "
             "point-to-point calls only (no collective).",
    hint_text="Post both messages before waiting for either: `dist.isend` and `dist.irecv` return a request at "
              "once, and `wait()` on both follows. (Breaking the symmetry also works: rank 0 sends first while "
              "rank 1 receives first.)",
    solution_text="peer = 1 − rank; theirs = torch.empty_like(tensor); requests = [dist.isend(tensor, peer), "
                  "dist.irecv(theirs, peer)]; wait on both; return theirs. Both messages are posted before either "
                  "rank waits, so each rank's send finds its receive posted. Ordering by rank (rank 0: send, then "
                  "recv; rank 1: recv, then send) is correct too but runs the two messages one after the other; "
                  "posting everything first is what the ring does under gloo (ring_messages.ReceivesUpFront).",
    checker=_swap_code.swap_checker, reference=_swap_code.my_swap, wrong=_swap_code.SWAP_WRONG)


EXERCISES = [ring_bytes, ring_beats_tree, all_gather_code, all_gather_busbw, slow_link, reduce_scatter_code, ring_bug,
             swap_code]
