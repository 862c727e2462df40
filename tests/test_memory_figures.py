"""The reported-against-predicted memory plot: one dot a run with a memory figure, the diagonal and the ±20 % band;
beside it the ratio by micro-batch, layouts with and without a pipeline apart, with their medians."""

import statistics

import matplotlib
import pytest

from d2lmp.model.cluster.runs.ultrascale import RECORDS
from d2lmp.model.cluster.validation import judge_all

matplotlib.use("Agg")


def test_one_dot_a_reported_figure_its_ratio_by_micro_batch_and_nothing_to_draw_refused():
    from d2lmp.views.memory_figures import plot_memory_figures

    judgements = judge_all([r for r in RECORDS if r.layers == 16 and r.gpus == 16])
    fig = plot_memory_figures(judgements)
    left, right = fig.axes[:2]
    (dots,) = left.collections[1:]  # the band first, then the scatter
    offsets = dots.get_offsets()
    assert len(offsets) == len(judgements)
    for (x, y), j in zip(offsets, judgements, strict=True):
        assert j.memory_ratio is not None and (x, y) == pytest.approx((j.record.memory_gb, j.record.memory_gb
                                                                       * j.memory_ratio))
    assert [t.get_text() for t in left.get_legend().get_texts()] == ["within ±20%", "predicted = reported"]
    medians = {line.get_label(): line for line in right.lines if line.get_label().endswith("median")}
    assert set(medians) == {"no pipeline, median", "pipelined, median"}
    flat = [j for j in judgements if j.record.pp == 1]
    x, y = medians["no pipeline, median"].get_data()
    assert list(x) == sorted({j.record.micro_batch for j in flat})
    assert list(y) == pytest.approx([statistics.median(j.memory_ratio for j in flat if j.record.micro_batch == b)
                                     for b in x])
    with pytest.raises(ValueError, match="no reported memory"):
        plot_memory_figures([])
    import matplotlib.pyplot as plt

    plt.close(fig)
