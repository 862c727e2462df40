"""Pipeline schedules, exactly: every rank's (stage, micro-batch, forward/backward) order written out here.

In the manner of torchgpipe's clock-cycle test, small cases are tables derived by hand from each schedule's
definition (GPipe: Huang et al. 2019; 1F1B: PipeDream-Flush; interleaved 1F1B: Megatron-LM's rules; ZB-H1:
Qi et al. 2024), larger ones are checked against a generator written differently from the library's, or
against invariants (every operation once, messages matched in order, the simulated bubble equal to its formula),
so that an off-by-one in a warm-up or a chunk order fails.
"""

import itertools

import pytest

from d2lmp.model import pipeline_schedule as S


def _ops(text):
    """'F0 F1 B0' -> [("F", 0), ("F", 1), ("B", 0)]; 'F2.1' (stage 2, micro-batch 1) -> ("F", 2, 1)."""
    out = []
    for token in text.split():
        op, rest = token[0], token[1:]
        out.append((op, *map(int, rest.split("."))) if "." in rest else (op, int(rest)))
    return out


# Per rank, by hand: GPipe runs every forward, then the backwards in reverse; 1F1B warms up with p - r - 1
# forwards (at most m), then alternates F and B, then drains the remaining B's.
HAND = {
    ("naive", 2, 5): ["F0 B0", "F0 B0"],
    ("gpipe", 2, 3): ["F0 F1 F2 B2 B1 B0", "F0 F1 F2 B2 B1 B0"],
    ("gpipe", 3, 1): ["F0 B0", "F0 B0", "F0 B0"],
    ("1f1b", 2, 3): ["F0 F1 B0 F2 B1 B2", "F0 B0 F1 B1 F2 B2"],
    ("1f1b", 3, 4): ["F0 F1 F2 B0 F3 B1 B2 B3", "F0 F1 B0 F2 B1 F3 B2 B3", "F0 B0 F1 B1 F2 B2 F3 B3"],
    ("1f1b", 4, 2): ["F0 F1 B0 B1", "F0 F1 B0 B1", "F0 F1 B0 B1", "F0 B0 F1 B1"],
    ("1f1b", 1, 3): ["F0 B0 F1 B1 F2 B2"],
}


@pytest.mark.parametrize("kind, p, m", list(HAND))
def test_schedule_equals_the_hand_derived_table(kind, p, m):
    assert [S.schedule(kind, p, r, m) for r in range(p)] == [_ops(t) for t in HAND[kind, p, m]]


def _by_counting(kind, p, r, m):
    """An independent generator: every backward B_k is placed after a fixed number of forwards (1F1B: the
    first min(m, k + p - r) of them; GPipe: all m), forwards in order, and a backward before a forward
    when both could come next."""
    if kind == "gpipe":
        keys = [((i, 1), ("F", i)) for i in range(m)] + [((m, 0, k), ("B", m - 1 - k)) for k in range(m)]
    else:
        keys = [((i, 1), ("F", i)) for i in range(m)] + [((min(m, k + p - r), 0, k), ("B", k)) for k in range(m)]
    return [op for _, op in sorted(keys)]


@pytest.mark.parametrize("kind", ["gpipe", "1f1b"])
def test_schedule_equals_an_independent_generator(kind):
    for p, m in itertools.product(range(1, 7), range(1, 11)):
        for r in range(p):
            assert S.schedule(kind, p, r, m) == _by_counting(kind, p, r, m), (kind, p, r, m)


def _starts(events):
    return {(e.rank, e.label): e.start for e in events}


@pytest.mark.parametrize("p, m", [(1, 1), (2, 3), (3, 5), (4, 4), (5, 2)])
def test_gpipe_clock_cycles(p, m):
    """torchgpipe's clock cycles: with unit forward and backward times, stage j runs micro-batch i's forward in
    clock i + j, and its backward, mirrored, in clock (m + p - 1) + (m - 1 - i) + (p - 1 - j)."""
    starts = _starts(S.simulate("gpipe", p, m, forward=1.0, backward=1.0))
    assert starts == {**{(j, f"F{i}"): i + j for i in range(m) for j in range(p)},
                      **{(j, f"B{i}"): (m + p - 1) + (m - 1 - i) + (p - 1 - j) for i in range(m) for j in range(p)}}


