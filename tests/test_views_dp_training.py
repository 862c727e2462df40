"""The data-parallel training figures: accuracy against the global batch, BatchNorm's gaps and accuracy."""

import math

import pytest

from d2lmp.parallel.dp_batchnorm import BatchNormAccuracy, BatchNormGap
from d2lmp.parallel.dp_training import LRScalingRow
from d2lmp.views.dp_training import plot_batchnorm_accuracy, plot_batchnorm_gaps, plot_lr_scaling


def _row(batch, rule, ranks_acc, one_acc):
    return LRScalingRow(batch, 2, batch // 2, rule, 0.005 * (batch / 32 if rule else 1), 2, 1437 // batch * 4,
                        one_acc, ranks_acc)


def test_accuracy_against_the_global_batch_has_a_line_per_rule_and_device():
    rows = [_row(b, rule, 0.9 + 0.01 * rule, 0.8 + 0.01 * rule) for rule in (False, True) for b in (32, 64, 256)]
    ax = plot_lr_scaling(rows).axes[0]
    lines = {line.get_label(): list(line.get_ydata()) for line in ax.get_lines()}
    assert lines["same learning rate, 2 ranks"] == [0.9] * 3
    assert lines["linear scaling + warm-up, 1 device"] == [0.81] * 3
    assert [t.get_text() for t in ax.get_xticklabels()] == ["32", "64", "256"]
    with pytest.raises(ValueError, match="no rows"):
        plot_lr_scaling([])


def test_batchnorm_gaps_leave_out_what_could_not_run():
    rows = [BatchNormGap("per-rank nn.BatchNorm2d", 2, 32, 0.02, 0.06, 0.002, 0.03, 0.03, 5e-8),
            BatchNormGap("SyncBatchNorm2d (ours)", 2, 32, 1e-7, 0.0, 0.0, 8e-8, 1e-7, 1e-7),
            BatchNormGap("nn.SyncBatchNorm (PyTorch)", 2, 32, *[math.nan] * 6, note="ValueError: needs a GPU")]
    ax = plot_batchnorm_gaps(rows).axes[0]
    heights = [p.get_height() for p in ax.patches]
    assert len(heights) == 12 and heights[:6] == [0.02, 0.06, 0.002, 0.03, 0.03, 5e-8]
    assert min(heights) == 1e-9  # exact zeros sit on the floor of the log axis
    with pytest.raises(ValueError, match="every row has a note"):
        plot_batchnorm_gaps(rows[2:])


def test_batchnorm_accuracy_has_three_lines_sorted_by_batch():
    rows = [BatchNormAccuracy(2, b, 2 * b, 0.9, 0.95, 0.95) for b in (8, 2)]
    ax = plot_batchnorm_accuracy(rows).axes[0]
    assert [line.get_label() for line in ax.get_lines()] == ["per-rank BatchNorm", "SyncBatchNorm2d",
                                                            "1 device, whole batch"]
    assert list(ax.get_lines()[0].get_xdata()) == [2, 8]
