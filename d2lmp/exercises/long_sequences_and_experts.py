"""Exercises for notebook 18 (long sequences and many experts): the online softmax, the ring, the all-to-all.

Five code exercises (``_long_sequences_code``): the merge of two partial attentions on one process, and four
functions that run on 2, 3 and 4 real gloo ranks, where each rank's messages are checked as well as its result:
one ring step of K/V passing, causal ring attention in the plain layout, the balanced layout's ring given with a
seeded bug in its causal mask (to find with the notebook's own equality check, and fix), and the all-to-all
from send/recv. The capacity exercise is ``moe.expert_capacity`` on given loads; the last is an open question
about the communication roofline.
"""

from __future__ import annotations

import math
from typing import Any

from d2lmp.exercises import _long_sequences_code as code
from d2lmp.exercises._code import DIST_IMPORT, bug_hunt
from d2lmp.exercises.core import Exercise, Verdict
from d2lmp.moe import expert_capacity

__all__ = ["EXERCISES", "online_merge", "pass_kv", "ring_forward_code", "balanced_bug", "capacity_drops",
           "all_to_all_code", "top2_roofline"]

RING_IMPORTS = ("import torch\nimport torch.distributed as dist\n\n"
                "from d2lmp.parallel.attention_blocks import attention_block, merge")


# --------------------------------------------------------------------------------------------
# Capacity and dropped tokens

TOKENS, EXPERTS, TOP_K, FACTOR = 100, 8, 2, 1.25  # the question's layer and batch
ROUTED = (41, 18, 30, 25, 36, 12, 22, 16)  # assignments the router sent each expert


def _capacity_answer(capacity: int) -> tuple[int, int]:
    return capacity, sum(max(0, r - capacity) for r in ROUTED)


CAPACITY = _capacity_answer(expert_capacity(TOKENS, EXPERTS, TOP_K, FACTOR))  # (32, 13)
_FLOORED = _capacity_answer(math.floor(FACTOR * TOP_K * TOKENS / EXPERTS))
_NO_TOP_K = _capacity_answer(expert_capacity(TOKENS, EXPERTS, 1, FACTOR))
_NO_FACTOR = _capacity_answer(expert_capacity(TOKENS, EXPERTS, TOP_K, 1.0))


def _check_capacity(answer: Any) -> Verdict:
    try:
        capacity, dropped = (int(a) for a in answer)
    except (TypeError, ValueError):
        return Verdict(False, f"answer with a pair of whole numbers (capacity, dropped); got {answer!r}.")
    if (capacity, dropped) == CAPACITY:
        return Verdict(True, f"capacity ⌈1.25 × 2 × 100 / 8⌉ = ⌈31.25⌉ = {CAPACITY[0]}; experts 0 and 4 are over it "
                             f"by 9 and 4: {CAPACITY[1]} of the 200 assignments are dropped. The tokens they belong to "
                             "still reach the output through the residual (and, under top-2, through their other "
                             "expert, if that one kept them).")
    if capacity == _FLOORED[0]:
        return Verdict(False, f"capacity {capacity}: 31.25 rounded down; the rule rounds up, ⌈31.25⌉, so that no "
                              "expert gets less room than the factor asks for.")
    if capacity == _NO_TOP_K[0]:
        return Verdict(False, f"capacity {capacity} counts each token once; under top-2 each token makes two "
                              "assignments, so the even share is 2 × 100 / 8.")
    if capacity == _NO_FACTOR[0]:
        return Verdict(False, f"capacity {capacity} is the even share; the capacity factor 1.25 gives every expert "
                              "room for 25 % more.")
    if capacity == CAPACITY[0]:
        return Verdict(False, f"the capacity is right; {dropped} dropped is not: add, over the experts, what each "
                              "holds beyond the capacity (0 where it is under).")
    return Verdict(False, f"capacity {capacity} is not ⌈capacity factor × top-k × tokens / experts⌉.")


# --------------------------------------------------------------------------------------------

online_merge = Exercise(
    key="online_merge", number=1, title="The online-softmax merge", function="my_merge(a, b)",
    question="Write the merge yourself: `my_merge(a, b)` takes two partial attentions over disjoint sets of "
             "keys, each a pair `(output, lse)` as `AB.attention_block` returns it (output [..., queries, head "
             "dim], lse [..., queries]), and returns the pair over both sets of keys; `a` is None before anything "
             "is merged. It is checked against softmax attention over all the keys, on blocks of unequal sizes "
             "and on scores in the hundreds, where exp(lse) overflows float32.",
    hint_text="The merged lse is log(exp(lse_a) + exp(lse_b)): `torch.logaddexp`. Each output is its keys' "
              "softmax-weighted values; weigh it by its block's share of the whole exp-sum, exp(lse_a − lse), "
              "and add.",
    solution_text="lse = torch.logaddexp(lse_a, lse_b); output = out_a · exp(lse_a − lse) + out_b · exp(lse_b − "
                  "lse), the weights broadcast over the head dimension. Both exponents are ≤ 0, so nothing "
                  "overflows; this is the rule FlashAttention applies tile by tile and ring attention step by "
                  "step, and it is exact: merging in any order or grouping gives the same result.",
    checker=code.merge_checker, reference=code.my_merge, wrong=code.WRONG["merge"])