def test_1f1b_clock_cycles_by_hand():
    """2 stages, 3 micro-batches, unit times: each operation's start, worked out on paper."""
    starts = _starts(S.simulate("1f1b", 2, 3, forward=1.0, backward=1.0))
    assert starts == {(0, "F0"): 0, (0, "F1"): 1, (0, "B0"): 3, (0, "F2"): 4, (0, "B1"): 5, (0, "B2"): 7,
                      (1, "F0"): 1, (1, "B0"): 2, (1, "F1"): 3, (1, "B1"): 4, (1, "F2"): 5, (1, "B2"): 6}


# Interleaved 1F1B, by hand from Megatron-LM's rules: rank r holds stages r and r + p (chunks 0 and 1);
# micro-batches go in groups of p, forwards through chunk 0 then chunk 1, backwards through chunk 1 then
# chunk 0; warm-up 2(p - r - 1) + (v - 1)p forwards, or all of them when m = p. "F2.1": stage 2, micro-batch 1.
INTERLEAVED = {
    (2, 2, 2): ["F0.0 F0.1 F2.0 F2.1 B2.0 B2.1 B0.0 B0.1",
                "F1.0 F1.1 F3.0 F3.1 B3.0 B3.1 B1.0 B1.1"],
    (2, 4, 2): ["F0.0 F0.1 F2.0 F2.1 F0.2 B2.0 F0.3 B2.1 F2.2 B0.0 F2.3 B0.1 B2.2 B2.3 B0.2 B0.3",
                "F1.0 F1.1 F3.0 B3.0 F3.1 B3.1 F1.2 B1.0 F1.3 B1.1 F3.2 B3.2 F3.3 B3.3 B1.2 B1.3"],
    (2, 2, 3): ["F0.0 F0.1 F2.0 F2.1 F4.0 F4.1 B4.0 B4.1 B2.0 B2.1 B0.0 B0.1",
                "F1.0 F1.1 F3.0 F3.1 F5.0 F5.1 B5.0 B5.1 B3.0 B3.1 B1.0 B1.1"],
    (3, 6, 2): ["F0.0 F0.1 F0.2 F3.0 F3.1 F3.2 F0.3 F0.4 B3.0 F0.5 B3.1 F3.3 B3.2 F3.4 B0.0 F3.5 B0.1 "
                "B0.2 B3.3 B3.4 B3.5 B0.3 B0.4 B0.5",
                "F1.0 F1.1 F1.2 F4.0 F4.1 F4.2 B4.0 F1.3 B4.1 F1.4 B4.2 F1.5 B1.0 F4.3 B1.1 F4.4 B1.2 F4.5 "
                "B4.3 B4.4 B4.5 B1.3 B1.4 B1.5",
                "F2.0 F2.1 F2.2 F5.0 B5.0 F5.1 B5.1 F5.2 B5.2 F2.3 B2.0 F2.4 B2.1 F2.5 B2.2 F5.3 B5.3 F5.4 "
                "B5.4 F5.5 B5.5 B2.3 B2.4 B2.5"],
}


@pytest.mark.parametrize("p, m, v", list(INTERLEAVED))
def test_interleaved_schedule_equals_the_hand_derived_table(p, m, v):
    assert [S.interleaved_schedule(p, r, m, v) for r in range(p)] == [_ops(t) for t in INTERLEAVED[p, m, v]]


CONFIGS = [(p, m, v) for p in (2, 3, 4, 5) for v in (1, 2, 3, 4) for m in (p, 2 * p, 3 * p)]


def _messages(plans, last, p):
    """Per (sender, receiver): the (op, stage, micro-batch) of each message in the order the sender sends it,
    and in the order the receiver receives it."""
    sends, recvs = {}, {}
    for r, plan in enumerate(plans):
        for op, s, i in plan:
            if op == "F" and s > 0:
                recvs.setdefault(((s - 1) % p, r), []).append(("F", s - 1, i))
            if op == "F" and s < last:
                sends.setdefault((r, (s + 1) % p), []).append(("F", s, i))
            if op == "B" and s < last:
                recvs.setdefault(((s + 1) % p, r), []).append(("B", s + 1, i))
            if op == "B" and s > 0:
                sends.setdefault((r, (s - 1) % p), []).append(("B", s, i))
    return sends, recvs


