"""Milliseconds a block and micro-batch, published and predicted: the floors that the host's launches and the
messages' latency set."""

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
    assert one["8B"].alternative_ms > 1.5 * one["1B"].alternative_ms
    for t in one.values():
        assert t.alternative_ms < FITTED.host_ms <= t.predicted_ms
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


@pytest.fixture(scope="module")
def across_nodes():
    """TP 16 and 32 without a pipeline on up to 32 nodes, with the fitted α across nodes and with the presets' 10 µs."""
    from dataclasses import replace

    judgements = judge_all([r for r in records() if r.source == "tazi2025ultrascale" and r.tp in (16, 32)
                            and r.pp == 1])
    preset_alpha = replace(FITTED, network_us=None)
    return {tp: {t.label: t for t in block_times(judgements, tp, MODEL_NAMES, max_gpus=256, alternative=preset_alpha)
                 if t.micro_batch == 1} for tp in (16, 32)}


def test_across_nodes_the_one_sequence_floor_follows_the_ring_steps(across_nodes):
    """At one sequence a TP 32 block takes 1.5-2.5 times a TP 16 block (310 ring steps against 150), the same for
    each width; the fitted α puts the model within 20 % of TP 16's published medians, the presets' 10 µs below 0.6."""
    for label in ("1B", "3B", "8B"):
        sixteen, thirty_two = across_nodes[16][label], across_nodes[32][label]
        assert 1.5 < thirty_two.published_ms / sixteen.published_ms < 2.5, label
        assert sixteen.predicted_ms == pytest.approx(sixteen.published_ms, rel=0.2), label
        assert sixteen.alternative_ms < 0.6 * sixteen.published_ms, label


def test_the_plot_can_leave_out_the_floor_and_name_its_alternative(across_nodes):
    from d2lmp.views.block_times import plot_block_times

    times = list(across_nodes[16].values())
    fig = plot_block_times(times, None, alternative="model, α 10 µs")
    (ax,) = fig.axes
    assert len(ax.lines) == 3 * len(times) + 3  # no floor
    assert [t.get_text() for t in ax.get_legend().get_texts()][-1] == "model, α 10 µs"
    import matplotlib.pyplot as plt

    plt.close(fig)