pass_kv = Exercise(
    key="pass_kv", number=2, title="One step of the ring", function="my_pass_right(kv)", imports=DIST_IMPORT,
    question="Write one step of the ring: `my_pass_right(kv)` sends the tensor `kv` (this rank's K and V, "
             "stacked) to rank + 1 and returns what rank − 1 sent here, the ring wrapping round. The check calls "
             "it p − 1 times on 2, 3 and 4 gloo ranks and looks at the messages: after s steps rank r must hold "
             "rank r − s's chunk, and each rank must have sent p − 1 messages of the chunk's size, only to its "
             "right neighbour, with no collective.",
    hint_text="Post the receive and the send together, `dist.irecv(incoming, (rank - 1) % world)` and "
              "`dist.isend(kv, (rank + 1) % world)`, then wait for both: a blocking send on every rank at "
              "once waits for a receive that nobody has posted yet.",
    solution_text="incoming = torch.empty_like(kv); post dist.irecv(incoming, left) and dist.isend(kv, right) and "
                  "wait for both; return incoming. Posting both before waiting is what lets every rank send at "
                  "the same time; ring_forward posts them before it computes, so the next chunk travels while "
                  "this one is used.",
    checker=code.pass_checker, reference=code.my_pass_right, wrong=code.WRONG["pass"])


ring_forward_code = Exercise(
    key="ring_forward_code", number=3, title="Causal ring attention", function="my_ring_forward(q, k, v)",
    imports=f"{DIST_IMPORT}\n\nfrom d2lmp.parallel.attention_blocks import attention_block, merge  # noqa: F401",
    question="Write causal ring attention's forward in the plain layout: `my_ring_forward(q, k, v)`, where rank r "
             "holds chunk r of the sequence's queries, keys and values ([batch, heads, tokens, head dim]), "
             "returns its rows of causal attention over the whole sequence. Use `attention_block`, `merge` (or "
             "your own) and `isend`/`irecv`. It runs on 2, 3 and 4 gloo ranks; each rank must send its K/V "
             "p − 1 times to the right (as one message a step, or K and V apart) and call no collective.",
    hint_text="At step s the rank holds the keys of chunk (rank − s) mod p. Chunks before its own are fully "
              "visible, its own needs the mask (`diagonal=True`), and later ones are entirely in the future: "
              "skip them, but keep passing them on.",
    solution_text="kv = torch.stack([k, v]); for each step s: holder = (rank − s) mod p; if holder ≤ rank, merge "
                  "attention_block(q, K, V, diagonal=(holder == rank)) into the running result; then, except "
                  "after the last step, pass kv to the right. Return the merged output. Rank p − 1 computes p "
                  "blocks and rank 0 one: the plain layout's imbalance.",
    checker=code.ring_checker, reference=code.my_ring_forward, wrong=code.WRONG["ring"])


balanced_bug = Exercise(
    key="balanced_bug", number=4, title="Find the bug: the balanced layout's mask",
    function="my_balanced_ring_forward(q, k, v)", imports=RING_IMPORTS,
    question="The function below is causal ring attention's forward in the balanced layout, where rank r holds "
             "chunks r and 2p − 1 − r of q, k and v (as `CL.split_sequence(x, world, \"balanced\")` cuts them). "
             "It runs, passes its chunks round the ring as it should, and returns rows of the right shape, but "
             "it has one bug in where it applies the causal mask. Find it the way this notebook checks its "
             "ring: on 2 and 4 `launch`ed ranks, compare each rank's rows with `F.scaled_dot_product_attention` "
             "on the whole sequence, split the same way, and look at which rows differ. Fix it in the cell and "
             "run the check (2, 3 and 4 gloo ranks, and the messages of a ring).",
    hint_text="Look at the picture of the balanced ring, step 0: which blocks does a rank compute on its own "
              "K/V chunks, and which of them is a chunk's queries against its own keys? Is that what the code "
              "masks?",
    solution_text="It masks every block it computes at step 0 (diagonal=step == 0), as if a rank's own K/V were "
                  "always the diagonal block. That holds in the plain layout, whose step 0 has only that block; "
                  "in the balanced layout step 0 also holds the late query chunk against the early key chunk, a "
                  "full block, which the bug cuts to a triangle, so the rows of every rank's second chunk are "
                  "wrong. The mask belongs to the blocks where key_chunk == query_chunk.",
    checker=bug_hunt(code.given_balanced_ring_forward, code.balanced_checker,
                     "Compare its rows with F.scaled_dot_product_attention on the whole sequence, split the same "
                     "way, as the notebook's ring_vs_one_device does, and see which query chunk is off."),
    reference=code.my_balanced_ring_forward, given=code.given_balanced_ring_forward,
    wrong=code.WRONG["balanced"])


