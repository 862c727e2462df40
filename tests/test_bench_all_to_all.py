"""The all-to-all benchmark: frozen rows, ours/theirs ratios in pairs, and the goal line over 64 KiB - 16 MiB."""

import dataclasses

import pytest

from d2lmp.bench import all_to_all as B
from d2lmp.commands.bench.all_to_all import goal_lines


def test_a_small_run_gives_frozen_rows_and_ratios_of_each_pair():
    rows = B.all_to_all_bench(worlds=(2,), sizes=(4096, 65536), rounds=2, min_time=0.002)
    assert {(r.impl, r.size_bytes) for r in rows} == {(impl, s) for pair in B.A2A_PAIRS for impl in pair
                                                       for s in (4096, 65536)}
    assert all(type(r) is B.AllToAllTiming and r.world == 2 and r.backend == "gloo" for r in rows)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rows[0].seconds = 0.0
    for r in rows:
        assert r.algbw_gbs == pytest.approx(r.size_bytes / r.seconds / 1e9)
        assert r.busbw_gbs == pytest.approx(r.algbw_gbs / 2)  # (n-1)/n on 2 ranks
    ratios = B.all_to_all_ratios(rows)
    assert [(q.ours, q.theirs, q.size_bytes) for q in ratios] == [
        ("pairwise", "torch", 4096), ("pairwise", "torch", 65536),
        ("pairwise+sizes", "torch+sizes", 4096), ("pairwise+sizes", "torch+sizes", 65536)]
    found = {(r.impl, r.size_bytes): r for r in rows}
    for q in ratios:  # the median of the rounds' ratios: a round is one timing of each contender
        ours, theirs = found[q.ours, q.size_bytes], found[q.theirs, q.size_bytes]
        assert len(ours.round_seconds) == len(theirs.round_seconds) == 2
        assert q.ratio == pytest.approx(sum(t / o for o, t in zip(ours.round_seconds, theirs.round_seconds)) / 2)
        assert q.ours_busbw_gbs == ours.busbw_gbs
    (line,) = goal_lines(rows)
    assert line.startswith("goal: ours/gloo all-to-all busbw from 64 KiB to 16 MiB on 2 ranks >= 0.8×: worst ")
    assert "× at 64 KiB" in line and "not measured: 256 KiB, 1 MiB, 4 MiB, 16 MiB" in line


def _rows(ratios, world=2):
    """pairwise and torch rows whose busbw ratio at each size is the given one."""
    rows = []
    for size, ratio in ratios.items():
        rows += [B.AllToAllTiming("torch", world, "gloo", size, 1.0, 1.0, 1.0),
                 B.AllToAllTiming("pairwise", world, "gloo", size, 1.0, ratio, ratio)]
    return rows


def test_goal_lines_judge_the_worst_ratio_in_range_only():
    KIB = 2**10
    (line,) = goal_lines(_rows({16 * KIB: 0.1, 64 * KIB: 0.9, 256 * KIB: 0.85, KIB**2: 1.2,
                                             4 * KIB**2: 1.0, 16 * KIB**2: 0.95, 64 * KIB**2: 0.2}))
    assert line.endswith("worst 0.85× at 256 KiB (met)")
    (line,) = goal_lines(_rows({s: 0.9 for s in B.A2A_SIZES} | {KIB**2: 0.79}))
    assert line.endswith("worst 0.79× at 1 MiB (missed)")
    (line,) = goal_lines(_rows({16 * KIB: 0.9}))
    assert line.endswith("no size in range measured (missed)")
    assert goal_lines(_rows({64 * KIB: 0.9}, world=4)) == []  # no goal for 4 ranks, no line


def test_bad_arguments_are_refused_before_any_rank_starts():
    with pytest.raises(ValueError, match="unknown: \\['ring'\\]"):
        B.all_to_all_bench(pairs=(("ring", "torch"),))
    with pytest.raises(ValueError, match="at least 2 ranks"):
        B.all_to_all_bench(worlds=(1,))
    with pytest.raises(ValueError, match="sizes"):
        B.all_to_all_bench(worlds=(4,), sizes=(8,))
