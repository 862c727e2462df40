"""The memory calculator's figure stacks the training state under the activations, against the GPU's line."""

import pytest

from d2lmp.model.cluster.presets import model_preset
from d2lmp.model.memory_calculator import MemorySetting, compare
from d2lmp.views.memory_calculator import STACK, describe, plot_memory_stack


def test_one_stacked_bar_per_choice_with_its_total_and_the_memory_line():
    bars = compare(model_preset("175B").model, MemorySetting(tp=8, pp=8, sequence_parallel=True), "recompute", 80e9)
    fig = plot_memory_stack(bars, 80e9)
    ax = fig.axes[0]
    assert len(ax.patches) == len(STACK) * 3
    tops = [max(p.get_y() + p.get_height() for p in ax.patches if p.get_x() < i < p.get_x() + p.get_width())
            for i in range(3)]
    assert tops == pytest.approx([b.total / 1e9 for b in bars.values()])
    assert [t.get_text() for t in ax.texts] == [f"{b.total / 1e9:,.1f}" for b in bars.values()]
    assert any(line.get_linestyle() == "--" for line in ax.lines)
    assert describe(bars).startswith("none: ") and "does not fit" in describe(bars)