capacity_drops = Exercise(
    key="capacity_drops", number=5, title="Capacity and dropped tokens",
    question=f"A mixture-of-experts layer with {EXPERTS} experts routes {TOKENS} tokens top-{TOP_K} with a "
             f"capacity factor of {FACTOR:g}, and the router sends the experts {ROUTED} assignments. What is "
             "each expert's capacity, and how many assignments are dropped?",
    hint_text="capacity = ⌈capacity factor × top-k × tokens / experts⌉ (`moe.expert_capacity`); an expert keeps "
              "at most that many and drops the rest. Answer with the pair `(capacity, dropped)`.",
    solution_text="⌈1.25 × 2 × 100 / 8⌉ = ⌈31.25⌉ = 32. Experts 0 (41) and 4 (36) are over it, by 9 and 4: 13 "
                  "assignments are dropped, although the experts together have room for 8 × 32 = 256: capacity "
                  "cuts each queue on its own, which is why Switch adds a loss that evens the load.",
    checker=_check_capacity, reference=CAPACITY,
    wrong=[(_FLOORED, "rounded down"), (_NO_TOP_K, "counts each token once"), (_NO_FACTOR, "even share"),
           ((CAPACITY[0], 0), "the capacity is right")],
    how_to_answer="Pass (capacity, dropped).")


all_to_all_code = Exercise(
    key="all_to_all_code", number=6, title="An all-to-all from messages",
    function="my_all_to_all(blocks, recv_sizes)", imports=DIST_IMPORT,
    question="Write the all-to-all from send and receive: `my_all_to_all(blocks, recv_sizes)` sends `blocks[d]` "
             "(rows × ...) to rank d and returns the list of blocks the ranks sent here, in rank order; "
             "`recv_sizes[s]` is how many rows rank s sends here. Blocks differ in size and some are empty. It "
             "runs on 2, 3 and 4 gloo ranks; each rank must send exactly its blocks for the other ranks (nothing "
             "to itself) and call no collective: `dist.all_to_all_single` will not pass.",
    hint_text="Keep your own block. For every other rank post a receive into `torch.empty(recv_sizes[s], "
              "*blocks[0].shape[1:])` and a send of `blocks[d]`, all with isend/irecv before waiting on any; "
              "a block of no rows needs no message (both sides know its size).",
    solution_text="out[rank] = blocks[rank]; for every peer p ≠ rank post dist.irecv(out[p], p) (a buffer of "
                  "recv_sizes[p] rows) and dist.isend(blocks[p], p), skipping empty blocks; wait for all; "
                  "return out. Each rank sends (n − 1) of its n blocks: for equal blocks, (n − 1)/n of its data, "
                  "the all-to-all's bus-bandwidth factor.",
    checker=code.all_to_all_checker, reference=code.my_all_to_all, wrong=code.WRONG["all_to_all"])


top2_roofline = Exercise(
    key="top2_roofline", number=7, title="Top-2 on the roofline",
    question="Top-2 routing sends every token to two experts: twice top-1's all-to-all bytes. Does that move "
             "expert parallelism's point on the communication roofline? What does move it, and what in a real "
             "run puts it further left than the formula?",
    hint_text="Write the FLOPs a rank computes and the bytes it sends per token assignment; which of them "
              "depend on k? Then think about a load that is not even.",
    solution_text="No: top-2 doubles the expert FLOPs as well as the bytes, so the intensity, 1.5 · f · n/(n − 1) "
                  "FLOP per byte for experts of width f, stays where it is. The expert's width moves it: "
                  "fine-grained experts (small f) are communication-bound where wide ones are not. A real run "
                  "sits further left: with an uneven load the busiest rank receives more than its share while "
                  "the others wait for it, and an all-to-all across nodes, n − 1 messages a rank at once, "
                  "reaches less of the link's bandwidth than the ring's one neighbour does.")


EXERCISES = [online_merge, pass_kv, ring_forward_code, balanced_bug, capacity_drops, all_to_all_code, top2_roofline]
