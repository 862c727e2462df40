"""The schedule comparison: 1F1B, interleaved 1F1B and ZB-H1 (or some of them) on one time axis, each with its
bubble."""


import matplotlib.pyplot as plt
import pytest

from d2lmp.views.pipeline import plot_schedule_comparison


def test_schedule_comparison_draws_three_schedules_with_their_bubbles():
    fig = plot_schedule_comparison(stages=4, micro_batches=8, chunks=2)
    titles = [ax.get_title() for ax in fig.axes]
    assert [t.split(":")[0] for t in titles] == ["1F1B", "interleaved 1F1B, v = 2", "zero-bubble ZB-H1"]
    # the simulated bubble equals each formula: 3/8, 3/16, 3/24
    for title, value in zip(titles, ("0.375", "0.188", "0.125")):
        assert title.count(value) == 2, title
    # one block per operation: 4 ranks x 8 micro-batches x (F, B), x 2 chunks, or x (F, B, W)
    for ax, blocks in zip(fig.axes, (64, 128, 96)):
        assert [t.get_text() for t in ax.get_yticklabels()] == [f"rank {r}" for r in range(4)]
        assert len(ax.collections) == blocks
    plt.close(fig)


def test_schedule_comparison_draws_the_kinds_asked_for():
    fig = plot_schedule_comparison(stages=2, micro_batches=4, chunks=2, kinds=("1f1b", "interleaved"))
    assert [ax.get_title().split(":")[0] for ax in fig.axes] == ["1F1B", "interleaved 1F1B, v = 2"]
    assert [len(ax.collections) for ax in fig.axes] == [16, 32]  # 2 ranks x 4 micro-batches x (F, B), x 2 chunks
    plt.close(fig)
    with pytest.raises(ValueError, match="kinds must be some of"):
        plot_schedule_comparison(kinds=("gpipe",))
