"""The reported-against-predicted memory plot: one dot a run with a memory figure, the diagonal and the ±20 % band."""

import matplotlib
import pytest

from d2lmp.model.cluster.runs.ultrascale import RECORDS
from d2lmp.model.cluster.validation import judge_all

matplotlib.use("Agg")


def test_one_dot_a_reported_figure_at_its_ratio_and_nothing_to_draw_refused():
    from d2lmp.views.memory_figures import plot_memory_figures

    judgements = judge_all([r for r in RECORDS if r.layers == 16 and r.gpus == 16 and r.pp == 1])
    fig = plot_memory_figures(judgements)
    ax = fig.axes[0]
    (dots,) = ax.collections[1:]  # the band first, then the scatter
    offsets = dots.get_offsets()
    assert len(offsets) == len(judgements)
    for (x, y), j in zip(offsets, judgements, strict=True):
        assert j.memory_ratio is not None and (x, y) == pytest.approx((j.record.memory_gb, j.record.memory_gb
                                                                       * j.memory_ratio))
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["within ±20%", "predicted = reported"]
    with pytest.raises(ValueError, match="no reported memory"):
        plot_memory_figures([])
    import matplotlib.pyplot as plt

    plt.close(fig)
