"""Milliseconds a block and micro-batch, published and predicted: the floor the host's launches set."""

import statistics

import matplotlib
import pytest

from d2lmp.model.cluster.block_times import block_times
from d2lmp.model.cluster.efficiency import FITTED
from d2lmp.model.cluster.runs import records
from d2lmp.model.cluster.runs.ultrascale import MODEL_NAMES
from d2lmp.model.cluster.validation import judge_all

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def tp8():
    judgements = judge_all([r for r in records() if r.source == "tazi2025ultrascale" and r.tp == 8 and r.pp == 1])
    return judgements, block_times(judgements, 8, MODEL_NAMES, max_gpus=32)


def test_the_published_figure_is_the_step_over_micro_batches_and_blocks(tp8):
    """Each published median equals step ÷ (micro-batches · layers), the step read straight off the record: a global
    batch of sequences at the published tokens/s per GPU over all GPUs."""
    judgements, times = tp8
    for t in times:
        rows = [j.record for j in judgements if j.ratio is not None and MODEL_NAMES[j.record.layers, j.record.hidden]
                == t.label and j.record.micro_batch == t.micro_batch and j.record.gpus <= 32]
        by_hand = [1e3 * r.global_batch * r.seq / (r.value * r.gpus) / (r.global_batch // (r.dp * r.micro_batch))
                   / r.layers for r in rows]
        assert t.rows == len(rows) and t.published_ms == pytest.approx(statistics.median(by_hand), rel=1e-9)


def test_at_one_sequence_every_models_block_takes_the_hosts_time(tp8):
    """At micro-batch 1 the 1B and the 8B blocks take the same time to within 10 %, though the GPU's own work differs
    by more than half again; the model with the host's launches lands within 10 % of each."""
    _, times = tp8
    one = {t.label: t for t in times if t.micro_batch == 1}
    assert one["8B"].published_ms == pytest.approx(one["1B"].published_ms, rel=0.1)
    assert one["8B"].without_host_ms > 1.5 * one["1B"].without_host_ms
    for t in one.values():
        assert t.without_host_ms < FITTED.host_ms <= t.predicted_ms
        assert t.predicted_ms == pytest.approx(t.published_ms, rel=0.1)


def test_the_plot_draws_each_model_three_ways_and_refuses_nothing_to_draw(tp8):
    from d2lmp.views.block_times import plot_block_times

    _, times = tp8
    fig = plot_block_times(times, FITTED.host_ms)
    (ax,) = fig.axes
    models = len({t.label for t in times})
    # published, model, model without host per model; three empty lines that key the styles; the floor
    assert len(ax.lines) == 3 * models + 3 + 1
    assert [t.get_text() for t in ax.get_legend().get_texts()][-3:] == ["published (median)", "model",
                                                                       "model, no launch time"]
    with pytest.raises(ValueError, match="no block times"):
        plot_block_times([], FITTED.host_ms)
    import matplotlib.pyplot as plt

    plt.close(fig)
