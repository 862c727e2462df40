"""The mixture-of-experts layer on one device: gating, capacity in GShard's order, drops, the auxiliary loss."""

import dataclasses

import pytest
import torch

from d2lmp.moe import (
    ExpertLoad,
    MoE,
    MoESpec,
    expert_capacity,
    kept_counts,
    load_balancing_loss,
    node_limited_top_k,
    nodes_reached,
    queue_offsets,
    queue_positions,
    route,
    top_k_gating,
)
from d2lmp.parallel.expert_parallel import counts_per_rank, dispatch_counts, expert_owner, experts_per_rank


def test_capacity_is_the_factor_times_an_even_share():
    assert expert_capacity(16, 4, 1, 1.25) == 5  # 1.25 × 16 / 4, exactly 5: not rounded up to 6
    assert expert_capacity(15, 4, 1, 1.0) == 4  # 3.75 rounds up
    assert expert_capacity(16, 4, 2, 1.0) == 8  # top-2: two assignments per token
    assert expert_capacity(1, 8, 1, 1.0) == 1  # never below one
    with pytest.raises(ValueError, match="experts"):
        expert_capacity(4, 0, 1, 1.0)


@pytest.mark.parametrize("bad", [dict(top_k=3), dict(top_k=2, experts=1), dict(capacity_factor=0.0), dict(hidden=0)])
def test_spec_rejects_impossible_layers(bad):
    with pytest.raises(ValueError):
        MoESpec(**bad)


def test_top1_keeps_the_probability_and_top2_renormalises():
    logits = torch.randn(6, 4, generator=torch.Generator().manual_seed(0))
    probs = logits.softmax(-1)
    _, expert, gate = top_k_gating(logits, 1)
    torch.testing.assert_close(gate[:, 0], probs.max(-1).values)  # Switch: y = p_i(x) E_i(x)
    assert torch.equal(expert[:, 0], probs.argmax(-1))
    _, expert, gate = top_k_gating(logits, 2)
    torch.testing.assert_close(gate.sum(-1), torch.ones(6))  # GShard: g1 + g2 = 1
    first, second = probs.gather(1, expert).unbind(-1)
    torch.testing.assert_close(gate[:, 0] / gate[:, 1], first / second)
    assert (first >= second).all()


def test_queues_hold_every_first_choice_before_any_second_choice():
    expert = torch.tensor([[0, 1], [0, 2], [1, 0]])  # three tokens' (first, second) choices among 3 experts
    counts = torch.nn.functional.one_hot(expert, 3).sum(0)
    position = queue_positions(expert, 3, queue_offsets(counts[None])[0])
    # expert 0 queues token 0, token 1 (first choices), then token 2's second choice
    assert position.tolist() == [[0, 1], [1, 0], [0, 2]]
    assert kept_counts(counts[None], 2)[0].tolist() == [[2, 1, 0], [0, 1, 1]]  # token 2's second choice is dropped


def _kept_by_hand(expert, experts, capacity):
    """The capacity rule as a loop: slot by slot, token by token, an expert takes assignments until it is full."""
    taken, kept = [0] * experts, torch.zeros(expert.shape, dtype=torch.bool)
    for slot in range(expert.shape[1]):
        for token in range(expert.shape[0]):
            e = int(expert[token, slot])
            kept[token, slot] = taken[e] < capacity
            taken[e] += 1
    return kept


@pytest.mark.parametrize("top_k", [1, 2])
def test_output_is_each_tokens_kept_experts_weighted_by_their_gates(top_k):
    # capacity ⌈0.75 × 15 / 4⌉ = 3 per expert: at most 12 of the 15 tokens find a place
    spec = MoESpec(hidden=8, ffn=12, experts=4, top_k=top_k, capacity_factor=0.75 / top_k, seed=1)
    layer = MoE(spec)
    x = torch.randn(3, 5, 8, generator=torch.Generator().manual_seed(2))  # [batch, seq, hidden], a block's input
    result = layer.run(x)
    assert result.output.shape == x.shape and layer.last is result
    r = result.routing
    assert r.capacity == 3
    assert torch.equal(r.kept, _kept_by_hand(r.expert, 4, r.capacity))
    tokens = x.reshape(-1, 8)
    expected = torch.stack([sum((r.gate[t, s] * layer.experts[int(r.expert[t, s])](tokens[t])
                                 for s in range(top_k) if r.kept[t, s]), torch.zeros(8)) for t in range(len(tokens))])
    torch.testing.assert_close(result.output.reshape(-1, 8), expected)
    dropped_everywhere = ~r.kept.any(-1)
    assert dropped_everywhere.sum() >= 3
    assert (result.output.reshape(-1, 8)[dropped_everywhere] == 0).all()  # in a block, the residual carries it
    torch.testing.assert_close(layer(x), result.output)


def test_load_counts_routed_kept_and_dropped_assignments():
    spec = MoESpec(hidden=8, ffn=8, experts=4, top_k=2, capacity_factor=0.75, seed=3)
    x = torch.randn(20, 8, generator=torch.Generator().manual_seed(4))
    result = MoE(spec).run(x)
    load = result.load
    assert type(load) is ExpertLoad
    with pytest.raises(dataclasses.FrozenInstanceError):
        load.capacity = 0
    assert sum(load.routed) == 20 * 2
    assert load.routed == tuple(torch.bincount(result.routing.expert.flatten(), minlength=4).tolist())
    assert load.kept == tuple(torch.bincount(result.routing.expert[result.routing.kept], minlength=4).tolist())
    assert all(k == min(r, load.capacity) for r, k in zip(load.routed, load.kept))
    assert sum(load.dropped) == int((~result.routing.kept).sum()) > 0
    table = load.table()
    assert f"capacity {load.capacity}" in table and table.splitlines()[-1].split()[1:] == [
        str(sum(load.routed)), str(sum(load.kept)), str(sum(load.dropped))]


