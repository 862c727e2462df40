"""The recomputation picture counts what ``predict_saved_with_recompute`` counts: boundaries, then one segment."""

import pytest

from d2lmp.views.recompute import held_over_time, plot_recompute


@pytest.mark.parametrize("sizes", [(4, 4, 4, 2), (3, 3, 4, 4, 7), (5,)])
def test_the_peak_is_the_larger_of_after_forward_and_a_recomputed_segment(sizes):
    trace = held_over_time(sizes)
    k = len(sizes) - 1
    after_forward = k + sizes[-1]
    during = [j + sizes[j] for j in range(k)]  # segments 0..j-1's inputs, segment j's own saves
    assert trace[sum(sizes) - 1] == ("forward", after_forward)
    assert max(h for _, h in trace) == max([after_forward, *during])
    assert trace[-1] == ("backward", 0)
    assert len(trace) == 2 * sum(sizes) + sum(sizes[:-1])  # one more forward of the checkpointed segments
    assert max(h for _, h in held_over_time(sizes, checkpointed=False)) == sum(sizes)


def test_the_picture_has_the_chain_and_both_curves():
    fig = plot_recompute((4, 4, 4, 2))
    top, bottom = fig.axes
    assert len(top.patches) == 14
    assert [t.get_text() for t in bottom.get_legend().get_texts()] == ["plain", "checkpointed"]