@pytest.mark.parametrize("p, m, v", CONFIGS)
def test_interleaved_invariants(p, m, v):
    plans = [S.interleaved_schedule(p, r, m, v) for r in range(p)]
    for r, plan in enumerate(plans):
        mine = [r + c * p for c in range(v)]  # rank r holds chunks r, r + p, r + 2p, ...
        assert sorted(plan) == sorted((op, s, i) for op in "FB" for s in mine for i in range(m))
        assert all(plan.index(("F", s, i)) < plan.index(("B", s, i)) for s in mine for i in range(m))
        # a warm-up of forwards, then one forward and one backward alternately, then the remaining backwards
        warmup = m * v if m == p else min(m * v, 2 * (p - r - 1) + (v - 1) * p)
        assert [op for op, _, _ in plan] == ["F"] * warmup + ["F", "B"] * (m * v - warmup) + ["B"] * warmup
    # messages between any two ranks arrive in the order they were sent (in-order transports, NCCL included)
    sends, recvs = _messages(plans, p * v - 1, p)
    assert sends == recvs
    assert sum(map(len, sends.values())) == 2 * m * (p * v - 1)


@pytest.mark.parametrize("p, m, v", CONFIGS)
def test_simulated_interleaved_bubble_is_p_minus_1_over_v_m(p, m, v):
    events = S.simulate("interleaved", p, m, chunks=v)
    assert S.measured_bubble_time(events, p) == pytest.approx(S.bubble_time_fraction(p, m, v))
    assert S.bubble_time_fraction(p, m, v) == pytest.approx((p - 1) / (v * m))
    assert {(e.rank, e.stage) for e in events} == {(s % p, s) for s in range(p * v)}


def test_interleaved_needs_micro_batches_a_multiple_of_the_stages():
    with pytest.raises(ValueError, match="multiple of the stages: 6 micro-batches on 4 stages"):
        S.interleaved_schedule(4, 0, 6, 2)
    with pytest.raises(ValueError, match="chunks must be an integer >= 1"):
        S.interleaved_schedule(2, 0, 2, 0)
    with pytest.raises(ValueError, match="only the interleaved schedule"):
        S.rank_plan("1f1b", 2, 0, 4, chunks=2)
    with pytest.raises(ValueError, match="available: naive, gpipe, 1f1b, interleaved, zero-bubble"):
        S.rank_plan("dualpipe", 2, 0, 4)


# ZB-H1 by hand: 1F1B's F and B order; each W right after its B, except that stage r keeps r of them back
# until the end of the step.
ZERO_BUBBLE = {
    (2, 3): ["F0 F1 B0 W0 F2 B1 W1 B2 W2", "F0 B0 F1 B1 W0 F2 B2 W1 W2"],
    (3, 4): ["F0 F1 F2 B0 W0 F3 B1 W1 B2 W2 B3 W3", "F0 F1 B0 F2 B1 W0 F3 B2 W1 B3 W2 W3",
             "F0 B0 F1 B1 F2 B2 W0 F3 B3 W1 W2 W3"],
    (3, 1): ["F0 B0 W0", "F0 B0 W0", "F0 B0 W0"],
}


@pytest.mark.parametrize("p, m", list(ZERO_BUBBLE))
def test_zero_bubble_schedule_equals_the_hand_derived_table(p, m):
    assert [S.zero_bubble_schedule(p, r, m) for r in range(p)] == [_ops(t) for t in ZERO_BUBBLE[p, m]]


@pytest.mark.parametrize("p, m", [(p, m) for p in (2, 3, 4, 6) for m in (p, p + 1, 2 * p, 4 * p)])
def test_zero_bubble_keeps_1f1b_memory_and_a_third_of_its_bubble(p, m):
    """With F = B = W (forward 1, backward 2 split in halves) ZB-H1's bubble over the busy time is (p - 1)/(3m),
    a third of 1F1B's (Qi et al. 2024), and no stage holds more than p micro-batches (F done, W not yet)."""
    for r in range(p):
        plan = S.zero_bubble_schedule(p, r, m)
        assert [o for o in plan if o[0] != "W"] == S.schedule("1f1b", p, r, m)
        assert all(plan.index(("B", i)) < plan.index(("W", i)) for i in range(m))
        alive = [sum(1 if op == "F" else -1 if op == "W" else 0 for op, _ in plan[:k]) for k in range(len(plan))]
        assert max(alive) <= p
    zero = S.measured_bubble_time(S.simulate("zero-bubble", p, m), p)
    one = S.measured_bubble_time(S.simulate("1f1b", p, m), p)
    assert zero == pytest.approx((p - 1) / (3 * m)) and one == pytest.approx((p - 1) / m)


def test_simulated_zero_bubble_events_are_forward_backward_and_weight():
    events = S.simulate("zero-bubble", 3, 4)
    assert {e.kind for e in events} == {"forward", "backward", "weight"}
    assert all(e.duration == pytest.approx(1.0) for e in events)  # backward 2 = B 1 + W 1


def test_bubble_time_fraction_bad_input():
    with pytest.raises(ValueError):
        S.bubble_time_fraction(2, 4, 0)