def test_auxiliary_loss_is_switchs_e_times_sum_of_f_times_p():
    spec = MoESpec(hidden=8, ffn=8, experts=4, top_k=2, seed=5)
    x = torch.randn(30, 8, generator=torch.Generator().manual_seed(6))
    result = MoE(spec).run(x)
    probs = result.routing.probs
    f = torch.bincount(probs.argmax(-1), minlength=4).float() / 30  # fraction of first choices
    torch.testing.assert_close(result.aux_loss, 4 * (f * probs.mean(0)).sum())
    even = route(torch.eye(4).repeat(5, 1) * 3, 1, 1.0)  # 20 tokens, 5 to each expert, equally confident
    assert even.load().dropped == (0, 0, 0, 0)
    torch.testing.assert_close(load_balancing_loss(even), torch.tensor(1.0))  # its value under an even load


def test_gradients_reach_the_router_through_the_gates_and_only_the_used_experts():
    spec = MoESpec(hidden=8, ffn=8, experts=8, top_k=1, capacity_factor=1.0, seed=7)
    layer = MoE(spec)
    result = layer.run(torch.randn(6, 8, generator=torch.Generator().manual_seed(8)))
    (result.output.sum() + result.aux_loss).backward()
    assert layer.router.weight.grad.abs().sum() > 0
    used = set(result.routing.expert[result.routing.kept].tolist())
    assert len(used) < 8
    for e, expert in enumerate(layer.experts):
        assert (expert[0].weight.grad is not None) == (e in used), e


def test_layer_is_reproducible_and_leaves_the_callers_random_state_alone():
    torch.manual_seed(11)
    before = torch.rand(3)
    torch.manual_seed(11)
    a, b = MoE(MoESpec(seed=4)), MoE(MoESpec(seed=4))
    assert torch.equal(torch.rand(3), before)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    with pytest.raises(ValueError, match=r"\[\.\.\., 16\]"):
        a(torch.zeros(2, 3, 5))


def test_dispatch_counts_of_a_one_device_routing_cut_into_parts():
    spec = MoESpec(hidden=8, ffn=8, experts=4, top_k=2, capacity_factor=0.75, seed=9)
    routing = MoE(spec).run(torch.randn(11, 8, generator=torch.Generator().manual_seed(10))).routing
    counts = counts_per_rank(routing, [6, 5])
    assert torch.equal(counts.sum(0), routing.counts[0])
    dispatch = dispatch_counts(counts, routing.capacity, 2)
    # Every assignment is either sent to the rank of its expert or dropped; ranks 0, 1 hold experts 0-1, 2-3.
    assert sum(map(sum, dispatch.sent)) + sum(dispatch.dropped) == 22
    kept = routing.kept
    for src, rows in enumerate((slice(0, 6), slice(6, 11))):
        owners = routing.expert[rows][kept[rows]] // 2
        assert dispatch.sent[src] == tuple(torch.bincount(owners, minlength=2).tolist())
        assert dispatch.dropped[src] == int((~kept[rows]).sum())
    with pytest.raises(ValueError, match="add up"):
        counts_per_rank(routing, [6, 6])


def test_experts_split_evenly_or_not_at_all():
    assert experts_per_rank(8, 4) == 2 and expert_owner(5, 8, 4) == 2
    with pytest.raises(ValueError, match="6 experts cannot be split evenly over 4 ranks"):
        experts_per_rank(6, 4)


def test_node_limited_routing_picks_nodes_by_their_best_scores():
    scores = torch.tensor([[9.0, 8.0, 7.0, 0.0, 6.0, 0.0, 5.0, 0.0]])  # 4 nodes of 2 experts
    assert node_limited_top_k(scores, 4, 2, 4).tolist() == [[0, 1, 2, 4]]  # plain top-4: 3 nodes
    # node sums of the 2 best: 17, 7, 6, 5: nodes 0 and 1, so expert 3 (score 0) beats experts 4 and 6
    assert node_limited_top_k(scores, 4, 2, 2).tolist() == [[0, 1, 2, 3]]
    assert nodes_reached(torch.tensor([[0, 1, 2, 4], [0, 1, 2, 3], [7, 6, 0, 5]]), 2).tolist() == [3, 2, 3]


def test_node_limited_routing_keeps_every_token_within_its_nodes():
    scores = torch.randn(500, 32, generator=torch.Generator().manual_seed(0))
    free = nodes_reached(scores.topk(8).indices, 4)
    limited = node_limited_top_k(scores, 8, 4, 3)
    assert nodes_reached(limited, 4).max() <= 3 < free.max()
    assert torch.equal(node_limited_top_k(scores, 8, 4, 8).sort().values, scores.topk(8).indices.sort().values)
    with pytest.raises(ValueError):
        node_limited_top_k(scores, 8, 4, 1)  # 8 experts do not fit on one node of 4
